# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/cost.py: the cost to train, by hand. Host records here are SYNTHETIC (written in the test): two offers of
the same GPU model, an NVLink box and a cheaper PCIe box, with gpu_compute records in the gpubench parser's shape."""

from __future__ import annotations

import pytest

from gpufleet.report.cost import (ReferenceJobError, cost_document, cost_view, train_estimate, training_tflops,
                                  validate_job)
from gpufleet.report.model import cost_chart_view, throughput_view

H100 = "NVIDIA H100 80GB HBM3"
# MFU 0.5 of the peak; the healthy GEMM fraction stays at its default 0.8
JOB = validate_job({"mfu": 0.5, "global_batch_tokens": 4e6})


def compute_record(tflops, slow=None, count=8):
    """A gpu_compute record: ``count`` GPUs at ``tflops`` bf16, GPU ``slow`` at its own figure."""
    gpus = [{"index": index, "name": H100, "bus_id": "00000000:%02X:00.0" % index,
             "gemm_tflops": {"bf16": (slow[1] if slow and slow[0] == index else tflops), "fp32": 51.0},
             "hbm_gbs": {"copy": 2900.0, "triad": 2950.0}} for index in range(count)]
    return {
        "name": "gpubench",
        "kind": "gpu_compute",
        "parsed": {"tool": "gpubench", "version": "1.0", "gpus": gpus, "errors": []},
    }


def allreduce(busbw):
    return {
        "name": "all_reduce_perf",
        "kind": "allreduce_single",
        "parsed": {"busbw_at_largest_size_gbs": busbw, "ranks": 8},
    }


def node(host, price, nvlink, busbw, tflops=800.0, slow=None, checks=()):
    pairs = 28
    return {
        "host": host,
        "claim": {"price_per_node_hour": price},
        "facts": {
            "gpu": {"gpu_count": 8, "gpus": [{"index": index, "name": H100} for index in range(8)]},
            "topology": {"summary": {"gpu_count": 8, "pair_count": pairs, "nvlink_pairs": pairs if nvlink else 0}},
        },
        "benchmarks": [compute_record(tflops, slow), allreduce(busbw)],
        "checks": list(checks),
    }


def test_seven_billion_by_hand():
    # measured GEMM 800 TFLOP/s bf16 (0.809 of the H100 SXM peak 989.4), healthy parts 0.8, MFU 0.5 of peak:
    # training rate = 0.5 * 989.4 * (800 / 989.4) / 0.8 = 800 * 0.5 / 0.8 = 500 TFLOP/s per GPU, 4e15 FLOP/s per node
    assert training_tflops(800.0, 0.5, 0.8) == pytest.approx(500.0)
    # 7B x 1T tokens: FLOPs = 6 * 7e9 * 1e12 = 4.2e22; compute = 4.2e22 / 4e15 = 10,500,000 s
    # all-reduce per step = 2*7/8 * 2 * 7e9 B / 400e9 B/s = 24.5e9 / 400e9 = 0.06125 s; steps = 1e12 / 4e6 = 250,000
    # communication = 250,000 * 0.06125 = 15,312.5 s; wall = 10,515,312.5 s = 2,920.9201 h
    # GPU-hours = 2,920.9201 * 8 = 23,367.36; cost at 24 $/h = 70,102.08 $
    estimate = train_estimate(7e9, 1e12, 8, 500.0, 400.0, 8, 4e6, 0.0, 24.0)
    assert estimate["flops"] == pytest.approx(4.2e22)
    assert estimate["compute_s"] == pytest.approx(10500000.0)
    assert estimate["comm_s"] == pytest.approx(15312.5)
    assert estimate["gpu_hours"] == pytest.approx(23367.36, abs=0.01)
    assert estimate["cost"] == pytest.approx(70102.08, abs=0.01)
    # half the all-reduce hidden: 7,656.25 s of communication
    assert train_estimate(7e9, 1e12, 8, 500.0, 400.0, 8, 4e6, 0.5, 24.0)["comm_s"] == pytest.approx(7656.25)


