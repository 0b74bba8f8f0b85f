# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node's GPUs are and what state they are in (pure, controller side).

Inputs are the parsers' results: ``nvidia-smi-xml`` (primary) and/or ``nvidia-smi-q`` text
(fills what the XML lacks), ``nvlink-status`` and ``nvlink-errors``, and ``lspci``. Output is
the ``gpufleet_gpu`` fact: one normalised dict per GPU with its NVLink links merged in, the
``lspci`` count of NVIDIA GPUs held against the count NVML sees, and a summary a judge can
hold against the seller's claim.

Outputs that contradict each other (the XML and the text list different GPUs; ``nvlink -s``
lists GPUs ``-q`` does not) raise :class:`InventoryMismatch`: the facts cannot be trusted.
Smaller disagreements (a UUID or name that differs between two outputs for the same index,
``attached_gpus`` differing from the sections printed) go to ``warnings``.

When neither ``-q`` query can be read but ``nvlink -s`` can (:func:`build_nvlink_only`), the fact
still carries the NVLink state of each GPU ``nvlink -s`` lists, every other GPU field null,
``query_failures`` naming why: a GPU sold with NVLink that reports none is judged whichever query ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from gpufleet.facts.raw import FactError, RawReader, first_line
from gpufleet.facts.shapes import (Gpu, GpuClockSummary, GpuFactGroup, GpuFacts, GpuInventorySummary, GpuLinkSummary,
                                   GpuMemorySummary, GpuNvlink, GpuProcessSummary, GpuQueryTop, GpuSources, GpuSummary,
                                   InactiveNvlink, LspciView, NvlinkSummary)
from gpufleet.parsers.gpu_fields import GPU_FIELDS
from gpufleet.parsers.lspci import nvidia_gpus

# The per-GPU keys of the fact, in this order: the parsers' field table (gpu_fields.GPU_FIELDS) less the parser's own
# record (``raw``) and the -q text's device maximum, which no check reads. ``errors`` is text the tool printed inside a
# GPU's section instead of data (text parser only). Their types: shapes.GpuQueryFields.
_NOT_IN_FACT = ("raw", "pcie_link_gen_device_max")
GPU_KEYS = tuple(field.key for field in GPU_FIELDS if field.key not in _NOT_IN_FACT)

CLOCK_EVENT_REASONS = (
    "idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "display_clock_setting",
)

# nvlink -e counters that mean a link misbehaved (summed in the summary).
NVLINK_ERROR_COUNTERS = ("replay_errors", "recovery_errors", "crc_errors")

# A count (ECC errors, retired pages) or a measure (watts) summed over the GPUs.
NumberT = TypeVar("NumberT", int, float)

_BUS_ID_RE = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


class InventoryMismatch(ValueError):
    """Two outputs of the same node contradict each other; the message says how."""


def normalise_bus_id(bus_id: str | None) -> str | None:
    """``"00000000:1B:00.0"`` / ``"1b:00.0"`` -> ``"0000:1b:00.0"``; None when unreadable."""
    if not bus_id:
        return None
    match = _BUS_ID_RE.match(bus_id.strip())
    if match is None:
        return None
    domain, bus, dev, func = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain, 16) if domain else 0, int(bus, 16), int(dev, 16), func)


def _indexes(indexes: Iterable[int]) -> str:
    """'0-7' style rendering of a sorted index list for messages."""
    values = sorted(indexes)
    if values and values == list(range(values[0], values[-1] + 1)) and len(values) > 2:
        return "%d-%d" % (values[0], values[-1])
    return ", ".join(str(v) for v in values) or "none"


def _copy_gpu(parsed: Mapping[str, Any]) -> dict[str, Any]:
    gpu = {key: parsed.get(key) for key in GPU_KEYS}
    if gpu["errors"] is None:
        gpu["errors"] = []
    if gpu["mig_devices"]:
        gpu["mig_devices"] = [{k: v for k, v in mig.items() if k != "raw"} for mig in gpu["mig_devices"]]
    return gpu


