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
  :data:`FLOOR_FRACTION` of the published peak. A figure below it fails, naming the GPU, dtype, measured,
  peak and floor, with what NVML saw on that GPU during the run (power cap, thermal slowdown, clock sag).
  No record, a missing binary, output the parser refused, a part without published peaks, a GPU or a
  dtype of the part that was not measured: not verified (skip, with the reason), so a level that
  requires the benchmark leaves the node INCOMPLETE, never ACCEPT.
- ``benchmarks.gpu_compute_relative`` (fleet): per part, each GPU's figure against the median of every
  GPU of that part in the fleet; more than :data:`RELATIVE_TOLERANCE` below it fails, naming the GPU
  (one slow card among fast ones: the mixed batch).
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import yaml

from gpufleet.checks.benchmarks import NOT_RUN_OUTCOMES, VOTE_SETTING, benchmark_kind, median, records_of, vote
from gpufleet.checks.burn_in_flags import DEFAULTS as SAMPLE_LIMITS
from gpufleet.checks.burn_in_flags import THERMAL_EVENTS
from gpufleet.checks.engine import fleet_check, node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, result
from gpufleet.checks.profiles import PROFILE_DIR
from gpufleet.facts import nvml_samples as nvml

KIND = "gpu_compute"
CHECK_ID = "benchmarks.gpu_compute"
RELATIVE_CHECK_ID = "benchmarks.gpu_compute_relative"
PEAKS_FILE = os.path.join(PROFILE_DIR, "gpu_peaks.yml")
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
HBM_TESTS = ("copy", "triad")

# The floor: this fraction of the part's published dense peak (docs/baselines.md 12b). GEMM: healthy parts reach
# 72.9-86.9 % of the BF16 peak and 70.9-77.6 % of the FP8 peak at their best shape (stas00/ml-engineering,
# "Maximum Achievable Matmul FLOPS comparison table"); one fixed large shape reaches less than the best one, so
# the floor sits about ten points under the lowest healthy figure. TF32 and FP32: the same fraction, a policy (no
# published table). HBM: BabelStream on a GH200 (96 GB HBM3, 4.0 TB/s) copied at 2979 GB/s and ran triad at
# 3315 GB/s (74.5 and 82.9 %, on BabelStream's tracker: "should be ~3TB/s"); the floor is ten points under.
FLOOR_FRACTION = {"bf16": 0.60, "fp16": 0.60, "fp8": 0.60, "tf32": 0.60, "fp32": 0.60, "hbm": 0.65}
FLOOR_SOURCE = {
    "bf16": "0.60 x the datasheet dense peak (healthy best-shape BF16 matmul: 72.9-86.9 %, stas00/ml-engineering MAMF)",
    "fp16": "0.60 x the datasheet dense peak (as BF16: the same tensor-core rate; stas00/ml-engineering MAMF)",
    "fp8": "0.60 x the datasheet dense peak (healthy best-shape FP8 matmul: 70.9-77.6 %, stas00/ml-engineering MAMF)",
    "tf32": "0.60 x the datasheet dense peak (policy: the BF16 fraction; no published achievable-TF32 table)",
    "fp32": "0.60 x the datasheet non-tensor peak (policy: the BF16 fraction; no published achievable-SGEMM table)",
    "hbm": "0.65 x the datasheet memory bandwidth (BabelStream on GH200: copy 74.5 %, triad 82.9 %, "
    "docs/baselines.md 12b)",
}
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
# results/bench.py: a run that exited 0 but whose output the parser refused
UNPARSED_PREFIX = "exited 0 without"


# --- published peaks ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _peak_table(path: str = PEAKS_FILE) -> tuple:
    with open(path, "r", encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
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
                },
            )
        )
    return tuple(parts)


