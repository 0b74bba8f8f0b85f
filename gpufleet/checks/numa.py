# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NUMA checks (pure): GPUs spread over the sockets, and each GPU's nearest NIC close to it.

Reads ``gpufleet_topology`` (``gpus[].numa_affinity``, ``nearest_nic``) and, for the NUMA nodes
the machine has beyond the GPUs' own, the NICs' ``numa_node`` in ``gpufleet_nic``.
"""

from __future__ import annotations

from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import PASS, SKIP, WARN, CheckResult, NodeContext, result

TOPO_SOURCE = ("nvidia-smi topo -m legend: PIX/PXB behind PCIe switches, PHB/NODE within a NUMA node, SYS across the "
               "CPU interconnect")
# Nearest-NIC path codes that keep GPUDirect RDMA inside one socket.
CLOSE_CODES = ("PIX", "PXB", "PHB", "NODE")


def _numa(value: Any) -> int | None:
    if value in (None, "", "N/A"):
        return None
    text = str(value).strip()
    return int(text) if text.isdigit() else None


def _nic_numa_nodes(nic: dict[str, Any] | None) -> list[Any]:
    return sorted({iface["numa_node"] for iface in (nic or {}).get("interfaces") or []
                   if iface.get("numa_node") is not None})


@node_check("numa.gpu_spread", requires=("topology",))
def check_gpu_spread(node: NodeContext) -> list[CheckResult]:
    """Several GPUs all on one NUMA node while the machine shows other NUMA nodes warns."""
    check_id = "numa.gpu_spread"
    gpus = node.group("topology").get("gpus") or []
    affinity = {gpu["name"]: _numa(gpu.get("numa_affinity")) for gpu in gpus}
    unknown = [name for name, value in affinity.items() if value is None]
    if not gpus or unknown:
        return [result(check_id, SKIP, "not judged: nvidia-smi topo -m prints no NUMA affinity for %s"
                       % (", ".join(unknown) or "any GPU"))]
    by_gpu = {name: value for name, value in affinity.items() if value is not None}  # every GPU: none is unknown
    gpu_nodes = sorted(set(by_gpu.values()))
    nic_nodes = _nic_numa_nodes(node.group("nic"))
    known = sorted(set(gpu_nodes) | set(nic_nodes))
    counts = ", ".join("node %d: %d" % (numa, list(by_gpu.values()).count(numa)) for numa in gpu_nodes)
    if len(gpus) > 1 and len(gpu_nodes) == 1 and len(known) > 1:
        return [result(check_id, WARN, "all %d GPUs on NUMA node %d while the machine has NUMA nodes %s (NICs on %s): "
                       "half the host's memory bandwidth and PCIe root ports go unused"
                       % (len(gpus), gpu_nodes[0], ", ".join(map(str, known)), ", ".join(map(str, nic_nodes))),
                       measured=gpu_nodes, expected=known, threshold_source=TOPO_SOURCE)]
    note = "" if len(known) > 1 else "; no other NUMA node seen (single socket, or NUMA off in the BIOS)"
    return [result(check_id, PASS, "GPUs per NUMA node: %s%s" % (counts, note), measured=gpu_nodes, expected=known,
                   threshold_source=TOPO_SOURCE)]


@node_check("numa.nearest_nic", requires=("topology",))
def check_nearest_nic(node: NodeContext) -> list[CheckResult]:
    """Each GPU's nearest NIC behind its PCIe switch (PIX/PXB) or at least on its socket (PHB/NODE); SYS warns."""
    check_id = "numa.nearest_nic"
    topo = node.group("topology")
    nearest = topo.get("nearest_nic") or {}
    if not nearest:
        return [result(check_id, SKIP, "not judged: nvidia-smi topo -m lists no NIC")]
    out = []
    for gpu in [g["name"] for g in topo.get("gpus") or [] if g["name"] in nearest]:
        entry = nearest[gpu]
        devices = entry.get("devices") or [None] * len(entry["nics"])
        names = ", ".join(device or nic for nic, device in zip(entry["nics"], devices))
        if entry["code"] not in CLOSE_CODES:
            out.append(result(check_id, WARN, "%s: nearest NIC %s is %s (across the CPU interconnect), expected "
                              "PIX/PXB, or PHB/NODE at worst" % (gpu, names, entry["code"]), measured=entry["code"],
                              expected="NODE", threshold_source=TOPO_SOURCE, subject=gpu))
    if out:
        return out
    codes = sorted({entry["code"] for entry in nearest.values()}, key=CLOSE_CODES.index)
    return [result(check_id, PASS, "every GPU's nearest NIC is %s" % "/".join(codes), measured=codes[-1],
                   expected="NODE", threshold_source=TOPO_SOURCE)]
