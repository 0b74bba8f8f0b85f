# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-GPU compute and memory throughput (pure): the ``gpu_compute`` benchmark against the part and the fleet.

Input: the node's ``gpu_compute`` benchmark records (kind ``gpu_compute``; ``parsed`` is
gpufleet/parsers/gpubench.py's result, ``samples`` the NVML sampler's per-GPU summary of the run,
gpufleet/facts/nvml_samples.py ``summarise``, or the parsed sampler output it summarises).

- :func:`published_peak` names a GPU's part from its nvidia-smi name and gives its datasheet dense peaks
  (gpufleet/profiles/gpu_peaks.yml; figures and sources: docs/baselines.md section 12).
- ``benchmarks.gpu_compute`` (node): each GPU's GEMM TFLOP/s per dtype and HBM GB/s against a floor,
  :data:`FLOOR_FRACTION` of the published peak (a part's own ``gemm_floor`` where gpu_peaks.yml gives one). A
  figure below it fails, naming the GPU, dtype, measured, peak and floor, with what NVML saw on that GPU during the
  run (power cap, thermal slowdown, clock sag).
  No record, a missing binary, output the parser refused, a part without published peaks, a GPU or a
  dtype of the part that was not measured: not verified (skip, with the reason), so a level that
  requires the benchmark leaves the node INCOMPLETE, never ACCEPT.
  FP8 is judged per accumulation mode (gpubench's ``fast_accum``): the message says the mode, and that the floor's
  source figures were measured without fast accumulation when the run used it. A GPU whose test timed out is named
  with what it did not measure (not verified, as any gpubench error of a GPU), its other figures judged. With the
  sustained phase (``gpubench -s``), a GPU whose lowest 1-s window sags more than :data:`SAG_LIMIT` under its
  first fails, explained by the NVML samples like a figure under its floor.
- ``benchmarks.gpu_compute_relative`` (fleet): per part, each GPU's figure (FP8 per accumulation mode, and the
  sustained mean) against the median of every GPU of that part in the fleet; more than
  :data:`RELATIVE_TOLERANCE` below it fails, naming the GPU (one slow card among fast ones: the mixed batch).

A gpubench GPU is matched to its NVML samples and its GPU facts by PCI bus id, read by the one normaliser
gpufleet/facts/gpu.py ``normalise_bus_id`` (CUDA's ``0000:18:00.0`` and NVML's ``00000000:18:00.0`` alike); by
index only where a side has no bus id, as CUDA's device order need not be nvidia-smi's. The records are read into
per-GPU figures, and NVML's explanation of a low one is worded, by gpufleet/checks/compute_figures.py; the checks
here judge them.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, TypedDict, cast

from gpufleet.checks.benchmarks import VOTE_SETTING
from gpufleet.checks.compute_figures import (GpuFigures, fact_gpu, fact_gpus, figure_words, gpu_compute_records,
                                             gpu_errors, gpu_label, number_text, per_gpu_figures, sag, same_gpu,
                                             usable_records)
from gpufleet.checks.fleet import median
from gpufleet.checks.registry import fleet_check, node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, CheckResult, NodeContext, result
from gpufleet.checks.profiles import PROFILE_DIR
from gpufleet.yamlfile import load_yaml

# Re-exported (__all__ below): read here before they moved to compute_figures.py with the reading of the records.
from gpufleet.checks.compute_figures import FP8_SOURCE_FAST_ACCUM, KIND
from gpufleet.checks.compute_figures import UNPARSED_PREFIX, explain
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["FP8_SOURCE_FAST_ACCUM", "KIND", "UNPARSED_PREFIX", "explain"]

CHECK_ID = "benchmarks.gpu_compute"
RELATIVE_CHECK_ID = "benchmarks.gpu_compute_relative"
PEAKS_FILE = os.path.join(PROFILE_DIR, "gpu_peaks.yml")
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
HBM_TESTS = ("copy", "triad")

# The floor: this fraction of the part's published dense peak (docs/baselines.md 12b), for the shape gpubench times
# (square 8192 x 8192 x 8192, normal-distributed inputs). Healthy H100 SXM at that shape: BF16 797.8 TFLOP/s with
# cuBLAS (pranjalssh/fast.cu README) and 797.5 with torch.mm (zzc0721/torch-performance-test-data#79), 80.6 % of
# 989.4; FP16 74.4 %, TF32 75.2 %, FP32 77.4 % (#79): as high as ml-engineering's best-shape MAMF figure for that part
# (80.3 %; healthy parts 72.9-86.9 % BF16, 70.9-77.6 % FP8 at their best shapes, stas00/ml-engineering). No FP8
# figure at 8192^3 is published: FP8 keeps the MAMF range. The floor sits 14-20 points under the 8192^3 figures, as
# a 3 s timed run holds lower clocks than those short bursts. A part may set its own GEMM floor in gpu_peaks.yml
# (``gemm_floor``, with its source): the 350 W PCIe Hopper cards reach 58-66 % at 8192^3. TF32 and FP32: the same
# fraction, a policy. HBM: BabelStream on a GH200 (96 GB HBM3, 4.0 TB/s) copied at 2979 GB/s and ran triad at
# 3315 GB/s (74.5 and 82.9 %, on BabelStream's tracker: "should be ~3TB/s"); the floor is ten points under.
FLOOR_FRACTION = {"bf16": 0.60, "fp16": 0.60, "fp8": 0.60, "tf32": 0.60, "fp32": 0.60, "hbm": 0.65}
FLOOR_SOURCE = {
    "bf16": "0.60 x the datasheet dense peak (healthy H100 SXM BF16 at 8192^3: 80.6 %, pranjalssh/fast.cu, "
    "zzc0721/torch-performance-test-data#79; best-shape MAMF 72.9-86.9 %, stas00/ml-engineering)",
    "fp16": "0.60 x the datasheet dense peak (healthy H100 SXM FP16 at 8192^3: 74.4 %, "
    "zzc0721/torch-performance-test-data#79)",
    "fp8": "0.60 x the datasheet dense peak (healthy best-shape FP8 matmul without fast accumulation: 70.9-77.6 %, "
    "stas00/ml-engineering MAMF; no published 8192^3 figure)",
    "tf32": "0.60 x the datasheet dense peak (healthy H100 SXM TF32 at 8192^3: 75.2 %, "
    "zzc0721/torch-performance-test-data#79; the fraction is the BF16 policy)",
    "fp32": "0.60 x the datasheet non-tensor peak (healthy H100 SXM FP32 at 8192^3: 77.4 %, "
    "zzc0721/torch-performance-test-data#79; the fraction is the BF16 policy)",
    "hbm": "0.65 x the datasheet memory bandwidth (BabelStream on GH200: copy 74.5 %, triad 82.9 %, "
    "docs/baselines.md 12b)",
}
# The sustained phase (gpubench -s): the lowest 1-s window more than this fraction under the first fails. Policy
# (docs/baselines.md 12d): GPU Boost steps the clock down as the die heats and as power nears its cap; a healthy,
# well-cooled card holds its clock within a few percent over a minute (an assumption until gpubench's windows are
# recorded on real cards); a tenth lost within the run is a card that cannot hold its clock (cooling, power) for a
# training job's hours, and as the fleet-relative rule says, the slowest GPU sets a synchronous step's pace.
SAG_LIMIT = 0.10
SAG_SOURCE = (
    "policy: the lowest 1-s window of gpubench's sustained phase more than 10 % under its first "
    "(docs/baselines.md 12d)"
)
# The fleet-relative rule: a GPU more than this fraction below the median of its part in the fleet fails. Healthy
# GPUs of one part differ by 5 % and more (stas00/ml-engineering, "Not all accelerators are created equal": cooling,
# silicon lottery); twice that is a card that costs the whole job its speed (the slowest GPU sets a synchronous
# step's pace).
RELATIVE_TOLERANCE = 0.10
RELATIVE_SOURCE = (
    "policy: 10 % below the fleet median of the part (twice the 5 % spread healthy GPUs show, "
    "stas00/ml-engineering 'Not all accelerators are created equal')"
)
MIN_RELATIVE_GPUS = 3
# A figure to judge against its part's floor: (figure, published peak, unit, floor fraction, the floor's source)
FloorRow = tuple[str, float, str, float, str]
# A part's published peaks (:func:`published_peak`): a plain dict, as the report's callers read it
Peak = dict[str, Any]


# --- published peaks ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _peak_table(path: str = PEAKS_FILE) -> tuple[tuple[re.Pattern[str], Peak], ...]:
    with open(path, "r", encoding="utf-8") as handle:
        data = load_yaml(handle)
    parts = []
    for entry in data["parts"]:
        parts.append(
            (
                re.compile(entry["match"], re.IGNORECASE),
                {
                    "sku": str(entry["sku"]),
                    "dense_tflops": {str(key): float(value) for key, value in entry["dense_tflops"].items()},
                    "hbm_gbs": float(entry["hbm_gbs"]),
                    "source": str(entry["source"]),
                    # a part whose healthy GEMM figures sit under FLOOR_FRACTION gives its own floor and its source
                    "gemm_floor": float(entry["gemm_floor"]) if "gemm_floor" in entry else None,
                    "gemm_floor_source": str(entry.get("gemm_floor_source") or ""),
                },
            )
        )
    return tuple(parts)


def published_peak(gpu_name: str) -> Peak | None:
    """The part named by ``gpu_name`` (nvidia-smi's name) and its published dense peaks, or None for an unknown part.

    ``{"sku", "dense_tflops": {dtype: TFLOP/s}, "hbm_gbs", "source", "gemm_floor" (fraction|None),
    "gemm_floor_source"}``; a dtype the part lacks (fp8 before Hopper and Ada) is absent. The first entry of
    gpu_peaks.yml whose ``match`` is found in the name wins.
    """
    if not isinstance(gpu_name, str) or not gpu_name.strip():
        return None
    for pattern, peak in _peak_table():
        if pattern.search(gpu_name):
            return dict(peak, dense_tflops=dict(peak["dense_tflops"]))
    return None


def _with_gpu(item: CheckResult, gpu: dict[str, Any]) -> CheckResult:
    """``item`` with the GPU it judged: results.json carries it beside the schema's fields (CheckResult declares those
    alone)."""
    cast("dict[str, Any]", item)["gpu"] = gpu
    return item


# --- the node check -------------------------------------------------------------------------------------------------


def _floor_note(entry: GpuFigures, figure: str) -> str:
    """Where the floor's source figures ran in another FP8 mode than this run, say so."""
    if figure != "fp8" or not entry.get("modes", set()) - {FP8_SOURCE_FAST_ACCUM}:
        return ""
    return "; its source figures ran without fast accumulation (fast_accum=0), which fast_accum=1 outpaces"


def _floors(peak: Peak, entry: GpuFigures) -> list[FloorRow]:
    """``(figure, published, unit, fraction, source)`` to judge: each GEMM dtype of the part, each HBM test run."""
    own = peak.get("gemm_floor")
    gemm = [
        (dtype, peak["dense_tflops"][dtype], "TFLOP/s", FLOOR_FRACTION[dtype] if own is None else own,
         FLOOR_SOURCE[dtype] if own is None else peak.get("gemm_floor_source") or "gpu_peaks.yml gemm_floor")
        for dtype in DTYPES
        if dtype in peak["dense_tflops"]
    ]
    hbm = [
        ("hbm.%s" % test, peak["hbm_gbs"], "GB/s", FLOOR_FRACTION["hbm"], FLOOR_SOURCE["hbm"])
        for test in HBM_TESTS
        if entry["figures"].get("hbm.%s" % test) is not None
    ]
    return gemm + hbm


_FLOOR_WORDS = (
    "%s (%s, %s) %s %s %s is %.0f%% of the published peak %s %s, below the floor %s %s (%.0f%% of peak%s); %s"
)


def _floor_fail(index: Any, entry: GpuFigures, gpu_facts: dict[str, Any], peak: Peak, floor_row: FloorRow,
                value: float) -> CheckResult:
    figure, published, unit, fraction, source = floor_row
    floor = round(published * fraction, 1)
    message = _FLOOR_WORDS % (
        gpu_label(index), peak["sku"], entry.get("bus_id") or "bus id unknown", figure_words(entry, figure),
        number_text(value), unit, value / published * 100, number_text(published), unit, number_text(floor), unit,
        fraction * 100, _floor_note(entry, figure), explain(entry.get("summary"), gpu_facts))
    item = result(CHECK_ID, FAIL, message, measured=value, expected=floor,
                  threshold_source="%s; peak: %s" % (source, peak["source"]), subject=gpu_label(index))
    gpu = {"index": index, "name": entry.get("name") or gpu_facts.get("name"), "bus_id": entry.get("bus_id"),
           "figure": figure, "peak": published}
    if figure == "fp8" and entry.get("modes"):
        gpu["fast_accum"] = sorted(entry["modes"])
    return _with_gpu(item, gpu)


def _judge_floors(index: Any, entry: GpuFigures, gpu_facts: dict[str, Any],
                  peak: Peak | None) -> tuple[list[CheckResult], list[tuple[str | None, str]], list[float]]:
    """``(fail results, [(what, not measured)], measured/peak fractions)`` of one GPU against its part's floors."""
    label = gpu_label(index)
    if peak is None:
        name = entry.get("name") or gpu_facts.get("name")
        return [], [(None, "%s (%s): no published peak for this part in gpufleet/profiles/gpu_peaks.yml"
                     % (label, name))], []
    fails: list[CheckResult] = []
    missing: list[tuple[str | None, str]] = []
    fractions: list[float] = []
    floors = _floors(peak, entry)
    for row in floors:
        value = entry["figures"].get(row[0])
        if value is None:
            missing.append((row[0], "%s %s: not measured%s" % (label, row[0], _errors_words(entry, (row[0],)))))
            continue
        fractions.append(value / row[1])
        if value < round(row[1] * row[3], 1):
            fails.append(_floor_fail(index, entry, gpu_facts, peak, row, value))
    if not any(row[0].startswith("hbm.") for row in floors):
        missing.append(("HBM", "%s HBM bandwidth: not measured%s" % (label, _errors_words(entry, HBM_TESTS))))
    return fails, missing, fractions


def _sag_fail(index: Any, entry: GpuFigures, gpu_facts: dict[str, Any], peak: Peak | None, run: dict[str, Any],
              run_sag: float) -> CheckResult:
    label, dtype = gpu_label(index), run.get("dtype") or "bf16"
    message = ("%s (%s, %s) sustained %s over %s s: its lowest 1-s window %s TFLOP/s is %.0f%% under its first %s "
               "TFLOP/s (mean %s, last %s; more than %.0f%% fails); %s") % (
        label, peak["sku"] if peak else entry.get("name") or "unknown part", entry.get("bus_id") or "bus id unknown",
        dtype, number_text(run.get("seconds")), number_text(run["min"]), run_sag * 100, number_text(run["first"]),
        number_text(run.get("tflops")), number_text(run.get("last")), SAG_LIMIT * 100,
        explain(entry.get("summary"), gpu_facts))
    item = result(CHECK_ID, FAIL, message, measured=round(run_sag, 3), expected=SAG_LIMIT,
                  threshold_source=SAG_SOURCE, subject=label)
    return _with_gpu(item, {"index": index, "name": entry.get("name") or gpu_facts.get("name"),
                            "bus_id": entry.get("bus_id"), "figure": "sustained.%s" % dtype,
                            "sag": round(run_sag, 3)})


def _judge_sag(index: Any, entry: GpuFigures, gpu_facts: dict[str, Any],
               peak: Peak | None) -> tuple[list[CheckResult], list[tuple[str | None, str]]]:
    """``(fail results, [(what, not measured)])`` of one GPU's sustained phase (nothing when the run had none)."""
    run = entry.get("sustained")
    if run is None:
        if not entry.get("sustained_asked"):
            return [], []
        said = _errors_words(entry, ("sustained",))
        return [], [("sustained", "%s sustained: not measured%s" % (gpu_label(index), said))]
    run_sag = sag(run)
    if run_sag is None or run_sag <= SAG_LIMIT:
        return [], []
    return [_sag_fail(index, entry, gpu_facts, peak, run, run_sag)], []


def _timeout(entry: GpuFigures) -> str | None:
    """gpubench's timeout record of this GPU (``gpu 5 bf16: timeout: ...``), if one of its tests timed out."""
    return next((error for error in entry.get("errors") or [] if re.match(r"gpu \d+( \S+)?: timeout:", error)), None)


def _missing_words(label: str, entry: GpuFigures, missing: list[tuple[str | None, str]]) -> list[str]:
    """What was not measured; on a GPU whose test timed out, one line naming the timeout and every figure it cost."""
    timeout = _timeout(entry)
    lost = [what for what, _words in missing if what is not None]
    if not timeout or not lost:
        return [words for _what, words in missing]
    kept = [words for what, words in missing if what is None]
    return kept + ["%s: not measured: %s (gpubench: %s)" % (label, ", ".join(lost), timeout[:200])]


def _judge_gpu(index: Any, entry: GpuFigures, gpu_facts: dict[str, Any]) -> tuple[list[CheckResult], list[str],
                                                                                  list[float]]:
    """``(fail results, what was not measured, measured/peak fractions)`` of one GPU."""
    peak = published_peak(entry.get("name") or gpu_facts.get("name") or "")
    fails, missing, fractions = _judge_floors(index, entry, gpu_facts, peak)
    sag_fails, sag_missing = _judge_sag(index, entry, gpu_facts, peak)
    return fails + sag_fails, _missing_words(gpu_label(index), entry, missing + sag_missing), fractions


def _errors_words(entry: GpuFigures, names: tuple[str, ...]) -> str:
    said = [
        error
        for error in entry.get("errors") or []
        if any(" %s:" % name in error or " %s " % name in error for name in names)
    ]
    return " (gpubench: %s)" % "; ".join(said)[:200] if said else ""


def _unlisted(node: NodeContext, per_gpu: dict[Any, GpuFigures], errors: dict[Any, list[str]]) -> list[str]:
    """The node's GPUs (its GPU facts) that gpubench did not list, each with what gpubench said about it."""
    listed = [{"index": index, "pci_bus_id": entry.get("bus_id")} for index, entry in per_gpu.items()]
    out = []
    for gpu in fact_gpus(node):
        if same_gpu(listed, "pci_bus_id", gpu.get("pci_bus_id"), gpu.get("index")) is None:
            said = errors.get(gpu.get("index"))
            out.append("%s: not in the gpu_compute output%s" % (
                gpu_label(gpu.get("index")), " (gpubench: %s)" % "; ".join(said)[:200] if said else ""))
    return out


def _gemm_floors(per_gpu: dict[Any, GpuFigures]) -> list[float]:
    """The GEMM floor fractions the node's GPUs were judged against (a part's own, else FLOOR_FRACTION's)."""
    floors = set()
    for entry in per_gpu.values():
        own = (published_peak(entry.get("name") or "") or {}).get("gemm_floor")
        floors.add(FLOOR_FRACTION["bf16"] if own is None else own)
    return sorted(floors)


def _pass_words(count: int, fractions: list[float], per_gpu: dict[Any, GpuFigures]) -> str:
    floors = _gemm_floors(per_gpu)
    gemm = "%.0f%%" % (floors[0] * 100) if len(floors) == 1 else "%.0f-%.0f%%" % (floors[0] * 100, floors[-1] * 100)
    words = "%d GPU(s): every GEMM dtype and HBM figure at or above its floor; lowest %.0f%% of the published peak " \
        "(floors: %s GEMM, %.0f%% HBM)" % (count, min(fractions) * 100, gemm, FLOOR_FRACTION["hbm"] * 100)
    largest = _largest_sag(per_gpu)
    if largest is not None:
        words += "; sustained phase: largest sag %.0f%% (more than %.0f%% fails)" % (largest * 100, SAG_LIMIT * 100)
    return words


def _largest_sag(per_gpu: dict[Any, GpuFigures]) -> float | None:
    """The largest sag of the GPUs' judged sustained runs, None when no GPU has one."""
    sags = [sag(run) for run in (entry.get("sustained") for entry in per_gpu.values()) if run]
    known = [value for value in sags if value is not None]  # every judged run has one (compute_figures.voted_run)
    return max(known) if known else None


@node_check(CHECK_ID)
def check_gpu_compute(node: NodeContext) -> list[CheckResult]:
    """Each GPU's GEMM TFLOP/s per dtype and HBM GB/s against FLOOR_FRACTION of its part's published dense peak, and
    its sustained phase's sag against SAG_LIMIT."""
    records = gpu_compute_records(node)
    if not records:
        return [result(CHECK_ID, SKIP, "not judged: no gpu_compute run recorded (per-GPU GEMM and HBM benchmark)")]
    usable, not_run, failures = usable_records(node)
    out = [result(CHECK_ID, FAIL, failure) for failure in failures]
    if not usable:
        out.extend(result(CHECK_ID, SKIP, "not judged: %s" % why) for why in not_run)
        return out
    per_gpu = per_gpu_figures(usable, node.settings.get(VOTE_SETTING) or "median")
    missing: list[str] = []
    fractions: list[float] = []
    for index in sorted(per_gpu, key=lambda item: (item is None, item)):
        entry = per_gpu[index]
        fails, gaps, seen = _judge_gpu(index, entry, fact_gpu(node, index, entry.get("bus_id")))
        out.extend(fails)
        missing.extend(gaps)
        fractions.extend(seen)
    missing.extend(_unlisted(node, per_gpu, gpu_errors(usable)))
    if not per_gpu:
        missing.append("the gpu_compute output lists no GPU")
    for gap in missing:
        out.append(result(CHECK_ID, SKIP, "not verified: %s" % gap))
    if not out:
        out.append(result(CHECK_ID, PASS, _pass_words(len(per_gpu), fractions, per_gpu),
                          measured=round(min(fractions), 3), expected=_gemm_floors(per_gpu)[0],
                          threshold_source="docs/baselines.md 12"))
    return out


# --- the fleet-relative rule ----------------------------------------------------------------------------------------


class _FleetFigure(TypedDict):
    """One GPU's figure among those of its part in the fleet."""

    node: str
    index: Any
    bus_id: Any
    value: float
    summary: dict[str, Any] | None
    gpu_facts: dict[str, Any]


def _fleet_figures(nodes: list[NodeContext]) -> dict[str, dict[str, list[_FleetFigure]]]:
    """``{sku: {figure: [GPU figure]}}`` of every usable record; FP8 per accumulation mode (``fp8 (fast_accum=1)``):
    figures of two modes are not one population."""
    out: dict[str, dict[str, list[_FleetFigure]]] = {}
    for node in nodes:
        usable, _not_run, _failures = usable_records(node)
        for index, entry in per_gpu_figures(usable, node.settings.get(VOTE_SETTING) or "median").items():
            peak = published_peak(entry.get("name") or "")
            sku = peak["sku"] if peak else (entry.get("name") or "unknown part")
            gpu_facts = fact_gpu(node, index, entry.get("bus_id"))
            for figure, value in entry["figures"].items():
                if value is not None:
                    out.setdefault(sku, {}).setdefault(figure_words(entry, figure), []).append(_FleetFigure(
                        node=node.name, index=index, bus_id=entry.get("bus_id"), value=value,
                        summary=entry.get("summary"), gpu_facts=gpu_facts))
    return out


def _relative_fail(sku: str, figure: str, row: _FleetFigure, mid: float, population: int) -> CheckResult:
    """The failure of one GPU's figure more than RELATIVE_TOLERANCE below its part's fleet median ``mid``."""
    unit = "GB/s" if figure.startswith("hbm.") else "TFLOP/s"
    floor = mid * (1 - RELATIVE_TOLERANCE)
    message = ("%s (%s, %s) %s %s %s is %.0f%% below the fleet median %s %s of %d %s GPUs (more than %.0f%% below "
               "fails); %s" % (gpu_label(row["index"]), sku, row["bus_id"] or "bus id unknown", figure,
                               number_text(row["value"]), unit, (mid - row["value"]) / mid * 100, number_text(mid),
                               unit, population, sku, RELATIVE_TOLERANCE * 100,
                               explain(row["summary"], row["gpu_facts"])))
    item = result(RELATIVE_CHECK_ID, FAIL, message, measured=row["value"], expected=round(floor, 1),
                  threshold_source=RELATIVE_SOURCE, subject=gpu_label(row["index"]))
    return _with_gpu(item, {"index": row["index"], "bus_id": row["bus_id"], "figure": figure, "fleet_median": mid})


@fleet_check(RELATIVE_CHECK_ID)
def check_gpu_compute_relative(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """Per part, each GPU's figures against the fleet median of that part; more than RELATIVE_TOLERANCE below fails."""
    out: dict[str, list[CheckResult]] = {node.name: [] for node in nodes}
    judged = {node.name: 0 for node in nodes}
    for sku, figures in _fleet_figures(nodes).items():
        for figure, rows in figures.items():
            if len(rows) < MIN_RELATIVE_GPUS:
                continue
            mid = median([row["value"] for row in rows])
            for row in rows:
                judged[row["node"]] += 1
                if row["value"] < mid * (1 - RELATIVE_TOLERANCE):
                    out[row["node"]].append(_relative_fail(sku, figure, row, mid, len(rows)))
    for node in nodes:
        if out[node.name]:
            continue
        if judged[node.name]:
            out[node.name].append(result(RELATIVE_CHECK_ID, PASS, "%d figure(s) of this node's GPUs within %.0f%% of "
                                         "their part's fleet median" % (judged[node.name], RELATIVE_TOLERANCE * 100),
                                         threshold_source=RELATIVE_SOURCE))
        else:
            out[node.name].append(result(RELATIVE_CHECK_ID, SKIP, "not judged: no gpu_compute figure of this node, or "
                                         "fewer than %d GPUs of its part in the fleet with one" % MIN_RELATIVE_GPUS))
    return out
