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
- ``pci_bus_id`` (<pci_bus_id>, else the ``id`` attribute, as printed), ``name``
  (<product_name>), ``product_brand``, ``product_architecture``, ``uuid``, ``serial``,
  ``minor_number`` (int), ``board_part_number``, ``vbios_version``.
- ``persistence_mode`` (bool), ``mig_mode_current`` (str, e.g. "Enabled").
- ``memory_total_mib``, ``memory_used_mib`` (<fb_memory_usage>).
- ``ecc_mode_current``, ``ecc_mode_pending`` (bool).
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
- ``gpu_recovery_action``: ``<gpu_recovery_action>`` as printed (R570+), None when absent or N/A.
- ``temperature_c``, ``temperature_slowdown_c``, ``temperature_shutdown_c`` (gpu_temp,
  gpu_temp_slow_threshold, gpu_temp_max_threshold).
- ``power_draw_w`` (power_draw, else average_power_draw, else instant_power_draw),
  ``power_limit_w`` (enforced_power_limit; current_power_limit in <gpu_power_readings>),
  ``power_max_limit_w``.
- ``clocks_graphics_mhz``, ``clocks_sm_mhz``, ``clocks_mem_mhz``, ``clocks_max_graphics_mhz``,
  ``clocks_max_sm_mhz``, ``clocks_max_mem_mhz``.
- ``clock_event_reasons``: {``idle``, ``applications_clocks_setting``, ``sw_power_cap``,
  ``hw_slowdown``, ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``, ``sync_boost``,
  ``sw_thermal_slowdown``, ``display_clock_setting``} -> bool | None, from
  <clocks_event_reasons> (v12+) or <clocks_throttle_reasons> (v10/v11); None when absent.
- ``pcie_link_gen_current``, ``pcie_link_gen_max``, ``pcie_link_width_current``,
  ``pcie_link_width_max`` (ints; "16x" -> 16).
- ``fabric``: {``state``, ``status``, ``clique_id`` (int), ``cluster_uuid``} or None when absent
  or all N/A.
- ``processes``: [{``pid`` (int), ``type``, ``name``, ``used_memory_mib``}] (None without a
  <processes> element).
- ``mig_devices``: [{``index``, ``gpu_instance_id``, ``compute_instance_id``,
  ``multiprocessor_count``, ``memory_total_mib``, ``memory_used_mib``, ``raw``}]
  ([] for ``<mig_devices>None</mig_devices>``, None without the element).
- ``raw``: the <gpu> element as a nested dict: child tag -> text (stripped) or dict; a tag that
  repeats becomes a list; attributes as ``"@name"``; text beside children as ``"#text"``.

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
from typing import List
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
from gpufleet.parsers.nvidia_smi_nvlink import prepare_lines, skip_command_or_foreign

KIND = "nvidia-smi-xml"
# Real output nests about 6 deep (nvidia_smi_log/gpu/clocks_event_reasons/...); the tree is walked recursively,
# so deeper nesting (hostile or broken output) is refused while it is parsed, before any recursion.
MAX_DEPTH = 64

_DOCTYPE_RE = re.compile(r"<!DOCTYPE\s+[\w.:-]+(?:\s+(?:SYSTEM|PUBLIC)(?:\s+(?:\"[^\"<>\[]*\"|'[^'<>\[]*'))+)?\s*>")
_DTD_NAME_RE = re.compile(r"[\"']([^\"']*\.dtd)[\"']")

_REASONS = (
    ("idle", "gpu_idle"),
    ("applications_clocks_setting", "applications_clocks_setting"),
    ("sw_power_cap", "sw_power_cap"),
    ("hw_slowdown", "hw_slowdown"),
    ("hw_thermal_slowdown", "hw_thermal_slowdown"),
    ("hw_power_brake_slowdown", "hw_power_brake_slowdown"),
    ("sync_boost", "sync_boost"),
    ("sw_thermal_slowdown", "sw_thermal_slowdown"),
    ("display_clock_setting", "display_clocks_setting"),
)


class _Node:
    """An XML element with the line its start tag is on."""

    __slots__ = ("tag", "attrib", "children", "parts", "line")

    def __init__(self, tag, attrib, line):
        self.tag = tag
        self.attrib = attrib
        self.children = []
        self.parts = []
        self.line = line

    @property
    def text(self):
        return "".join(self.parts).strip()

    def find(self, path):
        node = self
        for step in path.split("/"):
            node = next((child for child in node.children if child.tag == step), None)
            if node is None:
                return None
        return node

    def findall(self, tag):
        return [child for child in self.children if child.tag == tag]


