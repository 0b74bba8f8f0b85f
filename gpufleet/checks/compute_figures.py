# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``gpu_compute`` records read into per-GPU figures, and what NVML saw during the run (pure).

gpufleet/checks/compute.py judges what this module reads: a node's ``gpu_compute`` benchmark records (kind
``gpu_compute``; ``parsed`` is gpufleet/parsers/gpubench.py's result, ``samples`` the NVML sampler's per-GPU
summary of the run, gpufleet/facts/nvml_samples.py ``summarise``, or the parsed sampler output it summarises).

- :func:`usable_records` sorts the records: with figures, not run (no binary, output the parser refused), failed.
- :func:`per_gpu_figures` gives each gpubench GPU its figures, repeats voted (``gpufleet_benchmark_vote``), with its
  FP8 accumulation modes, its sustained run, its gpubench errors and its NVML summary.
- :func:`explain` says what NVML saw on a GPU during the run (power cap, thermal slowdown, clock sag).

A gpubench GPU is matched to its NVML samples and its GPU facts by PCI bus id, read by the one normaliser
gpufleet/facts/gpu.py ``normalise_bus_id`` (CUDA's ``0000:18:00.0`` and NVML's ``00000000:18:00.0`` alike); by
index only where a side has no bus id, as CUDA's device order need not be nvidia-smi's.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

from gpufleet.checks.benchmarks import NOT_RUN_OUTCOMES, benchmark_kind, records_of, vote
from gpufleet.checks.burn_in_flags import DEFAULTS as SAMPLE_LIMITS
from gpufleet.checks.burn_in_flags import THERMAL_EVENTS
from gpufleet.checks.model import NodeContext
from gpufleet.facts import nvml_samples as nvml
from gpufleet.facts.gpu import normalise_bus_id

KIND = "gpu_compute"
# The accumulation mode of the FP8 floor's source figures: mamf-finder calls torch._scaled_mm(A, B, scale, scale,
# out=C), whose use_fast_accum defaults to False (pytorch/pytorch#111847; cuBLASLt's FAST_ACCUM default is 0).
# gpubench 1.0 printed no mode and never set the attribute: cuBLASLt's default, 0, is what it ran.
FP8_SOURCE_FAST_ACCUM = 0
# results/bench.py: a run that exited 0 but whose output the parser refused
UNPARSED_PREFIX = "exited 0 without"


class GpuFigures(TypedDict):
    """One gpubench GPU over a node's usable records (:func:`per_gpu_figures`)."""

    name: Any  # gpubench's name of the GPU
    bus_id: Any  # gpubench's PCI bus id (CUDA's spelling), None when it printed none
    figures: dict[str, float | None]  # figure -> the repeats' voted value
    modes: set[int]  # the FP8 accumulation modes (fast_accum) of its runs
    sustained: dict[str, Any] | None  # the sustained run judged (:func:`voted_run`), None without one
    sustained_asked: bool  # whether a run had a sustained phase
    errors: list[str]  # gpubench's error records of this GPU (``gpu 3 fp8: ...``)
    summary: dict[str, Any] | None  # the NVML summary of the GPU during the run


class _Collected(TypedDict):
    """A GPU's figures while the records are read: every repeat's value, before the vote."""

    name: Any
    bus_id: Any
    values: dict[str, list[float]]
    modes: set[int]
    runs: list[dict[str, Any]]
    sustained_asked: bool
    summary: dict[str, Any] | None


def number_text(value: float | None) -> str:
    """A figure for a message: one decimal at most (``989.4``, ``800``); ``unknown`` for None."""
    if value is None:
        return "unknown"
    return ("%.1f" % value).rstrip("0").rstrip(".")


def gpu_label(index: Any) -> str:
    return "GPU%s" % index


def figure_words(entry: GpuFigures, figure: str) -> str:
    """The figure as messages name it: FP8 with its accumulation mode (``fp8 (fast_accum=1)``)."""
    if figure != "fp8" or not entry.get("modes"):
        return figure
    return "fp8 (fast_accum=%s)" % "/".join(str(mode) for mode in sorted(entry["modes"]))


# --- the records ----------------------------------------------------------------------------------------------------


def gpu_compute_records(node: NodeContext) -> list[dict[str, Any]]:
    """The node's ``gpu_compute`` benchmark records."""
    return [record for record in records_of(node) if benchmark_kind(record) == KIND]


def _not_run(record: dict[str, Any]) -> str | None:
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


