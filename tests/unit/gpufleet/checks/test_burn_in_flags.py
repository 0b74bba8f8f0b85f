# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Burn-in flags on SYNTHETIC sample series (tests/fixtures/nvml-samples/synthetic_nvml.py): each fault flagged
for the right GPU and nothing else flagged. Every expected figure is worked out by hand in the comments.

The healthy baseline of every GPU: 60 C, 1980 MHz, 650 W, every counter 0, 10 ticks at t=1000..1009 (1 s apart).
"""

from __future__ import annotations

import os
import sys

import pytest

from gpufleet.checks import burn_in_flags as flags
from gpufleet.results import burn_in as records
from gpufleet.facts import nvml_samples as samples
from gpufleet.results.store import ResultsError

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position

LOAD_OK = {"tool": "gpu-burn", "outcome": "ok", "reason": ""}


def parsed(change=None, gpus=8, ticks=10, **kwargs):
    return samples.parse_text(synth.text(synth.series(gpus=gpus, ticks=ticks, change=change, **kwargs)))


def flagged(findings):
    """{(check id, gpu index, status)} of the findings that warn, fail or are errors."""
    return {(item["id"], (item.get("gpu") or {}).get("index"), item["status"]) for item in findings if item["status"] in ("warn", "fail", "error")}


def by_id(findings, check_id):
    return [item for item in findings if item["id"] == check_id]


def every_fault(gpu, tick, sample):
    """One node, eight GPUs, a different fault (or none) on each."""
    if gpu == 0 and tick >= 5:
        # throttle: hw_slowdown +0.2 s per 1 s step from tick 4->5 on: 5 steps = 1.0 s of 9 s wall = 11.1% > 5%
        sample["clock_event_ns"]["hw_slowdown"] = (tick - 4) * 200000000
    if gpu == 1:
        # a counter reset (driver reload) and nothing else: ECC corrected 10, 10, 0, 0, ... grew by 0; hw_thermal 5 s -> 0 too
        sample["ecc"]["volatile_corrected"] = 10 if tick < 2 else 0
        sample["clock_event_ns"]["hw_thermal"] = 5000000000 if tick < 2 else 0
    if gpu == 2 and tick >= 6:
        # a sagging card: 1500 MHz in ticks 6-9 = 4 of 10 ticks (40% > 10%); 1500 < 0.8 x median 1980 = 1584
        sample["sm_clock_mhz"] = 1500
    if gpu == 3:
        # CRC FLIT with a reset: 5, 7, 2, 3, 3, ... grew by 2 + 2 + 1 = 5 in 9 s (0.556/s < 100/s): warn
        sample["nvlink"]["crc_flit"] = [5, 7, 2][tick] if tick < 3 else 3
    if gpu == 4:
        # nulls, never read as 0: no temperature in ticks 2-3, no SM clock in tick 5, ECC uncorrected 0, null, 0; no NVLink at all
        if tick in (2, 3):
            sample["temperature_c"] = None
        if tick == 5:
            sample["sm_clock_mhz"] = None
        if tick == 1:
            sample["ecc"]["volatile_uncorrected"] = None
        sample["nvlink"] = {"replay": None, "recovery": None, "crc_flit": None, "crc_data": None}
    if gpu == 5:
        # a hot card: 75 C; p95s 60 x7 (odd GPUs 61 below) -> median of p95s
        sample["temperature_c"] = 75
    if gpu in (1, 3, 7):
        sample["temperature_c"] = 61 if sample["temperature_c"] is not None else None
    if gpu == 6:
        # ECC: uncorrected 0 x5 then 1 (grew by 1: fail); corrected 0, 0, then 2 (grew by 2: warn)
        sample["ecc"]["volatile_uncorrected"] = 1 if tick >= 5 else 0
        sample["ecc"]["volatile_corrected"] = 2 if tick >= 2 else 0
    if gpu == 7 and tick >= 8:
        # NVLink replay 0 -> 3 (>= 1: fail)
        sample["nvlink"]["replay"] = 3


def test_each_fault_is_flagged_on_its_gpu_and_nothing_else():
    findings = flags.judge(parsed(every_fault), load=LOAD_OK)
    assert flagged(findings) == {
        ("burn_in.throttle", 0, "fail"),
        ("burn_in.clock_sag", 2, "fail"),
        ("burn_in.nvlink", 3, "warn"),
        ("burn_in.hot", 5, "warn"),
        ("burn_in.ecc", 6, "fail"),
        ("burn_in.ecc", 6, "warn"),
        ("burn_in.nvlink", 7, "fail"),
    }
    # every check ran: the ones with no finding say pass once
    assert [item["status"] for item in by_id(findings, "burn_in.load")] == ["pass"]
    assert [item["status"] for item in by_id(findings, "burn_in.samples")] == ["pass"]
    assert [item["status"] for item in by_id(findings, "burn_in.power_cap")] == ["pass"]


def test_findings_carry_gpu_identity_and_measured_vs_expected():
    findings = flags.judge(parsed(every_fault), load=LOAD_OK)
    sag, = by_id(findings, "burn_in.clock_sag")
    assert sag["gpu"] == {"index": 2, "uuid": synth.uuid_of(2), "name": synth.MODEL}
    assert sag["subject"] == "GPU 2"
    assert sag["measured"] == 0.4 and sag["expected"] == 0.1
    assert "4 of 10 ticks (40% of the run, limit 10%)" in sag["message"]
    assert "its median 1980 MHz, its lowest 75.8% of the node's median" in sag["message"]  # 1500 / 1980 = 0.7576
    assert "clock_sag_share = 0.2" in sag["threshold_source"]

    hot, = by_id(findings, "burn_in.hot")
    # p95 per GPU: 60, 61, 60, 61, 60, 75, 60, 61 -> median (60 + 61) / 2 = 60.5; 75 > 60.5 + 10
    assert hot["measured"] == 75 and hot["expected"] == 70.5
    assert "75 C, 14.5 C above the node's median p95 60.5 C (margin 10 C)" in hot["message"]

    throttle, = by_id(findings, "burn_in.throttle")
    assert throttle["measured"] == {"hw_slowdown": 0.1111}  # 1.0 s / 9 s
    assert "hw_slowdown 1 s (11.1%)" in throttle["message"]

    ecc = {item["status"]: item for item in by_id(findings, "burn_in.ecc")}
    assert ecc["fail"]["measured"] == 1 and "1 uncorrected ECC error(s)" in ecc["fail"]["message"]
    assert ecc["warn"]["measured"] == 2 and "2 corrected ECC error(s)" in ecc["warn"]["message"]

    nvlink = {item["gpu"]["index"]: item for item in by_id(findings, "burn_in.nvlink")}
    assert nvlink[7]["measured"] == 3 and "3 NVLink replay error(s)" in nvlink[7]["message"]
    assert nvlink[3]["measured"] == 5 and "1 counter reset(s)" in nvlink[3]["message"] and "0.556/s" in nvlink[3]["message"]


def test_a_healthy_node_flags_nothing():
    findings = flags.judge(parsed(), load=LOAD_OK)
    assert flagged(findings) == set()
    every = {"burn_in.load", "burn_in.samples", "burn_in.clock_sag", "burn_in.hot", "burn_in.throttle", "burn_in.power_cap", "burn_in.ecc", "burn_in.nvlink"}
    assert {item["id"] for item in findings} == every


def test_counter_reset_alone_is_not_growth():
    assert samples.counter_growth([(0, 10), (1, 10), (2, 0), (3, 0)]) == (0, 1)
    assert samples.counter_growth([(0, 5), (1, 7), (2, 2), (3, 3)]) == (5, 1)   # 2 + 2 (reset: the new value) + 1
    assert samples.counter_growth([(0, 4)]) == (None, 0)


def test_null_is_never_zero():
    def change(gpu, tick, sample):
        if gpu == 1:
            # uncorrected ECC unknown for the first two ticks, then 5 throughout: grew by 0 (null read as 0 would be +5)
            sample["ecc"]["volatile_uncorrected"] = None if tick < 2 else 5
            # a temperature NVML did not give is left out, not a 0 C reading dragging the node's median down
            sample["temperature_c"] = None if tick % 2 else 60
    findings = flags.judge(parsed(change, gpus=2), load=LOAD_OK)
    assert flagged(findings) == set()
    summary = samples.summarise(parsed(change, gpus=2))[1]
    assert summary["temp_min_c"] == 60 and summary["temp_mean_c"] == 60.0
    assert summary["counters_start"]["ecc.volatile_uncorrected"] == 5


def test_clock_sag_at_the_time_share_limit_is_not_flagged():
    # 1 of 10 ticks sagging = exactly 10%, not more than 10%
    def change(gpu, tick, sample):
        if gpu == 0 and tick == 3:
            sample["sm_clock_mhz"] = 1000
    findings = flags.judge(parsed(change, gpus=4), load=LOAD_OK)
    assert flagged(findings) == set()
    sag, = by_id(findings, "burn_in.clock_sag")
    assert sag["status"] == "pass" and sag["measured"] == 0.1


def test_clock_sag_is_not_judged_without_a_load():
    def change(gpu, tick, sample):
        if gpu == 0:
            sample["sm_clock_mhz"] = 345
    findings = flags.judge(parsed(change, gpus=4), load=None)
    sag, = by_id(findings, "burn_in.clock_sag")
    assert sag["status"] == "skip" and "no GPU load" in sag["message"]
    assert by_id(findings, "burn_in.load") == []   # a health check: no load to judge


def test_hot_card_judged_on_p95_not_the_mean():
    # GPU 0 ramps 40 -> 72 C: mean 61, p95 (10th of 10 by nearest rank) 72; peers 60 C; median of p95s (60, 60, 60, 72) = 60
    ramp = [40, 45, 50, 55, 60, 72, 72, 72, 72, 72]

    def change(gpu, tick, sample):
        if gpu == 0:
            sample["temperature_c"] = ramp[tick]
    findings = flags.judge(parsed(change, gpus=4), load=LOAD_OK)
    hot, = by_id(findings, "burn_in.hot")
    assert hot["status"] == "warn" and hot["gpu"]["index"] == 0 and hot["measured"] == 72 and hot["expected"] == 70


def test_throttle_uses_counter_deltas_not_absolute_values():
    # GPU 1's sw_thermal counter is already 900 s at the start (time before the run) and does not move: 0% throttled
    def change(gpu, tick, sample):
        if gpu == 1:
            sample["clock_event_ns"]["sw_thermal"] = 900 * 10 ** 9
    assert flagged(flags.judge(parsed(change, gpus=2), load=LOAD_OK)) == set()


def test_power_cap_is_only_a_warning_relative_to_peers():
    # every GPU capped 50% of the time (0.5 s per 1 s step) except GPU 2: 100% -> 1.0 - median 0.5 = 0.5 > 0.25: warn
    def change(gpu, tick, sample):
        sample["clock_event_ns"]["sw_power_cap"] = tick * (10 ** 9 if gpu == 2 else 5 * 10 ** 8)
    findings = flags.judge(parsed(change, gpus=4), load=LOAD_OK)
    assert flagged(findings) == {("burn_in.power_cap", 2, "warn")}
    item, = by_id(findings, "burn_in.power_cap")
    assert item["measured"] == 1.0 and item["expected"] == 0.75


def test_a_lost_gpu_fails_and_only_it():
    def change(gpu, tick, sample):
        if gpu == 3 and tick >= 5:
            synth.lost(sample)
    findings = flags.judge(parsed(change, gpus=4), load=LOAD_OK)
    assert flagged(findings) == {("burn_in.samples", 3, "fail")}
    item, = [entry for entry in by_id(findings, "burn_in.samples") if entry["status"] == "fail"]
    assert "from t=1005, 5 s after the first sample" in item["message"]


def test_a_gpu_never_read_is_an_error():
    def change(gpu, tick, sample):
        if gpu == 1:
            synth.lost(sample)
            sample["errors"] = {"*": "unknown"}   # the sampler could not get the GPU's handle
    findings = flags.judge(parsed(change, gpus=3), load=LOAD_OK)
    assert flagged(findings) == {("burn_in.samples", 1, "error")}
    item, = [entry for entry in by_id(findings, "burn_in.samples") if entry["status"] == "error"]
    assert "could not be read in any of its 10 sample(s): unknown" in item["message"]


def test_inline_samples_from_the_sampler_module_result():
    objects = synth.series(gpus=2, ticks=2)
    module_result = {"header": objects[0], "samples": objects[1:-1], "end": objects[-1], "changed": False}
    assert records.sampler_objects(module_result) == objects
    with pytest.raises(ResultsError, match="sample_records must be"):
        records.sampler_objects("not samples")


@pytest.mark.parametrize("load, status, words", [
    ({"tool": "dcgmi", "outcome": "failed", "reason": "Diagnostic test failed: Memory GPU 3"}, "fail", "dcgmi diag failed: failed: Diagnostic test failed"),
    ({"tool": "gpu-burn", "outcome": "hang", "reason": "no output for 600 s"}, "fail", "gpu-burn failed: hang"),
    ({"tool": None, "outcome": "skipped", "reason": "no GPU load tool (dcgmi, gpu-burn, torch)"}, "warn", "no GPU load ran"),
    ({"tool": "torch", "outcome": "ok", "reason": ""}, "pass", "torch ran to the end"),
])
def test_the_load_outcome(load, status, words):
    item, = by_id(flags.judge(parsed(gpus=2), load=load), "burn_in.load")
    assert item["status"] == status and words in item["message"]


def test_nvlink_thresholds_follow_the_settings():
    def change(gpu, tick, sample):
        if gpu == 1:
            sample["nvlink"]["replay"] = tick          # grew by 9
            sample["nvlink"]["crc_data"] = tick * 200  # 1800 in 9 s = 200/s >= 100/s
    findings = flags.judge(parsed(change, gpus=2), load=LOAD_OK, settings={"nvlink_fail_count": 10})
    statuses = {(item["id"], item["gpu"]["index"], item["status"], item["measured"]) for item in findings if item["status"] != "pass"}
    assert statuses == {("burn_in.nvlink", 1, "warn", 9), ("burn_in.nvlink", 1, "fail", 1800)}


def test_bad_thresholds_are_refused_naming_the_key():
    with pytest.raises(flags.ThresholdError, match="gpufleet_burn_in_thresholds.clock_sag_shar: unknown key"):
        flags.thresholds({"clock_sag_shar": 0.1})
    with pytest.raises(flags.ThresholdError, match="a share of 0..1"):
        flags.thresholds({"clock_sag_share": 20})
    with pytest.raises(flags.ThresholdError, match="must be a number"):
        flags.thresholds({"hot_margin_c": "10"})


def test_no_samples_is_an_error_not_a_pass():
    findings = flags.judge(samples.parse_text('{"type": "header", "schema": "gpufleet.nvml-samples/v1", "gpus": []}\n'), load=LOAD_OK)
    assert [(item["id"], item["status"]) for item in findings] == [("burn_in.load", "pass"), ("burn_in.samples", "error")]


def test_unreadable_lines_warn_but_a_torn_last_line_does_not():
    objects = synth.series(gpus=2, ticks=3, end=False)
    torn = synth.text(objects) + '{"type": "sample", "t": 10'
    assert flagged(flags.judge(samples.parse_text(torn), load=LOAD_OK)) == set()
    broken = synth.text(objects[:2]) + "garbage\n" + synth.text(objects[2:])
    findings = flags.judge(samples.parse_text(broken), load=LOAD_OK)
    assert flagged(findings) == {("burn_in.samples", None, "warn")}
    # a value of the wrong type becomes null and is counted (here a temperature sent as text)
    objects[1]["temperature_c"] = "hot"
    parsed_bad = samples.parse_text(synth.text(objects))
    assert parsed_bad["bad_fields"] == 1 and parsed_bad["samples"][0]["temperature_c"] is None
