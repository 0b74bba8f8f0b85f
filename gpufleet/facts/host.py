# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node's host preconditions say (pure, controller side): the ``gpufleet_host`` facts.

Inputs are what ``host_facts`` collected, already parsed by the registry parsers
(``kernel-modules``, ``kernel-log``, ``limits``, ``lspci-acs``) where a tool or file was read.
Each function returns one group of ``gpufleet_host``; a group that cannot be established says
so (``None`` values plus a reason), it is never guessed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gpufleet.facts import xid_catalog
from gpufleet.facts.raw import RawReader, first_line
from gpufleet.facts.shapes import (AcsBridge, AcsState, CriticalXid, DriverInfo, Endpoint, FatalSxid, GpuDirectRdma,
                                   HostFactGroup, HostFacts, IommuInfo, KernelInfo, MemlockInfo, MpiVersion,
                                   NcclVersion, SxidSummary, XidSummary)

# dma-buf based GPUDirect RDMA (no nvidia-peermem) needs Linux >= 5.12 and NVIDIA's open kernel
# module (NVIDIA GPUDirect RDMA docs, "Using dma-buf"; NCCL uses it from 2.19 when available).
DMABUF_MIN_KERNEL = (5, 12)
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")

# Most recent kernel-log events kept in the facts (all are counted).
EVENTS_KEPT = 50

_KERNEL_RE = re.compile(r"^(\d+)\.(\d+)")
_DRIVER_VERSION_RE = re.compile(r"\b(\d+\.\d+(?:\.\d+)?)\b")
_NVRM_RE = re.compile(r"^NVRM version:\s*(.*)$", re.MULTILINE)


def kernel_info(osrelease: str | None, uname: dict[str, Any] | None) -> KernelInfo:
    """``{release, major, minor, machine}`` from ``/proc/sys/kernel/osrelease`` or ``os.uname()``."""
    uname = uname or {}
    release = (osrelease or "").strip() or uname.get("release")
    match = _KERNEL_RE.match(release or "")
    return {
        "release": release,
        "major": int(match.group(1)) if match else None,
        "minor": int(match.group(2)) if match else None,
        "machine": uname.get("machine"),
    }


def driver_info(version_text: str | None) -> DriverInfo:
    """``{version, open_kernel_module, nvrm}`` from ``/proc/driver/nvidia/version``; None values when absent.

    The open module prints ``NVIDIA UNIX Open Kernel Module for x86_64  570.158.01 ...``, the
    proprietary one ``NVIDIA UNIX x86_64 Kernel Module  535.129.03 ...``.
    """
    if version_text is None:
        return {"version": None, "open_kernel_module": None, "nvrm": None,
                "reason": "driver version file not readable: NVIDIA driver not loaded?"}
    match = _NVRM_RE.search(version_text)
    if not match:
        return {"version": None, "open_kernel_module": None, "nvrm": None,
                "reason": "no 'NVRM version:' line in the driver version file"}
    nvrm = match.group(1).strip()
    after = nvrm.split("Kernel Module", 1)[-1]
    version = _DRIVER_VERSION_RE.search(after)
    return {
        "version": version.group(1) if version else None,
        "open_kernel_module": "Open Kernel Module" in nvrm,
        "nvrm": nvrm,
        "reason": None if version else "no version number on the 'NVRM version:' line",
    }


