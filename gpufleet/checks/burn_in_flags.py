# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in flags (pure, controller side): one node's NVML samples -> check results per GPU.

Input: the samples of one sampler run (:func:`samples.parse_text` / :func:`samples.load_file`,
schema ``gpufleet.nvml-samples/v1``), any number of GPUs, and what the GPU load did (the burn_in
role's ``{tool: dcgmi|gpu-burn|torch|null, outcome, reason}``, or None for a health check that ran
no load). Output: check results in the results schema (checks/model.py ``result``) with a ``gpu``
key ``{index, uuid, name}`` on every per-GPU finding. A GPU that is flagged gets one result per
check that flags it; a check that flags no GPU gives one ``pass`` naming the worst figure it saw.

The checks and their defaults (``gpufleet_burn_in_thresholds`` overrides any, docs/burn-in.md):

- ``burn_in.samples``: the evidence. No samples -> error; a GPU lost during the run (NVML
  ``GPU_IS_LOST``) -> fail; a GPU in the header that never got a sample, or that NVML could not read
  in any sample, -> error; lines or values
  that could not be read -> warn (a single torn last line, a sampler killed mid-write, is not).
- ``burn_in.load``: the load's outcome. Not ``ok`` (a ``dcgmi diag`` failure, a gpu-burn error, a
  hang) -> fail; ``not_verified`` (``dcgmi diag -j`` reported a test Skip, or no test) -> error: the
  diagnostic verified nothing there; no load tool (``tool`` null, outcome ``skipped``) -> warn: no
  burn-in happened.
- ``burn_in.clock_sag``: per tick, the median of the node's SM clocks; a GPU more than
  ``clock_sag_share`` (0.20) below it in more than ``clock_sag_time_share`` (0.10) of the ticks it
  was read in -> fail. Judged only under load (idle clocks follow the work each GPU happens to
  have, not its health).
- ``burn_in.hot``: each GPU's p95 temperature (nearest rank) against the median of the node's
  GPUs' p95s; more than ``hot_margin_c`` (10 C) above -> warn. p95, not the mean: the mean of a run
  includes the ramp from idle, so a card that heats slower but ends as hot hides in it; the maximum
  is one reading. p95 is the temperature the card holds under sustained load. Warn, not fail: heat
  alone costs nothing until it throttles, and throttling is judged (and fails) below.
- ``burn_in.throttle``: the deltas of the cumulative clock-event counters ``sw_thermal``,
  ``hw_thermal``, ``hw_power_brake`` and ``hw_slowdown`` as a share of the wall time between the
  samples; any one above ``throttle_time_share`` (0.05) -> fail. A healthy, well cooled card
  under a full load spends ~0 s in thermal slowdown or power brake; 5% leaves room for a transient
  (the inrush when the load starts) and is 90 s of a 30-minute burn-in.
- ``burn_in.power_cap``: ``sw_power_cap`` time is reported for every GPU. Every card under a full
  load runs at its power limit much of the time, so an absolute share says nothing; a GPU whose
  share is more than ``power_cap_excess_share`` (0.25) above the node's median share -> warn only
  (it draws more power than its peers for the same work).
- ``burn_in.ecc``: growth of ``volatile_uncorrected`` -> fail, of ``volatile_corrected`` -> warn
  (the aggregate counters when NVML gives no volatile ones).
- ``burn_in.nvlink``: growth of ``replay`` or ``recovery`` by ``nvlink_fail_count`` (1) or more ->
  fail; growth of ``crc_flit`` or ``crc_data`` -> warn, and fail at ``nvlink_crc_fail_per_s`` (100)
  per second or more. These are DCGM's own health-watch limits (NVIDIA/DCGM DcgmHealthWatch.cpp,
  DcgmGpuHardwareLimits.h: any replay or recovery error is a failure; "CRC errors only matter at
  rates of 100+ per second").