def _fill(primary: dict[str, Any], secondary: Mapping[str, Any]) -> list[str]:
    """Fill None values of ``primary`` from ``secondary`` (dict values key by key); return filled keys."""
    filled = []
    for key in GPU_KEYS:
        mine, theirs = primary.get(key), secondary.get(key)
        if theirs is None or theirs == []:
            continue
        if mine is None or (key == "errors" and not mine):
            primary[key] = theirs
            filled.append(key)
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            for sub, value in theirs.items():
                if mine.get(sub) is None and value is not None:
                    mine[sub] = value
                    filled.append("%s.%s" % (key, sub))
    return filled


def merge_queries(xml: Mapping[str, Any] | None = None,
                  text: Mapping[str, Any] | None = None) -> tuple[GpuQueryTop, list[dict[str, Any]], list[str]]:
    """Per-GPU dicts from the XML (primary) and the text (fills gaps), plus the top-level keys.

    Returns ``(top, gpus, warnings)``. Raises InventoryMismatch when both were given and they
    list a different number of GPUs or different PCI bus ids.
    """
    primary = xml if xml is not None else text
    if primary is None:
        raise ValueError("merge_queries needs the XML or the text")
    warnings: list[str] = []
    for label, parsed in (("nvidia-smi -q -x", xml), ("nvidia-smi -q", text)):
        if parsed is not None:
            warnings.extend("%s: %s" % (label, warning) for warning in parsed.get("warnings") or [])
    gpus = [_copy_gpu(parsed) for parsed in primary.get("gpus") or []]
    if xml is not None and text is not None:
        _check_same_gpus(xml, text)
        by_bus = {normalise_bus_id(g.get("pci_bus_id")): g for g in text.get("gpus") or []}
        for gpu in gpus:
            gpu["filled_from_text"] = _fill(gpu, by_bus[normalise_bus_id(gpu["pci_bus_id"])])
        for key in ("driver_version", "cuda_version"):
            if xml.get(key) and text.get(key) and xml.get(key) != text.get(key):
                warnings.append("%s differs: %s (-q -x) vs %s (-q)" % (key, xml.get(key), text.get(key)))
    return _query_top(primary, text if xml is not None else None), gpus, warnings


def _check_same_gpus(xml: Mapping[str, Any], text: Mapping[str, Any]) -> None:
    """InventoryMismatch when the two queries list a different number of GPUs or different bus ids."""
    xml_ids = [normalise_bus_id(g.get("pci_bus_id")) for g in xml.get("gpus") or []]
    text_ids = [normalise_bus_id(g.get("pci_bus_id")) for g in text.get("gpus") or []]
    if len(xml_ids) != len(text_ids):
        raise InventoryMismatch(
            "`nvidia-smi -q -x` lists %d GPU(s) but `nvidia-smi -q` lists %d: the two queries disagree"
            % (len(xml_ids), len(text_ids))
        )
    if sorted(xml_ids, key=str) != sorted(text_ids, key=str):
        raise InventoryMismatch(
            "`nvidia-smi -q -x` and `nvidia-smi -q` list different GPUs: bus ids %s vs %s"
            % (", ".join(str(i) for i in xml_ids), ", ".join(str(i) for i in text_ids))
        )


def _query_top(primary: Mapping[str, Any], filler: Mapping[str, Any] | None) -> GpuQueryTop:
    """The node-wide keys of ``primary``, each null one from ``filler`` (the text, when the XML leads)."""

    def pick(key: str) -> Any:
        value = primary.get(key)
        return filler.get(key) if value is None and filler is not None else value

    return {"driver_version": pick("driver_version"), "cuda_version": pick("cuda_version"),
            "timestamp": pick("timestamp"), "attached_gpus": pick("attached_gpus")}


