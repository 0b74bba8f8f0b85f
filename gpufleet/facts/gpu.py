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

from gpufleet.parsers.lspci import nvidia_gpus
from gpufleet.facts.raw import FactError, first_line

# The per-GPU keys of the fact, in this order; the parsers' shared contract plus ``errors``
# (text the tool printed inside a GPU's section instead of data; text parser only).
GPU_KEYS = (
    "index",
    "pci_bus_id",
    "name",
    "product_brand",
    "product_architecture",
    "uuid",
    "serial",
    "minor_number",
    "board_part_number",
    "vbios_version",
    "persistence_mode",
    "mig_mode_current",
    "memory_total_mib",
    "memory_used_mib",
    "ecc_mode_current",
    "ecc_mode_pending",
    "ecc_errors_volatile_correctable",
    "ecc_errors_volatile_uncorrectable",
    "ecc_errors_aggregate_correctable",
    "ecc_errors_aggregate_uncorrectable",
    "ecc_errors_volatile_sram_correctable",
    "ecc_errors_volatile_sram_uncorrectable",
    "ecc_errors_aggregate_sram_correctable",
    "ecc_errors_aggregate_sram_uncorrectable",
    "ecc_errors_volatile_dram_correctable",
    "ecc_errors_volatile_dram_uncorrectable",
    "ecc_errors_aggregate_dram_correctable",
    "ecc_errors_aggregate_dram_uncorrectable",
    "retired_pages",
    "remapped_rows",
    "gpu_recovery_action",
    "temperature_c",
    "temperature_slowdown_c",
    "temperature_shutdown_c",
    "power_draw_w",
    "power_limit_w",
    "power_max_limit_w",
    "clocks_graphics_mhz",
    "clocks_sm_mhz",
    "clocks_mem_mhz",
    "clocks_max_graphics_mhz",
    "clocks_max_sm_mhz",
    "clocks_max_mem_mhz",
    "clock_event_reasons",
    "pcie_link_gen_current",
    "pcie_link_gen_max",
    "pcie_link_width_current",
    "pcie_link_width_max",
    "replays_since_reset",
    "fabric",
    "processes",
    "mig_devices",
    "errors",
)

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

_BUS_ID_RE = re.compile(r"^(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$")


class InventoryMismatch(ValueError):
    """Two outputs of the same node contradict each other; the message says how."""


def normalise_bus_id(bus_id):
    """``"00000000:1B:00.0"`` / ``"1b:00.0"`` -> ``"0000:1b:00.0"``; None when unreadable."""
    if not bus_id:
        return None
    match = _BUS_ID_RE.match(bus_id.strip())
    if match is None:
        return None
    domain, bus, dev, func = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain, 16) if domain else 0, int(bus, 16), int(dev, 16), func)


def _indexes(values):
    """'0-7' style rendering of a sorted index list for messages."""
    values = sorted(values)
    if values and values == list(range(values[0], values[-1] + 1)) and len(values) > 2:
        return "%d-%d" % (values[0], values[-1])
    return ", ".join(str(v) for v in values) or "none"


def _copy_gpu(parsed):
    gpu = {key: parsed.get(key) for key in GPU_KEYS}
    if gpu["errors"] is None:
        gpu["errors"] = []
    if gpu["mig_devices"]:
        gpu["mig_devices"] = [{k: v for k, v in mig.items() if k != "raw"} for mig in gpu["mig_devices"]]
    return gpu


def _fill(primary, secondary):
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