def _run_failure(record: dict[str, Any]) -> str | None:
    """A run that crashed, hung or failed (not a missing tool): the node fails."""
    outcome = record.get("outcome")
    if outcome in (None, "ok") or outcome in NOT_RUN_OUTCOMES or _not_run(record):
        return None
    reason = " ".join(str(record.get("reason") or "").split())[:200]
    return "gpu_compute %s%s" % (outcome, ": %s" % reason if reason else "")


def usable_records(node: NodeContext) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """``(records with figures, why others have none, run failures)``."""
    usable, not_run, failures = [], [], []
    for record in gpu_compute_records(node):
        why = _not_run(record)
        failure = _run_failure(record)
        if why:
            not_run.append(why)
        elif failure:
            failures.append(failure)
        else:
            usable.append(record)
    return usable, not_run, failures


def _summaries(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The NVML per-GPU summaries of the run: the record's ``samples`` as summarised, or summarised here."""
    samples = record.get("samples")
    if isinstance(samples, dict) and isinstance(samples.get("samples"), list):
        return nvml.summarise(samples)
    if isinstance(samples, list):
        return [item for item in samples if isinstance(item, dict)]
    return []


def same_gpu(items: list[dict[str, Any]], bus_key: str, bus_id: Any, index: Any) -> dict[str, Any] | None:
    """The item of ``items`` (NVML summaries, GPU facts) that is the gpubench GPU ``bus_id``/``index``.

    By bus id whenever both sides have one: CUDA's device order (gpubench 1.0) need not be nvidia-smi's, so an index
    names another card. By index only where either side lacks bus ids.
    """
    bus = normalise_bus_id(bus_id)
    if bus and any(normalise_bus_id(item.get(bus_key)) for item in items):
        return next((item for item in items if normalise_bus_id(item.get(bus_key)) == bus), None)
    return next((item for item in items if item.get("index") == index), None)


def fact_gpus(node: NodeContext) -> list[dict[str, Any]]:
    """The node's GPU facts (``gpufleet_gpu.gpus``)."""
    return [gpu for gpu in (node.group("gpu") or {}).get("gpus") or [] if isinstance(gpu, dict)]


def fact_gpu(node: NodeContext, index: Any, bus_id: Any = None) -> dict[str, Any]:
    """The GPU facts of the gpubench GPU ``index``/``bus_id`` (:func:`same_gpu`), ``{}`` when none matches."""
    return same_gpu(fact_gpus(node), "pci_bus_id", bus_id, index) or {}


# --- what NVML saw --------------------------------------------------------------------------------------------------


def _event_share(summary: dict[str, Any], event: str) -> float | None:
    """Share of the run's wall time ``event`` held the clocks down (the counter's growth, start to end)."""
    start = (summary.get("counters_start") or {}).get("clock_event_ns.%s" % event)
    end = (summary.get("counters_end") or {}).get("clock_event_ns.%s" % event)
    first, last = summary.get("t_first"), summary.get("t_last")
    if start is None or end is None or first is None or last is None or last <= first:
        return None
    held, wall, _resets = nvml.clock_event_deltas([(first, start), (last, end)])
    return held / wall if wall else None


def _power_words(summary: dict[str, Any], gpu_facts: dict[str, Any], share: float) -> str:
    """The power cap that held the clocks ``share`` of the run, with the power limit set where it is under its max."""
    words = "power-capped %.0f%% of the run (sw_power_cap" % (share * 100)
    if summary.get("power_max_w") is not None:
        words += ", up to %s W" % number_text(summary["power_max_w"])
    limit, ceiling = gpu_facts.get("power_limit_w"), gpu_facts.get("power_max_limit_w")
    if isinstance(limit, (int, float)) and isinstance(ceiling, (int, float)) and limit < ceiling:
        words += ", power limit set to %s W of %s W" % (number_text(limit), number_text(ceiling))
    return words + ")"


def explain(summary: dict[str, Any] | None, gpu_facts: dict[str, Any]) -> str:
    """What NVML saw on a GPU during the run that explains a low figure: power cap, thermal slowdown, clock sag."""
    if not summary or not summary.get("samples"):
        return "no NVML samples of this GPU during the run"
    causes = []
    limit_share = SAMPLE_LIMITS["throttle_time_share"]
    power = _event_share(summary, "sw_power_cap")
    if power is not None and power > limit_share:
        causes.append(_power_words(summary, gpu_facts, power))
    for event in THERMAL_EVENTS:
        share = _event_share(summary, event)
        if share is not None and share > limit_share:
            causes.append("thermal slowdown %s %.0f%% of the run (max %s C)"
                          % (event, share * 100, number_text(summary.get("temp_max_c"))))
    clock, top = summary.get("sm_clock_median_mhz"), gpu_facts.get("clocks_max_sm_mhz")
    if isinstance(clock, (int, float)) and isinstance(top, (int, float)) and top > 0:
        sag = (top - clock) / top
        if sag > SAMPLE_LIMITS["clock_sag_share"]:
            causes.append("SM clock median %s MHz, %.0f%% below its max %s MHz"
                          % (number_text(clock), sag * 100, number_text(top)))
    if not causes:
        return (
            "NVML during the run saw no power cap, thermal slowdown or clock sag (SM clock median %s MHz, max %s C)"
            % (number_text(clock), number_text(summary.get("temp_max_c")))
        )
    return "NVML during the run: " + "; ".join(causes)


# --- the figures of each GPU ----------------------------------------------------------------------------------------


def gpu_errors(records: list[dict[str, Any]]) -> dict[int, list[str]]:
    """``{gpubench index: [error]}`` of the runs' per-GPU error records (``gpu 3 fp8: ...``)."""
    out: dict[int, list[str]] = {}
    for record in records:
        for error in record["parsed"].get("errors") or []:
            match = re.match(r"gpu (\d+)\b", str(error))
            if match:
                out.setdefault(int(match.group(1)), []).append(str(error))
    return out


def _sustained_asked(parsed: dict[str, Any]) -> bool:
    """Whether the run had a sustained phase (``gpubench -s``): a GPU's sustained record or a sustained error."""
    gpus = [gpu for gpu in parsed.get("gpus") or [] if isinstance(gpu, dict)]
    errors = [str(error) for error in parsed.get("errors") or []]
    return any(gpu.get("sustained") for gpu in gpus) or any(re.match(r"gpu \d+ sustained:", e) for e in errors)


def _new_entry(gpu: dict[str, Any]) -> _Collected:
    return {"name": gpu.get("name"), "bus_id": gpu.get("bus_id"), "values": {}, "modes": set(), "runs": [],
            "sustained_asked": False, "summary": None}


def _collect(entry: _Collected, gpu: dict[str, Any], asked: bool) -> None:
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


def sag(run: dict[str, Any]) -> float | None:
    """``(first - min) / first`` of a sustained run: how far its lowest 1-s window fell under its first."""
    first, lowest = run.get("first"), run.get("min")
    if not isinstance(first, (int, float)) or not isinstance(lowest, (int, float)) or first <= 0:
        return None
    return max(0.0, (first - lowest) / first)


def voted_run(runs: list[dict[str, Any]], how: str) -> dict[str, Any] | None:
    """The sustained run judged among repeats: the least sag with ``best``, else the median one."""
    measured = [(value, run) for run in runs for value in [sag(run)] if value is not None]
    judged = [run for _value, run in sorted(measured, key=lambda pair: pair[0])]
    if not judged:
        return None
    return judged[0] if how == "best" else judged[(len(judged) - 1) // 2]


def per_gpu_figures(records: list[dict[str, Any]], how: str) -> dict[Any, GpuFigures]:
    """``{index: {"name", "bus_id", "figures": {figure: value}, "modes", "sustained", "sustained_asked", "errors",
    "summary"}}`` over the usable records.

    A figure is ``bf16`` ... ``fp32`` (TFLOP/s), ``hbm.copy``/``hbm.triad`` (GB/s) or ``sustained.<dtype>`` (the
    sustained phase's mean TFLOP/s); repeats are voted (``gpufleet_benchmark_vote``: median, or best). ``modes``: the
    FP8 accumulation modes (fast_accum) of its runs; ``sustained``: the sustained run judged.
    """
    collected: dict[Any, _Collected] = {}
    for record in records:
        parsed = record["parsed"]
        summaries = _summaries(record)
        asked = _sustained_asked(parsed)
        for gpu in parsed.get("gpus") or []:
            if not isinstance(gpu, dict):
                continue
            entry = collected.setdefault(gpu.get("index"), _new_entry(gpu))
            _collect(entry, gpu, asked)
            entry["summary"] = entry["summary"] or same_gpu(summaries, "pci_bus_id", gpu.get("bus_id"),
                                                            gpu.get("index"))
    errors = gpu_errors(records)
    return {
        index: {"name": entry["name"], "bus_id": entry["bus_id"], "modes": entry["modes"],
                "sustained_asked": entry["sustained_asked"], "summary": entry["summary"],
                "errors": errors.get(index, []),
                "figures": {figure: vote(values, how)[0] for figure, values in entry["values"].items()},
                "sustained": voted_run(entry["runs"], how)}
        for index, entry in collected.items()
    }