def _status_by_index(parsed: Mapping[str, Any] | None, label: str, gpus: Sequence[Mapping[str, Any]],
                     warnings: list[str]) -> dict[int, dict[str, Any]]:
    """Map GPU index -> the nvlink parser's entry; InventoryMismatch when the GPU lists differ."""
    if parsed is None:
        return {}
    warnings.extend("%s: %s" % (label, warning) for warning in parsed.get("warnings") or [])
    entries = {}
    for entry in parsed.get("gpus") or []:
        entries[entry["index"]] = entry
    nvml = {gpu["index"]: gpu for gpu in gpus}
    extra = set(entries) - set(nvml)
    missing = set(nvml) - set(entries)
    if extra or (missing and not parsed.get("elided")):
        raise InventoryMismatch(
            "`%s` lists %d GPU(s) (%s) but nvidia-smi -q lists %d (%s): the outputs disagree"
            % (label, len(entries), _indexes(entries), len(nvml), _indexes(nvml))
        )
    for index, entry in sorted(entries.items()):
        gpu = nvml[index]
        if entry.get("uuid") and gpu.get("uuid") and entry["uuid"].lower() != gpu["uuid"].lower():
            warnings.append("%s: GPU %d UUID %s differs from the -q output's %s"
                            % (label, index, entry["uuid"], gpu["uuid"]))
        if entry.get("name") and gpu.get("name") and entry["name"] != gpu["name"]:
            warnings.append("%s: GPU %d is named %r, the -q output says %r"
                            % (label, index, entry["name"], gpu["name"]))
    return entries


def merge_nvlink(gpus: list[dict[str, Any]], status: Mapping[str, Any] | None = None,
                 errors: Mapping[str, Any] | None = None, status_failure: str | None = None,
                 errors_failure: str | None = None, collected: bool = True) -> list[str]:
    """Attach ``nvlink`` to every GPU dict (in place); return the warnings.

    ``status``/``errors`` are the nvlink parsers' results (None when not available);
    ``*_failure`` the tool's message when it exited non-zero without parseable output.
    With ``collected=False`` every GPU gets ``nvlink: None`` (not asked).
    """
    warnings: list[str] = []
    if not collected:
        for gpu in gpus:
            gpu["nvlink"] = None
        return warnings
    status_by = _status_by_index(status, "nvidia-smi nvlink -s", gpus, warnings)
    errors_by = _status_by_index(errors, "nvidia-smi nvlink -e", gpus, warnings)
    for gpu in gpus:
        st = status_by.get(gpu["index"])
        er = errors_by.get(gpu["index"])
        nvlink: GpuNvlink = {
            "supported": st.get("supported") if st else None,
            "message": st.get("message") if st else status_failure,
            "links": _merged_links(st, er),
            "elided": bool((st or {}).get("elided") or (er or {}).get("elided")),
            "errors_message": er.get("message") if er else errors_failure,
        }
        if st is None and status is not None and status.get("elided"):
            nvlink["message"] = "not in the (elided) nvlink -s output"
        gpu["nvlink"] = nvlink
    return warnings


