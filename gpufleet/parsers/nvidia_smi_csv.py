# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``nvidia-smi --query-gpu=F1,F2,... --format=csv[,noheader][,nounits]`` (KIND ``query-gpu``).

Returned keys (public contract)
-------------------------------
::

    {
      "driver_version": str | None,   # the "driver_version" field of the first row, when queried
      "cuda_version": None,           # not a --query-gpu field
      "attached_gpus": int | None,    # the "count" field of the first row, when queried
      "timestamp": str | None,        # the "timestamp" field of the first row, as printed
      "fields": [str],                # header names without units, in column order
      "units": {field: str | None},   # "memory.total [MiB]" -> "MiB"; None without a unit (or nounits)
      "rows": [{field: str}],         # every cell as printed, whitespace-trimmed
      "gpus": [gpu],                  # one per row, see below
      "warnings": [str],
      "ignored_lines": [{line, text, why}],  # ONLY when a command or foreign line was skipped
    }

Each ``gpu`` has the per-GPU keys shared with the ``nvidia-smi -q`` text and XML parsers, None
when the field was not queried or printed N/A / [N/A] / [Not Supported] / any "[...]" message:

- ``index``, ``pci_bus_id`` (as printed) and every other scalar field: one per row of
  :data:`gpufleet.parsers.gpu_fields.GPU_FIELDS` with a ``csv`` field, read from the first of its
  ``--query-gpu`` names that was queried (``pci.bus_id`` or ``gpu_bus_id``, ``clocks.current.sm`` or
  ``clocks.sm``, ...), converted as the row says; a row without a ``csv`` field (``temperature_slowdown_c``,
  ``temperature_shutdown_c``, ...) is always None here.
- ``ecc_errors_{volatile,aggregate}_{correctable,uncorrectable}``: the ``ecc.errors.*.total`` field; without it the
  sum over memory types (``dram`` being an alias of ``device_memory``); None if all N/A.
- ``retired_pages`` ({``single_bit_ecc``, ``double_bit_ecc``, ``pending``} or None), ``remapped_rows``
  ({``correctable``, ``uncorrectable``, ``pending``, ``failure``} or None), ``fabric`` ({``state``, ``status``,
  ``clique_id``, ``cluster_uuid``} or None when not queried / all N/A): their ``retired_pages.*``,
  ``remapped_rows.*`` and ``fabric.*`` fields.
- ``clock_event_reasons`` ({``idle``, ``applications_clocks_setting``, ``sw_power_cap``, ``hw_slowdown``,
  ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``, ``sync_boost``, ``sw_thermal_slowdown``,
  ``display_clock_setting``} -> bool | None, from the ``clocks_event_reasons.*`` / ``clocks_throttle_reasons.*``
  fields, completed from the ``.active`` bitmask where ``.supported`` has the bit; None when none was queried).
- ``processes`` and ``mig_devices`` (None: not in this format), and ``raw`` (the row dict).

The per-GPU fields are read through the field table of :mod:`gpufleet.parsers.gpu_fields`, which names
their ``--query-gpu`` fields; the ECC sums and the clock event reasons' bitmasks are code here.

Input handling: ANSI escapes, BOM, CRLF, trailing whitespace, srun -l / mpirun --tag-output
prefixes (one rank only). Leading lines that are a shell command running nvidia-smi
(``$ nvidia-smi ...``, ``root@host:~# nvidia-smi ...``, ``# $ nvidia-smi ...`` written by capture
tools, the bare ``nvidia-smi ...``) are skipped; when such a line holds ``--query-gpu=...`` and the
output has no header, its field list is used. A line is the header when every cell looks like a
field name (lower-case first letter, letters/digits/``_``/``.``, optional `` [unit]``).