def published_peak(gpu_name: str) -> dict | None:
    """The part named by ``gpu_name`` (nvidia-smi's name) and its published dense peaks, or None for an unknown part.

    ``{"sku", "dense_tflops": {dtype: TFLOP/s}, "hbm_gbs", "source"}``; a dtype the part lacks (fp8 before Hopper
    and Ada) is absent. The first entry of gpu_peaks.yml whose ``match`` is found in the name wins.
    """
    if not isinstance(gpu_name, str) or not gpu_name.strip():
        return None
    for pattern, peak in _peak_table():
        if pattern.search(gpu_name):
            return {
                "sku": peak["sku"],
                "dense_tflops": dict(peak["dense_tflops"]),
                "hbm_gbs": peak["hbm_gbs"],
                "source": peak["source"],
            }
    return None


# --- reading the records --------------------------------------------------------------------------------------------


def _num(value: float | None) -> str:
    if value is None:
        return "unknown"
    return ("%.1f" % value).rstrip("0").rstrip(".")


def _gpu_label(index: Any) -> str:
    return "GPU%s" % index


def _records(node) -> list[dict]:
    return [record for record in records_of(node) if benchmark_kind(record) == KIND]


def _not_run(record: dict) -> str | None:
    """Why a record holds no figures (not run, no binary, output not parsed), else None."""
    outcome = record.get("outcome")
    reason = " ".join(str(record.get("reason") or "").split())[:200]
    if outcome in NOT_RUN_OUTCOMES:
        return "gpu_compute %s%s" % (outcome.replace("_", " "), ": %s" % reason if reason else "")
    if outcome == "failed" and reason.startswith(UNPARSED_PREFIX):
        return "gpu_compute output could not be parsed: %s" % reason
    parsed = record.get("parsed")
    if outcome in (None, "ok") and (not isinstance(parsed, dict) or not isinstance(parsed.get("gpus"), list)):
        return "gpu_compute output could not be parsed%s" % (": %s" % reason if reason else "")
    return None


def _run_failure(record: dict) -> str | None:
    """A run that crashed, hung or failed (not a missing tool): the node fails."""
    outcome = record.get("outcome")
    if outcome in (None, "ok") or outcome in NOT_RUN_OUTCOMES or _not_run(record):
        return None
    reason = " ".join(str(record.get("reason") or "").split())[:200]
    return "gpu_compute %s%s" % (outcome, ": %s" % reason if reason else "")


def _summaries(record: dict) -> list[dict]:
    """The NVML per-GPU summaries of the run: the record's ``samples`` as summarised, or summarised here."""
    samples = record.get("samples")
    if isinstance(samples, dict) and isinstance(samples.get("samples"), list):
        return nvml.summarise(samples)
    if isinstance(samples, list):
        return [item for item in samples if isinstance(item, dict)]
    return []


def _summary_for(summaries: list[dict], gpu: dict) -> dict | None:
    bus = str(gpu.get("bus_id") or "").lower()
    if bus:
        for item in summaries:
            if str(item.get("pci_bus_id") or "").lower() == bus:
                return item
    return next((item for item in summaries if item.get("index") == gpu.get("index")), None)


def _fact_gpu(node, index: Any) -> dict:
    for gpu in (node.group("gpu") or {}).get("gpus") or []:
        if isinstance(gpu, dict) and gpu.get("index") == index:
            return gpu
    return {}


def _event_share(summary: dict, event: str) -> float | None:
    """Share of the run's wall time ``event`` held the clocks down (the counter's growth, start to end)."""
    start = (summary.get("counters_start") or {}).get("clock_event_ns.%s" % event)
    end = (summary.get("counters_end") or {}).get("clock_event_ns.%s" % event)
    first, last = summary.get("t_first"), summary.get("t_last")
    if None in (start, end, first, last) or last <= first:
        return None
    held, wall, _resets = nvml.clock_event_deltas([(first, start), (last, end)])
    return held / wall if wall else None