def _merged_links(status: Mapping[str, Any] | None, errors: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """One GPU's links of ``nvlink -s`` with the counters of ``nvlink -e`` merged in by link number (a link only
    ``-e`` printed has ``active`` null; ``-s``'s ``active`` wins)."""
    links: dict[int, dict[str, Any]] = {}
    for link in (status or {}).get("links") or []:
        links[link["link"]] = dict(link)
    for link in (errors or {}).get("links") or []:
        merged = links.setdefault(link["link"], {"link": link["link"], "active": None, "speed_gbs": None})
        for key, value in link.items():
            if key == "active" and merged.get("active") is not None:
                continue
            merged[key] = value
    return [links[k] for k in sorted(links)]


def lspci_crosscheck(gpus: Sequence[Mapping[str, Any]], lspci: Mapping[str, Any] | None) -> LspciView:
    """The lspci view of the GPUs: counts, and bus ids seen by only one side."""
    if lspci is None:
        return {"lspci_gpu_count": None, "lspci_gpus": None, "missing_from_nvml": None, "lspci_only_bus_ids": None,
                "nvml_only_bus_ids": None}
    seen: list[str] = [device["address"] for device in nvidia_gpus(lspci.get("devices") or [])]
    nvml = [normalise_bus_id(gpu.get("pci_bus_id")) for gpu in gpus]
    return {
        "lspci_gpu_count": len(seen),
        "lspci_gpus": seen,
        "missing_from_nvml": len(seen) - len(gpus),
        "lspci_only_bus_ids": [address for address in seen if address not in nvml],
        "nvml_only_bus_ids": [address for address in nvml if address not in seen],
    }


def _all_true(values: Iterable[Any]) -> bool | None:
    """True when every value is True, False when any is False, else None (unknown)."""
    values = list(values)
    if any(value is False for value in values):
        return False
    if values and all(value is True for value in values):
        return True
    return None


def _any_true(values: Iterable[Any]) -> bool | None:
    """True when any value is True, False when all are known and False, else None."""
    values = list(values)
    if any(value is True for value in values):
        return True
    if values and all(value is False for value in values):
        return False
    return None


def _distinct(values: Iterable[Any]) -> list[Any]:
    found = []
    for value in values:
        if value is not None and value not in found:
            found.append(value)
    return sorted(found, key=lambda v: (str(type(v)), v))


def _total(values: Iterable[NumberT | None]) -> NumberT | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _sub(block: object, sub: str) -> Any:
    """``block[sub]`` of a GPU's dict-valued key (``fabric``, ``retired_pages``, ...); None without the block."""
    return block.get(sub) if isinstance(block, dict) else None


def _below(current: float | None, maximum: float | None) -> bool:
    """Both known and ``current`` below ``maximum``."""
    return current is not None and maximum is not None and current < maximum


def active_reasons(gpu: Mapping[str, Any]) -> list[str]:
    """Names of the clock event (throttle) reasons reported Active for one GPU."""
    reasons = gpu.get("clock_event_reasons") or {}
    return [name for name in CLOCK_EVENT_REASONS if reasons.get(name) is True]


def _nvlink_summary(gpus: Sequence[Gpu]) -> NvlinkSummary:
    with_nvlink = [(gpu, nvlink) for gpu in gpus if (nvlink := gpu.get("nvlink")) is not None]
    if not with_nvlink:
        return {
            "nvlink_collected": False,
            "nvlink_active_links": None,
            "nvlink_inactive_links": None,
            "nvlink_speeds_gbs": None,
            "nvlink_unsupported_gpus": None,
            "nvlink_no_active_link_gpus": None,
            "nvlink_error_totals": None,
            "nvlink_gpus_with_errors": None,
        }
    inactive: list[InactiveNvlink] = []
    speeds: list[Any] = []
    unsupported, no_active, with_errors = [], [], []
    totals: dict[str, float] = {}
    active_count = 0
    for gpu, nvlink in with_nvlink:
        if nvlink["supported"] is False:
            unsupported.append(gpu["index"])
        active_here = 0
        errors_here = False
        for link in nvlink["links"]:
            if link.get("active") is True:
                active_here += 1
                speeds.append(link.get("speed_gbs"))
            elif link.get("active") is False:
                inactive.append({"gpu": gpu["index"], "link": link["link"]})
            for counter in NVLINK_ERROR_COUNTERS:
                if isinstance(link.get(counter), (int, float)):
                    totals[counter] = totals.get(counter, 0) + link[counter]
                    errors_here = errors_here or link[counter] > 0
        if nvlink["supported"] is True and active_here == 0:
            no_active.append(gpu["index"])
        if errors_here:
            with_errors.append(gpu["index"])
        active_count += active_here
    return {
        "nvlink_collected": True,
        "nvlink_active_links": active_count,
        "nvlink_inactive_links": inactive,
        "nvlink_speeds_gbs": _distinct(speeds),
        "nvlink_unsupported_gpus": unsupported,
        "nvlink_no_active_link_gpus": no_active,
        "nvlink_error_totals": totals or None,
        "nvlink_gpus_with_errors": with_errors,
    }


def summarise(gpus: Sequence[Gpu]) -> GpuSummary:
    """The judgement-ready summary of the per-GPU dicts (see docs/facts/gpu_facts.md)."""
    return {**_inventory_summary(gpus), **_memory_summary(gpus), **_clock_summary(gpus), **_link_summary(gpus),
            **_process_summary(gpus), **_nvlink_summary(gpus)}


def _inventory_summary(gpus: Sequence[Gpu]) -> GpuInventorySummary:
    return {
        "gpu_count": len(gpus),
        "names": _distinct(gpu.get("name") for gpu in gpus),
        "memory_total_mib": _distinct(gpu.get("memory_total_mib") for gpu in gpus),
        "vbios_versions": _distinct(gpu.get("vbios_version") for gpu in gpus),
        "board_part_numbers": _distinct(gpu.get("board_part_number") for gpu in gpus),
        "persistence_mode_all": _all_true(gpu.get("persistence_mode") for gpu in gpus),
        "mig_enabled_gpus": [gpu["index"] for gpu in gpus if (gpu.get("mig_mode_current") or "").lower() == "enabled"],
    }


def _memory_summary(gpus: Sequence[Gpu]) -> GpuMemorySummary:
    retired = [gpu.get("retired_pages") for gpu in gpus]
    remapped = [gpu.get("remapped_rows") for gpu in gpus]
    return {
        "ecc_enabled_all": _all_true(gpu.get("ecc_mode_current") for gpu in gpus),
        "ecc_errors_volatile_uncorrectable_total": _total(gpu.get("ecc_errors_volatile_uncorrectable") for gpu in gpus),
        "ecc_errors_aggregate_uncorrectable_total": _total(gpu.get("ecc_errors_aggregate_uncorrectable")
                                                           for gpu in gpus),
        "ecc_errors_volatile_correctable_total": _total(gpu.get("ecc_errors_volatile_correctable") for gpu in gpus),
        "ecc_errors_aggregate_correctable_total": _total(gpu.get("ecc_errors_aggregate_correctable") for gpu in gpus),
        "retired_pages_pending_any": _any_flag(retired, "pending"),
        "retired_pages_pending_gpus": _flagged(gpus, retired, "pending"),
        "retired_pages_double_bit_total": _total(_sub(block, "double_bit_ecc") for block in retired),
        "retired_pages_single_bit_total": _total(_sub(block, "single_bit_ecc") for block in retired),
        "remapped_rows_pending_any": _any_flag(remapped, "pending"),
        "remapped_rows_failure_any": _any_flag(remapped, "failure"),
        "remapped_rows_pending_gpus": _flagged(gpus, remapped, "pending"),
        "remapped_rows_failure_gpus": _flagged(gpus, remapped, "failure"),
        "remapped_rows_uncorrectable_total": _total(_sub(block, "uncorrectable") for block in remapped),
    }


def _any_flag(blocks: Sequence[object], flag: str) -> bool | None:
    """:func:`_any_true` of one flag over the GPUs that report the block (A100+ report remapping, not retirement)."""
    return _any_true(_sub(block, flag) for block in blocks if block)


def _flagged(gpus: Sequence[Gpu], blocks: Sequence[object], flag: str) -> list[int]:
    """The indexes of the GPUs whose block (one per GPU, in order) has ``flag`` True."""
    return [gpu["index"] for gpu, block in zip(gpus, blocks) if _sub(block, flag) is True]


def _clock_summary(gpus: Sequence[Gpu]) -> GpuClockSummary:
    throttled = []
    by_reason: dict[str, list[int]] = {}
    for gpu in gpus:
        reasons = active_reasons(gpu)
        for name in reasons:
            by_reason.setdefault(name, []).append(gpu["index"])
        if [name for name in reasons if name != "idle"]:
            throttled.append(gpu["index"])
    temperatures = [celsius for celsius in (gpu.get("temperature_c") for gpu in gpus) if celsius is not None]
    return {
        "throttled_gpus": throttled,
        "clock_event_reasons_active": by_reason,
        "temperature_max_c": max(temperatures, default=None),
        "power_draw_total_w": _total(gpu.get("power_draw_w") for gpu in gpus),
    }


def _link_summary(gpus: Sequence[Gpu]) -> GpuLinkSummary:
    # A GPU outside an NVSwitch fabric prints Fabric State N/A (read as None): not counted.
    fabric_gpus = [gpu for gpu in gpus if _sub(gpu.get("fabric"), "state") is not None]
    return {
        "pcie_width_degraded_gpus": [gpu["index"] for gpu in gpus
                                     if _below(gpu.get("pcie_link_width_current"), gpu.get("pcie_link_width_max"))],
        "pcie_gen_below_max_gpus": [gpu["index"] for gpu in gpus
                                    if _below(gpu.get("pcie_link_gen_current"), gpu.get("pcie_link_gen_max"))],
        "fabric_states": _distinct(_sub(gpu.get("fabric"), "state") for gpu in fabric_gpus),
        "fabric_statuses": _distinct(_sub(gpu.get("fabric"), "status") for gpu in fabric_gpus),
        "fabric_not_ready_gpus": [
            gpu["index"]
            for gpu in fabric_gpus
            if _sub(gpu.get("fabric"), "state").lower() != "completed"
            or (_sub(gpu.get("fabric"), "status") or "success").lower() != "success"
        ],
    }


def _process_summary(gpus: Sequence[Gpu]) -> GpuProcessSummary:
    return {
        "compute_processes": sum(len(gpu.get("processes") or []) for gpu in gpus),
        "gpus_with_processes": [gpu["index"] for gpu in gpus if gpu.get("processes")],
        "gpus_reporting_errors": [gpu["index"] for gpu in gpus if gpu.get("errors")],
    }


def _as_gpus(records: list[dict[str, Any]]) -> list[Gpu]:
    """The per-GPU dicts as the fact's ``gpus`` once every key of ``Gpu`` is set: GPU_KEYS are copied by name, which a
    TypedDict does not follow, so the claim is made here, after ``nvlink`` and ``active_clock_event_reasons``."""
    return cast("list[Gpu]", records)


def build_inventory(xml: Mapping[str, Any] | None = None, text: Mapping[str, Any] | None = None,
                    nvlink_status: Mapping[str, Any] | None = None, nvlink_errors: Mapping[str, Any] | None = None,
                    lspci: Mapping[str, Any] | None = None, failures: Mapping[str, str | None] | None = None,
                    nvlink_collected: bool = True) -> GpuFacts:
    """The whole ``gpufleet_gpu`` fact from the parsed outputs.

    ``failures`` maps ``nvlink_status``/``nvlink_errors``/``lspci`` to the message of a tool that
    could not be read (exited non-zero, or is not installed); each one also becomes a warning.
    """
    failures = dict(failures or {})
    top, records, warnings = merge_queries(xml, text)
    warnings.extend(
        merge_nvlink(
            records,
            nvlink_status,
            nvlink_errors,
            status_failure=failures.get("nvlink_status"),
            errors_failure=failures.get("nvlink_errors"),
            collected=nvlink_collected,
        )
    )
    lspci_view = lspci_crosscheck(records, lspci)
    for address in lspci_view["nvml_only_bus_ids"] or []:
        warnings.append("GPU %s seen by nvidia-smi is not an NVIDIA GPU in the lspci listing" % address)
    warnings.extend(message for key in ("nvlink_status", "nvlink_errors", "lspci") if (message := failures.get(key)))
    for gpu in records:
        gpu["active_clock_event_reasons"] = active_reasons(gpu)
    gpus = _as_gpus(records)
    return {**top, "gpu_count": len(gpus), **lspci_view,
            "sources": _sources(xml, text, nvlink_status, nvlink_errors, lspci), "query_failures": [], "gpus": gpus,
            "summary": summarise(gpus), "warnings": warnings}


def _sources(xml: object, text: object, nvlink_status: object, nvlink_errors: object, lspci: object) -> GpuSources:
    """Which outputs were parsed and used."""
    return {
        "xml": xml is not None,
        "text": text is not None,
        "nvlink_status": nvlink_status is not None,
        "nvlink_errors": nvlink_errors is not None,
        "lspci": lspci is not None,
    }


def _nvlink_listed_gpu(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A GPU as ``nvlink -s`` lists it: its index, name and UUID as printed, every ``-q`` field null."""
    gpu: dict[str, Any] = {key: None for key in GPU_KEYS}
    gpu.update(index=entry["index"], name=entry.get("name") or None, uuid=entry.get("uuid"), errors=[])
    gpu["active_clock_event_reasons"] = []
    return gpu


def build_nvlink_only(nvlink_status: Mapping[str, Any], nvlink_errors: Mapping[str, Any] | None = None,
                      lspci: Mapping[str, Any] | None = None, failures: Mapping[str, str | None] | None = None,
                      query_failures: Iterable[str] = ()) -> GpuFacts:
    """The ``gpufleet_gpu`` fact when neither ``nvidia-smi -q -x`` nor ``-q`` could be read.

    The GPUs are those ``nvlink -s`` lists (``nvlink_status``, parsed), each with its NVLink state and
    ``nvlink -e`` counters; everything ``-q`` prints is null. ``query_failures`` (the messages of the two
    queries) stay in the fact and lead ``warnings``, so the GPU checks say what was not measured and why.
    ``gpu_count`` is the GPUs listed, null when the output was elided (``[...]``). NVIDIA bus ids are not
    printed by ``nvlink -s``: lspci gives its count and addresses, nothing is matched against them.
    """
    failures = dict(failures or {})
    records = [_nvlink_listed_gpu(entry) for entry in nvlink_status.get("gpus") or []]
    warnings = ["%s; the GPU facts hold only what `nvidia-smi nvlink -s` printed" % message
                for message in query_failures]
    warnings.extend(merge_nvlink(records, nvlink_status, nvlink_errors, errors_failure=failures.get("nvlink_errors")))
    lspci_view = lspci_crosscheck([], lspci)
    lspci_view["missing_from_nvml"] = lspci_view["lspci_only_bus_ids"] = lspci_view["nvml_only_bus_ids"] = None
    warnings.extend(message for key in ("nvlink_errors", "lspci") if (message := failures.get(key)))
    gpus = _as_gpus(records)
    return {"driver_version": None, "cuda_version": None, "timestamp": None, "attached_gpus": None,
            "gpu_count": None if nvlink_status.get("elided") else len(gpus), **lspci_view,
            "sources": _sources(None, None, nvlink_status, nvlink_errors, lspci),
            "query_failures": list(query_failures), "gpus": gpus, "summary": summarise(gpus), "warnings": warnings}


# --- from the collector's raw results

def _soft(reader: RawReader, key: str, kind: str) -> tuple[Any, str | None]:
    """Parse ``key`` when it exited 0; a non-zero exit is not fatal for nvlink queries.

    nvidia-smi prints "not supported in MIG mode" / "all links are inActive" in place of links
    (exit 0 on the drivers recorded); some drivers exit non-zero instead. Then the output is
    parsed when it can be, else the tool's first line is kept as the GPU's NVLink message.
    Returns ``(parsed or None, failure message or None)``. A timeout, or damaged output with
    exit 0, fails as any other output does.
    """
    entry = reader.raw.get(key)
    if entry is None:
        return None, None
    if entry.get("error") and entry.get("error") != "not_found":
        # timed out, skipped after another query's timeout, could not start: the NVLink state is
        # unknown (the check says not judged), the rest of the GPU facts stand
        return None, "`%s` %s" % (reader.command_label(key), entry["error"])
    if entry.get("error") or entry.get("rc") == 0:
        return reader.parsed(key, kind), None
    said = first_line(entry.get("stderr")) or first_line(entry.get("stdout")) or "no output"
    failure = "`%s` exited %s: %s" % (reader.command_label(key), entry.get("rc"), said)
    try:
        return reader.parsed(key, kind, allow_rc=(entry.get("rc"),)), None
    except FactError:
        return None, failure


def _lspci(reader: RawReader) -> tuple[Any, str | None]:
    """Parsed lspci output, or ``(None, why)`` when lspci is absent or printed nothing."""
    entry = reader.raw.get("lspci")
    if entry is None:
        return None, None
    if entry.get("error") == "not_found":
        return None, "%s not found on the node: the lspci GPU count is unknown" % entry["cmd"][0]
    if not reader.output("lspci").strip():
        return None, ("`%s` printed nothing (no PCI access?): the lspci GPU count is unknown"
                      % reader.command_label("lspci"))
    return reader.parsed("lspci", "lspci"), None


def _queries(reader: RawReader) -> tuple[Any, Any, list[FactError]]:
    """``(xml, text, failures)``: the two ``-q`` queries (None when not collected or unreadable) and the
    FactError of each that failed; either query is enough when the other fails."""
    parsed: dict[str, Any] = {}
    failed: list[FactError] = []
    for key, kind in (("query_xml", "nvidia-smi-xml"), ("query_text", "nvidia-smi-q")):
        if key not in reader.raw:
            parsed[key] = None
            continue
        try:
            parsed[key] = reader.parsed(key, kind)
        except FactError as exc:
            parsed[key] = None
            failed.append(exc)
    return parsed["query_xml"], parsed["query_text"], failed


def _without_queries(reader: RawReader, failed: list[FactError]) -> GpuFacts:
    """The fact from ``nvlink -s`` alone when neither ``-q`` query was read (:func:`build_nvlink_only`).

    Without a readable ``nvlink -s`` there is nothing to judge: the first query's failure is raised as before.
    """
    failed = failed or [FactError("%s: neither `nvidia-smi -q -x` nor `nvidia-smi -q` was collected" % reader.host)]
    try:
        status, _status_failure = _soft(reader, "nvlink_status", "nvlink-status")
    except FactError:
        status = None
    if status is None:
        raise failed[0]
    try:
        errors, errors_failure = _soft(reader, "nvlink_errors", "nvlink-errors")
    except FactError as exc:
        errors, errors_failure = None, str(exc)
    try:
        lspci, lspci_failure = _lspci(reader)
    except FactError as exc:
        lspci, lspci_failure = None, str(exc)
    failures = {"nvlink_errors": errors_failure, "lspci": lspci_failure}
    try:
        return build_nvlink_only(status, errors, lspci, failures=failures, query_failures=[str(exc) for exc in failed])
    except InventoryMismatch as exc:
        raise FactError("%s: %s" % (reader.host, exc)) from None


def gather(reader: RawReader) -> GpuFacts:
    """The ``gpufleet_gpu`` fact from one host's raw collector results."""
    xml, text, failed = _queries(reader)
    if xml is None and text is None:
        return _without_queries(reader, failed)
    failures: dict[str, str | None] = {}
    status, failures["nvlink_status"] = _soft(reader, "nvlink_status", "nvlink-status")
    errors, failures["nvlink_errors"] = _soft(reader, "nvlink_errors", "nvlink-errors")
    lspci, failures["lspci"] = _lspci(reader)
    collected = "nvlink_status" in reader.raw or "nvlink_errors" in reader.raw
    try:
        fact = build_inventory(xml, text, status, errors, lspci, failures=failures, nvlink_collected=collected)
    except InventoryMismatch as exc:
        raise FactError("%s: %s" % (reader.host, exc)) from None
    fact["query_failures"] = [str(exc) for exc in failed]
    fact["warnings"] = ["%s; the GPU facts come from the other query" % exc for exc in failed] + fact["warnings"]
    return fact


def build_facts(reader: RawReader) -> GpuFactGroup:
    """``{"gpufleet_gpu": ...}`` for Ansible from one host's raw gpu_facts results."""
    return {"gpufleet_gpu": gather(reader)}