def merge_queries(xml=None, text=None):
    """Per-GPU dicts from the XML (primary) and the text (fills gaps), plus the top-level keys.

    Returns ``(top, gpus, warnings)``. Raises InventoryMismatch when both were given and they
    list a different number of GPUs or different PCI bus ids.
    """
    if xml is None and text is None:
        raise ValueError("merge_queries needs the XML or the text")
    warnings = []
    for label, parsed in (("nvidia-smi -q -x", xml), ("nvidia-smi -q", text)):
        if parsed is not None:
            warnings.extend("%s: %s" % (label, warning) for warning in parsed.get("warnings") or [])
    primary = xml if xml is not None else text
    gpus = [_copy_gpu(parsed) for parsed in primary.get("gpus") or []]
    top = {key: primary.get(key) for key in ("driver_version", "cuda_version", "timestamp", "attached_gpus")}
    if xml is not None and text is not None:
        xml_ids = [normalise_bus_id(g.get("pci_bus_id")) for g in xml.get("gpus") or []]
        text_ids = [normalise_bus_id(g.get("pci_bus_id")) for g in text.get("gpus") or []]
        if len(xml_ids) != len(text_ids):
            raise InventoryMismatch(
                "`nvidia-smi -q -x` lists %d GPU(s) but `nvidia-smi -q` lists %d: the two queries disagree" % (len(xml_ids), len(text_ids))
            )
        if sorted(xml_ids, key=str) != sorted(text_ids, key=str):
            raise InventoryMismatch(
                "`nvidia-smi -q -x` and `nvidia-smi -q` list different GPUs: bus ids %s vs %s"
                % (", ".join(str(i) for i in xml_ids), ", ".join(str(i) for i in text_ids))
            )
        by_bus = {normalise_bus_id(g.get("pci_bus_id")): g for g in text.get("gpus") or []}
        for gpu in gpus:
            gpu["filled_from_text"] = _fill(gpu, by_bus[normalise_bus_id(gpu["pci_bus_id"])])
        for key in top:
            if top[key] is None and text.get(key) is not None:
                top[key] = text.get(key)
        for key in ("driver_version", "cuda_version"):
            if xml.get(key) and text.get(key) and xml.get(key) != text.get(key):
                warnings.append("%s differs: %s (-q -x) vs %s (-q)" % (key, xml.get(key), text.get(key)))
    return top, gpus, warnings


def _status_by_index(parsed, label, gpus, warnings):
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
            warnings.append("%s: GPU %d UUID %s differs from the -q output's %s" % (label, index, entry["uuid"], gpu["uuid"]))
        if entry.get("name") and gpu.get("name") and entry["name"] != gpu["name"]:
            warnings.append("%s: GPU %d is named %r, the -q output says %r" % (label, index, entry["name"], gpu["name"]))
    return entries


def merge_nvlink(gpus, status=None, errors=None, status_failure=None, errors_failure=None, collected=True):
    """Attach ``nvlink`` to every GPU dict (in place); return the warnings.

    ``status``/``errors`` are the nvlink parsers' results (None when not available);
    ``*_failure`` the tool's message when it exited non-zero without parseable output.
    With ``collected=False`` every GPU gets ``nvlink: None`` (not asked).
    """
    warnings = []
    if not collected:
        for gpu in gpus:
            gpu["nvlink"] = None
        return warnings
    status_by = _status_by_index(status, "nvidia-smi nvlink -s", gpus, warnings)
    errors_by = _status_by_index(errors, "nvidia-smi nvlink -e", gpus, warnings)
    for gpu in gpus:
        st = status_by.get(gpu["index"])
        er = errors_by.get(gpu["index"])
        links = {}
        for link in (st or {}).get("links") or []:
            links[link["link"]] = dict(link)
        for link in (er or {}).get("links") or []:
            merged = links.setdefault(link["link"], {"link": link["link"], "active": None, "speed_gbs": None})
            for key, value in link.items():
                if key == "active" and merged.get("active") is not None:
                    continue
                merged[key] = value
        nvlink = {
            "supported": st.get("supported") if st else None,
            "message": st.get("message") if st else status_failure,
            "links": [links[k] for k in sorted(links)],
            "elided": bool((st or {}).get("elided") or (er or {}).get("elided")),
            "errors_message": er.get("message") if er else errors_failure,
        }
        if st is None and status is not None and status.get("elided"):
            nvlink["message"] = "not in the (elided) nvlink -s output"
        gpu["nvlink"] = nvlink
    return warnings


