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
index only where a side has no bus id, as CUDA's device order need not be nvidia-smi's.
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
from gpufleet.checks.registry import fleet_check, node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, result
from gpufleet.checks.profiles import PROFILE_DIR
from gpufleet.facts import nvml_samples as nvml
from gpufleet.facts.gpu import normalise_bus_id

KIND = "gpu_compute"
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
# The accumulation mode of the FP8 floor's source figures: mamf-finder calls torch._scaled_mm(A, B, scale, scale,
# out=C), whose use_fast_accum defaults to False (pytorch/pytorch#111847; cuBLASLt's FAST_ACCUM default is 0).
# gpubench 1.0 printed no mode and never set the attribute: cuBLASLt's default, 0, is what it ran.
FP8_SOURCE_FAST_ACCUM = 0
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
                    # a part whose healthy GEMM figures sit under FLOOR_FRACTION gives its own floor and its source
                    "gemm_floor": float(entry["gemm_floor"]) if "gemm_floor" in entry else None,
                    "gemm_floor_source": str(entry.get("gemm_floor_source") or ""),
                },
            )
        )
    return tuple(parts)


def published_peak(gpu_name: str) -> dict | None:
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


def _same_gpu(items: list[dict], bus_key: str, bus_id: Any, index: Any) -> dict | None:
    """The item of ``items`` (NVML summaries, GPU facts) that is the gpubench GPU ``bus_id``/``index``.

    By bus id whenever both sides have one: CUDA's device order (gpubench 1.0) need not be nvidia-smi's, so an index
    names another card. By index only where either side lacks bus ids.
    """
    bus = normalise_bus_id(bus_id)
    if bus and any(normalise_bus_id(item.get(bus_key)) for item in items):
        return next((item for item in items if normalise_bus_id(item.get(bus_key)) == bus), None)
    return next((item for item in items if item.get("index") == index), None)


def _summary_for(summaries: list[dict], gpu: dict) -> dict | None:
    return _same_gpu(summaries, "pci_bus_id", gpu.get("bus_id"), gpu.get("index"))


def _fact_gpus(node) -> list[dict]:
    return [gpu for gpu in (node.group("gpu") or {}).get("gpus") or [] if isinstance(gpu, dict)]


def _fact_gpu(node, index: Any, bus_id: Any = None) -> dict:
    return _same_gpu(_fact_gpus(node), "pci_bus_id", bus_id, index) or {}


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


def _gpu_errors(records: list[dict]) -> dict:
    """``{gpubench index: [error]}`` of the runs' per-GPU error records (``gpu 3 fp8: ...``)."""
    out: dict = {}
    for record in records:
        for error in record["parsed"].get("errors") or []:
            match = re.match(r"gpu (\d+)\b", str(error))
            if match:
                out.setdefault(int(match.group(1)), []).append(str(error))
    return out


def _sustained_asked(parsed: dict) -> bool:
    """Whether the run had a sustained phase (``gpubench -s``): a GPU's sustained record or a sustained error."""
    gpus = [gpu for gpu in parsed.get("gpus") or [] if isinstance(gpu, dict)]
    errors = [str(error) for error in parsed.get("errors") or []]
    return any(gpu.get("sustained") for gpu in gpus) or any(re.match(r"gpu \d+ sustained:", e) for e in errors)


def _new_entry(gpu: dict) -> dict:
    return {"name": gpu.get("name"), "bus_id": gpu.get("bus_id"), "values": {}, "modes": set(), "runs": [],
            "sustained_asked": False, "errors": [], "summary": None}


def _collect(entry: dict, gpu: dict, asked: bool) -> None:
    """One run's figures of one GPU into its entry."""
    gemm = gpu.get("gemm_tflops") or {}
    for dtype, value in gemm.items():
        entry["values"].setdefault(dtype, []).append(float(value))
    for test, value in (gpu.get("hbm_gbs") or {}).items():
        entry["values"].setdefault("hbm.%s" % test, []).append(float(value))
    if "fp8" in gemm:
        # gpubench 1.0 printed no mode: it never set the attribute, so it ran cuBLASLt's default (no fast accumulation)
        entry["modes"].add(int((gpu.get("fast_accum") or {}).get("fp8", FP8_SOURCE_FAST_ACCUM)))
    run = gpu.get("sustained")
    if isinstance(run, dict) and isinstance(run.get("tflops"), (int, float)):
        entry["runs"].append(run)
        entry["values"].setdefault("sustained.%s" % (run.get("dtype") or "bf16"), []).append(float(run["tflops"]))
    entry["sustained_asked"] = entry["sustained_asked"] or asked