Foreign lines (common's ``foreign_line``: a banner, a prompt, a note, an elision) before the header
or among the rows are skipped and listed with the command lines in ``ignored_lines``; a row is
checked for one before its cells are counted. A placeholder (``<masked>``, ``...``) reads as None in
a text field and is refused in a numeric one.

``fields=`` (list or comma-separated string) names the columns of ``noheader`` output; with a
header present it must match it.

Raises :class:`ParseError` (1-based line) for: empty input, error text instead of CSV (quoted),
no header and no ``fields``, a header that differs from ``fields``, a row whose cell count differs
from the header's (this also catches a value containing a comma, which nvidia-smi never quotes),
no data row, a normalised numeric cell that is not a number, or that lacks the unit its header
announces (a cut-off cell), or whose magnitude is above common's ``MAX_NUMBER`` (2^64-1), several ranks
in one text.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, Sequence

from gpufleet.parsers.common import (
    QUIET_NOT_AVAILABLE,
    IgnoredLine,
    ImplausibleNumber,
    ParseError,
    is_not_available,
    is_placeholder,
    parse_number,
    skip_foreign,
    with_ignored,
)
from gpufleet.parsers.gpu_fields import (
    CLOCK_EVENT_REASONS,
    CSV_REASON_PREFIXES,
    FABRIC_FIELDS,
    GPU_FIELDS,
    REMAPPED_ROWS_FIELDS,
    RETIRED_PAGES_FIELDS,
    GpuField,
    read_record,
)
from gpufleet.parsers.nvidia_smi_nvlink import prepare_lines, skip_command_or_foreign

KIND = "query-gpu"

_HEADER_CELL_RE = re.compile(r"^([a-z][A-Za-z0-9_.]*)(?:\s*\[([^\]]*)\])?$")
_QUERY_RE = re.compile(r"--query-gpu[= ]\s*([A-Za-z0-9_.,]+)")
_NOHEADER_RE = re.compile(r"--format[= ]\S*noheader")
# Bracketed values that only mean "no value" (no warning for them).
_QUIET_BRACKETS = frozenset(value for value in QUIET_NOT_AVAILABLE if value.startswith("["))

# The reasons in the order of NVML's bits (the order of this parser's clock_event_reasons dict).
_REASONS_BY_BIT = sorted(CLOCK_EVENT_REASONS, key=lambda reason: reason.bit)
_ECC_MEMORY_TYPES = ("register_file", "l1_cache", "l2_cache", "texture_memory", "texture_shm", "cbu", "sram")
# Read after the field table's fields (as before the table), so that of two damaged cells the same one is named.
_READ_AFTER = ("retired_pages", "remapped_rows", "fabric", "clock_event_reasons")

Number = int | float
# A GPU's fields that this parser reads itself, by key (gpu_fields.read_record).
Computed = dict[str, Callable[[], Any]]


def _split(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def _header_cell(cell: str) -> re.Match[str]:
    match = _HEADER_CELL_RE.match(cell)
    assert match is not None  # the caller checked the cell
    return match


def _is_header(cells: list[str]) -> bool:
    if not cells or any(not _HEADER_CELL_RE.match(cell) for cell in cells):
        return False
    # a lone lower-case word ("valid", "none") could be data: require a field-like shape
    known = {"timestamp", "count", "name", "serial", "uuid", "index", "pstate", "hostname"}
    return all("." in c or "_" in c or "[" in c or _header_cell(c).group(1) in known for c in cells)


def _header(cells: list[str]) -> tuple[list[str], dict[str, str | None]]:
    names: list[str] = []
    units: dict[str, str | None] = {}
    for cell in cells:
        match = _header_cell(cell)
        name, unit = match.group(1), match.group(2)
        names.append(name)
        units[name] = unit.strip() if unit is not None and unit.strip() else None
    return names, units


class _Row:
    """One CSV row with the helpers that read its normalised values."""

    def __init__(self, cells: dict[str, str], units: dict[str, str | None], line: int | None) -> None:
        self.cells = cells
        self.units = units
        self.line = line

    def has(self, *names: str) -> bool:
        return any(name in self.cells for name in names)

    def text(self, *names: str) -> str | None:
        """First present field among ``names``; None for N/A spellings, "[...]" messages and pasted placeholders."""
        for name in names:
            if name in self.cells:
                value = self.cells[name]
                if is_not_available(value) or (value.startswith("[") and value.endswith("]")) or is_placeholder(value):
                    return None
                return value
        return None

    def number(self, *names: str) -> Number | None:
        for name in names:
            if name not in self.cells:
                continue
            if is_placeholder(self.cells[name]):
                raise ParseError("%s: %r stands in for a number" % (name, self.cells[name]), line=self.line, kind=KIND)
            value = self.text(name)
            if value is None:
                return None
            unit = self.units.get(name)
            if unit:
                if not value.endswith(unit):
                    raise ParseError("%s: value %r lacks its unit %r" % (name, value, unit), line=self.line, kind=KIND)
                value = value[: -len(unit)]
            try:
                return parse_number(value, line=self.line, kind=KIND)
            except ImplausibleNumber as exc:
                raise ParseError("%s: %s" % (name, exc.message), line=self.line, kind=KIND) from None
            except ParseError:
                raise ParseError("%s: not a number: %r" % (name, self.cells[name]), line=self.line, kind=KIND) from None
        return None

    def flag(self, *names: str) -> bool | None:
        """Enabled/Yes/Active -> True, Disabled/No/Not Active -> False, N/A -> None."""
        value = self.text(*names)
        if value is None:
            return None
        low = value.lower()
        if low in ("enabled", "yes", "active", "true", "on"):
            return True
        if low in ("disabled", "no", "not active", "false", "off"):
            return False
        raise ParseError("%s: not a yes/no value: %r" % ("/".join(names), value), line=self.line, kind=KIND)


def _read_field(row: _Row, field: GpuField) -> Any:
    """``field`` of ``row``: the first of its --query-gpu names the header has, read with the field's converter."""
    if field.convert == "text":
        return row.text(*field.csv)
    if field.convert in ("int", "number", "link_width"):
        return row.number(*field.csv)
    if field.convert in ("enabled_disabled", "yes_no"):
        return row.flag(*field.csv)
    raise ValueError("%s: no CSV reader for a %r field" % (field.key, field.convert))


def _present(record: dict[str, Any]) -> dict[str, Any] | None:
    """``record``, or None when no field of it was queried or all read N/A."""
    return record if any(value is not None for value in record.values()) else None


def _ecc_sum(row: _Row, kind_: str, scope: str) -> Number | None:
    base = "ecc.errors.%s.%s." % (kind_, scope)
    if row.has(base + "total"):
        return row.number(base + "total")
    device_memory = "device_memory" if row.text(base + "device_memory") is not None else "dram"  # dram: its alias
    values = [row.number(base + device_memory)]
    values += [row.number(base + name) for name in _ECC_MEMORY_TYPES]
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def _reasons(row: _Row, warnings: list[str], index: Any) -> dict[str, bool | None] | None:
    present = False
    out: dict[str, bool | None] = {}
    for reason in _REASONS_BY_BIT:
        names = [prefix + suffix for prefix in CSV_REASON_PREFIXES for suffix in reason.csv]
        present = present or row.has(*names)
        out[reason.key] = row.flag(*names)
    # NVML's bitmasks (Any: a decimal cell, "1.5", raises TypeError at the "&" below, as it always has)
    active: Any = row.number("clocks_event_reasons.active", "clocks_throttle_reasons.active")
    supported: Any = row.number("clocks_event_reasons.supported", "clocks_throttle_reasons.supported")
    if active is not None and supported is not None:
        present = True
        for reason in _REASONS_BY_BIT:
            if not supported & reason.bit:
                continue
            from_mask = bool(active & reason.bit)
            if out[reason.key] is None:
                out[reason.key] = from_mask
            elif out[reason.key] != from_mask:
                warnings.append("GPU %s: clock event reason %s disagrees with the active bitmask" % (index, reason.key))
    return out if present else None


def _none() -> None:
    return None


def _normalise(row: _Row, warnings: list[str]) -> dict[str, Any]:
    """The per-GPU dict of a row: the field table's fields, and the structural ones read here."""
    computed: Computed = {
        "ecc_errors_volatile_correctable": partial(_ecc_sum, row, "corrected", "volatile"),
        "ecc_errors_volatile_uncorrectable": partial(_ecc_sum, row, "uncorrected", "volatile"),
        "ecc_errors_aggregate_correctable": partial(_ecc_sum, row, "corrected", "aggregate"),
        "ecc_errors_aggregate_uncorrectable": partial(_ecc_sum, row, "uncorrected", "aggregate"),
        **dict.fromkeys(_READ_AFTER, _none),
        "processes": _none,  # not in this format
        "mig_devices": _none,
        "raw": partial(dict, row.cells),
    }
    gpu = read_record(GPU_FIELDS, "csv", partial(_read_field, row), computed)
    read = partial(_read_field, row)
    gpu["retired_pages"] = _present(read_record(RETIRED_PAGES_FIELDS, "csv", read, {}))
    gpu["remapped_rows"] = _present(read_record(REMAPPED_ROWS_FIELDS, "csv", read, {}))
    gpu["fabric"] = _present(read_record(FABRIC_FIELDS, "csv", read, {}))
    gpu["clock_event_reasons"] = _reasons(row, warnings, gpu["index"])
    return gpu


def _fields_arg(fields: str | Sequence[Any] | None) -> list[str] | None:
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = fields.split(",")
    names = [str(name).strip() for name in fields]
    if not names or any(not _HEADER_CELL_RE.match(name) for name in names):
        raise ParseError("fields=%r is not a list of --query-gpu field names" % (fields,), kind=KIND)
    return [_header_cell(name).group(1) for name in names]


def _content_lines(text: str) -> list[tuple[int, str]]:
    """The non-blank numbered lines of one rank's output, right-stripped."""
    groups = prepare_lines(text, KIND)
    if len(groups) > 1:
        raise ParseError("output of %d ranks in one text; parse each rank separately" % len(groups), kind=KIND)
    return [(n, line.rstrip()) for n, line in groups[0][1] if line.strip()]


def _skip_commands(lines: list[tuple[int, str]], ignored: list[IgnoredLine]) -> tuple[list[str] | None, bool]:
    """Take the leading command and foreign lines off ``lines`` (listed in ``ignored``); return the field list of a
    ``--query-gpu=...`` among them (or None) and whether its ``--format`` says ``noheader``."""
    command_fields = None
    noheader_command = False
    while lines and skip_command_or_foreign(ignored, *lines[0]):
        _number, line = lines.pop(0)
        match = _QUERY_RE.search(line)
        if match:
            command_fields = [name for name in match.group(1).split(",") if name]
            noheader_command = bool(_NOHEADER_RE.search(line))
    return command_fields, noheader_command


def _columns(lines: list[tuple[int, str]], wanted: list[str] | None, command_fields: list[str] | None,
             noheader_command: bool) -> tuple[list[str], dict[str, str | None], int | None]:
    """(field names, their units, the header's line or None) of the output; the header is taken off ``lines``."""
    if not lines:
        raise ParseError("no CSV content", kind=KIND)
    first_n, first = lines[0]
    cells = _split(first)
    header_line = None
    if _is_header(cells) and not noheader_command:
        names, units = _header(cells)
        if wanted is not None and names != wanted:
            raise ParseError("header does not match fields=%r" % (wanted,), line=first_n, kind=KIND, text=first)
        lines.pop(0)
        header_line = first_n
    else:
        given = wanted or command_fields
        if given is None:
            if len(cells) == 1:
                raise ParseError("not --query-gpu CSV output", line=first_n, kind=KIND, text=first)
            raise ParseError("CSV has no header and no fields= were given", line=first_n, kind=KIND, text=first)
        names, units = given, {name: None for name in given}
    if len(set(names)) != len(names):
        raise ParseError("a field is named twice in the header", line=header_line, kind=KIND)
    return names, units, header_line


def _read_rows(lines: list[tuple[int, str]], names: list[str], units: dict[str, str | None], result: dict[str, Any],
               ignored: list[IgnoredLine]) -> int | None:
    """Read the data rows into ``result`` ("rows", "gpus", "warnings"); return the first row's line."""
    first_row_line = None
    for n, line in lines:
        # Checked before the cells are counted: a foreign line may split into as many cells as the
        # header has (always, for a one-field query). No cell of --query-gpu output looks like one.
        if skip_foreign(ignored, n, line):
            continue
        values = _split(line)
        if len(values) != len(names):
            if len(values) == 1:
                raise ParseError("not a CSV row (error text?)", line=n, kind=KIND, text=line)
            raise ParseError("row has %d cells, the header %d" % (len(values), len(names)), line=n, kind=KIND,
                             text=line)
        cells = dict(zip(names, values))
        gpu = _normalise(_Row(cells, units, n), result["warnings"])
        result["rows"].append(cells)
        result["gpus"].append(gpu)
        first_row_line = first_row_line or n
        label = gpu["index"] if gpu["index"] is not None else len(result["gpus"]) - 1
        # "[GPU is lost]", "[Unknown Error]", ... read as None but must not pass unnoticed
        messages = sorted({v for v in values
                           if v.startswith("[") and v.endswith("]") and v.lower() not in _QUIET_BRACKETS})
        for message in messages:
            result["warnings"].append("GPU %s printed %s for some fields" % (label, message))
    return first_row_line


def _node_fields(result: dict[str, Any], units: dict[str, str | None], first_row_line: int | None) -> None:
    """The node's fields from the first row (driver_version, timestamp, count), and warnings where rows disagree."""
    first_row = _Row(result["rows"][0], units, first_row_line)
    result["driver_version"] = first_row.text("driver_version")
    result["timestamp"] = first_row.text("timestamp")
    result["attached_gpus"] = first_row.number("count")
    for field in ("driver_version", "count"):
        seen = {row.get(field) for row in result["rows"]}
        if len(seen) > 1:
            result["warnings"].append("rows disagree on %s: %s" % (field, sorted(str(value) for value in seen)))
    if result["attached_gpus"] is not None and result["attached_gpus"] != len(result["rows"]):
        result["warnings"].append("count says %s GPUs, %s rows printed"
                                  % (result["attached_gpus"], len(result["rows"])))


def parse_query_gpu_csv(text: str, fields: str | Sequence[Any] | None = None) -> dict[str, Any]:
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` output (see the module docstring)."""
    wanted = _fields_arg(fields)
    lines = _content_lines(text)
    ignored: list[IgnoredLine] = []
    command_fields, noheader_command = _skip_commands(lines, ignored)
    names, units, header_line = _columns(lines, wanted, command_fields, noheader_command)
    result: dict[str, Any] = {
        "driver_version": None,
        "cuda_version": None,
        "attached_gpus": None,
        "timestamp": None,
        "fields": names,
        "units": units,
        "rows": [],
        "gpus": [],
        "warnings": [],
    }
    first_row_line = _read_rows(lines, names, units, result, ignored)
    if not result["rows"]:
        raise ParseError("CSV header without any data row", line=header_line, kind=KIND)
    _node_fields(result, units, first_row_line)
    return with_ignored(result, ignored)