def gpudirect_rdma(modules: dict[str, Any] | None, kernel: KernelInfo, driver: DriverInfo,
                   modules_reason: str | None = None) -> GpuDirectRdma:
    """``{peermem_loaded, peermem_module, dmabuf_possible, ok, reasons}``.

    ``modules`` is the ``kernel-modules`` parse of ``/proc/modules`` (None when unreadable).
    ``dmabuf_possible`` says the kernel and driver allow dma-buf GPUDirect RDMA; the NIC driver
    and the application (NCCL >= 2.19, CUDA >= 11.7) must support it too.
    """
    reasons = []
    if modules is None:
        peermem_module = None
        peermem_loaded = None
        reasons.append("loaded modules unknown: %s" % (modules_reason or "/proc/modules not read"))
    else:
        loaded = [name for name in PEERMEM_MODULES if name in modules["names"]]
        peermem_module = loaded[0] if loaded else None
        peermem_loaded = bool(loaded)
        if not loaded:
            reasons.append("nvidia_peermem (or nv_peer_mem) is not loaded")
    dmabuf_possible = None
    if kernel.get("major") is None:
        reasons.append("kernel release unknown: dma-buf support cannot be judged")
    elif driver.get("open_kernel_module") is None:
        reasons.append("NVIDIA kernel module flavour unknown (%s)" % (driver.get("reason") or "no driver version"))
    else:
        kernel_ok = (kernel["major"], kernel["minor"]) >= DMABUF_MIN_KERNEL
        if not kernel_ok:
            reasons.append("kernel %s is older than %d.%d: no dma-buf GPUDirect RDMA"
                           % ((kernel["release"],) + DMABUF_MIN_KERNEL))
        if not driver["open_kernel_module"]:
            reasons.append("proprietary NVIDIA kernel module: dma-buf GPUDirect RDMA needs the open kernel module")
        dmabuf_possible = kernel_ok and driver["open_kernel_module"]
    if peermem_loaded or dmabuf_possible:
        ok = True
    elif peermem_loaded is None or dmabuf_possible is None:
        ok = None
    else:
        ok = False
    return {
        "peermem_loaded": peermem_loaded,
        "peermem_module": peermem_module,
        "dmabuf_possible": dmabuf_possible,
        "ok": ok,
        "reasons": reasons,
    }


def acs_state(endpoints: list[dict[str, Any]], lspci: dict[str, Any] | None,
              lspci_reason: str | None = None) -> AcsState:
    """ACS redirect on the PCIe paths of the GPUs and RDMA devices.

    ``endpoints``: ``[{kind, name, address, bridges}]`` (bridges from the root port down, read
    from sysfs); ``lspci``: the ``lspci-acs`` parse, or None with ``lspci_reason``. Returns
    ``{state, bridges_with_acs_on_path, bridges_on_path, unknown_bridges, reason}`` where state
    is ``disabled``, ``enabled_on_path`` or ``unknown`` (never ``disabled`` without evidence).
    """
    users = _bridge_users(endpoints)
    bridges = list(users)
    result: AcsState = {"state": "unknown", "bridges_with_acs_on_path": [], "bridges_on_path": bridges,
                        "unknown_bridges": [], "reason": _acs_unreadable(endpoints, lspci, lspci_reason)}
    if result["reason"] is not None or lspci is None:
        return result
    by_address = dict((device["address"], device) for device in lspci["devices"])
    for bridge in bridges:
        device = by_address.get(bridge)
        if device is None or device["acs_enabled"] is None:
            result["unknown_bridges"].append(bridge)
        elif device["acs_enabled"]:
            result["bridges_with_acs_on_path"].append(_acs_bridge(bridge, device, users[bridge]))
    if result["bridges_with_acs_on_path"]:
        result["state"] = "enabled_on_path"
        result["reason"] = ("ACS redirect on %d bridge(s) between GPUs and NICs: peer-to-peer traffic goes through the "
                            "root complex" % len(result["bridges_with_acs_on_path"]))
    elif result["unknown_bridges"]:
        result["reason"] = "ACS state of bridge(s) %s not shown by lspci" % ", ".join(result["unknown_bridges"])
    else:
        result["state"] = "disabled"
        if not bridges:
            result["reason"] = "no PCI bridge on any GPU/NIC path (a virtual machine's flat bus?)"
    return result