def _sag(run: dict) -> float | None:
    """``(first - min) / first`` of a sustained run: how far its lowest 1-s window fell under its first."""
    first, lowest = run.get("first"), run.get("min")
    if not isinstance(first, (int, float)) or not isinstance(lowest, (int, float)) or first <= 0:
        return None
    return max(0.0, (first - lowest) / first)


def _voted_run(runs: list[dict], how: str) -> dict | None:
    """The sustained run judged among repeats: the least sag with ``best``, else the median one."""
    judged = sorted((run for run in runs if _sag(run) is not None), key=_sag)
    if not judged:
        return None
    return judged[0] if how == "best" else judged[(len(judged) - 1) // 2]


def _per_gpu_figures(records: list[dict], how: str) -> dict:
    """``{index: {"name", "bus_id", "figures": {figure: value}, "modes", "sustained", "sustained_asked", "errors",
    "summary"}}`` over the usable records.

    A figure is ``bf16`` ... ``fp32`` (TFLOP/s), ``hbm.copy``/``hbm.triad`` (GB/s) or ``sustained.<dtype>`` (the
    sustained phase's mean TFLOP/s); repeats are voted (``gpufleet_benchmark_vote``: median, or best). ``modes``: the
    FP8 accumulation modes (fast_accum) of its runs; ``sustained``: the sustained run judged.
    """
    collected: dict = {}
    for record in records:
        parsed = record["parsed"]
        summaries = _summaries(record)
        asked = _sustained_asked(parsed)
        for gpu in parsed.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            entry = collected.setdefault(gpu.get("index"), _new_entry(gpu))
            _collect(entry, gpu, asked)
            entry["summary"] = entry["summary"] or _summary_for(summaries, gpu)
    errors = _gpu_errors(records)
    for index, entry in collected.items():
        entry["errors"] = errors.get(index, [])
        entry["figures"] = {figure: vote(values, how)[0] for figure, values in entry.pop("values").items()}
        entry["sustained"] = _voted_run(entry.pop("runs"), how)
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


def _figure_words(entry: dict, figure: str) -> str:
    """The figure as messages name it: FP8 with its accumulation mode (``fp8 (fast_accum=1)``)."""
    if figure != "fp8" or not entry.get("modes"):
        return figure
    return "fp8 (fast_accum=%s)" % "/".join(str(mode) for mode in sorted(entry["modes"]))


def _floor_note(entry: dict, figure: str) -> str:
    """Where the floor's source figures ran in another FP8 mode than this run, say so."""
    if figure != "fp8" or not entry.get("modes", set()) - {FP8_SOURCE_FAST_ACCUM}:
        return ""
    return "; its source figures ran without fast accumulation (fast_accum=0), which fast_accum=1 outpaces"


def _floors(peak: dict, entry: dict) -> list[tuple]:
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


def _floor_fail(index: Any, entry: dict, fact_gpu: dict, peak: dict, floor_row: tuple, value: float) -> dict:
    figure, published, unit, fraction, source = floor_row
    floor = round(published * fraction, 1)
    message = _FLOOR_WORDS % (
        _gpu_label(index), peak["sku"], entry.get("bus_id") or "bus id unknown", _figure_words(entry, figure),
        _num(value), unit, value / published * 100, _num(published), unit, _num(floor), unit, fraction * 100,
        _floor_note(entry, figure), explain(entry.get("summary"), fact_gpu))
    item = result(CHECK_ID, FAIL, message, measured=value, expected=floor,
                  threshold_source="%s; peak: %s" % (source, peak["source"]), subject=_gpu_label(index))
    item["gpu"] = {"index": index, "name": entry.get("name") or fact_gpu.get("name"), "bus_id": entry.get("bus_id"),
                   "figure": figure, "peak": published}
    if figure == "fp8" and entry.get("modes"):
        item["gpu"]["fast_accum"] = sorted(entry["modes"])
    return item


def _judge_floors(index: Any, entry: dict, fact_gpu: dict, peak: dict | None) -> tuple[list, list, list]:
    """``(fail results, [(what, not measured)], measured/peak fractions)`` of one GPU against its part's floors."""
    label = _gpu_label(index)
    if peak is None:
        name = entry.get("name") or fact_gpu.get("name")
        return [], [(None, "%s (%s): no published peak for this part in gpufleet/profiles/gpu_peaks.yml"
                     % (label, name))], []
    fails, missing, fractions = [], [], []
    floors = _floors(peak, entry)
    for row in floors:
        value = entry["figures"].get(row[0])
        if value is None:
            missing.append((row[0], "%s %s: not measured%s" % (label, row[0], _errors_words(entry, (row[0],)))))
            continue
        fractions.append(value / row[1])
        if value < round(row[1] * row[3], 1):
            fails.append(_floor_fail(index, entry, fact_gpu, peak, row, value))
    if not any(row[0].startswith("hbm.") for row in floors):
        missing.append(("HBM", "%s HBM bandwidth: not measured%s" % (label, _errors_words(entry, HBM_TESTS))))
    return fails, missing, fractions


def _sag_fail(index: Any, entry: dict, fact_gpu: dict, peak: dict | None, run: dict, sag: float) -> dict:
    label, dtype = _gpu_label(index), run.get("dtype") or "bf16"
    message = ("%s (%s, %s) sustained %s over %s s: its lowest 1-s window %s TFLOP/s is %.0f%% under its first %s "
               "TFLOP/s (mean %s, last %s; more than %.0f%% fails); %s") % (
        label, peak["sku"] if peak else entry.get("name") or "unknown part", entry.get("bus_id") or "bus id unknown",
        dtype, _num(run.get("seconds")), _num(run["min"]), sag * 100, _num(run["first"]), _num(run.get("tflops")),
        _num(run.get("last")), SAG_LIMIT * 100, explain(entry.get("summary"), fact_gpu))
    item = result(CHECK_ID, FAIL, message, measured=round(sag, 3), expected=SAG_LIMIT, threshold_source=SAG_SOURCE,
                  subject=label)
    item["gpu"] = {"index": index, "name": entry.get("name") or fact_gpu.get("name"), "bus_id": entry.get("bus_id"),
                   "figure": "sustained.%s" % dtype, "sag": round(sag, 3)}
    return item


def _judge_sag(index: Any, entry: dict, fact_gpu: dict, peak: dict | None) -> tuple[list, list]:
    """``(fail results, [(what, not measured)])`` of one GPU's sustained phase (nothing when the run had none)."""
    run = entry.get("sustained")
    if run is None:
        if not entry.get("sustained_asked"):
            return [], []
        said = _errors_words(entry, ("sustained",))
        return [], [("sustained", "%s sustained: not measured%s" % (_gpu_label(index), said))]
    sag = _sag(run)
    if sag is None or sag <= SAG_LIMIT:
        return [], []
    return [_sag_fail(index, entry, fact_gpu, peak, run, sag)], []


def _timeout(entry: dict) -> str | None:
    """gpubench's timeout record of this GPU (``gpu 5 bf16: timeout: ...``), if one of its tests timed out."""
    return next((error for error in entry.get("errors") or [] if re.match(r"gpu \d+( \S+)?: timeout:", error)), None)


def _missing_words(label: str, entry: dict, missing: list) -> list[str]:
    """What was not measured; on a GPU whose test timed out, one line naming the timeout and every figure it cost."""
    timeout = _timeout(entry)
    lost = [what for what, _words in missing if what is not None]
    if not timeout or not lost:
        return [words for _what, words in missing]
    kept = [words for what, words in missing if what is None]
    return kept + ["%s: not measured: %s (gpubench: %s)" % (label, ", ".join(lost), timeout[:200])]


def _judge_gpu(index: Any, entry: dict, fact_gpu: dict) -> tuple[list[dict], list[str], list[float]]:
    """``(fail results, what was not measured, measured/peak fractions)`` of one GPU."""
    peak = published_peak(entry.get("name") or fact_gpu.get("name") or "")
    fails, missing, fractions = _judge_floors(index, entry, fact_gpu, peak)
    sag_fails, sag_missing = _judge_sag(index, entry, fact_gpu, peak)
    return fails + sag_fails, _missing_words(_gpu_label(index), entry, missing + sag_missing), fractions


def _errors_words(entry: dict, names: tuple) -> str:
    said = [
        error
        for error in entry.get("errors") or []
        if any(" %s:" % name in error or " %s " % name in error for name in names)
    ]
    return " (gpubench: %s)" % "; ".join(said)[:200] if said else ""


def _unlisted(node, per_gpu: dict, errors: dict) -> list[str]:
    """The node's GPUs (its GPU facts) that gpubench did not list, each with what gpubench said about it."""
    listed = [{"index": index, "pci_bus_id": entry.get("bus_id")} for index, entry in per_gpu.items()]
    out = []
    for gpu in _fact_gpus(node):
        if _same_gpu(listed, "pci_bus_id", gpu.get("pci_bus_id"), gpu.get("index")) is None:
            said = errors.get(gpu.get("index"))
            out.append("%s: not in the gpu_compute output%s" % (
                _gpu_label(gpu.get("index")), " (gpubench: %s)" % "; ".join(said)[:200] if said else ""))
    return out


def _gemm_floors(per_gpu: dict) -> list[float]:
    """The GEMM floor fractions the node's GPUs were judged against (a part's own, else FLOOR_FRACTION's)."""
    peaks = [published_peak(entry.get("name") or "") or {} for entry in per_gpu.values()]
    return sorted({FLOOR_FRACTION["bf16"] if peak.get("gemm_floor") is None else peak["gemm_floor"] for peak in peaks})


def _pass_words(count: int, fractions: list[float], per_gpu: dict) -> str:
    floors = _gemm_floors(per_gpu)
    gemm = "%.0f%%" % (floors[0] * 100) if len(floors) == 1 else "%.0f-%.0f%%" % (floors[0] * 100, floors[-1] * 100)
    words = "%d GPU(s): every GEMM dtype and HBM figure at or above its floor; lowest %.0f%% of the published peak " \
        "(floors: %s GEMM, %.0f%% HBM)" % (count, min(fractions) * 100, gemm, FLOOR_FRACTION["hbm"] * 100)
    sags = [_sag(entry["sustained"]) for entry in per_gpu.values() if entry.get("sustained")]
    if sags:
        words += "; sustained phase: largest sag %.0f%% (more than %.0f%% fails)" % (max(sags) * 100, SAG_LIMIT * 100)
    return words


@node_check(CHECK_ID)
def check_gpu_compute(node) -> list[dict]:
    """Each GPU's GEMM TFLOP/s per dtype and HBM GB/s against FLOOR_FRACTION of its part's published dense peak, and
    its sustained phase's sag against SAG_LIMIT."""
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
        entry = per_gpu[index]
        fails, gaps, seen = _judge_gpu(index, entry, _fact_gpu(node, index, entry.get("bus_id")))
        out.extend(fails)
        missing.extend(gaps)
        fractions.extend(seen)
    missing.extend(_unlisted(node, per_gpu, _gpu_errors(usable)))
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


def _fleet_figures(nodes) -> dict:
    """``{sku: {figure: [(node name, gpu index, bus id, value, summary, fact gpu)]}}`` of every usable record; FP8 per
    accumulation mode (``fp8 (fast_accum=1)``): figures of two modes are not one population."""
    out: dict = {}
    for node in nodes:
        usable, _not_run, _failures = _usable(node)
        for index, entry in _per_gpu_figures(usable, node.settings.get(VOTE_SETTING) or "median").items():
            peak = published_peak(entry.get("name") or "")
            sku = peak["sku"] if peak else (entry.get("name") or "unknown part")
            fact_gpu = _fact_gpu(node, index, entry.get("bus_id"))
            for figure, value in entry["figures"].items():
                if value is not None:
                    out.setdefault(sku, {}).setdefault(_figure_words(entry, figure), []).append(
                        (node.name, index, entry.get("bus_id"), value, entry.get("summary"), fact_gpu)
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