def _refuse_entities(*_args):
    raise ParseError("entity declarations are refused", kind=KIND)


def _build_tree(text, linemap):
    """Parse ``text`` with expat; ``linemap[k]`` is the input line of line k + 1 of ``text``."""

    def where(line):
        return linemap[min(max(line, 1), len(linemap)) - 1]

    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = _refuse_entities
    parser.UnparsedEntityDeclHandler = _refuse_entities
    stack = []
    roots = []

    def start(tag, attrib):
        if len(stack) >= MAX_DEPTH:
            raise ParseError("elements nested more than %d deep (nvidia-smi nests about 6)" % MAX_DEPTH, kind=KIND)
        node = _Node(tag, dict(attrib), where(parser.CurrentLineNumber))
        if stack:
            stack[-1].children.append(node)
        else:
            roots.append(node)
        stack.append(node)

    def end(_tag):
        stack.pop()

    def data(chunk):
        if stack:
            stack[-1].parts.append(chunk)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = data
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise ParseError("malformed XML: %s" % expat.ErrorString(exc.code), line=where(exc.lineno), kind=KIND) from None
    except ParseError as exc:
        exc.line = where(parser.CurrentLineNumber)
        raise
    return roots[0]


def _to_dict(node):
    if not node.children and not node.attrib:
        return node.text
    out = {}
    for name, value in node.attrib.items():
        out["@" + name] = value
    counts = {}
    for child in node.children:
        counts[child.tag] = counts.get(child.tag, 0) + 1
    for child in node.children:
        value = _to_dict(child)
        if counts[child.tag] > 1:
            out.setdefault(child.tag, []).append(value)
        else:
            out[child.tag] = value
    if node.text or not node.children:
        out["#text"] = node.text
    return out


def _text(node, path):
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


def _number(node, path, unit=None):
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


def _first_number(node, paths, unit=None):
    for path in paths:
        value = _number(node, path, unit)
        if value is not None:
            return value
    return None


def _flag(node, path):
    value = _text(node, path)
    if value is None:
        return None
    low = value.lower()
    if low in ("enabled", "yes", "active", "true", "on"):
        return True
    if low in ("disabled", "no", "not active", "false", "off"):
        return False
    found = node.find(path)
    raise ParseError("<%s>: not a yes/no value: %r" % (found.tag, value), line=found.line, kind=KIND)


def _ecc_scope(scope):
    """(correctable, uncorrectable) of one <volatile>/<aggregate> element."""
    if scope is None:
        return None, None
    single, double = scope.find("single_bit"), scope.find("double_bit")
    if single is not None or double is not None:  # old layout (<= R470 style, still on Pascal/Volta)
        return _old_ecc_sum(single), _old_ecc_sum(double)
    correctable, uncorrectable = [], []
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


def _ecc_memory(scope, memory):
    """(correctable, uncorrectable) of one memory kind (``sram``/``dram``) in a <volatile>/<aggregate>."""
    if scope is None:
        return None, None
    names = {child.tag for child in scope.children}
    correctable, uncorrectable = [], []
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


def _old_ecc_sum(node):
    if node is None:
        return None
    total = _number(node, "total")
    if total is not None:
        return total
    return _sum([_number(node, child.tag) for child in node.children if child.tag != "total" and not child.children])


def _sum(values):
    values = [value for value in values if value is not None]
    return sum(values) if values else None


def _retired_pages(gpu):
    node = gpu.find("retired_pages")
    if node is None or not node.children:
        return None
    out = {
        "single_bit_ecc": _number(node, "multiple_single_bit_retirement/retired_count"),
        "double_bit_ecc": _number(node, "double_bit_retirement/retired_count"),
        "pending": None,
    }
    flags = [_flag(node, "pending_blacklist"), _flag(node, "pending_retirement")]
    if any(flag is not None for flag in flags):
        out["pending"] = any(flag for flag in flags if flag is not None)
    if all(value is None for value in out.values()):
        return None
    return out


def _remapped_rows(gpu):
    node = gpu.find("remapped_rows")
    if node is None or not node.children:
        return None
    out = {
        "correctable": _number(node, "remapped_row_corr"),
        "uncorrectable": _number(node, "remapped_row_unc"),
        "pending": _flag(node, "remapped_row_pending"),
        "failure": _flag(node, "remapped_row_failure"),
    }
    if all(value is None for value in out.values()):
        return None
    return out


