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
``index``, ``pci_bus_id`` (as printed), ``name``, ``product_brand``, ``product_architecture``,
``uuid``, ``serial``, ``minor_number``, ``board_part_number``, ``vbios_version``,
``persistence_mode`` (bool), ``mig_mode_current`` (str), ``memory_total_mib``, ``memory_used_mib``,
``ecc_mode_current`` / ``ecc_mode_pending`` (bool), ``ecc_errors_volatile_correctable``,
``ecc_errors_volatile_uncorrectable``, ``ecc_errors_aggregate_correctable``,
``ecc_errors_aggregate_uncorrectable`` (the ``ecc.errors.*.total`` field; without it the sum over
memory types, ``dram`` being an alias of ``device_memory``; None if all N/A), ``retired_pages``
({``single_bit_ecc``, ``double_bit_ecc``, ``pending``} or None), ``remapped_rows``
({``correctable``, ``uncorrectable``, ``pending``, ``failure``} or None), ``temperature_c``,
``temperature_slowdown_c`` and ``temperature_shutdown_c`` (always None: not query fields),
``power_draw_w``, ``power_limit_w`` (enforced), ``power_max_limit_w``, ``clocks_graphics_mhz``,
``clocks_sm_mhz``, ``clocks_mem_mhz``, ``clocks_max_graphics_mhz``, ``clocks_max_sm_mhz``,
``clocks_max_mem_mhz``, ``clock_event_reasons`` ({``idle``, ``applications_clocks_setting``,
``sw_power_cap``, ``hw_slowdown``, ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``,
``sync_boost``, ``sw_thermal_slowdown``, ``display_clock_setting``} -> bool | None, from the
``clocks_event_reasons.*`` / ``clocks_throttle_reasons.*`` fields, completed from the
``.active`` bitmask where ``.supported`` has the bit; None when none was queried),
``pcie_link_gen_current``, ``pcie_link_gen_max``, ``pcie_link_width_current``,
``pcie_link_width_max`` (ints), ``fabric`` ({``state``, ``status``, ``clique_id``,
``cluster_uuid``} or None when not queried / all N/A), ``processes`` and ``mig_devices`` (None:
not in this format), and ``raw`` (the row dict).

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

from gpufleet.parsers.common import (
    ImplausibleNumber,
    ParseError,
    is_not_available,
    is_placeholder,
    parse_number,
    skip_foreign,
    with_ignored,
)
from gpufleet.parsers.nvidia_smi_nvlink import prepare_lines, skip_command_or_foreign

KIND = "query-gpu"

_HEADER_CELL_RE = re.compile(r"^([a-z][A-Za-z0-9_.]*)(?:\s*\[([^\]]*)\])?$")
_QUERY_RE = re.compile(r"--query-gpu[= ]\s*([A-Za-z0-9_.,]+)")
_NOHEADER_RE = re.compile(r"--format[= ]\S*noheader")
# Bracketed values that only mean "no value" (no warning for them).
_QUIET_BRACKETS = frozenset(["[n/a]", "[not supported]", "[requested functionality has been deprecated]"])

_REASONS = (
    # (normalised key, query-field suffixes, NVML bit)
    ("idle", ("gpu_idle", "idle"), 0x1),
    ("applications_clocks_setting", ("applications_clocks_setting",), 0x2),
    ("sw_power_cap", ("sw_power_cap",), 0x4),
    ("hw_slowdown", ("hw_slowdown",), 0x8),
    ("sync_boost", ("sync_boost",), 0x10),
    ("sw_thermal_slowdown", ("sw_thermal_slowdown",), 0x20),
    ("hw_thermal_slowdown", ("hw_thermal_slowdown",), 0x40),
    ("hw_power_brake_slowdown", ("hw_power_brake_slowdown",), 0x80),
    ("display_clock_setting", ("display_clock_setting", "display_clocks_setting"), 0x100),
)
_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")
_ECC_MEMORY_TYPES = ("register_file", "l1_cache", "l2_cache", "texture_memory", "texture_shm", "cbu", "sram")


def _split(line):
    return [cell.strip() for cell in line.split(",")]


def _is_header(cells):
    if not cells or any(not _HEADER_CELL_RE.match(cell) for cell in cells):
        return False
    # a lone lower-case word ("valid", "none") could be data: require a field-like shape
    known = {"timestamp", "count", "name", "serial", "uuid", "index", "pstate", "hostname"}
    return all("." in c or "_" in c or "[" in c or _HEADER_CELL_RE.match(c).group(1) in known for c in cells)


def _header(cells):
    names, units = [], {}
    for cell in cells:
        match = _HEADER_CELL_RE.match(cell)
        name, unit = match.group(1), match.group(2)
        names.append(name)
        units[name] = unit.strip() if unit is not None and unit.strip() else None
    return names, units