def _bridge_users(endpoints: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``{bridge: [endpoint names below it]}``, the bridges in the order the paths first name them."""
    users: dict[str, list[str]] = {}
    for endpoint in endpoints:
        for bridge in endpoint.get("bridges") or []:
            users.setdefault(bridge, []).append(endpoint.get("name") or endpoint["address"])
    return users


def _acs_unreadable(endpoints: list[dict[str, Any]], lspci: dict[str, Any] | None,
                    lspci_reason: str | None) -> str | None:
    """Why the bridges' ACS state cannot be read at all (None when lspci shows it)."""
    if not endpoints:
        return "no NVIDIA GPU or RDMA device found in sysfs"
    if lspci is None:
        return lspci_reason or "lspci -vvv not read"
    if not lspci["capabilities_visible"]:
        return "lspci printed no PCI capabilities (it needs root: run the task with become: true)"
    return None


def _acs_bridge(address: str, device: dict[str, Any], users: list[str]) -> AcsBridge:
    """A bridge with ACS redirect on: the ACSCtl flags that are on and the endpoints below it."""
    ctl = device["acs_ctl"] or {}
    return {
        "address": address,
        "description": device["description"],
        "enabled": sorted(name for name, on in ctl.items() if on),
        "devices": users,
    }


def iommu_info(cmdline: str | None, units: list[str] | None, group_types: dict[str, int] | None, groups: int | None,
               cmdline_reason: str | None = None) -> IommuInfo:
    """``{mode, enabled, passthrough, units, groups, group_types, cmdline_flags, reason}``.

    mode: ``off`` (no IOMMU unit, no group), ``passthrough`` (every group of type ``identity``,
    or ``iommu=pt`` when the types are not readable), ``translated`` (a group of type ``DMA`` /
    ``DMA-FQ``: device DMA is remapped, which costs GPUDirect P2P/RDMA bandwidth), or ``unknown``.
    """
    flags = {}
    for word in (cmdline or "").split():
        key, _sep, value = word.partition("=")
        if key in ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough"):
            flags[key] = value
    enabled = bool(units) or bool(groups)
    types = dict(group_types or {})
    reason = None
    pt_flag = flags.get("iommu") == "pt" or flags.get("iommu.passthrough") in ("1", "on", "y")
    if not enabled:
        mode = "off"
    elif types and all(name == "identity" for name in types):
        mode = "passthrough"
    elif any(name.startswith("DMA") for name in types):
        mode = "translated"
    elif pt_flag:
        mode = "passthrough"
    else:
        mode = "unknown"
        reason = "IOMMU groups exist but their type is not readable and the command line has no iommu=pt"
    if cmdline is None:
        reason = reason or ("kernel command line not read: %s" % (cmdline_reason or "unreadable"))
    return {
        "mode": mode,
        "enabled": enabled,
        "passthrough": mode == "passthrough",
        "units": list(units or []),
        "groups": groups,
        "group_types": types,
        "cmdline_flags": flags,
        "reason": reason,
    }


def memlock_info(limits: dict[str, Any] | None, rlimit: dict[str, Any] | None) -> MemlockInfo:
    """``{soft, hard, unit, unlimited, ok, source}`` of the collector's own memlock limit (bytes).

    ``limits`` is the ``limits`` parse of ``/proc/self/limits`` (None when unreadable);
    ``rlimit`` what ``resource.getrlimit(RLIMIT_MEMLOCK)`` returned (``{soft, hard}``, None for
    infinity). RDMA pins memory: anything but unlimited is flagged (``ok`` false).
    """
    row = (limits or {}).get("max_locked_memory")
    if row is not None:
        soft, hard = row["soft"], row["hard"]
        soft_unlimited, hard_unlimited = row["soft_unlimited"], row["hard_unlimited"]
        source = "limits"
    elif rlimit is not None and rlimit.get("error") is None:
        soft, hard = rlimit.get("soft"), rlimit.get("hard")
        soft_unlimited, hard_unlimited = soft is None, hard is None
        source = "getrlimit"
    else:
        return {"soft": None, "hard": None, "unit": "bytes", "unlimited": None, "ok": None, "source": None,
                "getrlimit": rlimit}
    return {
        "soft": soft,
        "hard": hard,
        "unit": "bytes",
        "unlimited": soft_unlimited and hard_unlimited,
        "ok": soft_unlimited,
        "source": source,
        "getrlimit": rlimit,
    }


def uptime_seconds(text: str | None) -> float | None:
    """Seconds since boot: the first field of ``/proc/uptime`` (``350735.47 234388.90``, the second being idle time
    summed over the CPUs). None when the file was not read or its first field is not a finite, non-negative number:
    uptime unknown, never a guess."""
    try:
        seconds = float((text or "").split()[0])
    except (IndexError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def ofed_version(text: str | None) -> str | None:
    """``MLNX_OFED_LINUX-23.10-1.1.9.0`` from ``ofed_info -s`` (trailing ``:`` dropped); None when absent."""
    line = first_line(text)
    return line.rstrip(":").strip() if line else None


def mpi_version(text: str | None) -> MpiVersion | None:
    """``{text, version}`` from the first line of ``mpirun --version``; None when absent."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    version = None
    for line in lines[:4]:  # MPICH's Hydra prints "HYDRA build details:" then "Version: 4.1.2"
        match = _DRIVER_VERSION_RE.search(line)
        if match:
            version = match.group(1)
            break
    return {"text": lines[0], "version": version}


_NCCL_LIB_RE = re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)$")
_NCCL_DEFINE_RE = re.compile(r"^\s*#\s*define\s+NCCL_(MAJOR|MINOR|PATCH|VERSION_CODE)\s+(\d+)\b", re.MULTILINE)


def nccl_version(libraries: list[dict[str, Any]] | None, headers: list[dict[str, Any]] | None) -> NcclVersion | None:
    """``{version, source}`` from a resolved ``libnccl.so.2`` target or an ``nccl.h``; None when neither.

    ``libraries``: ``[{path, target}]`` (target is the file name the soname link resolves to);
    ``headers``: ``[{path, defines}]`` (the ``#define NCCL_*`` lines of each nccl.h found).
    """
    for library in libraries or []:
        match = _NCCL_LIB_RE.search(library.get("target") or "")
        if match:
            return {"version": match.group(1), "source": library.get("path")}
    for header in headers or []:
        values = dict((name, int(value)) for name, value in _NCCL_DEFINE_RE.findall(header.get("defines") or ""))
        if all(name in values for name in ("MAJOR", "MINOR", "PATCH")):
            return {"version": "%d.%d.%d" % (values["MAJOR"], values["MINOR"], values["PATCH"]),
                    "source": header.get("path")}
    return None


def xid_summary(log: dict[str, Any] | None, source: str | None, reason: str | None = None,
                keep: int = EVENTS_KEPT) -> XidSummary:
    """The ``xid`` group from a ``kernel-log`` parse (None with ``reason`` when unreadable)."""
    if log is None:
        return {"state": "unreadable", "source": None, "reason": reason, "events": [], "events_total": None,
                "counts": {}, "fallen_off_bus": [], "critical": [], "peermem_errors": None,
                "recovery_actions": {}, "sxid": {"events": [], "events_total": None, "counts": {}, "fatal": [],
                                                 "severity_unknown": []}}
    # critical: the Xids NVIDIA's catalog sends to a repair (gpufleet/facts/xid_catalog.yml), Xid 154 when a GPU's
    # recovery action is other than None; the same judgement as host.xid and the health re-read after stress
    recovery_actions = dict(log.get("recovery_actions") or {})
    critical: list[CriticalXid] = []
    for key in sorted(log["xid_counts"], key=int):
        if xid_catalog.xid_status(int(key), recovery_actions) == xid_catalog.FAIL:
            critical.append({"xid": int(key), "count": log["xid_counts"][key],
                             "meaning": xid_catalog.meaning(int(key))})
    events = log["events"]
    return {
        "state": "read",
        "source": source,
        "reason": reason,
        "events": events[-keep:] if keep else [],
        "events_total": len(events),
        "counts": dict(log["xid_counts"]),
        "fallen_off_bus": list(log["fallen_off_bus"]),
        "critical": critical,
        "peermem_errors": log["peermem_errors"],
        # the action the last Xid 154 of each GPU asked for (R570+ drivers print it)
        "recovery_actions": recovery_actions,
        "sxid": sxid_summary(log.get("sxid_events") or [], keep),
    }


def sxid_summary(events: list[dict[str, Any]], keep: int = EVENTS_KEPT) -> SxidSummary:
    """NVSwitch SXid headlines of a ``kernel-log`` parse: counts, and the fatal ones per number and switch."""
    counts: dict[str, int] = {}
    fatal: dict[int, FatalSxid] = {}
    unknown: set[int] = set()
    for event in events:
        key = str(event["sxid"])
        counts[key] = counts.get(key, 0) + 1
        if event["fatal"] is None:  # only its detail lines were logged: the severity is on the missing headline
            unknown.add(event["sxid"])
        if event["fatal"]:
            entry = fatal.setdefault(event["sxid"], {"sxid": event["sxid"], "count": 0, "switches": [],
                                                     "first_message": event["message"]})
            entry["count"] += 1
            where = "%s (%s)" % (event["switch"], event["pci"])
            if where not in entry["switches"]:
                entry["switches"].append(where)
    return {"events": events[-keep:] if keep else [], "events_total": len(events), "counts": counts,
            "fatal": [fatal[number] for number in sorted(fatal)], "severity_unknown": sorted(unknown - set(fatal))}


def summary(facts: HostFacts) -> list[str]:
    """One-line findings a person reads first (empty when nothing needs attention)."""
    lines = []
    gdr = facts["gpudirect_rdma"]
    if gdr["ok"] is False:
        lines.append("GPUDirect RDMA unavailable: %s" % "; ".join(gdr["reasons"]))
    elif gdr["ok"] is None:
        lines.append("GPUDirect RDMA unknown: %s" % "; ".join(gdr["reasons"]))
    acs = facts["acs"]
    if acs["state"] == "enabled_on_path":
        lines.append("acs: enabled on %s" % ", ".join(b["address"] for b in acs["bridges_with_acs_on_path"]))
    elif acs["state"] == "unknown":
        lines.append("acs: unknown (%s)" % acs["reason"])
    iommu = facts["iommu"]
    if iommu["mode"] == "translated":
        lines.append("iommu: translated DMA mode (set iommu=pt or disable the IOMMU for GPUDirect)")
    elif iommu["mode"] == "unknown":
        lines.append("iommu: unknown (%s)" % iommu["reason"])
    memlock = facts["memlock"]
    if memlock["ok"] is False:
        lines.append("memlock: soft limit %s bytes, not unlimited (RDMA needs unlimited)" % memlock["soft"])
    elif memlock["ok"] is None:
        lines.append("memlock: unknown")
    xid = facts["xid"]
    if xid["state"] == "unreadable":
        lines.append("kernel_log: unreadable (%s)" % xid["reason"])
    else:
        if xid["critical"]:
            lines.append("xid: critical %s" % ", ".join("%d x%d" % (c["xid"], c["count"]) for c in xid["critical"]))
        if xid["fallen_off_bus"]:
            lines.append("GPU fallen off the bus: %s" % ", ".join(xid["fallen_off_bus"]))
        if xid["peermem_errors"]:
            lines.append("nvidia-peermem errors in the kernel log: %d" % xid["peermem_errors"])
        if xid["sxid"]["fatal"]:
            fatal = ", ".join("%d x%d" % (item["sxid"], item["count"]) for item in xid["sxid"]["fatal"])
            lines.append("NVSwitch fatal SXid: %s" % fatal)
    if facts["driver"]["version"] is None:
        lines.append("driver: unknown (%s)" % facts["driver"]["reason"])
    return lines


# --- from the collector's raw results

def why_not(reader: RawReader, key: str) -> str | None:
    """Why collected entry ``key`` has no usable output (None when it has)."""
    entry = reader.raw.get(key)
    if entry is None:
        return "%s was not collected" % key
    label = reader.command_label(key)
    if entry.get("error") == "not_found":
        return "%s not found" % entry["cmd"][0]
    if entry.get("error"):
        return "`%s` %s" % (label, entry["error"])
    if entry.get("rc") != 0:
        said = first_line(entry.get("stderr")) or first_line(entry.get("stdout")) or "no output"
        return "`%s` exited %s: %s" % (label, entry.get("rc"), said)
    return None


def parsed_or_reason(reader: RawReader, key: str, kind: str) -> tuple[Any, str | None]:
    """``(parsed, None)``, or ``(None, reason)`` when the tool/file gave nothing; damage raises FactError."""
    reason = why_not(reader, key)
    if reason is not None:
        return None, reason
    return reader.parsed(key, kind), None


def text_or_none(reader: RawReader, key: str) -> str | None:
    """The text collected entry ``key`` printed; None when it has no usable output (:func:`why_not`)."""
    text: str | None = None if why_not(reader, key) else reader.raw[key].get("stdout")
    return text


def read_kernel_log(reader: RawReader) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``(parsed log, source, reason)`` from journalctl, else dmesg."""
    reasons = []
    for key in ("journalctl", "dmesg"):
        if reader.raw.get(key) is None:
            continue
        log, reason = parsed_or_reason(reader, key, "kernel-log")
        if reason is not None:
            reasons.append(reason)
            continue
        if log["line_count"] == 0:
            said = first_line(reader.raw[key].get("stderr"))
            reasons.append("`%s` printed no kernel line%s" % (reader.command_label(key), ": " + said if said else ""))
            continue
        return log, key, None
    return None, None, "; ".join(reasons) or "no kernel log collected"


def _endpoint(entry: dict[str, Any]) -> Endpoint:
    return {"kind": entry.get("kind"), "name": entry.get("name"), "address": entry.get("address"),
            "bridges": entry.get("bridges")}


def build_facts(reader: RawReader) -> HostFactGroup:
    """``{"gpufleet_host": ...}`` from one host's raw host_facts results."""
    raw = reader.raw
    files = RawReader(reader.host, raw.get("files") or {})

    kernel = kernel_info(text_or_none(files, "osrelease"), raw.get("uname"))
    driver = driver_info(text_or_none(files, "nvidia_version"))
    modules, modules_reason = parsed_or_reason(files, "modules", "kernel-modules")
    lspci, lspci_reason = parsed_or_reason(reader, "lspci", "lspci-acs")
    limits, _limits_reason = parsed_or_reason(files, "self_limits", "limits")
    log, source, log_reason = read_kernel_log(reader)
    iommu_raw = raw.get("iommu") or {}
    cmdline = text_or_none(files, "cmdline")

    facts: HostFacts = {
        "kernel": kernel,
        "driver": driver,
        "gpudirect_rdma": gpudirect_rdma(modules, kernel, driver, modules_reason),
        "acs": acs_state(raw.get("endpoints") or [], lspci, lspci_reason),
        "iommu": iommu_info(cmdline, iommu_raw.get("units"), iommu_raw.get("group_types"), iommu_raw.get("groups"),
                            why_not(files, "cmdline")),
        "memlock": memlock_info(limits, raw.get("rlimit_memlock")),
        "uptime_s": uptime_seconds(text_or_none(files, "uptime")),
        "versions": {
            "ofed": ofed_version(text_or_none(reader, "ofed_info")),
            "mpi": mpi_version(text_or_none(reader, "mpirun")),
            "nccl": nccl_version(raw.get("nccl_libraries"), raw.get("nccl_headers")),
        },
        "xid": xid_summary(log, source, log_reason),
        "endpoints": [_endpoint(endpoint) for endpoint in raw.get("endpoints") or []],
        "summary": [],
    }
    facts["summary"] = summary(facts)
    return {"gpufleet_host": facts}
