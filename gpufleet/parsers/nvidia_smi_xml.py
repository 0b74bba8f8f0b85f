# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``nvidia-smi -q -x`` (KIND ``nvidia-smi-xml``, DTD nvsmi_device v10 to v13).

Returned keys (public contract)
-------------------------------
::

    {
      "driver_version": str | None,   # <driver_version> (absent in trimmed v10 files)
      "cuda_version": str | None,     # <cuda_version>, as printed ("12.2")
      "attached_gpus": int | None,    # <attached_gpus>
      "timestamp": str | None,        # <timestamp>, as printed
      "dtd": str | None,              # "nvsmi_device_v12.dtd" from the DOCTYPE line, when present
      "gpus": [gpu],                  # one per <gpu> element, in document order
      "warnings": [str],              # e.g. attached_gpus differs from the number of <gpu> elements
      "ignored_lines": [{line, text, why}],  # ONLY when a foreign or command line around the document was left out
    }

Each ``gpu`` carries the per-GPU keys shared with the ``nvidia-smi -q`` text and CSV parsers
(None when the element is absent or reads N/A):

- ``index``: position of the <gpu> element (0-based). The XML has no index; nvidia-smi lists
  GPUs in index order, so this is the index unless the output was limited with ``-i``.
- ``pci_bus_id`` (<pci_bus_id>, else the ``id`` attribute, as printed) and every other scalar field: one per row
  of :data:`gpufleet.parsers.gpu_fields.GPU_FIELDS` with an ``xml`` path, read from the first of its paths that
  reads a value (``a|b`` in a path: either element name, e.g. <gpu_power_readings> (v12+) or <power_readings>),
  converted as the row says (``enabled_disabled`` -> bool, ``link_width`` "16x" -> 16, numbers without their unit).
- ``ecc_errors_volatile_correctable``, ``ecc_errors_volatile_uncorrectable``,
  ``ecc_errors_aggregate_correctable``, ``ecc_errors_aggregate_uncorrectable``: ints summed over
  memory types (new layout: ``sram_correctable`` + ``dram_correctable``...; ``sram_uncorrectable``
  or its ``_parity`` + ``_secded`` parts; old layout: ``single_bit``/``double_bit`` <total>, else
  the sum of their memory types). None when all are N/A.
- ``retired_pages``: {``single_bit_ecc``, ``double_bit_ecc``, ``pending`` (bool:
  pending_blacklist or pending_retirement)} or None when all N/A.
- ``remapped_rows``: {``correctable``, ``uncorrectable``, ``pending``, ``failure`` (bools)} or None
  (``<remapped_rows>N/A</remapped_rows>``).
- ``ecc_errors_{volatile,aggregate}_{sram,dram}_{correctable,uncorrectable}``: the counts per memory
  kind (new layout only; None in the old single/double-bit layout).
- ``clock_event_reasons``: {``idle``, ``applications_clocks_setting``, ``sw_power_cap``,
  ``hw_slowdown``, ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``, ``sync_boost``,
  ``sw_thermal_slowdown``, ``display_clock_setting``} -> bool | None, from
  <clocks_event_reasons> (v12+) or <clocks_throttle_reasons> (v10/v11); None when absent.
- ``fabric``: {``state``, ``status``, ``clique_id`` (int), ``cluster_uuid``} or None when absent
  or all N/A.
- ``processes``: [{``pid`` (int), ``type``, ``name``, ``used_memory_mib``}] (None without a
  <processes> element).
- ``mig_devices``: [{``index``, ``gpu_instance_id``, ``compute_instance_id``,
  ``multiprocessor_count``, ``memory_total_mib``, ``memory_used_mib``, ``raw``}]
  ([] for ``<mig_devices>None</mig_devices>``, None without the element).
- ``raw``: the <gpu> element as a nested dict: child tag -> text (stripped) or dict; a tag that
  repeats becomes a list; attributes as ``"@name"``; text beside children as ``"#text"``.

The scalar fields are read through the field table of :mod:`gpufleet.parsers.gpu_fields` (their
element paths are there); the ECC sums, the nested records and the lists are code here.