def test_the_defaults_on_a_part_with_no_record_take_mfu_of_the_peak_once():
    # defaults: MFU 0.40 of the datasheet peak, healthy fraction 0.80, 4,194,304 tokens per step. No gpu_compute
    # record: a healthy H100 SXM, GEMM 0.8 * 989.4 = 791.52 TFLOP/s, training 791.52 * 0.4 / 0.8 = 0.4 * 989.4
    # = 395.76 TFLOP/s per GPU (not 0.4 * 0.8 * 989.4: the healthy fraction is not applied twice)
    record = node("bare", 24.0, True, 400.0)
    record["benchmarks"] = [allreduce(400.0)]
    row = cost_view([record], validate_job(None))["rows"][0]
    assert row["inputs"]["training_tflops"]["value"] == pytest.approx(395.76)
    # 7B: 4.2e22 FLOPs / 395.76e12 = 1.06124924e8 GPU-seconds = 29,479.15 GPU-hours of compute
    estimate = row["estimates"][0]
    assert estimate["compute_s"] * 8 / 3600 == pytest.approx(29479.15, abs=0.01)
    # steps = 1e12 / 4,194,304 = 238,418.58; 0.06125 s each = 14,603.14 s of communication
    assert estimate["comm_s"] == pytest.approx(14603.14, abs=0.01)


def test_an_nvlink_box_at_a_higher_price_trains_cheaper():
    nvlink = node("nvl", 24.0, True, 400.0)
    pcie = node("pcie", 23.0, False, 10.0)
    view = cost_view([pcie, nvlink], JOB)
    # both measured 800 TFLOP/s: training 800 * 0.5 / 0.8 = 500 TFLOP/s per GPU, 4e15 FLOP/s per node
    # 70B: compute = 6*70e9*1e12 / 4e15 = 105,000,000 s for both
    # NVLink: 250,000 * 2*7/8 * 140e9 / 400e9 = 153,125 s -> 105,153,125 s = 29,209.2014 h * 24 = 701,020.83 $
    # PCIe:   250,000 * 245e9 / 10e9 = 6,125,000 s -> 111,125,000 s = 30,868.0556 h * 23 = 709,965.28 $
    assert [row["hosts"] for row in view["rows"]] == [["nvl"], ["pcie"]]
    assert [row["rank"] for row in view["rows"]] == [1, 2]
    assert view["rows"][0]["estimates"][1]["cost"] == pytest.approx(701020.83, abs=0.01)
    assert view["rows"][1]["estimates"][1]["cost"] == pytest.approx(709965.28, abs=0.01)
    assert view["rows"][0]["interconnect"] == "NVLink, all GPU pairs" and view["rows"][1]["interconnect"] == "PCIe"
    # the chart: one per model, bars cheapest first
    charts = cost_chart_view([pcie, nvlink], JOB)["charts"]
    assert [item["model"] for item in charts] == ["7B", "70B"]
    assert [drawn["label"] for drawn in charts[1]["chart"]["bars"]] == [view["rows"][0]["label"], view["rows"][1]["label"]]
    assert charts[1]["chart"]["bars"][0]["value"] == "$701,021"


def test_the_slowest_gpu_sets_the_rate_and_is_named():
    view = cost_view([node("a", 24.0, True, 400.0, slow=(3, 600.0))], JOB)
    rate = view["rows"][0]["inputs"]["gemm_tflops"]
    assert rate["tflops"] == 600.0 and rate["measured"] is True
    # 600 / 989.4 = 0.606 of the peak; training 0.5 * 989.4 * 0.606 / 0.8 = 600 * 0.5 / 0.8 = 375 TFLOP/s
    assert rate["source"] == ("measured: gpu_compute on host a GPU 3, the slowest of its 8 (synchronous training waits "
                              "for it): 600 TFLOP/s bf16 = 0.606 of the published H100 SXM dense peak 989.4")
    training = view["rows"][0]["inputs"]["training_tflops"]
    assert training["value"] == 375.0
    assert training["source"] == ("MFU 0.5 of the 989.4 TFLOP/s peak, scaled by this GPU's 0.606 of peak over the "
                                  "healthy 0.8 (docs/baselines.md 12b): 600 \u00d7 0.5 / 0.8 = 375 TFLOP/s")


