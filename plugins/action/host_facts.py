# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.host_facts: parse what the node returned, judge it."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils import host_inventory as inv
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactAction, RawReader


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def why_not(reader, key):
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
        said = _first_line(entry.get("stderr")) or _first_line(entry.get("stdout")) or "no output"
        return "`%s` exited %s: %s" % (label, entry.get("rc"), said)
    return None


def parsed_or_reason(reader, key, kind):
    """``(parsed, None)``, or ``(None, reason)`` when the tool/file gave nothing; damage raises FactError."""
    reason = why_not(reader, key)
    if reason is not None:
        return None, reason
    return reader.parsed(key, kind), None


def text_or_none(reader, key):
    return None if why_not(reader, key) else reader.raw[key].get("stdout")


def read_kernel_log(reader):
    """``(parsed log, source, reason)`` from journalctl, else dmesg."""
    reasons = []
    for key in ("journalctl", "dmesg"):
        if reader.raw.get(key) is None:
            continue
        log, reason = parsed_or_reason(reader, key, "kernel-log")
        if log is None:
            reasons.append(reason)
            continue
        if log["line_count"] == 0:
            said = _first_line(reader.raw[key].get("stderr"))
            reasons.append("`%s` printed no kernel line%s" % (reader.command_label(key), ": " + said if said else ""))
            continue
        return log, key, None
    return None, None, "; ".join(reasons) or "no kernel log collected"


class ActionModule(FactAction):
    """Set ``gpufleet_host`` from the host preconditions the node returned."""

    MODULE = "gpufleet.acceptance.host_facts"

    def build_facts(self, reader):
        raw = reader.raw
        files = RawReader(reader.host, raw.get("files") or {})

        kernel = inv.kernel_info(text_or_none(files, "osrelease"), raw.get("uname"))
        driver = inv.driver_info(text_or_none(files, "nvidia_version"))
        modules, modules_reason = parsed_or_reason(files, "modules", "kernel-modules")
        lspci, lspci_reason = parsed_or_reason(reader, "lspci", "lspci-acs")
        limits, _limits_reason = parsed_or_reason(files, "self_limits", "limits")
        log, source, log_reason = read_kernel_log(reader)
        iommu_raw = raw.get("iommu") or {}
        cmdline = text_or_none(files, "cmdline")

        facts = {
            "kernel": kernel,
            "driver": driver,
            "gpudirect_rdma": inv.gpudirect_rdma(modules, kernel, driver, modules_reason),
            "acs": inv.acs_state(raw.get("endpoints") or [], lspci, lspci_reason),
            "iommu": inv.iommu_info(cmdline, iommu_raw.get("units"), iommu_raw.get("group_types"), iommu_raw.get("groups"),
                                    why_not(files, "cmdline")),
            "memlock": inv.memlock_info(limits, raw.get("rlimit_memlock")),
            "versions": {
                "ofed": inv.ofed_version(text_or_none(reader, "ofed_info")),
                "mpi": inv.mpi_version(text_or_none(reader, "mpirun")),
                "nccl": inv.nccl_version(raw.get("nccl_libraries"), raw.get("nccl_headers")),
            },
            "xid": inv.xid_summary(log, source, log_reason),
            "endpoints": [dict((k, e.get(k)) for k in ("kind", "name", "address", "bridges")) for e in raw.get("endpoints") or []],
        }
        facts["summary"] = inv.summary(facts)
        return {"gpufleet_host": facts}
