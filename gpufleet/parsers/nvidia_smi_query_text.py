# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text of ``nvidia-smi -q`` (KIND ``nvidia-smi-q``), plus two fragment readers.

``parse_query_text(text)`` reads a whole ``nvidia-smi -q`` / ``nvidia-smi -a`` output, or a
``-q -d TYPE`` / ``-q -i N`` subset of one, and returns::

    timestamp        str | None   "Timestamp" as printed
    driver_version   str | None
    cuda_version     str | None
    attached_gpus    int | None   "Attached GPUs" as printed (with -i it counts all GPUs)
    gpus             list[dict]   one per "GPU <PCI bus id>" section, in output order
    warnings         list[str]    things that are legal but worth a look, e.g. the
                                  "Attached GPUs" count differing from the sections present
    ignored_lines    list[dict]   ONLY when a line was skipped: {line, text, why} of each foreign
                                  line (a banner, prompt, echoed command, note, elision) and each
                                  command line copied with the output (also in the fragments' results)

Each GPU dict (the same key names as the XML and CSV parsers; None when absent or N/A):

    index                                int   0-based order in the output
    pci_bus_id                           str   from the section header, e.g. "00000000:53:00.0"
    every other scalar field                   one per row of gpu_fields.GPU_FIELDS with a ``text`` key
                                               path ("FB Memory Usage/Total", "A|B" for either block
                                               name, e.g. "GPU Power Readings|Power Readings"), read
                                               from the first of its paths printed with a value and
                                               converted as the row says (the -q text alone has
                                               pcie_link_gen_device_max and replays_since_reset)
    ecc_errors_volatile_correctable, ecc_errors_volatile_uncorrectable,
    ecc_errors_aggregate_correctable, ecc_errors_aggregate_uncorrectable
                                         int   summed over the memory types printed (SRAM +
                                               DRAM, or the "Single Bit"/"Double Bit" Totals
                                               of older drivers); None when all are N/A
    retired_pages       {single_bit_ecc: int, double_bit_ecc: int, pending: bool} or None
    ecc_errors_{volatile,aggregate}_{sram,dram}_{correctable,uncorrectable}
                                         int   the same counts per memory kind (A100 and later
                                               print SRAM and DRAM lines); None when not printed
    remapped_rows       {correctable: int, uncorrectable: int, pending: bool, failure: bool} or None
    clock_event_reasons {idle, applications_clocks_setting, sw_power_cap, hw_slowdown,
                         hw_thermal_slowdown, hw_power_brake_slowdown, sync_boost,
                         sw_thermal_slowdown, display_clock_setting} -> bool | None
                         (from "Clocks Event Reasons" (R535+) or "Clocks Throttle Reasons")
    fabric              {state, status, clique_id (int), cluster_uuid} or None when the
                        section has no "Fabric" block or every field is N/A (no NVSwitch)
    processes           [{pid: int, type, name, used_memory_mib: int,
                          gpu_instance_id: int, compute_instance_id: int}]
                        ([] for "Processes : None"; None when the section has no Processes)
    errors              list[str]  error text nvidia-smi printed inside this GPU's section
                                   instead of data (e.g. "Unable to determine the device handle")
    raw                 dict  the whole section as a tree: "Key : value" -> str, a header -> dict
                              of its children; a key printed with both a value and children
                              keeps the value under "_value"; a key printed several times
                              ("MIG Device", "Process ID") -> list, in order.

``parse_fabric_fragment(text)`` reads the output of ``nvidia-smi -q | grep -A2 Fabric`` or a
pasted "Fabric" block and returns ``{"fabric": [{state, status, clique_id, cluster_uuid}, ...]}``.

``parse_clock_event_fragment(text)`` reads a pasted "Clocks Event Reasons" / "Clocks Throttle
Reasons" block (optionally with the "Clocks" / "Max Clocks" blocks) of ONE GPU and returns
``{"clock_event_reasons": {...}, "reasons_block": str, "clocks_graphics_mhz", "clocks_sm_mhz",
"clocks_mem_mhz", "clocks_max_graphics_mhz", "clocks_max_sm_mhz", "clocks_max_mem_mhz",
"warnings": [str]}``.

The scalar per-GPU fields (and those of the Fabric, Retired Pages and Remapped Rows blocks) are read
through the field table of :mod:`gpufleet.parsers.gpu_fields`, which holds their key paths; the ECC
sums, the process list, the clock event reasons and ``errors`` are code here.

All three raise :class:`ParseError` naming the 1-based line for damaged text: a value that is
not what the field holds (a number without its unit, "Act" for Active ...), indentation that
matches no enclosing level, a "Key : value" line whose padded colon is out of line with its
siblings (a hand-edited or damaged line), a GPU section cut before its "Processes" block,
output that stops on a section header, tool error text where no data place exists, two
outputs pasted together, several ranks' output interleaved, a number above common's ``MAX_NUMBER``
(2^64-1, ``1e308``), or more GPU sections, or an "Attached GPUs" count, than the 32 GPUs one system
holds (``MAX_GPUS_PER_NODE``, NV_MAX_DEVICES): an inconsistent count.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, Iterator

from gpufleet.parsers.common import (
    MAX_GPUS_PER_NODE,
    IgnoredLine,
    ImplausibleNumber,
    ParseError,
    ignore_line,
    is_not_available,
    is_placeholder,
    numbered_lines,
    parse_number,
    skip_foreign,
    strip_ansi,
    with_ignored,
)
from gpufleet.parsers.gpu_fields import (
    CLOCK_EVENT_REASONS,
    FABRIC_FIELDS,
    GPU_FIELD_BY_KEY,
    GPU_FIELDS,
    REMAPPED_ROWS_FIELDS,
    RETIRED_PAGES_FIELDS,
    TEXT_REASON_BLOCKS,
    GpuField,
    read_record,
)

KIND = "nvidia-smi-q"

_BANNER_RE = re.compile(r"^=+\s*NVSMI LOG\s*=+$", re.IGNORECASE)
_GPU_HEADER_RE = re.compile(r"^GPU\s+(\S+)$")
_BUS_ID_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
# `srun -l` ("0: ") and `mpirun --tag-output` ("[1,0]<stdout>:") prefixes.
_SRUN_RE = re.compile(r"^ *(\d+):(?: |$)")
_MPI_RE = re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr)>:")
# A prompt with nothing after it ("root@h:~#", "$"), which common's foreign_line() leaves alone:
# it names a prompt by the command that follows.
_PROMPT_RE = re.compile(r"^\S*[$#%>](?:\s|$)")
# "Key: value" with no space before the colon (re-spaced pastes); the key must look like a label.
_LOOSE_KV_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 ._()/+-]*?)\s*:\s+(\S.*)$")
# Error text the tool prints instead of data.
_ERROR_RE = re.compile(
    r"^(nvml\b|error\b|err!|failed\b|unable\b|no devices were found|nvidia-smi has failed|couldn't|could not"
    r"|unknown error|gpu is lost|.*\bversion mismatch\b|.*\bnot supported\b|.*\brequires reset\b)",
    re.IGNORECASE,
)