Counters are read by their growth between consecutive known values (samples.counter_growth): a
reset (a later value below an earlier one, a driver reload) counts the new value since the reset,
never a negative growth; null values are left out, never read as 0.

The checks are here; the thresholds (``SETTING``, ``DEFAULTS``, :func:`thresholds`, re-exported here) live in
checks/burn_in_limits.py, and the sampler run read once, the per-GPU finding and the per-GPU evidence of
``burn_in.samples`` in checks/burn_in_run.py.
"""

from __future__ import annotations

from typing import Any, Iterable

from gpufleet.facts import nvml_samples as nvml
from gpufleet.checks.burn_in_limits import limit_source
from gpufleet.checks.burn_in_run import (SamplerRun, gpu_evidence, gpu_finding, gpu_words, median_of, num, pct,
                                         samples_pass, unreadable_lines)
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, CheckResult, result

# Re-exported (__all__ below): burn_in.py, compute_figures.py, the history, the collection's plugins and the tests
# import these from here; they live in burn_in_limits.py.
from gpufleet.checks.burn_in_limits import DEFAULTS, SETTING, ThresholdError, thresholds
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["DEFAULTS", "SETTING", "ThresholdError", "thresholds"]

THERMAL_EVENTS = ("sw_thermal", "hw_thermal", "hw_power_brake", "hw_slowdown")
ECC_SEVERITY = (("volatile_uncorrected", "aggregate_uncorrected", FAIL, "uncorrected"),
                ("volatile_corrected", "aggregate_corrected", WARN, "corrected"))
NVLINK_HARD = ("replay", "recovery")
NVLINK_CRC = ("crc_flit", "crc_data")
LOAD_OK = "ok"
# gpufleet/results/burn_in.py dcgmi_load: dcgmi diag skipped tests (Skip), ran none, or could not run them.
LOAD_NOT_VERIFIED = "not_verified"


# -- the evidence ----------------------------------------------------------------------------


def check_samples(run: SamplerRun, where: str) -> list[CheckResult]:
    """``burn_in.samples``: the samples exist, every GPU was read, no GPU was lost, the lines were readable."""
    parsed = run.parsed
    if not run.samples:
        return [result("burn_in.samples", ERROR, "no NVML samples in %s%s: the burn-in cannot be judged" % (
            where, " (%d unreadable line(s))" % len(parsed.get("bad_lines") or []) if parsed.get("bad_lines") else ""))]
    out: list[CheckResult] = []
    header = run.header
    if header is not None and header.get("schema") != nvml.SCHEMA:
        out.append(result("burn_in.samples", WARN, "%s: header schema %r, this gpufleet reads %s: values read by name"
                          % (where, header.get("schema"), nvml.SCHEMA),
                          measured=header.get("schema"), expected=nvml.SCHEMA))
    out.extend(found for found in (gpu_evidence(run, index, where) for index in run.indexes) if found is not None)
    unreadable = unreadable_lines(parsed, where)
    if unreadable is not None:
        out.append(unreadable)
    return out or [samples_pass(run)]


def check_load(load: Any) -> list[CheckResult]:
    """``burn_in.load``: what the GPU load did. None (a health check without load) gives nothing."""
    if load is None:
        return []
    if not isinstance(load, dict):
        return [result("burn_in.load", ERROR, "the burn-in record's load is not a mapping {tool, outcome, reason}")]
    tool, outcome = load.get("tool"), load.get("outcome")
    reason = " ".join(str(load.get("reason") or "").split())[:300]
    if not tool or outcome == "skipped":
        return [result("burn_in.load", WARN, "no GPU load ran: %s"
                       % (reason or "no load tool (dcgmi, gpu-burn, torch)"),
                       measured=outcome or "skipped", expected="a load tool ran (dcgmi, gpu-burn or torch)")]
    if outcome == LOAD_NOT_VERIFIED:
        # dcgmi diag skipped tests (or ran none): nothing failed, nothing was verified either - never a pass
        return [result("burn_in.load", ERROR, "%s diag did not verify the GPUs: %s" % (tool, reason or "tests skipped"),
                       measured=outcome, expected=LOAD_OK, subject=str(tool),
                       threshold_source="the load tool's own verdict: Skip is not a pass")]
    if outcome != LOAD_OK:
        what = "%s diag" % tool if tool == "dcgmi" else str(tool)
        return [result("burn_in.load", FAIL, "%s failed: %s%s" % (what, outcome, ": %s" % reason if reason else ""),
                       measured=outcome, expected=LOAD_OK, subject=str(tool),
                       threshold_source="the load tool's own verdict")]
    return [result("burn_in.load", PASS, "%s ran to the end%s" % (tool, ": %s" % reason if reason else ""),
                   measured=outcome, expected=LOAD_OK,
                   subject=str(tool))]


def _loaded(load: Any) -> bool:
    return isinstance(load, dict) and bool(load.get("tool")) and load.get("outcome") != "skipped"


# -- clocks and temperatures ---------------------------------------------------------------------


def check_clock_sag(run: SamplerRun, load: Any, limits: dict[str, float], overridden: set[str]) -> list[CheckResult]:
    """``burn_in.clock_sag``: the share of ticks a GPU's SM clock was more than clock_sag_share below the node's
    median."""
    check_id = "burn_in.clock_sag"
    if not _loaded(load):
        return [result(check_id, SKIP, "not judged: no GPU load ran while sampling (idle clocks follow each GPU's "
                       "work, not its health)")]
    share, time_share = limits["clock_sag_share"], limits["clock_sag_time_share"]
    counted: dict[int, int] = {}
    sagged: dict[int, int] = {}
    ratios: dict[int, list[float]] = {}
    for tick in run.ticks:
        clocks = {index: sample["sm_clock_mhz"] for index, sample in tick["gpus"].items()
                  if sample["sm_clock_mhz"] is not None}
        if len(clocks) < 2:
            continue
        middle = nvml.median(clocks.values())
        if not middle or middle <= 0:
            continue
        for index, clock in clocks.items():
            counted[index] = counted.get(index, 0) + 1
            ratios.setdefault(index, []).append(clock / float(middle))
            if clock < (1.0 - share) * middle:
                sagged[index] = sagged.get(index, 0) + 1
    if not counted:
        return [result(check_id, SKIP, "not judged: no tick with the SM clocks of two or more GPUs")]
    source = "%s; %s" % (limit_source(limits, "clock_sag_share", overridden),
                         limit_source(limits, "clock_sag_time_share", overridden))
    out: list[CheckResult] = []
    for index in sorted(counted):
        fraction = sagged.get(index, 0) / float(counted[index])
        if fraction > time_share:
            ident = run.ident[index]
            gpu_clocks = [value for _t, value in nvml.values(run.series[index], "sm_clock_mhz")]
            out.append(gpu_finding(check_id, FAIL, ident,
                                   "%s: SM clock more than %s below the node's median in %d of %d "
                                   "ticks (%s of the run, limit %s); its median %s MHz, its lowest %s of the node's "
                                   "median" % (gpu_words(ident), pct(share), sagged.get(index, 0), counted[index],
                                               pct(fraction), pct(time_share), num(nvml.median(gpu_clocks)),
                                               pct(min(ratios[index]))),
                                   measured=round(fraction, 4), expected=time_share, source=source))
    if not out:
        worst = max(counted, key=lambda index: (sagged.get(index, 0) / float(counted[index]), -min(ratios[index])))
        out.append(result(check_id, PASS, "%d GPU(s): none more than %s below the node's median SM clock for more than "
                          "%s of the run (lowest: GPU %s at %s of the median)"
                          % (len(counted), pct(share), pct(time_share), worst, pct(min(ratios[worst]))),
                          measured=round(max(sagged.get(index, 0) / float(counted[index]) for index in counted), 4),
                          expected=time_share, threshold_source=source))
    return out


def check_hot(run: SamplerRun, limits: dict[str, float], overridden: set[str]) -> list[CheckResult]:
    """``burn_in.hot``: a GPU whose p95 temperature is more than hot_margin_c above the median of the node's p95s."""
    check_id = "burn_in.hot"
    p95: dict[int, float] = {}
    for index in run.indexes:
        temps = [value for _t, value in nvml.values(run.series.get(index) or [], "temperature_c")]
        hot = nvml.percentile(temps, 0.95)  # None only without temperatures
        if hot is not None:
            p95[index] = hot
    if len(p95) < 2:
        return [result(check_id, SKIP, "not judged: the temperatures of %d GPU(s), a comparison needs two or more"
                       % len(p95))]
    middle = median_of(p95.values())
    margin = limits["hot_margin_c"]
    source = limit_source(limits, "hot_margin_c", overridden)
    out: list[CheckResult] = []
    for index in sorted(p95):
        if p95[index] > middle + margin:
            ident = run.ident[index]
            out.append(gpu_finding(check_id, WARN, ident, "%s runs hot: p95 temperature %s C, %s C above the node's "
                                   "median p95 %s C (margin %s C)" % (
                                       gpu_words(ident), num(p95[index]), num(round(p95[index] - middle, 1)),
                                       num(middle), num(margin)),
                                   measured=p95[index], expected=round(middle + margin, 3), source=source))
    if not out:
        hottest = max(p95, key=lambda index: p95[index])
        out.append(result(check_id, PASS, "%d GPU(s) within %s C of the node's median p95 temperature %s C (hottest: "
                          "GPU %s at %s C)" % (len(p95), num(margin), num(middle), hottest, num(p95[hottest])),
                          measured=p95[hottest], expected=round(middle + margin, 3), threshold_source=source))
    return out