def test_without_a_record_the_published_peak_times_a_stated_factor_is_an_assumption():
    record = node("bare", 20.0, True, 400.0)
    record["benchmarks"] = [allreduce(400.0)]
    rate = cost_view([record], JOB)["rows"][0]["inputs"]["gemm_tflops"]
    # H100 SXM published bf16 dense 989.4 TFLOP/s (checks/compute.py gpu_peaks.yml) taken as healthy: x 0.8 = 791.52
    assert rate["tflops"] == pytest.approx(791.52) and rate["measured"] is False
    assert rate["source"] == ("assumption: no gpu_compute record; taken as a healthy part: 0.8 of the published "
                              "H100 SXM dense peak 989.4 TFLOP/s (bf16) = 791.52 TFLOP/s (docs/baselines.md 12b)")
    # training: 791.52 * 0.5 / 0.8 = 0.5 * 989.4 = 494.7 TFLOP/s, MFU of the peak once
    assert rate["training_tflops"] == pytest.approx(494.7)
    assert rate["training_source"] == ("assumption: MFU 0.5 of the 989.4 TFLOP/s peak, a healthy part (no further "
                                       "scaling): 494.7 TFLOP/s")
    bars = cost_chart_view([record], JOB)["charts"][0]["chart"]["bars"]
    # 7B at MFU 0.5 of the 989.4 peak = 494.7 TFLOP/s per GPU, 3.9576e15 FLOP/s per node: 4.2e22 / 3.9576e15
    # = 10,612,492.4 s; all-reduce 250,000 * 0.06125 = 15,312.5 s; 10,627,804.9 s = 2,952.168 h * 20 $/h = 59,043 $
    assert bars[0]["css"] == "bar-assumed" and bars[0]["value"] == "$59,043 (assumed GEMM rate)"
    # without a single-node all-reduce the bar is a lower bound and says so: 10,612,492.4 s = 2,947.915 h = 58,958 $
    record["benchmarks"] = []
    bars = cost_chart_view([record], JOB)["charts"][0]["chart"]["bars"]
    assert bars[0]["value"] == "\u2265 $58,958 (assumed GEMM rate, communication not measured)"


def test_an_unknown_part_without_a_record_is_not_estimated():
    record = node("mystery", 5.0, False, 10.0)
    record["benchmarks"] = []
    for gpu in record["facts"]["gpu"]["gpus"]:
        gpu["name"] = "NVIDIA GeForce RTX 4090"
    view = cost_view([record], JOB)
    assert view["rows"] == [] and view["available"] is False
    assert (
        view["unavailable"][0]["reason"]
        == "unknown: no gpu_compute record and no published peak for 'NVIDIA GeForce RTX 4090'"
    )


def test_a_multi_node_run_is_its_own_group_at_the_summed_price():
    first, second = node("n1", 24.0, True, 400.0), node("n2", 22.0, True, 400.0, tflops=700.0)
    run = {"name": "all_reduce_perf", "kind": "allreduce_multi", "hosts": ["n1", "n2"], "started": "t", "repeat": 0,
           "parsed": {"busbw_at_largest_size_gbs": 100.0, "ranks": 16}}
    first["benchmarks"].append(run)
    second["benchmarks"].append(dict(run))
    rows = [row for row in cost_view([first, second], JOB)["rows"] if row["scope"] == "across nodes"]
    assert len(rows) == 1
    row = rows[0]
    # GPUs 8 + 8 = 16, price 24 + 22 = 46 $/h; the slower node (700 TFLOP/s) sets the rate
    assert row["gpus"] == 16 and row["price_per_hour"] == 46.0 and row["inputs"]["gemm_tflops"]["tflops"] == 700.0
    assert row["price_source"] == "claimed: price_per_node_hour summed over 2 nodes: 24 + 22"
    # training 700 * 0.5 / 0.8 = 437.5 TFLOP/s per GPU, 16 GPUs = 7e15 FLOP/s
    # 7B: compute = 4.2e22 / 7e15 = 6,000,000 s; all-reduce over the 16 ranks with the multi-node busbw:
    # 2*15/16 * 14e9 / 100e9 = 0.2625 s * 250,000 = 65,625 s; wall 6,065,625 s = 1,684.8958 h * 46 $/h = 77,505.21 $
    assert row["estimates"][0]["step_allreduce_s"] == pytest.approx(0.2625)
    assert row["estimates"][0]["cost"] == pytest.approx(77505.21, abs=0.01)
    assert row["inputs"]["busbw"]["source"] == "measured: allreduce_multi busbw 100 GB/s over n1, n2"


