# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's per-GPU throughput table (pure): every GPU's gpu_compute figures, fleet-relative outliers flagged."""

from __future__ import annotations

import re

from gpufleet.results.gpu_compute import gpu_figures

FLEET_RULE_PREFIX = "benchmarks.gpu_compute"
_GPU_SUBJECT = re.compile(r"^GPU ?(\d+)\b")


def _gpu_of(item: dict):
    """The GPU index a check result names: its ``gpu.index``, else a ``GPU<n>`` subject; None otherwise."""
    gpu = item.get("gpu")
    if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
        return gpu["index"]
    match = _GPU_SUBJECT.match(str(item.get("subject") or ""))
    return int(match.group(1)) if match else None


def fleet_outliers(record: dict) -> dict:
    """``{gpu index: [messages]}`` of the host's fleet-relative compute findings (ids ``benchmarks.gpu_compute*``,
    status warn or fail) that name a GPU."""
    named = {}
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


def throughput_rows(records: list) -> list:
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