# -- clock events (throttling) -------------------------------------------------------------------


def event_shares(run: SamplerRun, index: int) -> dict[str, tuple[float, float, int]]:
    """``{event: (share of wall time, event s, resets)}`` of one GPU; an event with fewer than two known values is
    left out."""
    out: dict[str, tuple[float, float, int]] = {}
    for event in nvml.CLOCK_EVENTS:
        points = nvml.values(run.series.get(index) or [], ("clock_event_ns", event))
        if len(points) < 2:
            continue
        event_ns, wall_ns, resets = nvml.clock_event_deltas(points)
        if wall_ns > 0:
            out[event] = (event_ns / wall_ns, event_ns / 1e9, resets)
    return out


def check_throttle(run: SamplerRun, limits: dict[str, float], overridden: set[str]) -> list[CheckResult]:
    """``burn_in.throttle``: thermal and power-brake slowdown time over throttle_time_share of the run fails."""
    check_id = "burn_in.throttle"
    limit = limits["throttle_time_share"]
    source = limit_source(limits, "throttle_time_share", overridden)
    judged = 0
    out: list[CheckResult] = []
    # (share, GPU index, event) of the most throttled GPU
    worst: tuple[float, int | None, str | None] = (0.0, None, None)
    for index in run.indexes:
        shares = event_shares(run, index)
        thermal = {event: shares[event] for event in THERMAL_EVENTS if event in shares}
        if not thermal:
            continue
        judged += 1
        over = {event: value for event, value in thermal.items() if value[0] > limit}
        for event, value in thermal.items():
            if value[0] >= worst[0]:
                worst = (value[0], index, event)
        if over:
            ident = run.ident[index]
            words = ", ".join("%s %s s (%s)" % (event, num(round(value[1], 1)), pct(value[0]))
                              for event, value in sorted(over.items()))
            out.append(gpu_finding(check_id, FAIL, ident, "%s throttled: %s of the wall time, limit %s each"
                                   % (gpu_words(ident), words, pct(limit)),
                                   measured={event: round(value[0], 4) for event, value in sorted(over.items())},
                                   expected=limit, source=source))
    if not judged:
        return [result(check_id, SKIP, "not judged: no GPU has two or more readings of its thermal or power-brake "
                       "clock-event counters")]
    if not out:
        most = "; most: GPU %s %s" % (worst[1], worst[2]) if worst[1] is not None and worst[0] > 0 else ""
        out.append(result(check_id, PASS,
                          "%d GPU(s): thermal and power-brake slowdown at most %s of the wall time each "
                          "(limit %s%s)" % (judged, pct(worst[0]), pct(limit), most),
                          measured=round(worst[0], 4), expected=limit, threshold_source=source))
    return out


