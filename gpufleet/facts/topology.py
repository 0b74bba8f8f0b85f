# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a parsed ``nvidia-smi topo -m`` matrix says about a node (pure, controller side).

Input is the ``topo`` parser's result (``gpus``, ``nics``, ``links``). Output adds, per GPU
pair, a link class; per GPU, the nearest NIC(s) and the path code to them; and a summary a
judge can hold against the seller's claim.
"""

from __future__ import annotations

import re

from gpufleet.facts.raw import RawReader
from gpufleet.facts.shapes import (GpuPair, NearestNic, TopologyAnalysis, TopologyFactGroup, TopologyFacts,
                                   TopologyMatrix, TopologySummary)

# Path codes from nearest to farthest, as nvidia-smi's legend orders them. SOC is the
# pre-2018 spelling of SYS.
PCIE_PATH_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
_CODE_ALIASES = {"SOC": "SYS"}

LINK_CLASS = {
    "PIX": "pcie_switch",  # at most one PCIe bridge between them
    "PXB": "pcie_switches",  # several PCIe bridges, no host bridge
    "PHB": "host_bridge",  # through the CPU's PCIe host bridge
    "NODE": "numa_node",  # across host bridges inside one NUMA node
    "SYS": "cross_numa",  # across the inter-socket link (QPI/UPI/xGMI)
}

_NV_RE = re.compile(r"^NV(\d+)$")


def normalise_code(code: str) -> str:
    """The code with old spellings mapped to today's (``SOC`` -> ``SYS``)."""
    return _CODE_ALIASES.get(code, code)


def classify(code: str) -> tuple[str, int | None]:
    """``(link_class, nvlinks)`` of one matrix code; nvlinks is None unless NVLink."""
    code = normalise_code(code)
    match = _NV_RE.match(code)
    if match:
        return "nvlink", int(match.group(1))
    if code == "X":
        return "self", None
    return LINK_CLASS.get(code, "unknown"), None


def _path_rank(code: str) -> int:
    code = normalise_code(code)
    if code in PCIE_PATH_ORDER:
        return PCIE_PATH_ORDER.index(code)
    return len(PCIE_PATH_ORDER)


def _gpu_pairs(gpu_names: list[str], links: dict[str, dict[str, str]]) -> list[GpuPair]:
    """Every GPU pair, in matrix order, with its link class."""
    pairs: list[GpuPair] = []
    for i, a in enumerate(gpu_names):
        for b in gpu_names[i + 1:]:
            code = links[a][b]
            link_class, nvlinks = classify(code)
            pairs.append({"a": a, "b": b, "code": code, "link_class": link_class, "nvlinks": nvlinks})
    return pairs


def _nearest_nic(gpu_links: dict[str, str], nic_devices: dict[str, str | None]) -> NearestNic:
    """The NIC(s) on the shortest path from one GPU (its row of the matrix)."""
    ranked = sorted(nic_devices, key=lambda nic: _path_rank(gpu_links[nic]))
    best = _path_rank(gpu_links[ranked[0]])
    closest = [nic for nic in ranked if _path_rank(gpu_links[nic]) == best]
    return {
        "nics": closest,
        "devices": [nic_devices[nic] for nic in closest],
        "code": normalise_code(gpu_links[closest[0]]),
        "link_class": classify(gpu_links[closest[0]])[0],
    }


def _summary(parsed: TopologyMatrix, pairs: list[GpuPair], nic_count: int) -> TopologySummary:
    """The counts and lists a judge holds against the seller's claim."""
    class_counts: dict[str, int] = {}
    for pair in pairs:
        class_counts[pair["link_class"]] = class_counts.get(pair["link_class"], 0) + 1
    nv_counts = [p["nvlinks"] for p in pairs if p["nvlinks"] is not None]
    numa = (gpu.get("numa_affinity") for gpu in parsed["gpus"])
    return {
        "gpu_count": len(parsed["gpus"]),
        "nic_count": nic_count,
        "pair_count": len(pairs),
        "all_pairs_nvlink": bool(pairs) and len(nv_counts) == len(pairs),
        "nvlink_pairs": len(nv_counts),
        "min_nvlinks": min(nv_counts) if nv_counts else None,
        "max_nvlinks": max(nv_counts) if nv_counts else None,
        "non_nvlink_pairs": ["%s-%s:%s" % (p["a"], p["b"], normalise_code(p["code"]))
                             for p in pairs if p["nvlinks"] is None],
        "link_classes": class_counts,
        "numa_nodes": sorted({node for node in numa if node is not None and node != "N/A"}),
    }


def analyse_topology(parsed: TopologyMatrix) -> TopologyAnalysis:
    """Return ``gpu_pairs``, ``nearest_nic`` and ``summary`` for a parsed matrix."""
    links = parsed["links"]
    gpu_names = [gpu["name"] for gpu in parsed["gpus"]]
    nic_devices = {nic["name"]: nic.get("device") for nic in parsed.get("nics", [])}
    pairs = _gpu_pairs(gpu_names, links)
    nearest = {gpu: _nearest_nic(links[gpu], nic_devices) for gpu in gpu_names} if nic_devices else {}
    return {"gpu_pairs": pairs, "nearest_nic": nearest, "summary": _summary(parsed, pairs, len(nic_devices))}


def build_facts(reader: RawReader) -> TopologyFactGroup:
    """``{"gpufleet_topology": ...}`` from one host's raw ``nvidia-smi topo -m`` result."""
    parsed: TopologyMatrix = reader.parsed("topo_m", "topo")
    # the parser's keys first, then what they say (the parser's dict passes through whole)
    topology: TopologyFacts = {**parsed, **analyse_topology(parsed)}
    return {"gpufleet_topology": topology}