Safety and variants: the text is parsed with the standard library's expat (what
``xml.etree.ElementTree`` uses) with a line-tracking tree builder, so errors name lines. Any
``<!ENTITY`` declaration or DOCTYPE internal subset is refused (ParseError) before parsing; the
``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vNN.dtd">`` line is blanked, never resolved. ANSI
escapes, a BOM, CRLF, TAB or space indentation, srun -l / mpirun --tag-output prefixes (one rank),
and the shell command line (``$ nvidia-smi -q -x``) and foreign lines (a banner, a prompt, a note:
common's ``foreign_line``) before and after the document are handled. A placeholder (``...``) reads
as None in a text field and is refused in a numeric one.

Raises :class:`ParseError` (1-based line) for: empty input, text that is not XML (quoted, e.g.
"NVIDIA-SMI has failed ..."), malformed XML (expat's line: truncation, junk after the document,
control characters, undefined entities), elements nested more than ``MAX_DEPTH`` (64) deep (line of
the element too deep), a root other than <nvidia_smi_log>, no <gpu> element, a normalised value that is not a number /
yes-no (line of its element), a number above common's ``MAX_NUMBER`` (2^64-1), or more <gpu> elements, or an
<attached_gpus>, than the 32 GPUs one system holds (``MAX_GPUS_PER_NODE``, NV_MAX_DEVICES): an inconsistent count.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, NoReturn
from xml.parsers import expat

from gpufleet.parsers.common import (
    MAX_GPUS_PER_NODE,
    IgnoredLine,
    ImplausibleNumber,
    ParseError,
    is_not_available,
    is_placeholder,
    parse_number,
    with_ignored,
)
from gpufleet.parsers.gpu_fields import (
    CLOCK_EVENT_REASONS,
    FABRIC_FIELDS,
    GPU_FIELD_BY_KEY,
    GPU_FIELDS,
    REMAPPED_ROWS_FIELDS,
    RETIRED_PAGES_FIELDS,
    XML_REASON_CONTAINERS,
    GpuField,
    read_record,
)
from gpufleet.parsers.nvidia_smi_nvlink import prepare_lines, skip_command_or_foreign

KIND = "nvidia-smi-xml"
# Real output nests about 6 deep (nvidia_smi_log/gpu/clocks_event_reasons/...); the tree is walked recursively,
# so deeper nesting (hostile or broken output) is refused while it is parsed, before any recursion.
MAX_DEPTH = 64

_DOCTYPE_RE = re.compile(r"<!DOCTYPE\s+[\w.:-]+(?:\s+(?:SYSTEM|PUBLIC)(?:\s+(?:\"[^\"<>\[]*\"|'[^'<>\[]*'))+)?\s*>")
_DTD_NAME_RE = re.compile(r"[\"']([^\"']*\.dtd)[\"']")

Number = int | float
# A GPU's fields that its parser reads itself, by key (gpu_fields.read_record).
Computed = dict[str, Callable[[], Any]]


class _Node:
    """An XML element with the line its start tag is on."""

    __slots__ = ("tag", "attrib", "children", "parts", "line")

    def __init__(self, tag: str, attrib: dict[str, str], line: int) -> None:
        self.tag = tag
        self.attrib = attrib
        self.children: list[_Node] = []
        self.parts: list[str] = []
        self.line = line

    @property
    def text(self) -> str:
        return "".join(self.parts).strip()

    def find(self, path: str) -> _Node | None:
        """The element at ``path`` ("a/b"); a step "a|b" takes the first of its alternatives present."""
        node = self
        for step in path.split("/"):
            tags = step.split("|")
            found = next((child for tag in tags for child in node.children if child.tag == tag), None)
            if found is None:
                return None
            node = found
        return node

    def findall(self, tag: str) -> list[_Node]:
        return [child for child in self.children if child.tag == tag]


def _refuse_entities(*_args: object) -> NoReturn:
    raise ParseError("entity declarations are refused", kind=KIND)


class _TreeBuilder:
    """expat's handlers: a tree of :class:`_Node` with the input line of each element."""

    def __init__(self, parser: expat.XMLParserType, linemap: list[int]) -> None:
        self.parser = parser
        self.linemap = linemap
        self.stack: list[_Node] = []
        self.roots: list[_Node] = []

    def where(self, line: int) -> int:
        """The input line of line ``line`` of the document."""
        return self.linemap[min(max(line, 1), len(self.linemap)) - 1]

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        if len(self.stack) >= MAX_DEPTH:
            raise ParseError("elements nested more than %d deep (nvidia-smi nests about 6)" % MAX_DEPTH, kind=KIND)
        node = _Node(tag, dict(attrib), self.where(self.parser.CurrentLineNumber))
        if self.stack:
            self.stack[-1].children.append(node)
        else:
            self.roots.append(node)
        self.stack.append(node)

    def end(self, _tag: str) -> None:
        self.stack.pop()

    def data(self, chunk: str) -> None:
        if self.stack:
            self.stack[-1].parts.append(chunk)


def _build_tree(text: str, linemap: list[int]) -> _Node:
    """Parse ``text`` with expat; ``linemap[k]`` is the input line of line k + 1 of ``text``."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = _refuse_entities
    parser.UnparsedEntityDeclHandler = _refuse_entities
    builder = _TreeBuilder(parser, linemap)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise ParseError("malformed XML: %s" % expat.ErrorString(exc.code), line=builder.where(exc.lineno),
                         kind=KIND) from None
    except ParseError as exc:
        exc.line = builder.where(parser.CurrentLineNumber)
        raise
    return builder.roots[0]


def _to_dict(node: _Node) -> Any:
    """The element as ``raw`` holds it: its text, or a dict of children, attributes and text."""
    if not node.children and not node.attrib:
        return node.text
    out: dict[str, Any] = {}
    for name, value in node.attrib.items():
        out["@" + name] = value
    counts: dict[str, int] = {}
    for child in node.children:
        counts[child.tag] = counts.get(child.tag, 0) + 1
    for child in node.children:
        child_value = _to_dict(child)
        if counts[child.tag] > 1:
            out.setdefault(child.tag, []).append(child_value)
        else:
            out[child.tag] = child_value
    if node.text or not node.children:
        out["#text"] = node.text
    return out


def _text(node: _Node | None, path: str) -> str | None:
    """Stripped text at ``path`` under ``node``; None when absent or an N/A spelling."""
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.children:
        return None
    value = found.text
    if is_not_available(value) or is_placeholder(value):
        return None
    return value


def _number(node: _Node | None, path: str, unit: str | None = None) -> Number | None:
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.children:
        return None
    value = found.text
    if unit and value.lower().endswith(unit.lower()):
        value = value[: -len(unit)].strip()
    try:
        return parse_number(value, line=found.line, kind=KIND)
    except ImplausibleNumber as exc:
        raise ParseError("<%s>: %s" % (found.tag, exc.message), line=found.line, kind=KIND) from None
    except ParseError:
        raise ParseError("<%s>: not a number: %r" % (found.tag, found.text), line=found.line, kind=KIND) from None


def _flag(node: _Node | None, path: str) -> bool | None:
    value = _text(node, path)
    if value is None:
        return None
    low = value.lower()
    if low in ("enabled", "yes", "active", "true", "on"):
        return True
    if low in ("disabled", "no", "not active", "false", "off"):
        return False
    found = node.find(path) if node is not None else None
    assert found is not None  # _text read it
    raise ParseError("<%s>: not a yes/no value: %r" % (found.tag, value), line=found.line, kind=KIND)


def _width(node: _Node | None, path: str) -> Number | None:
    """A PCIe link width: "16x" -> 16."""
    found = node.find(path) if node is not None else None
    if found is None or found.children or is_not_available(found.text):
        return None
    match = re.fullmatch(r"(\d+)\s*x", found.text.strip(), re.IGNORECASE)
    if match:
        return int(match.group(1))
    return _number(node, path)


def _value(node: _Node | None, path: str, field: GpuField) -> Any:
    """The value of ``field`` at ``path`` under ``node``, read with the field's converter."""
    if field.convert == "text":
        return _text(node, path)
    if field.convert in ("int", "number"):
        return _number(node, path, field.unit)
    if field.convert == "link_width":
        return _width(node, path)
    if field.convert in ("enabled_disabled", "yes_no"):
        return _flag(node, path)
    raise ValueError("%s: no XML reader for a %r field" % (field.key, field.convert))


def _read_field(node: _Node | None, field: GpuField) -> Any:
    """``field`` under ``node`` (a <gpu> or a block of it): the first of its element paths that reads a value."""
    for path in field.xml:
        value = _value(node, path, field)
        if value is not None:
            return value
    return None


def _record(node: _Node | None, fields: tuple[GpuField, ...], computed: Computed | None = None) -> dict[str, Any]:
    """The record of a block's ``fields``; None values for a block that is absent."""
    return read_record(fields, "xml", partial(_read_field, node), computed or {})


def _ecc_scope(scope: _Node | None) -> tuple[Number | None, Number | None]:
    """(correctable, uncorrectable) of one <volatile>/<aggregate> element."""
    if scope is None:
        return None, None
    single, double = scope.find("single_bit"), scope.find("double_bit")
    if single is not None or double is not None:  # old layout (<= R470 style, still on Pascal/Volta)
        return _old_ecc_sum(single), _old_ecc_sum(double)
    correctable: list[Number | None] = []
    uncorrectable: list[Number | None] = []
    names = {child.tag for child in scope.children}
    for child in scope.children:
        if child.children:
            continue
        tag = child.tag
        if tag.endswith("_correctable"):
            correctable.append(_number(scope, tag))
        elif tag.endswith("_uncorrectable"):
            uncorrectable.append(_number(scope, tag))
        elif re.search(r"_uncorrectable_\w+$", tag):
            if tag.split("_uncorrectable_")[0] + "_uncorrectable" not in names:  # parts of a printed total
                uncorrectable.append(_number(scope, tag))
    return _sum(correctable), _sum(uncorrectable)


def _ecc_memory(scope: _Node | None, memory: str) -> tuple[Number | None, Number | None]:
    """(correctable, uncorrectable) of one memory kind (``sram``/``dram``) in a <volatile>/<aggregate>."""
    if scope is None:
        return None, None
    names = {child.tag for child in scope.children}
    correctable: list[Number | None] = []
    uncorrectable: list[Number | None] = []
    for child in scope.children:
        tag = child.tag
        if child.children or not tag.startswith(memory + "_"):
            continue
        if tag == memory + "_correctable":
            correctable.append(_number(scope, tag))
        elif tag == memory + "_uncorrectable":
            uncorrectable.append(_number(scope, tag))
        elif tag.startswith(memory + "_uncorrectable_") and memory + "_uncorrectable" not in names:
            uncorrectable.append(_number(scope, tag))  # the parts (parity, SEC-DED) of an unprinted total
    return _sum(correctable), _sum(uncorrectable)


def _ecc_memory_count(scope: _Node | None, memory: str, position: int) -> Number | None:
    return _ecc_memory(scope, memory)[position]


def _old_ecc_sum(node: _Node | None) -> Number | None:
    if node is None:
        return None
    total = _number(node, "total")
    if total is not None:
        return total
    return _sum([_number(node, child.tag) for child in node.children if child.tag != "total" and not child.children])


def _sum(values: list[Number | None]) -> Number | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def _ecc_counts(gpu: _Node) -> Computed:
    """The ECC fields by key: the sums over memory types are read at once, each scope's before any other field
    (as the parser did before the field table), the per-memory-kind counts when their field is due."""
    ecc = gpu.find("ecc_errors")
    computed: Computed = {}
    for scope in ("volatile", "aggregate"):
        node = ecc.find(scope) if ecc is not None else None
        correctable, uncorrectable = _ecc_scope(node)
        computed["ecc_errors_%s_correctable" % scope] = partial(_constant, correctable)
        computed["ecc_errors_%s_uncorrectable" % scope] = partial(_constant, uncorrectable)
        for memory in ("sram", "dram"):
            for position, count in enumerate(("correctable", "uncorrectable")):
                key = "ecc_errors_%s_%s_%s" % (scope, memory, count)
                computed[key] = partial(_ecc_memory_count, node, memory, position)
    return computed


def _constant(value: Any) -> Any:
    return value


def _all_none(record: dict[str, Any]) -> bool:
    return all(value is None for value in record.values())


def _retired_pages(gpu: _Node) -> dict[str, Any] | None:
    node = gpu.find("retired_pages")
    if node is None or not node.children:
        return None
    out = _record(node, RETIRED_PAGES_FIELDS, {"pending": partial(_pages_pending, node)})
    return None if _all_none(out) else out


def _pages_pending(node: _Node) -> bool | None:
    """True when <pending_blacklist> or <pending_retirement> says so (DTDs print one or the other)."""
    flags = [_flag(node, "pending_blacklist"), _flag(node, "pending_retirement")]
    if any(flag is not None for flag in flags):
        return any(flag for flag in flags if flag is not None)
    return None


def _remapped_rows(gpu: _Node) -> dict[str, Any] | None:
    node = gpu.find("remapped_rows")
    if node is None or not node.children:
        return None
    out = _record(node, REMAPPED_ROWS_FIELDS)
    return None if _all_none(out) else out


def _reasons(gpu: _Node) -> dict[str, bool | None] | None:
    for container, prefix in XML_REASON_CONTAINERS:
        node = gpu.find(container)
        if node is not None:
            return {reason.key: _first_flag(node, [prefix + name for name in reason.xml])
                    for reason in CLOCK_EVENT_REASONS}
    return None


def _first_flag(node: _Node, paths: list[str]) -> bool | None:
    for path in paths:
        value = _flag(node, path)
        if value is not None:
            return value
    return None


def _fabric(gpu: _Node) -> dict[str, Any] | None:
    node = gpu.find("fabric")
    if node is None:
        return None
    out = _record(node, FABRIC_FIELDS)
    return None if _all_none(out) else out


def _processes(gpu: _Node) -> list[dict[str, Any]] | None:
    node = gpu.find("processes")
    if node is None:
        return None
    out = []
    for proc in node.findall("process_info"):
        out.append(
            {
                "pid": _number(proc, "pid"),
                "type": _text(proc, "type"),
                "name": _text(proc, "process_name"),
                "used_memory_mib": _number(proc, "used_memory", "MiB"),
            }
        )
    return out


def _mig_devices(gpu: _Node) -> list[dict[str, Any]] | None:
    node = gpu.find("mig_devices")
    if node is None:
        return None
    out = []
    for dev in node.findall("mig_device"):
        out.append(
            {
                "index": _number(dev, "index"),
                "gpu_instance_id": _number(dev, "gpu_instance_id"),
                "compute_instance_id": _number(dev, "compute_instance_id"),
                "multiprocessor_count": _number(dev, "device_attributes/shared/multiprocessor_count"),
                "memory_total_mib": _number(dev, "fb_memory_usage/total", "MiB"),
                "memory_used_mib": _number(dev, "fb_memory_usage/used", "MiB"),
                "raw": _to_dict(dev),
            }
        )
    return out


def _pci_bus_id(gpu: _Node) -> str | None:
    """<pci_bus_id>, else the <gpu id="..."> attribute."""
    return _read_field(gpu, GPU_FIELD_BY_KEY["pci_bus_id"]) or gpu.attrib.get("id")


def _normalise(gpu: _Node, position: int) -> dict[str, Any]:
    """The per-GPU dict: the field table's fields, and the structural ones read here."""
    computed: Computed = {
        **_ecc_counts(gpu),
        "index": partial(_constant, position),
        "pci_bus_id": partial(_pci_bus_id, gpu),
        "retired_pages": partial(_retired_pages, gpu),
        "remapped_rows": partial(_remapped_rows, gpu),
        "clock_event_reasons": partial(_reasons, gpu),
        "fabric": partial(_fabric, gpu),
        "processes": partial(_processes, gpu),
        "mig_devices": partial(_mig_devices, gpu),
        "raw": partial(_to_dict, gpu),
    }
    return read_record(GPU_FIELDS, "xml", partial(_read_field, gpu), computed)


def _outside_document(ignored: list[IgnoredLine], number: int, line: str) -> bool:
    """True for a line around the document that is no part of it (blank, foreign, the nvidia-smi command);
    each one but a blank line is listed in ``ignored``."""
    return not line.strip() or skip_command_or_foreign(ignored, number, line)


def _document_lines(text: str, ignored: list[IgnoredLine]) -> list[tuple[int, str]]:
    """The numbered lines of the document: those around it that are no part of it (a prompt, a banner, the command)
    left out and listed in ``ignored``; any other text around it stays and is refused."""
    groups = prepare_lines(text, KIND)
    if len(groups) > 1:
        raise ParseError("output of %d ranks in one text; parse each rank separately" % len(groups), kind=KIND)
    lines = list(groups[0][1])
    while lines and _outside_document(ignored, *lines[0]):
        lines.pop(0)
    while lines and _outside_document(ignored, *lines[-1]):
        lines.pop()
    ignored.sort(key=lambda entry: entry["line"])
    if not lines:
        raise ParseError("no XML content", kind=KIND)
    first_n, first = lines[0]
    if not first.lstrip().startswith("<"):
        raise ParseError("not nvidia-smi XML; the tool printed", line=first_n, kind=KIND, text=first)
    for n, line in lines:
        if "<!ENTITY" in line.upper():
            raise ParseError("entity declarations are refused", line=n, kind=KIND, text=line)
    return lines


def _prepare(text: str, ignored: list[IgnoredLine]) -> tuple[str, list[int], str | None]:
    """Return (xml text, input line number of each of its lines, dtd name) from the raw input.

    Lines before and after the document that are no part of it (a prompt, a banner, the command)
    are left out and listed in ``ignored``; any other text around it stays and is refused.
    """
    lines = _document_lines(text, ignored)
    body = "\n".join(line for _n, line in lines).lstrip()
    dtd = None
    match = _DOCTYPE_RE.search(body)
    if match:
        named = _DTD_NAME_RE.search(match.group(0))
        dtd = named.group(1) if named else None
        body = body[: match.start()] + "\n" * match.group(0).count("\n") + body[match.end():]
    leftover = body.upper().find("<!DOCTYPE")
    if leftover >= 0:
        line = lines[body.count("\n", 0, leftover)][0]
        raise ParseError("DOCTYPE refused (internal subset, or a second document)", line=line, kind=KIND)
    return body, [n for n, _line in lines], dtd


def _check_gpu_count(root: _Node, gpus: list[_Node]) -> None:
    """More <gpu> elements, or an <attached_gpus>, than one system can hold (common's MAX_GPUS_PER_NODE,
    NV_MAX_DEVICES) is no node's output: refused as an inconsistent count before any <gpu> is read."""
    if len(gpus) > MAX_GPUS_PER_NODE:
        raise ParseError("%d <gpu> elements: more than the %d GPUs one system can hold (NV_MAX_DEVICES): inconsistent "
                         "count" % (len(gpus), MAX_GPUS_PER_NODE), line=gpus[MAX_GPUS_PER_NODE].line, kind=KIND)
    attached = _number(root, "attached_gpus")
    if attached is not None and attached > MAX_GPUS_PER_NODE:
        element = root.find("attached_gpus")
        raise ParseError("<attached_gpus> %s over %d <gpu> element(s): more than the %d GPUs one system can hold "
                         "(NV_MAX_DEVICES): inconsistent count" % (attached, len(gpus), MAX_GPUS_PER_NODE),
                         line=element.line if element is not None else None, kind=KIND)


def parse_query_xml(text: str) -> dict[str, Any]:
    """Parse ``nvidia-smi -q -x`` output (see the module docstring)."""
    ignored: list[IgnoredLine] = []
    body, linemap, dtd = _prepare(text, ignored)
    root = _build_tree(body, linemap)
    if root.tag != "nvidia_smi_log":
        raise ParseError("root element is <%s>, not <nvidia_smi_log>" % root.tag, line=root.line, kind=KIND)
    gpus = root.findall("gpu")
    if not gpus:
        raise ParseError("no <gpu> element", line=root.line, kind=KIND)
    _check_gpu_count(root, gpus)
    attached = _number(root, "attached_gpus")
    warnings: list[str] = []
    result: dict[str, Any] = {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": attached,
        "timestamp": _text(root, "timestamp"),
        "dtd": dtd,
        "gpus": [_normalise(gpu, position) for position, gpu in enumerate(gpus)],
        "warnings": warnings,
    }
    if attached is not None and attached != len(gpus):
        warnings.append(
            "attached_gpus is %d but the output has %d <gpu> element(s); indexes are positions in this output"
            % (attached, len(gpus))
        )
    return with_ignored(result, ignored)