# Each yes/no field has its own words; any other word is damage, not a guess.
_MODE = {"enabled": True, "disabled": False}
_YES_NO = {"yes": True, "no": False}
_ACTIVE = {"active": True, "not active": False}

Number = int | float
# A GPU's fields that this parser reads itself, by key (gpu_fields.read_record).
Computed = dict[str, Callable[[], Any]]
# The top-level "Key : value" lines: normalised key -> result key.
_TOP_KEYS = {"timestamp": "timestamp", "driver version": "driver_version", "cuda version": "cuda_version",
             "attached gpus": "attached_gpus"}
# The clocks a "Clocks Event Reasons" fragment may carry with it ("Clocks", "Max Clocks" blocks).
_FRAGMENT_CLOCKS = ("clocks_graphics_mhz", "clocks_sm_mhz", "clocks_mem_mhz", "clocks_max_graphics_mhz",
                    "clocks_max_sm_mhz", "clocks_max_mem_mhz")


def _norm(key: str) -> str:
    return " ".join(key.split()).lower()


_REASON_KEYS = {_norm(reason.text): reason.key for reason in CLOCK_EVENT_REASONS}
_REASON_BLOCKS = tuple(_norm(block) for block in TEXT_REASON_BLOCKS)


class _Node:
    """One printed line: a "Key : value" (value str) or a header (value None) with children."""

    __slots__ = ("key", "value", "line", "indent", "colon", "children", "align", "is_error")

    def __init__(self, key: str, value: str | None, line: int, indent: int, colon: int | None = None,
                 is_error: bool = False) -> None:
        self.key = key
        self.value = value
        self.line = line
        self.indent = indent
        self.colon = colon
        self.children: list[_Node] = []
        # (column of the children's padded ':', line of the first child that set it)
        self.align: tuple[int, int] | None = None
        self.is_error = is_error

    def child(self, *names: str) -> _Node | None:
        """First child whose key is one of ``names`` (case and spacing ignored)."""
        wanted = [_norm(n) for n in names]
        for name in wanted:
            for node in self.children:
                if _norm(node.key) == name:
                    return node
        return None

    def find(self, path: str) -> _Node | None:
        """The node at a key path ("MIG Mode/Current"); a step "a|b" takes the first of its alternatives present."""
        node: _Node | None = self
        for step in path.split("/"):
            node = node.child(*step.split("|")) if node is not None else None
        return node

    def last_line(self) -> int:
        node = self
        while node.children:
            node = node.children[-1]
        return node.line

    def walk(self) -> Iterator[_Node]:
        for node in self.children:
            yield node
            yield from node.walk()


