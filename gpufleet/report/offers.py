# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one node offers a training job, read from its host record (pure): the inputs of the training-performance
model (gpufleet/plan/training.py), each an :class:`Input` that says whether it was measured, claimed or assumed and
where it came from.

Measured first (gpu facts, topology facts, gpu_compute and all-reduce records); else the seller's claim; else a
published typical figure (docs/baselines.md 3 and 12), labelled an assumption.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, TypedDict, TypeGuard

from gpufleet.checks.benchmarks import benchmark_kind
from gpufleet.checks.compute import published_peak
from gpufleet.report.estimate import HEALTHY_GEMM_FRACTION, INTRA_TYPICAL, NIC_EFFICIENCY, nic_busbw_gbs
from gpufleet.results.gpu_compute import gpu_figures

MEASURED, CLAIMED, ASSUMED, UNKNOWN = "measured", "claimed", "assumed", "unknown"
MIB = 1048576
# The NVLink generation of an NVSwitch domain, by the part's name (docs/baselines.md 2 and 3a).
NVSWITCH_BY_PART = (("B200", "nvswitch-nvlink5"), ("GB200", "nvswitch-nvlink5"), ("H100", "nvswitch-nvlink4"),
                    ("H200", "nvswitch-nvlink4"), ("H800", "nvswitch-nvlink4"), ("A100", "nvswitch-nvlink3"),
                    ("A800", "nvswitch-nvlink3"))


class Input(TypedDict):
    """One input of an estimate: its value, whether it was measured, claimed or assumed, and where it came from."""

    value: Any
    kind: str
    source: str


def _input(value: Any, kind: str, source: str) -> Input:
    return {"value": value, "kind": kind, "source": source}


def _is_number(value: Any) -> TypeGuard[float]:
    """A positive finite number (a bool is none)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def fig(value: Any) -> str:
    """A figure as the sources print it: up to 3 decimals, no trailing zeros."""
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def claim_of(record: Dict[str, Any]) -> Dict[str, Any]:
    claim = record.get("claim")
    return claim if isinstance(claim, dict) else {}


def _gpus(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    group = (record.get("facts") or {}).get("gpu")
    if not isinstance(group, dict):
        return []
    return [item for item in group.get("gpus") or [] if isinstance(item, dict)]


def _topology_summary(record: Dict[str, Any]) -> Dict[str, Any]:
    topology = (record.get("facts") or {}).get("topology")
    summary = topology.get("summary") if isinstance(topology, dict) else None
    return summary if isinstance(summary, dict) else {}


# -- the node ------------------------------------------------------------------------------------------------


def gpu_model(record: Dict[str, Any]) -> Input:
    names = sorted({str(item["name"]) for item in _gpus(record) if item.get("name")})
    if names:
        return _input(", ".join(names), MEASURED, "gpu facts (nvidia-smi)")
    claimed = claim_of(record).get("gpu_model")
    if claimed:
        return _input(str(claimed), CLAIMED, "claim gpu_model")
    return _input(None, UNKNOWN, "no gpu facts and no claimed gpu_model")


def gpu_count(record: Dict[str, Any]) -> Input:
    group = (record.get("facts") or {}).get("gpu")
    count = group.get("gpu_count") if isinstance(group, dict) else None
    if not isinstance(count, int) or count < 1:
        count = _topology_summary(record).get("gpu_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return _input(count, MEASURED, "gpu facts / topology facts")
    claimed = claim_of(record).get("gpu_count")
    if isinstance(claimed, int) and not isinstance(claimed, bool) and claimed > 0:
        return _input(claimed, CLAIMED, "claim gpu_count")
    return _input(None, UNKNOWN, "no gpu facts and no claimed gpu_count")


def gpu_memory_gb(record: Dict[str, Any]) -> Input:
    sizes = [item["memory_total_mib"] for item in _gpus(record) if _is_number(item.get("memory_total_mib"))]
    if sizes:
        smallest = min(sizes)
        return _input(round(smallest * MIB / 1e9, 2), MEASURED,
                      "gpu facts: %s MiB, the smallest GPU of the node" % fig(smallest))
    claimed = claim_of(record).get("gpu_memory_gb")
    if _is_number(claimed):
        return _input(float(claimed), CLAIMED, "claim gpu_memory_gb")
    return _input(None, UNKNOWN, "no gpu facts and no claimed gpu_memory_gb")


def nvlink_domain(record: Dict[str, Any], count: Optional[int]) -> Input:
    """The GPUs one tensor-parallel group may span: all of them when every pair is NVLink, 2 with NVLink bridge pairs
    (pairs only), else 1 (PCIe)."""
    summary = _topology_summary(record)
    pairs, nvlink = summary.get("pair_count"), summary.get("nvlink_pairs")
    if count == 1:
        return _input(1, MEASURED if pairs is not None else CLAIMED, "one GPU")
    if isinstance(pairs, int) and pairs > 0 and isinstance(nvlink, int):
        if nvlink == pairs:
            return _input(count, MEASURED, "topology: NVLink between all %d GPU pairs" % pairs)
        if nvlink:
            return _input(2, MEASURED, "topology: NVLink on %d of %d GPU pairs (bridged pairs)" % (nvlink, pairs))
        return _input(1, MEASURED, "topology: no NVLink pair (PCIe)")
    interconnect = claim_of(record).get("interconnect")
    by_claim = {"nvswitch": count, "nvlink_bridge_pairs": 2, "pcie": 1}
    if interconnect in by_claim and by_claim[interconnect]:
        return _input(by_claim[interconnect], CLAIMED, "claim interconnect %s" % interconnect)
    return _input(1, ASSUMED, "no topology facts and no claimed interconnect: PCIe assumed")


def price(record: Dict[str, Any]) -> Input:
    value = claim_of(record).get("price_per_node_hour")
    if _is_number(value):
        return _input(float(value), CLAIMED, "claim price_per_node_hour")
    return _input(None, UNKNOWN, "no claimed price_per_node_hour")


# -- GEMM rate -----------------------------------------------------------------------------------------------


def gemm_tflops(record: Dict[str, Any], model: Optional[str], precision: str) -> Input:
    """The slowest GPU's measured GEMM rate (synchronous training waits for it), else a healthy part assumed: the
    published dense peak x the healthy fraction (docs/baselines.md 12b)."""
    host = str(record.get("host"))
    measured = [gpu for gpu in gpu_figures(record) if precision in gpu["gemm_tflops"]]
    if measured:
        slowest = min(measured, key=lambda gpu: gpu["gemm_tflops"][precision])
        gemm = slowest["gemm_tflops"][precision]
        return _input(gemm, MEASURED, "gpu_compute on %s GPU %s, the slowest of %d: %s TFLOP/s %s"
                      % (host, slowest["index"], len(measured), fig(gemm), precision))
    peak = peak_tflops(model, precision)
    if peak:
        gemm = peak * HEALTHY_GEMM_FRACTION
        return _input(gemm, ASSUMED, "no gpu_compute record: a healthy part, %s x the published %s %s dense peak %s "
                      "TFLOP/s (docs/baselines.md 12b)" % (fig(HEALTHY_GEMM_FRACTION), model, precision, fig(peak)))
    return _input(None, UNKNOWN, "no gpu_compute record and no published %s peak for %r" % (precision, model))


def peak_tflops(model: Optional[str], precision: str) -> Optional[float]:
    peak = published_peak(model) if model else None
    value = ((peak or {}).get("dense_tflops") or {}).get(precision)
    return float(value) if _is_number(value) else None


# -- all-reduce busbw curves ---------------------------------------------------------------------------------


def curve_points(bench: Dict[str, Any]) -> List[List[float]]:
    """``[[bytes, GB/s], ...]`` of an all-reduce record's out-of-place rows ([] for a failed or empty run)."""
    parsed = bench.get("parsed")
    if not isinstance(parsed, dict) or parsed.get("failed"):
        return []
    points = []
    for row in parsed.get("rows") or []:
        if not isinstance(row, dict):
            continue
        busbw = (row.get("out_of_place") or {}).get("busbw_gbs") if isinstance(row.get("out_of_place"), dict) else None
        if _is_number(row.get("size_bytes")) and _is_number(busbw):
            points.append([float(row["size_bytes"]), float(busbw)])
    return points