def explain(summary: dict | None, fact_gpu: dict) -> str:
    """What NVML saw on a GPU during the run that explains a low figure: power cap, thermal slowdown, clock sag."""
    if not summary or not summary.get("samples"):
        return "no NVML samples of this GPU during the run"
    causes = []
    limit_share = SAMPLE_LIMITS["throttle_time_share"]
    power = _event_share(summary, "sw_power_cap")
    if power is not None and power > limit_share:
        words = "power-capped %.0f%% of the run (sw_power_cap" % (power * 100)
        if summary.get("power_max_w") is not None:
            words += ", up to %s W" % _num(summary["power_max_w"])
        limit, ceiling = fact_gpu.get("power_limit_w"), fact_gpu.get("power_max_limit_w")
        if isinstance(limit, (int, float)) and isinstance(ceiling, (int, float)) and limit < ceiling:
            words += ", power limit set to %s W of %s W" % (_num(limit), _num(ceiling))
        causes.append(words + ")")
    thermal = [
        (event, share)
        for event in THERMAL_EVENTS
        for share in [_event_share(summary, event)]
        if share is not None and share > limit_share
    ]
    for event, share in thermal:
        causes.append(
            "thermal slowdown %s %.0f%% of the run (max %s C)" % (event, share * 100, _num(summary.get("temp_max_c")))
        )
    clock, top = summary.get("sm_clock_median_mhz"), fact_gpu.get("clocks_max_sm_mhz")
    if isinstance(clock, (int, float)) and isinstance(top, (int, float)) and top > 0:
        sag = (top - clock) / top
        if sag > SAMPLE_LIMITS["clock_sag_share"]:
            causes.append("SM clock median %s MHz, %.0f%% below its max %s MHz" % (_num(clock), sag * 100, _num(top)))
    if not causes:
        return (
            "NVML during the run saw no power cap, thermal slowdown or clock sag (SM clock median %s MHz, max %s C)"
            % (_num(clock), _num(summary.get("temp_max_c")))
        )
    return "NVML during the run: " + "; ".join(causes)


def _per_gpu_figures(records: list[dict], how: str) -> dict:
    """``{index: {"name", "bus_id", "figures": {figure: value}, "errors": [str], "summary"}}`` over the usable records.

    A figure is ``bf16`` ... ``fp32`` (TFLOP/s) or ``hbm.copy``/``hbm.triad`` (GB/s); repeats are voted
    (``gpufleet_benchmark_vote``: median, or best).
    """
    collected: dict = {}
    for record in records:
        parsed = record["parsed"]
        summaries = _summaries(record)
        for gpu in parsed.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            entry = collected.setdefault(
                gpu.get("index"),
                {"name": gpu.get("name"), "bus_id": gpu.get("bus_id"), "values": {}, "errors": [], "summary": None},
            )
            for dtype, value in (gpu.get("gemm_tflops") or {}).items():
                entry["values"].setdefault(dtype, []).append(float(value))
            for test, value in (gpu.get("hbm_gbs") or {}).items():
                entry["values"].setdefault("hbm.%s" % test, []).append(float(value))
            entry["summary"] = entry["summary"] or _summary_for(summaries, gpu)
        for error in parsed.get("errors") or []:
            match = re.match(r"gpu (\d+)\b", str(error))
            if match and int(match.group(1)) in collected:
                collected[int(match.group(1))]["errors"].append(str(error))
    for entry in collected.values():
        entry["figures"] = {figure: vote(values, how)[0] for figure, values in entry.pop("values").items()}
    return collected


def _usable(node) -> tuple[list[dict], list[str], list[str]]:
    """``(records with figures, why others have none, run failures)``."""
    usable, not_run, failures = [], [], []
    for record in _records(node):
        why = _not_run(record)
        failure = _run_failure(record)
        if why:
            not_run.append(why)
        elif failure:
            failures.append(failure)
        else:
            usable.append(record)
    return usable, not_run, failures


# --- the node check -------------------------------------------------------------------------------------------------