def lspci_crosscheck(gpus, lspci):
    """The lspci view of the GPUs: counts, and bus ids seen by only one side."""
    if lspci is None:
        return {"lspci_gpu_count": None, "lspci_gpus": None, "missing_from_nvml": None, "lspci_only_bus_ids": None, "nvml_only_bus_ids": None}
    seen = [device["address"] for device in nvidia_gpus(lspci.get("devices") or [])]
    nvml = [normalise_bus_id(gpu.get("pci_bus_id")) for gpu in gpus]
    return {
        "lspci_gpu_count": len(seen),
        "lspci_gpus": seen,
        "missing_from_nvml": len(seen) - len(gpus),
        "lspci_only_bus_ids": [address for address in seen if address not in nvml],
        "nvml_only_bus_ids": [address for address in nvml if address not in seen],
    }


def _all_true(values):
    """True when every value is True, False when any is False, else None (unknown)."""
    values = list(values)
    if any(value is False for value in values):
        return False
    if values and all(value is True for value in values):
        return True
    return None


def _any_true(values):
    """True when any value is True, False when all are known and False, else None."""
    values = list(values)
    if any(value is True for value in values):
        return True
    if values and all(value is False for value in values):
        return False
    return None


def _distinct(values):
    found = []
    for value in values:
        if value is not None and value not in found:
            found.append(value)
    return sorted(found, key=lambda v: (str(type(v)), v))


def _total(values):
    values = [value for value in values if value is not None]
    return sum(values) if values else None


def _sub(gpu, key, sub):
    value = gpu.get(key)
    return value.get(sub) if isinstance(value, dict) else None


def active_reasons(gpu):
    """Names of the clock event (throttle) reasons reported Active for one GPU."""
    reasons = gpu.get("clock_event_reasons") or {}
    return [name for name in CLOCK_EVENT_REASONS if reasons.get(name) is True]


def _nvlink_summary(gpus):
    with_nvlink = [gpu for gpu in gpus if gpu.get("nvlink") is not None]
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
    inactive, speeds, unsupported, no_active, with_errors = [], [], [], [], []
    totals = {}
    active_count = 0
    for gpu in with_nvlink:
        nvlink = gpu["nvlink"]
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