def largest_busbw(points: List[List[float]]) -> float:
    """The busbw a curve gives at its largest size: the figure two curves are compared by."""
    return max(points)[1]


def measured_curve(record: Dict[str, Any], kind: str) -> Optional[Input]:
    """The host's all-reduce curve of ``kind`` (``allreduce_single`` / ``allreduce_multi``): of several runs the one
    with the lowest busbw at its largest size (the pace a job would get)."""
    runs = []
    for bench in record.get("benchmarks") or []:
        if isinstance(bench, dict) and benchmark_kind(bench) == kind:
            points = curve_points(bench)
            if points:
                runs.append((points, bench))
    if not runs:
        return None
    points, bench = min(runs, key=lambda item: largest_busbw(item[0]))
    hosts = [str(host) for host in bench.get("hosts") or [record.get("host")]]
    return _input(points, MEASURED, "%s on %s: %d sizes, %s GB/s at %s bytes"
                  % (kind, ", ".join(hosts), len(points), fig(largest_busbw(points)), fig(max(points)[0])))


def intra_node_curve(record: Dict[str, Any], model: Optional[str], domain: int, count: Optional[int]) -> Input:
    measured = measured_curve(record, "allreduce_single")
    if measured:
        return measured
    kind = typical_intra_kind(record, model, domain, count)
    value, source = INTRA_TYPICAL[kind]
    return _input(value, ASSUMED, "no allreduce_single record: the typical %s figure, %s" % (kind, source))


def typical_intra_kind(record: Dict[str, Any], model: Optional[str], domain: int, count: Optional[int]) -> str:
    """The interconnect class whose typical busbw stands in: the NVSwitch generation of the part when every GPU is
    in one NVLink domain, else PCIe of the GPUs' generation (bridged pairs do not carry an all-GPU all-reduce)."""
    if count and count > 1 and domain == count:
        for part, kind in NVSWITCH_BY_PART:
            if model and part in model:
                return kind
    generations = [item.get("pcie_link_gen_max") for item in _gpus(record)]
    return "pcie5" if any(isinstance(gen, int) and gen >= 5 for gen in generations) else "pcie4"


def inter_node_curve(record: Dict[str, Any]) -> Optional[Input]:
    """The measured multi-node all-reduce this host took part in, else the claimed compute NICs' line rate x
    NIC_EFFICIENCY (docs/baselines.md 3b), else None: the node cannot be costed across nodes."""
    measured = measured_curve(record, "allreduce_multi")
    if measured:
        return measured
    nics = [nic for nic in claim_of(record).get("nics") or [] if isinstance(nic, dict) and nic.get("role") == "compute"]
    gbps = sum(float(nic["count"]) * float(nic["gbps"]) for nic in nics
               if _is_number(nic.get("count")) and _is_number(nic.get("gbps")))
    if not gbps:
        return None
    return _input(nic_busbw_gbs(gbps), ASSUMED, "no allreduce_multi record: %s x the claimed compute NICs' "
                  "%s Gb/s / 8 (docs/baselines.md 3b)" % (fig(NIC_EFFICIENCY), fig(gbps)))