def _judge_gpu(index: Any, entry: dict, fact_gpu: dict) -> tuple[list[dict], list[str], list[float]]:
    """``(fail results, what was not measured, measured/peak fractions)`` of one GPU."""
    name = entry.get("name") or fact_gpu.get("name")
    peak = published_peak(name or "")
    label = _gpu_label(index)
    if peak is None:
        return [], ["%s (%s): no published peak for this part in gpufleet/profiles/gpu_peaks.yml" % (label, name)], []
    fails, missing, fractions = [], [], []
    wanted = [
        (dtype, peak["dense_tflops"][dtype], "TFLOP/s", FLOOR_FRACTION[dtype], FLOOR_SOURCE[dtype])
        for dtype in DTYPES
        if dtype in peak["dense_tflops"]
    ]
    hbm = [
        ("hbm.%s" % test, peak["hbm_gbs"], "GB/s", FLOOR_FRACTION["hbm"], FLOOR_SOURCE["hbm"])
        for test in HBM_TESTS
        if entry["figures"].get("hbm.%s" % test) is not None
    ]
    if not hbm:
        missing.append("%s HBM bandwidth: not measured%s" % (label, _errors_words(entry, ("copy", "triad"))))
    for figure, published, unit, fraction, source in wanted + hbm:
        value = entry["figures"].get(figure)
        if value is None:
            missing.append("%s %s: not measured%s" % (label, figure, _errors_words(entry, (figure,))))
            continue
        floor = round(published * fraction, 1)
        fractions.append(value / published)
        if value < floor:
            why = explain(entry.get("summary"), fact_gpu)
            item = result(
                CHECK_ID,
                FAIL,
                "%s (%s, %s) %s %s %s is %.0f%% of the published peak %s %s, below the floor %s %s "
                "(%.0f%% of peak); %s"
                % (
                    label,
                    peak["sku"],
                    entry.get("bus_id") or "bus id unknown",
                    figure,
                    _num(value),
                    unit,
                    value / published * 100,
                    _num(published),
                    unit,
                    _num(floor),
                    unit,
                    fraction * 100,
                    why,
                ),
                measured=value,
                expected=floor,
                threshold_source="%s; peak: %s" % (source, peak["source"]),
                subject=label,
            )
            item["gpu"] = {
                "index": index,
                "name": name,
                "bus_id": entry.get("bus_id"),
                "figure": figure,
                "peak": published,
            }
            fails.append(item)
    return fails, missing, fractions


def _errors_words(entry: dict, names: tuple) -> str:
    said = [
        error
        for error in entry.get("errors") or []
        if any(" %s:" % name in error or " %s " % name in error for name in names)
    ]
    return " (gpubench: %s)" % "; ".join(said)[:200] if said else ""


@node_check(CHECK_ID)
def check_gpu_compute(node) -> list[dict]:
    """Each GPU's GEMM TFLOP/s per dtype and HBM GB/s against FLOOR_FRACTION of its part's published dense peak."""
    records = _records(node)
    if not records:
        return [result(CHECK_ID, SKIP, "not judged: no gpu_compute run recorded (per-GPU GEMM and HBM benchmark)")]
    usable, not_run, failures = _usable(node)
    out = [result(CHECK_ID, FAIL, failure) for failure in failures]
    if not usable:
        out.extend(result(CHECK_ID, SKIP, "not judged: %s" % why) for why in not_run)
        return out
    per_gpu = _per_gpu_figures(usable, node.settings.get(VOTE_SETTING) or "median")
    missing: list[str] = []
    fractions: list[float] = []
    for index in sorted(per_gpu, key=lambda item: (item is None, item)):
        fails, gaps, seen = _judge_gpu(index, per_gpu[index], _fact_gpu(node, index))
        out.extend(fails)
        missing.extend(gaps)
        fractions.extend(seen)
    facts_gpus = [gpu.get("index") for gpu in (node.group("gpu") or {}).get("gpus") or [] if isinstance(gpu, dict)]
    missing.extend(
        "%s: not in the gpu_compute output" % _gpu_label(index) for index in facts_gpus if index not in per_gpu
    )
    if not per_gpu:
        missing.append("the gpu_compute output lists no GPU")
    for gap in missing:
        out.append(result(CHECK_ID, SKIP, "not verified: %s" % gap))
    if not out:
        out.append(
            result(
                CHECK_ID,
                PASS,
                "%d GPU(s): every GEMM dtype and HBM figure at or above its floor; lowest %.0f%% of "
                "the published peak (floors: %.0f%% GEMM, %.0f%% HBM)"
                % (len(per_gpu), min(fractions) * 100, FLOOR_FRACTION["bf16"] * 100, FLOOR_FRACTION["hbm"] * 100),
                measured=round(min(fractions), 3),
                expected=FLOOR_FRACTION["bf16"],
                threshold_source="docs/baselines.md 12",
            )
        )
    return out