def check_power_cap(run: SamplerRun, limits: dict[str, float], overridden: set[str]) -> list[CheckResult]:
    """``burn_in.power_cap``: sw_power_cap time of each GPU; warn when far above the node's median share."""
    check_id = "burn_in.power_cap"
    shares: dict[int, float] = {}
    for index in run.indexes:
        value = event_shares(run, index).get("sw_power_cap")
        if value is not None:
            shares[index] = value[0]
    if not shares:
        return [result(check_id, SKIP,
                       "not judged: no GPU has two or more readings of its sw_power_cap clock-event counter")]
    middle = median_of(shares.values())
    excess = limits["power_cap_excess_share"]
    source = limit_source(limits, "power_cap_excess_share", overridden)
    out: list[CheckResult] = []
    for index in sorted(shares):
        if len(shares) >= 2 and shares[index] - middle > excess:
            ident = run.ident[index]
            out.append(gpu_finding(check_id, WARN, ident, "%s held at its power cap %s of the time, the node's median "
                                   "GPU %s (more than %s above)"
                                   % (gpu_words(ident), pct(shares[index]), pct(middle), pct(excess)),
                                   measured=round(shares[index], 4), expected=round(middle + excess, 4),
                                   source=source))
    if not out:
        words = ", ".join("GPU %s %s" % (index, pct(shares[index])) for index in sorted(shares))
        out.append(result(check_id, PASS, "power cap (sw_power_cap) share of the time per GPU: %s (reported; a warning "
                          "only when far above the node's median)" % words, measured=round(max(shares.values()), 4),
                          expected=round(middle + excess, 4) if len(shares) >= 2 else None,
                          threshold_source=source))
    return out


