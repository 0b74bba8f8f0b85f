# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One estimate document in, one answer out: the inputs of gpufleet/plan/training.py resolved from what a user gives
(``gpufleet estimate``, docs/cli.md), each marked measured, claimed or assumed with where it came from.

The document has ``job``, ``offer`` and, optionally, ``parallelism``. An offer's GEMM rate and busbw may be left out:
then the published peak times the healthy fraction (docs/baselines.md 12a, 12b) and the typical figure of the
interconnect it names (``intra_node``, or ``inter_node_gbps``, the node's NIC line rate; docs/baselines.md 3) stand in,
labelled assumptions.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from gpufleet.checks.compute import published_peak
from gpufleet.plan import training

# A healthy part's GEMM rate, as a fraction of its dense peak, where no gpu_compute record measured one: H100 SXM BF16
# at gpubench's own shape, 8192^3, runs at 80.6 % (797.8 and 797.5 TFLOP/s of 989.4, docs/baselines.md 12b), as at
# mamf-finder's best shape (80.3 %): the figure holds for that shape. Optimistic for power-limited parts (H100 PCIe
# 65 % at 8192^3) and for B200/GB200 (72.9-77.6 % at their best shapes): the estimate labels it an assumption.
HEALTHY_GEMM_FRACTION = 0.80
# Typical 8-GPU all-reduce busbw at large messages, by intra-node interconnect (GB/s, docs/baselines.md 3a).
INTRA_TYPICAL: Dict[str, Tuple[float, str]] = {
    "nvswitch-nvlink3": (230.0, "docs/baselines.md 3a: 8x A100 SXM4 NVSwitch, 230-236 GB/s"),
    "nvswitch-nvlink4": (470.0, "docs/baselines.md 3a: 8x H100 SXM NVSwitch with NVLS, ~470-482 GB/s"),
    "nvswitch-nvlink5": (845.0, "docs/baselines.md 3a: 8x B200, ~845 GB/s"),
    "pcie5": (40.0, "docs/baselines.md 3a: 8x H100 PCIe without NVLink, 35-45 GB/s (low confidence)"),
    "pcie4": (20.0, "docs/baselines.md 3a and 2: the PCIe 5.0 figure halved (PCIe 4.0 x16 carries half)"),
}
# busbw over a node's NICs: 0.94 of their aggregate (docs/baselines.md 3b, InfiniBand)
NIC_EFFICIENCY = 0.94
JOB_KEYS = ("parameters", "layers", "hidden", "heads", "seq_len", "vocab", "global_batch_tokens", "tokens")
OFFER_KEYS = ("gpu_model", "gpu_memory_gb", "gpus_per_node", "nodes", "nvlink_domain_gpus", "price_per_node_hour")
PARALLELISM_KEYS = ("tp", "pp", "dp", "zero_stage", "micro_batch", "recompute", "interleave")


def nic_busbw_gbs(line_rate_gbps: float) -> float:
    """The all-reduce busbw (GB/s) a node's NICs give across nodes: NIC_EFFICIENCY x their line rate in GB/s."""
    return NIC_EFFICIENCY * line_rate_gbps / 8.0


def _need(section: Mapping[str, Any], name: str, key: str) -> Any:
    if key not in section:
        raise training.EstimateError("%s.%s is missing (needed: %s)" % (name, key, ", ".join(
            JOB_KEYS if name == "job" else OFFER_KEYS)))
    return section[key]


def _positive(section: Mapping[str, Any], name: str, key: str) -> float:
    value = _need(section, name, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise training.EstimateError("%s.%s: %r is not a number > 0" % (name, key, value))
    return float(value)


def job_of(section: Mapping[str, Any]) -> training.Job:
    numbers = {key: _positive(section, "job", key) for key in JOB_KEYS}
    ints = {key: int(numbers[key]) for key in ("layers", "hidden", "heads", "seq_len", "vocab")}
    return training.Job(numbers["parameters"], ints["layers"], ints["hidden"], ints["heads"], ints["seq_len"],
                        ints["vocab"], numbers["global_batch_tokens"], numbers["tokens"],
                        precision=str(section.get("precision", "bf16")),
                        grad_reduce_bytes=int(section.get("grad_reduce_bytes", 4)),
                        tied_embeddings=bool(section.get("tied_embeddings", True)))


def _gemm(section: Mapping[str, Any], precision: str,
          inputs: Dict[str, Dict[str, Any]]) -> Tuple[float, Optional[float]]:
    peak = published_peak(str(section.get("gpu_model", "")))
    peak_tflops = (peak or {}).get("dense_tflops", {}).get(precision)
    if "gemm_tflops" in section:
        inputs["gemm_tflops"] = {"value": _positive(section, "offer", "gemm_tflops"), "kind": "measured",
                                 "source": "offer.gemm_tflops"}
    elif peak is not None and peak_tflops:
        inputs["gemm_tflops"] = {"value": peak_tflops * HEALTHY_GEMM_FRACTION, "kind": "assumed",
                                 "source": "%s %s peak %s TFLOP/s x healthy fraction %s (docs/baselines.md 12)" % (
                                     peak["sku"], precision, peak_tflops, HEALTHY_GEMM_FRACTION)}
    else:
        raise training.EstimateError("offer.gemm_tflops is missing and %r has no published %s peak: give the measured "
                                     "rate" % (section.get("gpu_model"), precision))
    return inputs["gemm_tflops"]["value"], peak_tflops


def _curve(section: Mapping[str, Any], key: str, inputs: Dict[str, Dict[str, Any]]) -> Optional[training.Curve]:
    if key in section:
        inputs[key] = {"value": section[key], "kind": "measured", "source": "offer.%s" % key}
        return training.Curve.of(section[key])
    if key == "intra_node_busbw_gbs":
        kind = section.get("intra_node")
        if kind not in INTRA_TYPICAL:
            raise training.EstimateError("offer.intra_node_busbw_gbs is missing and offer.intra_node %r is not one "
                                         "of %s" % (kind, ", ".join(sorted(INTRA_TYPICAL))))
        value, source = INTRA_TYPICAL[kind]
    else:
        if "inter_node_gbps" not in section:
            return None
        value = nic_busbw_gbs(_positive(section, "offer", "inter_node_gbps"))
        source = "%s x offer.inter_node_gbps %s / 8 (docs/baselines.md 3b)" % (
            NIC_EFFICIENCY, section["inter_node_gbps"])
    inputs[key] = {"value": value, "kind": "assumed", "source": source}
    return training.Curve.of(value)


def offer_of(section: Mapping[str, Any], precision: str) -> Tuple[training.Offer, Dict[str, Dict[str, Any]]]:
    inputs: Dict[str, Dict[str, Any]] = {}
    numbers = {key: _positive(section, "offer", key) for key in OFFER_KEYS if key != "gpu_model"}
    for key in numbers:
        inputs[key] = {"value": numbers[key], "kind": "claimed", "source": "offer.%s" % key}
    gemm, peak = _gemm(section, precision, inputs)
    intra = _curve(section, "intra_node_busbw_gbs", inputs)
    inter = _curve(section, "inter_node_busbw_gbs", inputs)
    if inter is None and numbers["nodes"] > 1:
        raise training.EstimateError("offer.nodes is %d: give inter_node_busbw_gbs or inter_node_gbps"
                                     % numbers["nodes"])
    if intra is None:  # pragma: no cover - _curve raises for a missing intra-node figure
        raise training.EstimateError("offer.intra_node_busbw_gbs is missing")
    offer = training.Offer(str(_need(section, "offer", "gpu_model")), numbers["gpu_memory_gb"],
                           int(numbers["gpus_per_node"]), int(numbers["nodes"]), int(numbers["nvlink_domain_gpus"]),
                           gemm, intra, inter, numbers["price_per_node_hour"], peak_tflops=peak)
    return offer, inputs


def answer(document: Any) -> Dict[str, Any]:
    """The estimate of ``document`` as the JSON ``gpufleet estimate`` prints (EstimateError for a bad document)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("job"), Mapping) or not isinstance(
            document.get("offer"), Mapping):
        raise training.EstimateError("the document needs a job and an offer (objects)")
    fixed = dict(document.get("parallelism") or {})
    unknown = sorted(set(fixed) - set(PARALLELISM_KEYS))
    if unknown:
        raise training.EstimateError("parallelism: unknown key(s) %s (known: %s)" % (
            ", ".join(unknown), ", ".join(PARALLELISM_KEYS)))
    job = job_of(document["job"])
    offer, inputs = offer_of(document["offer"], job.precision)
    got = training.estimate(job, offer, fixed)
    return dict(estimate_fields(got), inputs=inputs)


def estimate_fields(got: training.Estimate) -> Dict[str, Any]:
    """An estimate as JSON fields: what ``gpufleet estimate`` prints and the report's cost view carries."""
    times = got.step_time_s
    return {
        "feasible": got.feasible,
        "reason": got.reason,
        "nodes_needed": got.nodes_needed,
        "parallelism": vars(got.layout) if got.layout else None,
        "memory_per_gpu_gb": got.memory_per_gpu_gb,
        "step_time_s": vars(times) if times else None,
        "communication_share": training.comm_share(times) if times else None,
        "tokens_per_second_per_gpu": got.tokens_per_second_per_gpu,
        "mfu": got.mfu,
        "days": got.days,
        "gpu_hours": got.gpu_hours,
        "cost": got.cost,
    }
