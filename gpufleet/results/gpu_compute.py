# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host record's gpu_compute benchmark figures (pure): what the report's throughput table and cost to train, and
the health check's Prometheus gauges, read. A record's ``parsed`` is the gpubench parser's result
(gpufleet/parsers/gpubench.py, docs/parsers.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpufleet.checks.benchmarks import benchmark_kind

GPU_COMPUTE = "gpu_compute"
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
HBM_KERNELS = ("copy", "triad")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def compute_records(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The host's gpu_compute records that have per-GPU figures (their ``parsed`` the gpubench parser's result)."""
    out = []
    for bench in record.get("benchmarks") or []:
        if isinstance(bench, dict) and benchmark_kind(bench) == GPU_COMPUTE and isinstance(bench.get("parsed"), dict):
            if any(isinstance(gpu, dict) for gpu in bench["parsed"].get("gpus") or []):
                out.append(bench)
    return out


def gpu_figures(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{index, name, bus_id, gemm_tflops, hbm_gbs}]`` of the host's latest gpu_compute record ([] when none)."""
    records = compute_records(record)
    if not records:
        return []
    parsed = records[-1]["parsed"]
    figures = []
    for gpu in parsed.get("gpus") or []:
        if not isinstance(gpu, dict):
            continue
        gemm = gpu["gemm_tflops"] if isinstance(gpu.get("gemm_tflops"), dict) else {}
        hbm = gpu["hbm_gbs"] if isinstance(gpu.get("hbm_gbs"), dict) else {}
        figures.append({"index": gpu.get("index"), "name": gpu.get("name"), "bus_id": gpu.get("bus_id"),
                        "gemm_tflops": {key: float(gemm[key]) for key in DTYPES if _is_number(gemm.get(key))},
                        "hbm_gbs": {key: float(hbm[key]) for key in HBM_KERNELS if _is_number(hbm.get(key))}})
    return figures
