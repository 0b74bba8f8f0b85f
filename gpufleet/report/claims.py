# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's claim beside what was measured (one row per claim key, with the status of the checks that judged it),
and the node's NIC and RDMA port tables."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpufleet.report.common import Record, cell_text, facts_group, gpus_of, worst_status

# Check ids that judge each claim key (their worst status is the row's verdict).
CLAIM_CHECKS = {
    "gpu_model": ("gpu.model",),
    "gpu_count": ("gpu.count", "gpu.visible"),
    "gpu_memory_gb": ("gpu.memory",),
    "interconnect": ("topology.gpu_pairs",),
    "nvlinks_per_pair": ("topology.gpu_pairs", "nvlink.link_active"),
    "nics": ("network.nic_speed", "network.rdma_port_state"),
}
CLAIM_CHECK_IDS = frozenset(check_id for ids in CLAIM_CHECKS.values() for check_id in ids)
# the claim keys shown, in this order
CLAIM_KEYS = ("gpu_model", "gpu_count", "gpu_memory_gb", "interconnect", "nvlinks_per_pair", "nics",
              "price_per_node_hour", "rack")


def claim_rows(record: Record) -> list[dict[str, Any]]:
    """Claim beside measurement: ``[{key, claimed, measured, status}]`` (status of the checks that judged it)."""
    claim = record.get("claim")
    if not isinstance(claim, dict):
        return []
    keys = [key for key in CLAIM_KEYS if key in claim]
    if not keys:
        return []
    # the checks that judge a claim, found once: a node has 80 and more checks, and a claim up to 8 keys
    checks = [item for item in record.get("checks") or [] if item.get("id") in CLAIM_CHECK_IDS]
    measured = _measured(record)
    return [{"key": key, "claimed": _claimed_text(key, claim[key]), "measured": cell_text(measured.get(key)),
             "status": worst_status(checks, CLAIM_CHECKS.get(key, ()))}
            for key in keys]


def _measured(record: Record) -> dict[str, Any]:
    """What the node's facts say about each claim key (None where they say nothing; a price and a rack are never
    measured)."""
    gpu = facts_group(record, "gpu") or {}
    topology = facts_group(record, "topology") or {}
    summary = topology.get("summary") or {}
    gpus = gpus_of(record)
    names = sorted({str(item.get("name")) for item in gpus if item.get("name")})
    memories = [item["memory_total_mib"] for item in gpus if isinstance(item.get("memory_total_mib"), (int, float))]
    return {
        "gpu_model": ", ".join(names) if names else None,
        "gpu_count": gpu.get("gpu_count") if gpu else summary.get("gpu_count"),
        "gpu_memory_gb": ("%.1f GiB (%d MiB, smallest GPU)" % (min(memories) / 1024.0, min(memories)))
        if memories else None,
        "interconnect": _interconnect_measured(summary) if summary else None,
        "nvlinks_per_pair": ("NV%s..NV%s" % (summary.get("min_nvlinks"), summary.get("max_nvlinks"))
                             if summary.get("min_nvlinks") is not None else ("no NVLink pair" if summary else None)),
        "nics": _nics_measured(record),
        "price_per_node_hour": None,
        "rack": None,
    }


def _claimed_text(key: str, claimed: Any) -> str:
    """A claimed value as cell text; the claimed NICs one ``<count>x <gbps> Gb/s <role> <type>`` each."""
    if key == "nics" and isinstance(claimed, list):
        claimed = "; ".join("%sx %s Gb/s %s %s" % (cell_text(nic.get("count")), cell_text(nic.get("gbps")),
                                                   cell_text(nic.get("role")), cell_text(nic.get("type")))
                            for nic in claimed if isinstance(nic, dict))
    return cell_text(claimed)


def _interconnect_measured(summary: dict[str, Any]) -> str | None:
    pairs = summary.get("pair_count")
    nvlink = summary.get("nvlink_pairs")
    if pairs is None:
        return None
    classes = summary.get("link_classes") or {}
    detail = ", ".join("%s %s" % (count, name) for name, count in sorted(classes.items()))
    if pairs and nvlink == pairs:
        return "NVLink between all %d GPU pairs (%s)" % (pairs, detail)
    return "%s of %s GPU pairs NVLink (%s)" % (nvlink, pairs, detail)


def _nics_measured(record: Record) -> str | None:
    """The node's active RDMA ports and Ethernet links up, counted by rate (None without NIC facts)."""
    nic = facts_group(record, "nic")
    if not nic:
        return None
    parts = []
    rates: Counter[tuple[Any, Any]] = Counter()
    for device in nic.get("rdma") or []:
        for port in device.get("ports") or []:
            if port.get("state") == "Active":
                rates[(port.get("rate_gbps"), port.get("link_layer"))] += 1
    for (rate, layer), count in sorted(rates.items(), key=lambda item: str(item[0])):
        parts.append("%dx %s Gb/s %s active" % (count, cell_text(rate) or "?", layer or "RDMA"))
    speeds: Counter[Any] = Counter()
    for item in nic.get("interfaces") or []:
        if item.get("virtual") or item.get("rdma_device"):
            continue
        if item.get("operstate") == "up" and item.get("speed_mbps"):
            speeds[item["speed_mbps"]] += 1
    for speed, count in sorted(speeds.items()):
        parts.append("%dx %s Gb/s Ethernet up" % (count, cell_text(speed / 1000.0)))
    return "; ".join(parts) if parts else "no active RDMA port or Ethernet link"


def nic_rows(record: Record) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``(interface rows, RDMA port rows)`` of the node's NIC table."""
    nic = facts_group(record, "nic") or {}
    rows = [_interface_row(item) for item in nic.get("interfaces") or [] if isinstance(item, dict)]
    ports = []
    for device in nic.get("rdma") or []:
        for port in device.get("ports") or []:
            ports.append({
                "port": "%s/%s" % (device.get("device"), port.get("port")), "state": cell_text(port.get("state")),
                "physical": cell_text(port.get("physical_state")),
                "rate": cell_text(port.get("rate_gbps")) + (" Gb/s" if port.get("rate_gbps") is not None else ""),
                "link_layer": cell_text(port.get("link_layer")), "firmware": cell_text(device.get("fw_ver")),
                "errors": ", ".join("%s %s" % (name, cell_text(count))
                                    for name, count in sorted((port.get("errors") or {}).items())),
            })
    return rows, ports


def _interface_row(item: dict[str, Any]) -> dict[str, str]:
    pcie = item.get("pcie") or {}
    speed = item.get("speed_mbps")
    return {
        "name": cell_text(item.get("name")), "driver": cell_text(item.get("driver")),
        "state": cell_text(item.get("operstate")),
        "speed": cell_text(speed / 1000.0) + " Gb/s" if isinstance(speed, (int, float)) else "",
        "rdma": "%s/%s" % (item.get("rdma_device"), item.get("rdma_port")) if item.get("rdma_device") else "",
        "pcie": ("Gen%s x%s (max Gen%s x%s)" % (pcie.get("gen_current"), pcie.get("width_current"),
                                                pcie.get("gen_max"), pcie.get("width_max")) if pcie else ""),
        "numa": cell_text(item.get("numa_node")),
        "virtual": cell_text(item.get("virtual_kind")) if item.get("virtual") else "",
    }