def test_a_single_node_row_uses_its_single_node_busbw():
    first, second = node("n1", 24.0, True, 400.0), node("n2", 22.0, True, 300.0)
    run = {"name": "all_reduce_perf", "kind": "allreduce_multi", "hosts": ["n1", "n2"], "started": "t", "repeat": 0,
           "parsed": {"busbw_at_largest_size_gbs": 100.0, "ranks": 16}}
    first["benchmarks"].append(run)
    second["benchmarks"].append(dict(run))
    view = cost_view([first, second], JOB)
    rows = {tuple(row["hosts"]): row for row in view["rows"] if row["scope"] == "single node"}
    # n2 alone: 8 ranks at its own 300 GB/s: 2*7/8 * 14e9 / 300e9 = 0.081667 s per step, not the 100 GB/s across nodes
    assert rows[("n2",)]["gpus"] == 8 and rows[("n2",)]["price_per_hour"] == 22.0
    assert rows[("n2",)]["estimates"][0]["step_allreduce_s"] == pytest.approx(0.0816667, abs=1e-6)
    assert rows[("n2",)]["inputs"]["busbw"]["source"] == "measured: allreduce_single busbw 300 GB/s on host n2"
    assert rows[("n1",)]["estimates"][0]["step_allreduce_s"] == pytest.approx(0.06125)


def test_a_one_gpu_node_has_no_gradient_all_reduce_within_it():
    record = node("one", 3.0, False, 10.0)
    record["facts"] = {"gpu": {"gpu_count": 1, "gpus": [{"index": 0, "name": H100}]}}
    record["benchmarks"] = [compute_record(800.0, count=1)]
    view = cost_view([record], JOB)
    row = view["rows"][0]
    assert row["gpus"] == 1 and row["interconnect"] == "single GPU" and row["lower_bound"] is False
    assert row["inputs"]["busbw"]["source"] == "one GPU: no gradient all-reduce within the node (0 s)"
    # 7B on one GPU at 800 * 0.5 / 0.8 = 500 TFLOP/s: 4.2e22 / 5e14 = 84,000,000 s = 23,333.33 h * 3 $/h = 70,000 $
    estimate = row["estimates"][0]
    assert estimate["comm_s"] == 0.0 and estimate["step_allreduce_s"] == 0.0
    assert estimate["gpu_hours"] == pytest.approx(23333.33, abs=0.01)
    assert estimate["cost"] == pytest.approx(70000.0)


def test_fleet_relative_outliers_are_highlighted_and_in_the_json():
    finding = {"id": "benchmarks.gpu_compute_relative", "status": "fail", "subject": "GPU5",
               "message": "GPU5 bf16 610 TFLOP/s, 24 % below the fleet median 800 for H100 SXM"}
    record = node("a", 24.0, True, 400.0, slow=(5, 610.0), checks=[finding])
    view = throughput_view([record])
    assert view["outliers"] == 1
    assert [row["gpu"] for row in view["rows"] if row["outlier"]] == [5]
    assert view["rows"][5]["cells"][0] == "610" and view["rows"][5]["findings"][0].startswith(
        "fail benchmarks.gpu_compute_relative"
    )
    document = cost_document(cost_view([record], JOB))
    group = document["groups"][0]
    assert group["inputs"]["gemm_tflops"]["tflops"] == 610.0
    assert group["estimates"][0]["model"] == "7B" and document["job"]["mfu"] == 0.5


def test_reference_job_errors_name_the_key():
    assert validate_job(None)["models"] == [{"name": "7B", "parameters": 7e9}, {"name": "70B", "parameters": 70e9}]
    with pytest.raises(ReferenceJobError, match=r"unknown key\(s\) mfuu"):
        validate_job({"mfuu": 0.4})
    with pytest.raises(ReferenceJobError, match=r"reference job mfu: 1.5 is outside \(0, 1\]"):
        validate_job({"mfu": 1.5})
    with pytest.raises(ReferenceJobError, match="precision: 'int4' is not one of"):
        validate_job({"precision": "int4"})
    with pytest.raises(ReferenceJobError, match="each model needs a name and parameters"):
        validate_job({"models": [{"parameters": 7e9}]})
    assert validate_job({"healthy_gemm_fraction": 0.85})["healthy_gemm_fraction"] == 0.85
    with pytest.raises(ReferenceJobError, match=r"unknown key\(s\) assumed_gemm_fraction"):
        validate_job({"assumed_gemm_fraction": 0.8})
