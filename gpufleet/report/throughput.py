# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's per-GPU throughput table (pure): every GPU's gpu_compute figures, fleet-relative outliers flagged;
:func:`throughput_view` adds the display text."""

from __future__ import annotations

import re
from typing import Any

from gpufleet.report.common import cell_text
from gpufleet.results.gpu_compute import DTYPES, HBM_KERNELS, gpu_figures

FLEET_RULE_PREFIX = "benchmarks.gpu_compute"
_GPU_SUBJECT = re.compile(r"^GPU ?(\d+)\b")


def _gpu_of(item: dict[str, Any]) -> int | None:
    """The GPU index a check result names: its ``gpu.index``, else a ``GPU<n>`` subject; None otherwise."""
    gpu = item.get("gpu")
    if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
        return gpu["index"]
    match = _GPU_SUBJECT.match(str(item.get("subject") or ""))
    return int(match.group(1)) if match else None


def fleet_outliers(record: dict[str, Any]) -> dict[int, list[str]]:
    """``{gpu index: [messages]}`` of the host's fleet-relative compute findings (ids ``benchmarks.gpu_compute*``,
    status warn or fail) that name a GPU."""
    named: dict[int, list[str]] = {}
    for item in record.get("checks") or []:
        if not isinstance(item, dict) or not str(item.get("id") or "").startswith(FLEET_RULE_PREFIX):
            continue
        if item.get("status") not in ("warn", "fail"):
            continue
        index = _gpu_of(item)
        if index is not None:
            named.setdefault(index, []).append(
                "%s %s: %s" % (item.get("status"), item.get("id"), item.get("message") or "")
            )
    return named


def throughput_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-GPU throughput table: one row per GPU of every gpu_compute record, fleet-relative outliers flagged."""
    rows = []
    for record in records:
        host = str(record.get("host"))
        flagged = fleet_outliers(record)
        for gpu in gpu_figures(record):
            findings = flagged.get(gpu["index"], [])
            rows.append({"host": host, "gpu": gpu["index"], "name": gpu["name"], "bus_id": gpu["bus_id"],
                         "gemm_tflops": gpu["gemm_tflops"], "hbm_gbs": gpu["hbm_gbs"],
                         "outlier": bool(findings), "findings": findings})
    return rows


def throughput_view(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The per-GPU throughput table (:func:`throughput_rows`) with display text; None when no record."""
    rows = throughput_rows(records)
    if not rows:
        return None
    for row in rows:
        row["cells"] = [cell_text(round(row["gemm_tflops"][key], 1)) if key in row["gemm_tflops"] else ""
                        for key in DTYPES] + \
                       [cell_text(round(row["hbm_gbs"][key], 1)) if key in row["hbm_gbs"] else ""
                        for key in HBM_KERNELS]
    return {"columns": ["%s TFLOP/s" % key for key in DTYPES] + ["HBM %s GB/s" % key for key in HBM_KERNELS],
            "rows": rows, "outliers": sum(1 for row in rows if row["outlier"])}