# -- error counters ---------------------------------------------------------------------------


def _growth(run: SamplerRun, index: int, group: str, name: str) -> tuple[float | None, int, list[tuple[float, Any]]]:
    points = nvml.values(run.series.get(index) or [], (group, name))
    growth, resets = nvml.counter_growth(points)
    return growth, resets, points


def check_ecc(run: SamplerRun) -> list[CheckResult]:
    """``burn_in.ecc``: uncorrected ECC errors that grew fail, corrected ones warn."""
    check_id = "burn_in.ecc"
    out: list[CheckResult] = []
    judged = 0
    for index in run.indexes:
        seen = False
        for volatile, aggregate, status, words in ECC_SEVERITY:
            growth, resets, points = _growth(run, index, "ecc", volatile)
            counter = volatile
            if growth is None:
                growth, resets, points = _growth(run, index, "ecc", aggregate)
                counter = aggregate
            if growth is None:
                continue
            seen = True
            if growth > 0:
                ident = run.ident[index]
                out.append(gpu_finding(check_id, status, ident, "%s: %d %s ECC error(s) during the run (%s %s -> %s%s)"
                                       % (gpu_words(ident), growth, words, counter, points[0][1], points[-1][1],
                                          ", %d counter reset(s)" % resets if resets else ""),
                                       measured=growth, expected=0,
                                       source="any %s ECC error %s" % (words, "fails" if status == FAIL else "warns")))
        judged += seen
    if not judged:
        return [result(check_id, SKIP, "not judged: no GPU has two or more readings of its ECC counters (ECC off or "
                       "not supported)")]
    if not out:
        out.append(result(check_id, PASS, "%d GPU(s): no ECC error counter grew during the run" % judged, measured=0,
                          expected=0))
    return out