# --- the fleet-relative rule ----------------------------------------------------------------------------------------


def _fleet_figures(nodes) -> dict:
    """``{sku: {figure: [(node name, gpu index, bus id, value, summary, fact gpu)]}}`` of every usable record."""
    out: dict = {}
    for node in nodes:
        usable, _not_run, _failures = _usable(node)
        for index, entry in _per_gpu_figures(usable, node.settings.get(VOTE_SETTING) or "median").items():
            peak = published_peak(entry.get("name") or "")
            sku = peak["sku"] if peak else (entry.get("name") or "unknown part")
            for figure, value in entry["figures"].items():
                if value is not None:
                    out.setdefault(sku, {}).setdefault(figure, []).append(
                        (node.name, index, entry.get("bus_id"), value, entry.get("summary"), _fact_gpu(node, index))
                    )
    return out


@fleet_check(RELATIVE_CHECK_ID)
def check_gpu_compute_relative(nodes) -> dict:
    """Per part, each GPU's figures against the fleet median of that part; more than RELATIVE_TOLERANCE below fails."""
    out: dict = {node.name: [] for node in nodes}
    judged: dict = {node.name: 0 for node in nodes}
    for sku, figures in _fleet_figures(nodes).items():
        for figure, rows in figures.items():
            if len(rows) < MIN_RELATIVE_GPUS:
                continue
            mid = median([row[3] for row in rows])
            floor = mid * (1 - RELATIVE_TOLERANCE)
            unit = "GB/s" if figure.startswith("hbm.") else "TFLOP/s"
            for name, index, bus_id, value, summary, fact_gpu in rows:
                judged[name] += 1
                if value < floor:
                    item = result(
                        RELATIVE_CHECK_ID,
                        FAIL,
                        "%s (%s, %s) %s %s %s is %.0f%% below the fleet median %s %s of %d %s "
                        "GPUs (more than %.0f%% below fails); %s"
                        % (
                            _gpu_label(index),
                            sku,
                            bus_id or "bus id unknown",
                            figure,
                            _num(value),
                            unit,
                            (mid - value) / mid * 100,
                            _num(mid),
                            unit,
                            len(rows),
                            sku,
                            RELATIVE_TOLERANCE * 100,
                            explain(summary, fact_gpu),
                        ),
                        measured=value,
                        expected=round(floor, 1),
                        threshold_source=RELATIVE_SOURCE,
                        subject=_gpu_label(index),
                    )
                    item["gpu"] = {"index": index, "bus_id": bus_id, "figure": figure, "fleet_median": mid}
                    out[name].append(item)
    for node in nodes:
        if out[node.name]:
            continue
        if judged[node.name]:
            out[node.name].append(
                result(
                    RELATIVE_CHECK_ID,
                    PASS,
                    "%d figure(s) of this node's GPUs within %.0f%% of their "
                    "part's fleet median" % (judged[node.name], RELATIVE_TOLERANCE * 100),
                    threshold_source=RELATIVE_SOURCE,
                )
            )
        else:
            out[node.name].append(
                result(
                    RELATIVE_CHECK_ID,
                    SKIP,
                    "not judged: no gpu_compute figure of this node, or fewer than "
                    "%d GPUs of its part in the fleet with one" % MIN_RELATIVE_GPUS,
                )
            )
    return out