def _err(message: str, line: int | None = None, text: str | None = None) -> ParseError:
    return ParseError(message, line=line, kind=KIND, text=text)


# ---------------------------------------------------------------------------------------
# Text -> lines -> tree


def _prepare(text: str, ignored: list[IgnoredLine]) -> list[tuple[int, str]]:
    """(line number, line) pairs with ANSI escapes and rank prefixes removed, right-stripped.

    A line without the rank prefix inside rank-prefixed output is refused unless it is foreign
    (a banner the collecting script printed between ranks): that one is listed in ``ignored``.
    """
    if text is None or not text.strip():
        raise _err("empty input")
    lines = [(n, strip_ansi(line).rstrip()) for n, line in numbered_lines(text)]
    if lines and lines[0][1].startswith("\ufeff"):  # a byte-order mark from a Windows editor
        lines[0] = (1, lines[0][1][1:])
    first_tag = _first_rank_prefix(lines)
    if first_tag is None:
        return lines
    start, regex, rank = first_tag
    out = []
    for n, line in lines:
        if n < start or not line.strip():
            out.append((n, line if n < start else ""))
            continue
        match = regex.match(line)
        if not match:
            if skip_foreign(ignored, n, line):
                out.append((n, ""))
                continue
            raise _err("line without the rank prefix inside rank-prefixed output", line=n, text=line)
        if match.groups() != rank:
            raise _err(
                "output of several ranks interleaved (rank %s, then %s); parse one rank's lines at a time"
                % (",".join(rank), ",".join(match.groups())),
                line=n,
                text=line,
            )
        out.append((n, line[match.end():].rstrip()))
    return out


def _first_rank_prefix(lines: list[tuple[int, str]]) -> tuple[int, re.Pattern[str], tuple[str, ...]] | None:
    """(line, prefix pattern, rank) of the first line that carries a rank prefix, else None."""
    for n, line in lines:
        if not line.strip():
            continue
        match = _MPI_RE.match(line) or _SRUN_RE.match(line)
        if match:
            return n, match.re, match.groups()
    return None


def _split(line: str) -> tuple[str, str | None, int | None, bool]:
    """``(key, value, colon_column, padded)`` of a line, value None for a header line."""
    content = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    pos = line.find(" : ")
    if pos < 0 and line.endswith(" :"):
        pos = len(line) - 2
    if pos >= indent:
        key = line[indent:pos].rstrip()
        if key:
            value = line[pos + 3:].strip() if pos + 3 <= len(line) else ""
            padded = line[pos - 1:pos] == " " and pos - 1 >= indent + len(key)
            return key, value, pos + 1, padded
    match = _LOOSE_KV_RE.match(content)
    if match and not _ERROR_RE.match(content):
        return match.group(1).rstrip(), match.group(2).strip(), None, False
    return content, None, None, False


def _build_tree(lines: list[tuple[int, str]], ignored: list[IgnoredLine],
                lenient_root: bool = False) -> tuple[_Node, list[int]]:
    """Build the indentation tree; raise on indentation or column damage. Returns (root, banner lines).

    The tree takes any line as a node, so a foreign line (a banner, a note, an elision) would be
    refused later as damage (an indentation out of line, a section cut short): it is skipped here
    and listed in ``ignored``. No line nvidia-smi -q prints has the shape of one; its own
    "NVSMI LOG" banner and grep's "--" are read first.
    """
    root = _Node("", None, 0, -1)
    stack = [root]
    banners = []
    for n, raw in lines:
        if not raw.strip():
            continue
        line = raw.expandtabs(8)
        content = line.strip()
        if _BANNER_RE.match(content) or content == "--":  # the tool's banner, grep -A/-B's group separator
            if content != "--":
                banners.append(n)
            stack = [root]
            continue
        if skip_foreign(ignored, n, content):
            continue
        key, value, colon, padded = _split(line)
        if value is None and _skip_command(ignored, n, line):
            continue
        indent = len(line) - len(line.lstrip(" "))
        parent = _parent(stack, indent, root if lenient_root else None, n, raw)
        node = _Node(key, value, n, indent, colon, value is None and bool(_ERROR_RE.match(content)))
        if colon is not None and padded and "\t" not in raw:
            _check_alignment(parent, colon, key, n, raw)
        parent.children.append(node)
        stack.append(node)
    return root, banners