class _Row:
    """One CSV row with the helpers that read its normalised values."""

    def __init__(self, cells, units, line):
        self.cells = cells
        self.units = units
        self.line = line

    def has(self, *names):
        return any(name in self.cells for name in names)

    def text(self, *names):
        """First present field among ``names``; None for N/A spellings, "[...]" messages and pasted placeholders."""
        for name in names:
            if name in self.cells:
                value = self.cells[name]
                if is_not_available(value) or (value.startswith("[") and value.endswith("]")) or is_placeholder(value):
                    return None
                return value
        return None

    def number(self, *names):
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

    def flag(self, *names):
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


def _ecc_sum(row, kind_, scope):
    base = "ecc.errors.%s.%s." % (kind_, scope)
    if row.has(base + "total"):
        return row.number(base + "total")
    values = [row.number(base + "device_memory") if row.text(base + "device_memory") is not None else row.number(base + "dram")]
    values += [row.number(base + name) for name in _ECC_MEMORY_TYPES]
    values = [value for value in values if value is not None]
    return sum(values) if values else None


def _reasons(row, warnings, index):
    present = False
    out = {}
    for key, suffixes, _bit in _REASONS:
        names = [prefix + suffix for prefix in _REASON_PREFIXES for suffix in suffixes]
        present = present or row.has(*names)
        out[key] = row.flag(*names)
    active = row.number("clocks_event_reasons.active", "clocks_throttle_reasons.active")
    supported = row.number("clocks_event_reasons.supported", "clocks_throttle_reasons.supported")
    if active is not None and supported is not None:
        present = True
        for key, _suffixes, bit in _REASONS:
            if not supported & bit:
                continue
            from_mask = bool(active & bit)
            if out[key] is None:
                out[key] = from_mask
            elif out[key] != from_mask:
                warnings.append("GPU %s: clock event reason %s disagrees with the active bitmask" % (index, key))
    return out if present else None


def _normalise(row, warnings):
    index = row.number("index")
    gpu = {
        "index": index,
        "pci_bus_id": row.text("pci.bus_id", "gpu_bus_id"),
        "name": row.text("name", "gpu_name"),
        "product_brand": None,
        "product_architecture": None,
        "uuid": row.text("uuid", "gpu_uuid"),
        "serial": row.text("serial", "gpu_serial"),
        "minor_number": None,
        "board_part_number": None,
        "vbios_version": row.text("vbios_version", "vbios"),
        "persistence_mode": row.flag("persistence_mode"),
        "mig_mode_current": row.text("mig.mode.current"),
        "memory_total_mib": row.number("memory.total"),
        "memory_used_mib": row.number("memory.used"),
        "ecc_mode_current": row.flag("ecc.mode.current"),
        "ecc_mode_pending": row.flag("ecc.mode.pending"),
        "ecc_errors_volatile_correctable": _ecc_sum(row, "corrected", "volatile"),
        "ecc_errors_volatile_uncorrectable": _ecc_sum(row, "uncorrected", "volatile"),
        "ecc_errors_aggregate_correctable": _ecc_sum(row, "corrected", "aggregate"),
        "ecc_errors_aggregate_uncorrectable": _ecc_sum(row, "uncorrected", "aggregate"),
        "retired_pages": None,
        "remapped_rows": None,
        "temperature_c": row.number("temperature.gpu"),
        "temperature_slowdown_c": None,
        "temperature_shutdown_c": None,
        "power_draw_w": row.number("power.draw", "power.draw.average", "power.draw.instant"),
        "power_limit_w": row.number("enforced.power.limit", "power.limit"),
        "power_max_limit_w": row.number("power.max_limit"),
        "clocks_graphics_mhz": row.number("clocks.current.graphics", "clocks.gr"),
        "clocks_sm_mhz": row.number("clocks.current.sm", "clocks.sm"),
        "clocks_mem_mhz": row.number("clocks.current.memory", "clocks.mem"),
        "clocks_max_graphics_mhz": row.number("clocks.max.graphics", "clocks.max.gr"),
        "clocks_max_sm_mhz": row.number("clocks.max.sm"),
        "clocks_max_mem_mhz": row.number("clocks.max.memory", "clocks.max.mem"),
        "clock_event_reasons": None,
        "pcie_link_gen_current": row.number("pcie.link.gen.current", "pcie.link.gen.gpucurrent"),
        "pcie_link_gen_max": row.number("pcie.link.gen.max", "pcie.link.gen.gpumax"),
        "pcie_link_width_current": row.number("pcie.link.width.current"),
        "pcie_link_width_max": row.number("pcie.link.width.max"),
        "fabric": None,
        "processes": None,
        "mig_devices": None,
        "raw": dict(row.cells),
    }
    retired = {
        "single_bit_ecc": row.number("retired_pages.single_bit_ecc.count", "retired_pages.sbe"),
        "double_bit_ecc": row.number("retired_pages.double_bit.count", "retired_pages.dbe"),
        "pending": row.flag("retired_pages.pending"),
    }
    if any(value is not None for value in retired.values()):
        gpu["retired_pages"] = retired
    remapped = {
        "correctable": row.number("remapped_rows.correctable"),
        "uncorrectable": row.number("remapped_rows.uncorrectable"),
        "pending": row.flag("remapped_rows.pending"),
        "failure": row.flag("remapped_rows.failure"),
    }
    if any(value is not None for value in remapped.values()):
        gpu["remapped_rows"] = remapped
    fabric = {
        "state": row.text("fabric.state"),
        "status": row.text("fabric.status"),
        "clique_id": row.number("fabric.cliqueId", "fabric.clique_id"),
        "cluster_uuid": row.text("fabric.clusterUuid", "fabric.cluster_uuid"),
    }
    if any(value is not None for value in fabric.values()):
        gpu["fabric"] = fabric
    gpu["clock_event_reasons"] = _reasons(row, warnings, index)
    return gpu