def _reasons(gpu):
    for container, prefix in (("clocks_event_reasons", "clocks_event_reason_"), ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        node = gpu.find(container)
        if node is not None:
            out = {}
            for key, suffix in _REASONS:
                value = _flag(node, prefix + suffix)
                if value is None and suffix == "display_clocks_setting":
                    value = _flag(node, prefix + "display_clock_setting")
                out[key] = value
            return out
    return None


def _width(node, path):
    found = node.find(path) if node is not None else None
    if found is None or found.children or is_not_available(found.text):
        return None
    match = re.fullmatch(r"(\d+)\s*x", found.text.strip(), re.IGNORECASE)
    if match:
        return int(match.group(1))
    return _number(node, path)


def _fabric(gpu):
    node = gpu.find("fabric")
    if node is None:
        return None
    out = {
        "state": _text(node, "state"),
        "status": _text(node, "status"),
        "clique_id": _first_number(node, ("cliqueId", "clique_id")),
        "cluster_uuid": _text(node, "clusterUuid") or _text(node, "cluster_uuid"),
    }
    if all(value is None for value in out.values()):
        return None
    return out


def _processes(gpu):
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


def _mig_devices(gpu):
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


def _power_node(gpu):
    for name in ("gpu_power_readings", "power_readings"):
        node = gpu.find(name)
        if node is not None:
            return node
    return None


def _normalise(gpu, position):
    pci = gpu.find("pci")
    link = pci.find("pci_gpu_link_info") if pci is not None else None
    power = _power_node(gpu)
    temperature = gpu.find("temperature")
    clocks, max_clocks = gpu.find("clocks"), gpu.find("max_clocks")
    ecc = gpu.find("ecc_errors")
    volatile_node = ecc.find("volatile") if ecc is not None else None
    aggregate_node = ecc.find("aggregate") if ecc is not None else None
    volatile, aggregate = _ecc_scope(volatile_node), _ecc_scope(aggregate_node)
    return {
        "index": position,
        "pci_bus_id": _text(gpu, "pci/pci_bus_id") or gpu.attrib.get("id"),
        "name": _text(gpu, "product_name"),
        "product_brand": _text(gpu, "product_brand"),
        "product_architecture": _text(gpu, "product_architecture"),
        "uuid": _text(gpu, "uuid"),
        "serial": _text(gpu, "serial"),
        "minor_number": _number(gpu, "minor_number"),
        "board_part_number": _text(gpu, "board_part_number"),
        "vbios_version": _text(gpu, "vbios_version"),
        "persistence_mode": _flag(gpu, "persistence_mode"),
        "mig_mode_current": _text(gpu, "mig_mode/current_mig"),
        "memory_total_mib": _number(gpu, "fb_memory_usage/total", "MiB"),
        "memory_used_mib": _number(gpu, "fb_memory_usage/used", "MiB"),
        "ecc_mode_current": _flag(gpu, "ecc_mode/current_ecc"),
        "ecc_mode_pending": _flag(gpu, "ecc_mode/pending_ecc"),
        "ecc_errors_volatile_correctable": volatile[0],
        "ecc_errors_volatile_uncorrectable": volatile[1],
        "ecc_errors_aggregate_correctable": aggregate[0],
        "ecc_errors_aggregate_uncorrectable": aggregate[1],
        "ecc_errors_volatile_sram_correctable": _ecc_memory(volatile_node, "sram")[0],
        "ecc_errors_volatile_sram_uncorrectable": _ecc_memory(volatile_node, "sram")[1],
        "ecc_errors_aggregate_sram_correctable": _ecc_memory(aggregate_node, "sram")[0],
        "ecc_errors_aggregate_sram_uncorrectable": _ecc_memory(aggregate_node, "sram")[1],
        "ecc_errors_volatile_dram_correctable": _ecc_memory(volatile_node, "dram")[0],
        "ecc_errors_volatile_dram_uncorrectable": _ecc_memory(volatile_node, "dram")[1],
        "ecc_errors_aggregate_dram_correctable": _ecc_memory(aggregate_node, "dram")[0],
        "ecc_errors_aggregate_dram_uncorrectable": _ecc_memory(aggregate_node, "dram")[1],
        "retired_pages": _retired_pages(gpu),
        "remapped_rows": _remapped_rows(gpu),
        "gpu_recovery_action": _text(gpu, "gpu_recovery_action"),
        "temperature_c": _number(temperature, "gpu_temp", "C"),
        "temperature_slowdown_c": _number(temperature, "gpu_temp_slow_threshold", "C"),
        "temperature_shutdown_c": _number(temperature, "gpu_temp_max_threshold", "C"),
        "power_draw_w": _first_number(power, ("power_draw", "average_power_draw", "instant_power_draw"), "W"),
        "power_limit_w": _first_number(power, ("enforced_power_limit", "current_power_limit"), "W"),
        "power_max_limit_w": _number(power, "max_power_limit", "W"),
        "clocks_graphics_mhz": _number(clocks, "graphics_clock", "MHz"),
        "clocks_sm_mhz": _number(clocks, "sm_clock", "MHz"),
        "clocks_mem_mhz": _number(clocks, "mem_clock", "MHz"),
        "clocks_max_graphics_mhz": _number(max_clocks, "graphics_clock", "MHz"),
        "clocks_max_sm_mhz": _number(max_clocks, "sm_clock", "MHz"),
        "clocks_max_mem_mhz": _number(max_clocks, "mem_clock", "MHz"),
        "clock_event_reasons": _reasons(gpu),
        "pcie_link_gen_current": _number(link, "pcie_gen/current_link_gen"),
        "pcie_link_gen_max": _number(link, "pcie_gen/max_link_gen"),
        "pcie_link_width_current": _width(link, "link_widths/current_link_width"),
        "pcie_link_width_max": _width(link, "link_widths/max_link_width"),
        "fabric": _fabric(gpu),
        "processes": _processes(gpu),
        "mig_devices": _mig_devices(gpu),
        "raw": _to_dict(gpu),
    }


def _outside_document(ignored: List[IgnoredLine], number: int, line: str) -> bool:
    """True for a line around the document that is no part of it (blank, foreign, the nvidia-smi command);
    each one but a blank line is listed in ``ignored``."""
    return not line.strip() or skip_command_or_foreign(ignored, number, line)


def _prepare(text, ignored):
    """Return (xml text, input line number of each of its lines, dtd name) from the raw input.

    Lines before and after the document that are no part of it (a prompt, a banner, the command)
    are left out and listed in ``ignored``; any other text around it stays and is refused.
    """
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


def _check_gpu_count(root, gpus):
    """More <gpu> elements, or an <attached_gpus>, than one system can hold (common's MAX_GPUS_PER_NODE,
    NV_MAX_DEVICES) is no node's output: refused as an inconsistent count before any <gpu> is read."""
    if len(gpus) > MAX_GPUS_PER_NODE:
        raise ParseError("%d <gpu> elements: more than the %d GPUs one system can hold (NV_MAX_DEVICES): inconsistent "
                         "count" % (len(gpus), MAX_GPUS_PER_NODE), line=gpus[MAX_GPUS_PER_NODE].line, kind=KIND)
    attached = _number(root, "attached_gpus")
    if attached is not None and attached > MAX_GPUS_PER_NODE:
        raise ParseError("<attached_gpus> %s over %d <gpu> element(s): more than the %d GPUs one system can hold "
                         "(NV_MAX_DEVICES): inconsistent count" % (attached, len(gpus), MAX_GPUS_PER_NODE),
                         line=root.find("attached_gpus").line, kind=KIND)


def parse_query_xml(text):
    """Parse ``nvidia-smi -q -x`` output (see the module docstring)."""
    ignored = []
    body, linemap, dtd = _prepare(text, ignored)
    root = _build_tree(body, linemap)
    if root.tag != "nvidia_smi_log":
        raise ParseError("root element is <%s>, not <nvidia_smi_log>" % root.tag, line=root.line, kind=KIND)
    gpus = root.findall("gpu")
    if not gpus:
        raise ParseError("no <gpu> element", line=root.line, kind=KIND)
    _check_gpu_count(root, gpus)
    result = {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": _number(root, "attached_gpus"),
        "timestamp": _text(root, "timestamp"),
        "dtd": dtd,
        "gpus": [_normalise(gpu, position) for position, gpu in enumerate(gpus)],
        "warnings": [],
    }
    if result["attached_gpus"] is not None and result["attached_gpus"] != len(gpus):
        result["warnings"].append(
            "attached_gpus is %d but the output has %d <gpu> element(s); indexes are positions in this output"
            % (result["attached_gpus"], len(gpus))
        )
    return with_ignored(result, ignored)