def _skip_command(ignored: list[IgnoredLine], number: int, line: str) -> bool:
    """True, listing it in ``ignored``, for a line without a value at column 0 that is the echoed nvidia-smi command
    or a bare shell prompt."""
    content = line.strip()
    if line.startswith(" ") or not ("nvidia-smi" in content or _PROMPT_RE.match(content)):
        return False
    ignore_line(ignored, number, content, "echoed command" if "nvidia-smi" in content else "shell prompt")
    return True


def _parent(stack: list[_Node], indent: int, lenient: _Node | None, number: int, raw: str) -> _Node:
    """The node a line indented by ``indent`` belongs under (``stack`` is cut to it); raise when the indentation
    matches no enclosing level (the root's children are not checked when it is ``lenient``, as in a fragment)."""
    while stack[-1].indent >= indent:
        stack.pop()
    parent = stack[-1]
    if parent.children and parent.children[0].indent != indent and parent is not lenient:
        raise _err(
            "indentation (%d) matches no enclosing level (siblings at %d)" % (indent, parent.children[0].indent),
            line=number,
            text=raw,
        )
    return parent


def _check_alignment(parent: _Node, colon: int, key: str, number: int, raw: str) -> None:
    """A padded ':' out of line with its siblings' is a hand-edited or damaged line."""
    if parent.align is None:
        parent.align = (colon, number)
    elif parent.align[0] != colon:
        raise _err(
            "the ':' of %r is at column %d, its siblings' at column %d (line %d): hand-edited or damaged line"
            % (key, colon + 1, parent.align[0] + 1, parent.align[1]),
            line=number,
            text=raw,
        )


def _check_tail(root: _Node) -> None:
    """Output that stops on a header line (nothing under it) was cut there."""
    node = root
    while node.children:
        node = node.children[-1]
    if node is not root and node.value is None and not node.is_error:
        raise _err("output ends on the header %r with nothing under it: truncated" % node.key, line=node.line)


def _to_raw(node: _Node) -> Any:
    """The node as ``raw`` holds it: its value, or a dict of its children (the value under "_value")."""
    if not node.children:
        return node.value
    out: dict[str, Any] = {}
    if node.value is not None:
        out["_value"] = node.value
    repeated = set()
    for child in node.children:
        value = _to_raw(child)
        if child.key in out:
            if child.key not in repeated:
                out[child.key] = [out[child.key]]
                repeated.add(child.key)
            out[child.key].append(value)
        else:
            out[child.key] = value
    return out


# ---------------------------------------------------------------------------------------
# Typed values


def _text(node: _Node | None) -> str | None:
    """The value as printed; None for N/A spellings and for a pasted placeholder ("<masked>", "...")."""
    if node is None or node.value is None or is_not_available(node.value) or is_placeholder(node.value):
        return None
    return node.value


def _number(node: _Node | None, unit: str | None = None) -> Number | None:
    """Number of a "Key : value" node; the unit, when given, must be printed."""
    if node is None or node.value is None:
        return None
    value = node.value.strip()
    if is_not_available(value):
        return None
    if unit is not None:
        if not value.lower().endswith(unit.lower()):
            raise _err("%r: expected a number in %s, got %r" % (node.key, unit, value), line=node.line)
        value = value[: -len(unit)]
    try:
        return parse_number(value, line=node.line, kind=KIND)
    except ImplausibleNumber as exc:
        raise _err("%r: %s" % (node.key, exc.message), line=node.line) from None
    except ParseError:
        raise _err("%r: not a number: %r" % (node.key, node.value), line=node.line) from None


def _int(node: _Node | None, unit: str | None = None) -> int | None:
    number = _number(node, unit)
    if isinstance(number, float):
        assert node is not None  # a number was read from it
        raise _err("%r: expected a whole number, got %r" % (node.key, node.value), line=node.line)
    return number


def _bool(node: _Node | None, words: dict[str, bool]) -> bool | None:
    if node is None or node.value is None or _text(node) is None:
        return None
    word = _norm(node.value)
    if word not in words:
        expected = "/".join(w.title() for w in words)
        raise _err("%r: expected %s, got %r" % (node.key, expected, node.value), line=node.line)
    return words[word]