def summarise(gpus):
    """The judgement-ready summary of the per-GPU dicts (see docs/facts/gpu_facts.md)."""
    throttled = []
    by_reason = {}
    for gpu in gpus:
        reasons = active_reasons(gpu)
        for name in reasons:
            by_reason.setdefault(name, []).append(gpu["index"])
        if [name for name in reasons if name != "idle"]:
            throttled.append(gpu["index"])
    # A GPU outside an NVSwitch fabric prints Fabric State N/A (read as None): not counted.
    fabric_gpus = [gpu for gpu in gpus if _sub(gpu, "fabric", "state") is not None]
    summary = {
        "gpu_count": len(gpus),
        "names": _distinct(gpu.get("name") for gpu in gpus),
        "memory_total_mib": _distinct(gpu.get("memory_total_mib") for gpu in gpus),
        "vbios_versions": _distinct(gpu.get("vbios_version") for gpu in gpus),
        "board_part_numbers": _distinct(gpu.get("board_part_number") for gpu in gpus),
        "persistence_mode_all": _all_true(gpu.get("persistence_mode") for gpu in gpus),
        "mig_enabled_gpus": [gpu["index"] for gpu in gpus if (gpu.get("mig_mode_current") or "").lower() == "enabled"],
        "ecc_enabled_all": _all_true(gpu.get("ecc_mode_current") for gpu in gpus),
        "ecc_errors_volatile_uncorrectable_total": _total(gpu.get("ecc_errors_volatile_uncorrectable") for gpu in gpus),
        "ecc_errors_aggregate_uncorrectable_total": _total(gpu.get("ecc_errors_aggregate_uncorrectable") for gpu in gpus),
        "ecc_errors_volatile_correctable_total": _total(gpu.get("ecc_errors_volatile_correctable") for gpu in gpus),
        "ecc_errors_aggregate_correctable_total": _total(gpu.get("ecc_errors_aggregate_correctable") for gpu in gpus),
        "retired_pages_pending_any": _any_true(_sub(gpu, "retired_pages", "pending") for gpu in gpus if gpu.get("retired_pages")),
        "retired_pages_pending_gpus": [gpu["index"] for gpu in gpus if _sub(gpu, "retired_pages", "pending") is True],
        "retired_pages_double_bit_total": _total(_sub(gpu, "retired_pages", "double_bit_ecc") for gpu in gpus),
        "retired_pages_single_bit_total": _total(_sub(gpu, "retired_pages", "single_bit_ecc") for gpu in gpus),
        "remapped_rows_pending_any": _any_true(_sub(gpu, "remapped_rows", "pending") for gpu in gpus if gpu.get("remapped_rows")),
        "remapped_rows_failure_any": _any_true(_sub(gpu, "remapped_rows", "failure") for gpu in gpus if gpu.get("remapped_rows")),
        "remapped_rows_pending_gpus": [gpu["index"] for gpu in gpus if _sub(gpu, "remapped_rows", "pending") is True],
        "remapped_rows_failure_gpus": [gpu["index"] for gpu in gpus if _sub(gpu, "remapped_rows", "failure") is True],
        "remapped_rows_uncorrectable_total": _total(_sub(gpu, "remapped_rows", "uncorrectable") for gpu in gpus),
        "throttled_gpus": throttled,
        "clock_event_reasons_active": by_reason,
        "temperature_max_c": max([gpu["temperature_c"] for gpu in gpus if gpu.get("temperature_c") is not None], default=None),
        "power_draw_total_w": _total(gpu.get("power_draw_w") for gpu in gpus),
        "pcie_width_degraded_gpus": [
            gpu["index"]
            for gpu in gpus
            if gpu.get("pcie_link_width_current") is not None
            and gpu.get("pcie_link_width_max") is not None
            and gpu["pcie_link_width_current"] < gpu["pcie_link_width_max"]
        ],
        "pcie_gen_below_max_gpus": [
            gpu["index"]
            for gpu in gpus
            if gpu.get("pcie_link_gen_current") is not None
            and gpu.get("pcie_link_gen_max") is not None
            and gpu["pcie_link_gen_current"] < gpu["pcie_link_gen_max"]
        ],
        "fabric_states": _distinct(_sub(gpu, "fabric", "state") for gpu in fabric_gpus),
        "fabric_statuses": _distinct(_sub(gpu, "fabric", "status") for gpu in fabric_gpus),
        "fabric_not_ready_gpus": [
            gpu["index"]
            for gpu in fabric_gpus
            if _sub(gpu, "fabric", "state").lower() != "completed"
            or (_sub(gpu, "fabric", "status") or "success").lower() != "success"
        ],
        "compute_processes": sum(len(gpu.get("processes") or []) for gpu in gpus),
        "gpus_with_processes": [gpu["index"] for gpu in gpus if gpu.get("processes")],
        "gpus_reporting_errors": [gpu["index"] for gpu in gpus if gpu.get("errors")],
    }
    summary.update(_nvlink_summary(gpus))
    return summary


def build_inventory(xml=None, text=None, nvlink_status=None, nvlink_errors=None, lspci=None, failures=None, nvlink_collected=True):
    """The whole ``gpufleet_gpu`` fact from the parsed outputs.

    ``failures`` maps ``nvlink_status``/``nvlink_errors``/``lspci`` to the message of a tool that
    could not be read (exited non-zero, or is not installed); each one also becomes a warning.
    """
    failures = dict(failures or {})
    top, gpus, warnings = merge_queries(xml, text)
    warnings.extend(
        merge_nvlink(
            gpus,
            nvlink_status,
            nvlink_errors,
            status_failure=failures.get("nvlink_status"),
            errors_failure=failures.get("nvlink_errors"),
            collected=nvlink_collected,
        )
    )
    lspci_view = lspci_crosscheck(gpus, lspci)
    for address in lspci_view["nvml_only_bus_ids"] or []:
        warnings.append("GPU %s seen by nvidia-smi is not an NVIDIA GPU in the lspci listing" % address)
    for key in ("nvlink_status", "nvlink_errors", "lspci"):
        if failures.get(key):
            warnings.append(failures[key])
    for gpu in gpus:
        gpu["active_clock_event_reasons"] = active_reasons(gpu)
    fact = dict(top)
    fact["gpu_count"] = len(gpus)
    fact.update(lspci_view)
    fact["sources"] = _sources(xml, text, nvlink_status, nvlink_errors, lspci)
    fact["query_failures"] = []
    fact["gpus"] = gpus
    fact["summary"] = summarise(gpus)
    fact["warnings"] = warnings
    return fact