def check_nvlink(run: SamplerRun, limits: dict[str, float], overridden: set[str]) -> list[CheckResult]:
    """``burn_in.nvlink``: replay/recovery growth fails; CRC growth warns, and fails at a high rate."""
    check_id = "burn_in.nvlink"
    out: list[CheckResult] = []
    judged = 0
    hard = limits["nvlink_fail_count"]
    rate_limit = limits["nvlink_crc_fail_per_s"]
    for index in run.indexes:
        ident = run.ident[index]
        seen = False
        for name in NVLINK_HARD + NVLINK_CRC:
            growth, resets, points = _growth(run, index, "nvlink", name)
            if growth is None:
                continue
            seen = True
            if growth <= 0:
                continue
            span = points[-1][0] - points[0][0]
            detail = "%s -> %s over %s s%s" % (points[0][1], points[-1][1], num(round(span, 1)),
                                               ", %d counter reset(s)" % resets if resets else "")
            if name in NVLINK_HARD:
                status = FAIL if growth >= hard else WARN
                source = "%s (DCGM health watch: any NVLink %s error is a failure)" % (
                    limit_source(limits, "nvlink_fail_count", overridden), name)
                out.append(gpu_finding(check_id, status, ident, "%s: %d NVLink %s error(s) during the run (%s), %s %s"
                                       % (gpu_words(ident), growth, name, detail,
                                          "limit" if status == FAIL else "below the limit", num(hard)),
                                       measured=growth, expected=hard, source=source))
            else:
                rate = growth / span if span > 0 else None
                status = FAIL if rate is not None and rate >= rate_limit else WARN
                source = "%s (DCGM: CRC errors matter at 100+ per second)" % limit_source(
                    limits, "nvlink_crc_fail_per_s", overridden)
                words = "%s: %d NVLink %s error(s) during the run (%s), %s/s, %s %s/s" % (
                    gpu_words(ident), growth, name, detail, num(round(rate, 3)) if rate is not None else "n/a",
                    "at or above the limit" if status == FAIL else "below the failure rate", num(rate_limit))
                out.append(gpu_finding(check_id, status, ident, words, measured=growth, expected=0, source=source))
        judged += seen
    if not judged:
        return [result(check_id, SKIP, "not judged: no GPU has two or more readings of its NVLink error counters (no "
                       "NVLink, or not supported)")]
    if not out:
        out.append(result(check_id, PASS,
                          "%d GPU(s): no NVLink replay, recovery or CRC error counter grew during the run" % judged,
                          measured=0, expected=0))
    return out


# -- everything --------------------------------------------------------------------------------


def judge(parsed: dict[str, Any], load: Any = None, settings: Any = None,
          where: str = "the samples") -> list[CheckResult]:
    """Every burn-in check on one sampler run; ``settings`` is ``gpufleet_burn_in_thresholds`` (or None).

    Raises ThresholdError for thresholds that cannot be used (the check family reports it).
    """
    limits = thresholds(settings)
    overridden = set(settings or {})
    run = SamplerRun(parsed)
    out = check_load(load)
    evidence = check_samples(run, where)
    out.extend(evidence)
    if not run.samples:
        return out
    out.extend(check_clock_sag(run, load, limits, overridden))
    out.extend(check_hot(run, limits, overridden))
    out.extend(check_throttle(run, limits, overridden))
    out.extend(check_power_cap(run, limits, overridden))
    out.extend(check_ecc(run))
    out.extend(check_nvlink(run, limits, overridden))
    return out


def flagged(findings: Iterable[CheckResult]) -> list[CheckResult]:
    """The findings that flag something (warn, fail, error)."""
    return [item for item in findings if item["status"] in (WARN, FAIL, ERROR)]