def _sum(values: list[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _value(node: _Node | None, field: GpuField) -> Any:
    """The value of ``node`` read with ``field``'s converter."""
    if field.convert == "text":
        return _text(node)
    if field.convert in ("int", "link_width"):
        return _int(node, field.unit)
    if field.convert == "number":
        return _number(node, field.unit)
    if field.convert == "enabled_disabled":
        return _bool(node, _MODE)
    if field.convert == "yes_no":
        return _bool(node, _YES_NO)
    raise ValueError("%s: no -q reader for a %r field" % (field.key, field.convert))


def _read_field(block: _Node | None, field: GpuField) -> Any:
    """``field`` under ``block`` (a GPU section or a block of it): the first of its key paths that reads a value."""
    for path in field.text:
        value = _value(block.find(path) if block is not None else None, field)
        if value is not None:
            return value
    return None


def _record(block: _Node | None, fields: tuple[GpuField, ...]) -> dict[str, Any]:
    """The record of a block's ``fields`` (None values for a block that is absent)."""
    return read_record(fields, "text", partial(_read_field, block), {})


# ---------------------------------------------------------------------------------------
# Blocks


def _reasons(block: _Node | None, warnings: list[str]) -> dict[str, bool | None]:
    reasons: dict[str, bool | None] = dict.fromkeys(_REASON_KEYS.values())
    if block is None:
        return reasons
    for node in block.walk():
        if node.value is None:
            continue
        field = _REASON_KEYS.get(_norm(node.key))
        if field is None:
            warnings.append("line %d: unknown clock event reason %r = %r" % (node.line, node.key, node.value))
            continue
        reasons[field] = _bool(node, _ACTIVE)
    return reasons


def _reason_block(section: _Node) -> _Node | None:
    for node in section.children:
        if _norm(node.key) in _REASON_BLOCKS:
            return node
    return None


def _fabric(block: _Node) -> dict[str, Any]:
    return _record(block, FABRIC_FIELDS)


def _gpu_fabric(section: _Node) -> dict[str, Any] | None:
    """The section's "Fabric" block; None without one or when every field is N/A (no NVSwitch), as the XML/CSV
    parsers."""
    block = section.child("Fabric")
    fabric = _fabric(block) if block is not None else None
    if fabric is not None and all(v is None for v in fabric.values()):
        return None
    return fabric


def _ecc_counts(block: _Node | None) -> tuple[int | None, int | None]:
    """(correctable, uncorrectable) of a "Volatile" / "Aggregate" block."""
    if block is None:
        return None, None
    correctable: list[int | None] = []
    uncorrectable: list[int | None] = []
    for sub_name, bucket in (("Single Bit", correctable), ("Double Bit", uncorrectable)):
        sub = block.child(sub_name)
        if sub is None:
            continue
        total = sub.child("Total")
        if total is not None:
            bucket.append(_int(total))
        else:
            bucket.extend(_int(node) for node in sub.children if node.value is not None)
    for node in block.children:
        if node.value is None or node.children:
            continue
        key = _norm(node.key)
        if "uncorrectable" in key:
            uncorrectable.append(_int(node))
        elif "correctable" in key:
            correctable.append(_int(node))
    return _sum(correctable), _sum(uncorrectable)


def _ecc_memory_counts(block: _Node | None, memory: str) -> tuple[int | None, int | None]:
    """(correctable, uncorrectable) of one memory kind ("SRAM" or "DRAM") in a Volatile/Aggregate block.

    The per-kind lines exist from R470 on A100 and later ("SRAM Uncorrectable" or, from R535, its two
    parts "SRAM Uncorrectable Parity" and "SRAM Uncorrectable SEC-DED"); (None, None) without them.
    """
    if block is None:
        return None, None
    correctable: list[int | None] = []
    uncorrectable: list[int | None] = []
    for node in block.children:
        if node.value is None or node.children:
            continue
        key = _norm(node.key)
        if not key.startswith(memory.lower() + " "):
            continue
        if "uncorrectable" in key:
            uncorrectable.append(_int(node))
        elif "correctable" in key:
            correctable.append(_int(node))
    return _sum(correctable), _sum(uncorrectable)


def _ecc_fields(section: _Node) -> Computed:
    """The ECC fields by key, all read at once before any other field (as the parser did before the field table):
    the sums over memory types of each scope, then the counts per memory kind."""
    ecc = section.child("ECC Errors")
    blocks = {scope: ecc.child(scope) if ecc is not None else None for scope in ("Volatile", "Aggregate")}
    counts = {}
    for scope, block in blocks.items():
        counts["ecc_errors_%s" % scope.lower()] = _ecc_counts(block)
    for scope, block in blocks.items():
        for memory in ("SRAM", "DRAM"):
            counts["ecc_errors_%s_%s" % (scope.lower(), memory.lower())] = _ecc_memory_counts(block, memory)
    computed: Computed = {}
    for prefix, (correctable, uncorrectable) in counts.items():
        computed[prefix + "_correctable"] = partial(_constant, correctable)
        computed[prefix + "_uncorrectable"] = partial(_constant, uncorrectable)
    return computed


def _constant(value: Any) -> Any:
    return value


def _retired_pages(block: _Node | None) -> dict[str, Any] | None:
    if block is None or not block.children:
        return None
    out = _record(block, RETIRED_PAGES_FIELDS)
    return out if any(v is not None for v in out.values()) else None


def _remapped_rows(block: _Node | None) -> dict[str, Any] | None:
    if block is None or not block.children:
        return None
    out = _record(block, REMAPPED_ROWS_FIELDS)
    return out if any(v is not None for v in out.values()) else None


def _processes(block: _Node | None, errors: list[str]) -> list[dict[str, Any]] | None:
    if block is None:
        return None
    if not block.children:
        if block.value is None or is_not_available(block.value) or _norm(block.value) == "none":
            return []
        if _ERROR_RE.match(block.value):
            errors.append("line %d: Processes: %s" % (block.line, block.value))
            return None
        raise _err("Processes: expected 'None' or a list, got %r" % block.value, line=block.line)
    processes = []
    instance: dict[str, int | None] = {}
    current = None
    for node in block.children:
        key = _norm(node.key)
        if key == "gpu instance id":
            instance["gpu_instance_id"] = _int(node)
        elif key == "compute instance id":
            instance["compute_instance_id"] = _int(node)
        elif key == "process id":
            current = {
                "pid": _int(node),
                "type": None,
                "name": None,
                "used_memory_mib": None,
                "gpu_instance_id": instance.get("gpu_instance_id"),
                "compute_instance_id": instance.get("compute_instance_id"),
            }
            instance = {}
            processes.append(current)
            _process_fields(current, node.children)
        elif current is not None:
            _process_fields(current, [node])
    return processes


def _process_fields(process: dict[str, Any], nodes: list[_Node]) -> None:
    for node in nodes:
        key = _norm(node.key)
        if key == "type":
            process["type"] = _text(node)
        elif key == "name":
            process["name"] = node.value if node.value and not is_placeholder(node.value) else None
        elif key == "used gpu memory":
            process["used_memory_mib"] = _int(node, "MiB")


def _gpu(section: _Node, index: int, pci_bus_id: str, warnings: list[str]) -> dict[str, Any]:
    """The per-GPU dict of one "GPU <bus id>" section: the field table's fields, and the structural ones read here."""
    errors = ["line %d: %s" % (n.line, n.key) for n in section.walk() if n.is_error]
    computed: Computed = {
        **_ecc_fields(section),
        "index": partial(_constant, index),
        "pci_bus_id": partial(_constant, pci_bus_id),
        "retired_pages": partial(_retired_pages, section.child("Retired Pages")),
        "remapped_rows": partial(_remapped_rows, section.child("Remapped Rows")),
        "clock_event_reasons": partial(_reasons, _reason_block(section), warnings),
        "fabric": partial(_gpu_fabric, section),
        "processes": partial(_processes, section.child("Processes"), errors),
        "errors": partial(_constant, errors),
        "raw": partial(_section_raw, section),
    }
    return read_record(GPU_FIELDS, "text", partial(_read_field, section), computed)


def _section_raw(section: _Node) -> Any:
    return _to_raw(section) if section.children else {}


# ---------------------------------------------------------------------------------------
# Public parsers


class _TopLevel:
    """What the top level of an output holds: the header lines ("Driver Version : ..."), the GPU sections."""

    def __init__(self, banners: list[int]) -> None:
        self.values: dict[str, Any] = dict.fromkeys(("timestamp", "driver_version", "cuda_version", "attached_gpus"))
        self.sections: list[tuple[_Node, str]] = []
        self.seen_bus: dict[str, int] = {}
        self.header_seen = bool(banners)
        self.warnings: list[str] = []

    def read(self, node: _Node) -> None:
        """Take one top-level node: a header line, a GPU section, or text worth a warning; raise on error text."""
        if self._header_line(node) or self._section(node):
            return
        if node.is_error:
            raise _err("nvidia-smi printed an error instead of data", line=node.line, text=node.key)
        if node.value is None and not node.children and not self.sections and not self.header_seen:
            self.warnings.append("line %d: skipped text before the output: %r" % (node.line, node.key[:120]))
            return
        self.warnings.append("line %d: unrecognised top-level line %r" % (node.line, node.key[:120]))

    def _header_line(self, node: _Node) -> bool:
        field = _TOP_KEYS.get(_norm(node.key))
        if node.value is None or node.children or field is None:
            return False
        if self.values[field] is not None or (self.sections and field == "timestamp"):
            raise _err("%r printed twice: two outputs pasted together; parse one at a time" % node.key, line=node.line)
        self.values[field] = _int(node) if field == "attached_gpus" else _text(node)
        self.header_seen = True
        return True

    def _section(self, node: _Node) -> bool:
        match = _GPU_HEADER_RE.match(node.key) if node.value is None else None
        if not match:
            return False
        bus = match.group(1)
        if not _BUS_ID_RE.match(bus):
            raise _err("GPU section header without a valid PCI bus id", line=node.line, text=node.key)
        if bus.lower() in self.seen_bus:
            raise _err("GPU %s printed twice (first at line %d): outputs pasted together"
                       % (bus, self.seen_bus[bus.lower()]), line=node.line)
        self.seen_bus[bus.lower()] = node.line
        self.sections.append((node, bus))
        return True


def parse_query_text(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q`` text (whole, ``-d`` or ``-i`` subset). See the module docstring."""
    ignored: list[IgnoredLine] = []
    lines = _prepare(text, ignored)
    root, banners = _build_tree(lines, ignored)
    if len(banners) > 1:
        raise _err("a second 'NVSMI LOG' banner: two outputs pasted together; parse one at a time", line=banners[1])
    top = _TopLevel(banners)
    for node in root.children:
        top.read(node)
    attached, sections, warnings = top.values["attached_gpus"], top.sections, top.warnings
    if not sections and not top.header_seen:
        raise _err(
            "no nvidia-smi -q content (no 'GPU <bus id>' section, no header lines); a fragment of it (grep -A2 "
            "Fabric, a pasted Clocks Event Reasons block) is not read here: give the whole output of nvidia-smi -q"
        )
    _check_tail(root)
    _check_gpu_count(attached, sections, root)
    if not sections and attached:
        raise _err(
            "'Attached GPUs : %s' but no GPU section follows: truncated" % attached,
            line=max(n for n, line in lines if line.strip()),
        )
    _check_sections_complete([section for section, _section_lines in sections])

    gpus = [_gpu(node, i, bus, warnings) for i, (node, bus) in enumerate(sections)]
    for gpu, (node, _bus) in zip(gpus, sections):
        if not node.children:
            warnings.append("line %d: GPU %s section is empty" % (node.line, gpu["pci_bus_id"]))
        for error in gpu["errors"]:
            warnings.append("GPU %s: %s" % (gpu["pci_bus_id"], error))
    if attached is not None and attached != len(gpus):
        warnings.append(
            "'Attached GPUs : %s' but %d GPU section(s) printed (nvidia-smi -i selects GPUs; "
            "a cut output would have raised)" % (attached, len(gpus))
        )
    result = dict(top.values)
    result["gpus"] = gpus
    result["warnings"] = warnings
    return with_ignored(result, ignored)


def _check_gpu_count(attached: int | None, sections: list[tuple[_Node, str]], root: _Node) -> None:
    """More GPU sections, or an "Attached GPUs" count, than one system can hold (:data:`MAX_GPUS_PER_NODE`) is no
    node's output: an inconsistent count, refused before any section is read."""
    if len(sections) > MAX_GPUS_PER_NODE:
        raise _err("%d GPU sections: more than the %d GPUs one system can hold (NV_MAX_DEVICES): inconsistent count"
                   % (len(sections), MAX_GPUS_PER_NODE), line=sections[MAX_GPUS_PER_NODE][0].line)
    if attached is not None and attached > MAX_GPUS_PER_NODE:
        line = next(node.line for node in root.children if _norm(node.key) == "attached gpus")
        raise _err("'Attached GPUs : %d' over %d GPU section(s): more than the %d GPUs one system can hold "
                   "(NV_MAX_DEVICES): inconsistent count" % (attached, len(sections), MAX_GPUS_PER_NODE), line=line)


def _check_sections_complete(sections: list[_Node]) -> None:
    """A full section (it has "Product Name") always ends with "Processes" (and, from R560,
    "Capabilities"); one that stops earlier was cut."""
    full = [s for s in sections if s.child("Product Name") is not None]
    for section in full:
        if section.child("Processes") is None:
            raise _err(
                "GPU section %r ends at line %d without its 'Processes' block: output truncated"
                % (section.key, section.last_line()),
                line=section.last_line(),
            )
    if len(sections) >= 2 and sections[-1].children:
        # Every GPU section of one output has the same shape (the -d subsets too): a last
        # section whose key sequence is a strict prefix of every other section's was cut.
        shape = _shape(sections[-1])
        others = [_shape(s) for s in sections[:-1]]
        if all(len(o) > len(shape) and o[: len(shape)] == shape for o in others):
            last = sections[-1]
            raise _err(
                "the last GPU section %r stops at line %d where the others continue: output truncated"
                % (last.key, last.last_line()),
                line=last.last_line(),
            )
    if len(full) >= 2:
        endings = {_norm(s.children[-1].key) for s in full[:-1]}
        last = full[-1]
        if len(endings) == 1 and _norm(last.children[-1].key) not in endings:
            raise _err(
                "the last GPU section stops at %r where every other ends with %r: output truncated"
                % (last.children[-1].key, full[0].children[-1].key),
                line=last.last_line(),
            )


def _shape(section: _Node) -> list[tuple[int, str]]:
    """The sequence of (depth, key) of everything printed in a section, except what varies
    from GPU to GPU by nature (the process list)."""
    out: list[tuple[int, str]] = []

    def visit(node: _Node, depth: int) -> None:
        for child in node.children:
            key = _norm(child.key)
            out.append((depth, key))
            if key != "processes":
                visit(child, depth + 1)

    visit(section, 0)
    return out


def parse_fabric_fragment(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q | grep -A2 Fabric`` output or a pasted "Fabric" block.

    Returns ``{"fabric": [{state, status, clique_id, cluster_uuid}, ...]}`` in order; fields
    grep cut off (or printed as N/A) are None.
    """
    ignored: list[IgnoredLine] = []
    lines = _prepare(text, ignored)
    root, _banners = _build_tree(lines, ignored, lenient_root=True)
    blocks = []
    for node in root.walk():
        if node.is_error:
            raise _err("nvidia-smi printed an error instead of data", line=node.line, text=node.key)
        if _norm(node.key) == "fabric" and (node.children or node.value is not None):
            blocks.append(node)
    if not blocks:
        raise _err("no 'Fabric' block found")
    return with_ignored({"fabric": [_fabric(block) for block in blocks]}, ignored)


def parse_clock_event_fragment(text: str) -> dict[str, Any]:
    """Parse a pasted "Clocks Event Reasons"/"Clocks Throttle Reasons" block of one GPU,
    with the "Clocks" / "Max Clocks" blocks when present. See the module docstring."""
    ignored: list[IgnoredLine] = []
    lines = _prepare(text, ignored)
    root, _banners = _build_tree(lines, ignored, lenient_root=True)
    reason_blocks, clocks, max_clocks = [], [], []
    for node in root.walk():
        if node.is_error:
            raise _err("nvidia-smi printed an error instead of data", line=node.line, text=node.key)
        key = _norm(node.key)
        if key in _REASON_BLOCKS and node.children:
            reason_blocks.append(node)
        elif key == "clocks" and node.children:
            clocks.append(node)
        elif key == "max clocks" and node.children:
            max_clocks.append(node)
    if not reason_blocks:
        raise _err("no 'Clocks Event Reasons' or 'Clocks Throttle Reasons' block found")
    for found in (reason_blocks, clocks, max_clocks):
        if len(found) > 1:
            raise _err("a second %r block: several GPUs in one fragment; split it per GPU" % found[1].key,
                       line=found[1].line)
    warnings: list[str] = []
    result: dict[str, Any] = {
        "clock_event_reasons": _reasons(reason_blocks[0], warnings),
        "reasons_block": reason_blocks[0].key,
    }
    # the clock fields read as in a GPU section, from a section of the blocks found
    section = _Node("", None, 0, -1)
    section.children = clocks[:1] + max_clocks[:1]
    result.update((key, _read_field(section, GPU_FIELD_BY_KEY[key])) for key in _FRAGMENT_CLOCKS)
    result["warnings"] = warnings
    return with_ignored(result, ignored)