def _fields_arg(fields):
    if fields is None:
        return None
    if isinstance(fields, str):
        fields = fields.split(",")
    names = [str(name).strip() for name in fields]
    if not names or any(not _HEADER_CELL_RE.match(name) for name in names):
        raise ParseError("fields=%r is not a list of --query-gpu field names" % (fields,), kind=KIND)
    return [_HEADER_CELL_RE.match(name).group(1) for name in names]


def parse_query_gpu_csv(text, fields=None):
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` output (see the module docstring)."""
    wanted = _fields_arg(fields)
    groups = prepare_lines(text, KIND)
    if len(groups) > 1:
        raise ParseError("output of %d ranks in one text; parse each rank separately" % len(groups), kind=KIND)
    lines = [(n, line.rstrip()) for n, line in groups[0][1] if line.strip()]
    command_fields = None
    noheader_command = False
    ignored = []
    while lines and skip_command_or_foreign(ignored, *lines[0]):
        _number, line = lines.pop(0)
        match = _QUERY_RE.search(line)
        if match:
            command_fields = [name for name in match.group(1).split(",") if name]
            noheader_command = bool(_NOHEADER_RE.search(line))
    if not lines:
        raise ParseError("no CSV content", kind=KIND)
    first_n, first = lines[0]
    cells = _split(first)
    if _is_header(cells) and not noheader_command:
        names, units = _header(cells)
        if wanted is not None and names != wanted:
            raise ParseError("header does not match fields=%r" % (wanted,), line=first_n, kind=KIND, text=first)
        lines.pop(0)
        header_line = first_n
    else:
        names = wanted or command_fields
        if names is None:
            if len(cells) == 1:
                raise ParseError("not --query-gpu CSV output", line=first_n, kind=KIND, text=first)
            raise ParseError("CSV has no header and no fields= were given", line=first_n, kind=KIND, text=first)
        units = {name: None for name in names}
        header_line = None
    if len(set(names)) != len(names):
        raise ParseError("a field is named twice in the header", line=header_line, kind=KIND)
    result = {
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
            raise ParseError("row has %d cells, the header %d" % (len(values), len(names)), line=n, kind=KIND, text=line)
        cells = dict(zip(names, values))
        row = _Row(cells, units, n)
        gpu = _normalise(row, result["warnings"])
        result["rows"].append(cells)
        result["gpus"].append(gpu)
        first_row_line = first_row_line or n
        label = gpu["index"] if gpu["index"] is not None else len(result["gpus"]) - 1
        # "[GPU is lost]", "[Unknown Error]", ... read as None but must not pass unnoticed
        messages = sorted({v for v in values if v.startswith("[") and v.endswith("]") and v.lower() not in _QUIET_BRACKETS})
        for message in messages:
            result["warnings"].append("GPU %s printed %s for some fields" % (label, message))
    if not result["rows"]:
        raise ParseError("CSV header without any data row", line=header_line, kind=KIND)
    first_row = _Row(result["rows"][0], units, first_row_line)
    result["driver_version"] = first_row.text("driver_version")
    result["timestamp"] = first_row.text("timestamp")
    result["attached_gpus"] = first_row.number("count")
    for field in ("driver_version", "count"):
        seen = {row.get(field) for row in result["rows"]}
        if len(seen) > 1:
            result["warnings"].append("rows disagree on %s: %s" % (field, sorted(str(value) for value in seen)))
    if result["attached_gpus"] is not None and result["attached_gpus"] != len(result["rows"]):
        result["warnings"].append("count says %s GPUs, %s rows printed" % (result["attached_gpus"], len(result["rows"])))
    return with_ignored(result, ignored)