def _sources(xml, text, nvlink_status, nvlink_errors, lspci):
    """Which outputs were parsed and used."""
    return {
        "xml": xml is not None,
        "text": text is not None,
        "nvlink_status": nvlink_status is not None,
        "nvlink_errors": nvlink_errors is not None,
        "lspci": lspci is not None,
    }


def _nvlink_listed_gpu(entry):
    """A GPU as ``nvlink -s`` lists it: its index, name and UUID as printed, every ``-q`` field null."""
    gpu = {key: None for key in GPU_KEYS}
    gpu.update(index=entry["index"], name=entry.get("name") or None, uuid=entry.get("uuid"), errors=[])
    gpu["active_clock_event_reasons"] = []
    return gpu


def build_nvlink_only(nvlink_status, nvlink_errors=None, lspci=None, failures=None, query_failures=()):
    """The ``gpufleet_gpu`` fact when neither ``nvidia-smi -q -x`` nor ``-q`` could be read.

    The GPUs are those ``nvlink -s`` lists (``nvlink_status``, parsed), each with its NVLink state and
    ``nvlink -e`` counters; everything ``-q`` prints is null. ``query_failures`` (the messages of the two
    queries) stay in the fact and lead ``warnings``, so the GPU checks say what was not measured and why.
    ``gpu_count`` is the GPUs listed, null when the output was elided (``[...]``). NVIDIA bus ids are not
    printed by ``nvlink -s``: lspci gives its count and addresses, nothing is matched against them.
    """
    failures = dict(failures or {})
    gpus = [_nvlink_listed_gpu(entry) for entry in nvlink_status.get("gpus") or []]
    warnings = ["%s; the GPU facts hold only what `nvidia-smi nvlink -s` printed" % message
                for message in query_failures]
    warnings.extend(merge_nvlink(gpus, nvlink_status, nvlink_errors, errors_failure=failures.get("nvlink_errors")))
    lspci_view = lspci_crosscheck([], lspci)
    lspci_view.update(missing_from_nvml=None, lspci_only_bus_ids=None, nvml_only_bus_ids=None)
    warnings.extend(failures[key] for key in ("nvlink_errors", "lspci") if failures.get(key))
    fact = {key: None for key in ("driver_version", "cuda_version", "timestamp", "attached_gpus")}
    fact["gpu_count"] = None if nvlink_status.get("elided") else len(gpus)
    fact.update(lspci_view)
    fact["sources"] = _sources(None, None, nvlink_status, nvlink_errors, lspci)
    fact["query_failures"] = list(query_failures)
    fact["gpus"] = gpus
    fact["summary"] = summarise(gpus)
    fact["warnings"] = warnings
    return fact


# --- from the collector's raw results

def _soft(reader, key, kind):
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


def _lspci(reader):
    """Parsed lspci output, or ``(None, why)`` when lspci is absent or printed nothing."""
    entry = reader.raw.get("lspci")
    if entry is None:
        return None, None
    if entry.get("error") == "not_found":
        return None, "%s not found on the node: the lspci GPU count is unknown" % entry["cmd"][0]
    if not reader.output("lspci").strip():
        return None, "`%s` printed nothing (no PCI access?): the lspci GPU count is unknown" % reader.command_label("lspci")
    return reader.parsed("lspci", "lspci"), None


def _queries(reader):
    """``(xml, text, failures)``: the two ``-q`` queries (None when not collected or unreadable) and the
    FactError of each that failed; either query is enough when the other fails."""
    parsed, failed = {}, []
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


def _without_queries(reader, failed):
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


def gather(reader):
    """The ``gpufleet_gpu`` fact from one host's raw collector results."""
    xml, text, failed = _queries(reader)
    if xml is None and text is None:
        return _without_queries(reader, failed)
    failures = {}
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


def build_facts(reader):
    """``{"gpufleet_gpu": ...}`` for Ansible from one host's raw gpu_facts results."""
    return {"gpufleet_gpu": gather(reader)}
