# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/cost.py and report/offers.py: what the cost view reads from host records, and how it ranks offers. Host
records here are SYNTHETIC (written in the test): 8x H100 nodes with NVLink or PCIe, gpu_compute records in the
gpubench parser's shape and all-reduce records in the nccl-tests parser's (rows of size and busbw).

The step-time arithmetic itself is tested against published runs and by hand in tests/unit/gpufleet/plan/; here the
expected inputs of each estimate are written out from the record, and the estimate must be the model's for them."""

from __future__ import annotations

import pytest

from gpufleet.plan import training
from gpufleet.report.cost import ReferenceJobError, cost_document, cost_view, training_job, validate_job
from gpufleet.report.model import cost_chart_view

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
JOB = validate_job(None)
SEVEN, SEVENTY = JOB["models"]


def compute_record(tflops, slow=None, model=H100):
    """A gpu_compute record: 8 GPUs at ``tflops`` bf16, GPU ``slow[0]`` at ``slow[1]``."""
    gpus = [{"index": index, "name": model, "bus_id": "00000000:%02X:00.0" % index,
             "gemm_tflops": {"bf16": (slow[1] if slow and slow[0] == index else tflops)},
             "hbm_gbs": {"copy": 2900.0}} for index in range(8)]
    return {"name": "gpubench", "kind": "gpu_compute", "parsed": {"tool": "gpubench", "gpus": gpus, "errors": []}}


def allreduce(kind, points, hosts):
    rows = [{"size_bytes": size, "out_of_place": {"busbw_gbs": busbw}} for size, busbw in points]
    return {"name": "all_reduce_perf", "kind": kind, "hosts": hosts, "parsed": {"rows": rows, "ranks": 8}}


def node(host, price, nvlink, verdict="ACCEPT", benchmarks=(), model=H100, nics=True, memory_mib=81559):
    claim = {"price_per_node_hour": price, "gpu_model": model, "gpu_count": 8}
    if nics:
        claim["nics"] = [{"role": "compute", "type": "ib", "count": 8, "gbps": 400},
                         {"role": "frontend", "type": "ethernet", "count": 1, "gbps": 200}]
    return {
        "host": host,
        "verdict": verdict,
        "claim": claim,
        "facts": {
            "gpu": {"gpu_count": 8, "gpus": [{"index": index, "name": model, "memory_total_mib": memory_mib,
                                              "pcie_link_gen_max": 5} for index in range(8)]},
            "topology": {"summary": {"gpu_count": 8, "pair_count": 28, "nvlink_pairs": 28 if nvlink else 0}},
        },
        "benchmarks": list(benchmarks),
        "checks": [],
    }


# the intra-node curve of the NVLink node: three sizes (bytes, GB/s)
CURVE = [(8388608, 120.0), (134217728, 380.0), (4294967296, 470.0)]


def test_a_node_s_inputs_are_read_measured_claimed_or_assumed():
    record = node("nvl", 23.5, True, benchmarks=[compute_record(780.0, slow=(5, 700.0)),
                                                 allreduce("allreduce_single", CURVE, ["nvl"])])
    row = cost_view([record], JOB)["rows"][0]
    inputs = row["inputs"]
    # 81,559 MiB x 1,048,576 / 1e9 = 85.52 GB, the smallest GPU
    assert inputs["gpu_memory_gb"] == {"value": 85.52, "kind": "measured",
                                       "source": "gpu facts: 81559 MiB, the smallest GPU of the node"}
    assert inputs["nvlink_domain_gpus"]["value"] == 8 and inputs["nvlink_domain_gpus"]["kind"] == "measured"
    assert inputs["gemm_tflops"] == {"value": 700.0, "kind": "measured",
                                     "source": "gpu_compute on nvl GPU 5, the slowest of 8: 700 TFLOP/s bf16"}
    assert inputs["intra_node_busbw_gbs"]["value"] == [[float(size), busbw] for size, busbw in CURVE]
    assert inputs["intra_node_busbw_gbs"]["kind"] == "measured"
    # no multi-node run: the claimed compute NICs, 8 x 400 Gb/s = 3,200 Gb/s x 0.94 / 8 = 376 GB/s, an assumption
    assert inputs["inter_node_busbw_gbs"]["value"] == pytest.approx(376.0)
    assert inputs["inter_node_busbw_gbs"]["kind"] == "assumed"
    assert inputs["price_per_node_hour"] == {"value": 23.5, "kind": "claimed", "source": "claim price_per_node_hour"}
    assert row["label"] == "8 \u00d7 NVIDIA H100 80GB HBM3, NVLink, all GPUs, $23.5/h"


def test_each_estimate_is_the_model_s_for_those_inputs():
    record = node("nvl", 23.5, True, benchmarks=[compute_record(780.0), allreduce("allreduce_single", CURVE, ["nvl"])])
    row = cost_view([record], JOB)["rows"][0]
    # the offer written out by hand from the record; 7B fits in one node, 70B (~1.24 TB of model state) does not
    offer = training.Offer(H100, 85.52, 8, 1, 8, 780.0, training.Curve.of(CURVE), training.Curve.of(376.0), 23.5,
                           peak_tflops=989.4)
    seven = training.estimate(training_job(JOB, SEVEN), offer)
    assert seven.feasible
    assert row["estimates"][0]["cost"] == pytest.approx(seven.cost) and row["estimates"][0]["nodes"] == 1
    assert row["estimates"][0]["parallelism"] == vars(seven.layout)
    one_node = training.estimate(training_job(JOB, SEVENTY), offer)
    assert not one_node.feasible and one_node.nodes_needed > 1
    on_needed = training.estimate(training_job(JOB, SEVENTY), training.Offer(
        H100, 85.52, 8, one_node.nodes_needed, 8, 780.0, training.Curve.of(CURVE), training.Curve.of(376.0), 23.5,
        peak_tflops=989.4))
    assert row["estimates"][1]["nodes"] == one_node.nodes_needed
    assert row["estimates"][1]["cost"] == pytest.approx(on_needed.cost)
    assert row["estimates"][1]["memory_per_gpu_gb"] <= 85.52 * 0.9


def test_rejected_incomplete_and_unreachable_nodes_are_never_ranked():
    good = node("good", 23.5, True)
    # the cheapest of all, but rejected: it must not appear as an offer
    rejected = node("cheap-but-rejected", 5.0, True, verdict="REJECT")
    rejected["checks"] = [{"id": "gpu.throttle", "status": "fail", "message": "GPU0 clocks held down"}]
    incomplete = node("half-measured", 6.0, True, verdict="INCOMPLETE")
    incomplete["coverage"] = {"incomplete": ["GPU model: not judged: gpu facts not gathered"]}
    unreachable = {"host": "gone", "unreachable": "ssh: connect to host gone port 22: No route to host",
                   "claim": {"price_per_node_hour": 4.0}}
    view = cost_view([rejected, good, incomplete, unreachable], JOB)
    assert [row["hosts"] for row in view["rows"]] == [["good"]]
    assert view["not_offers"] == [
        {"host": "cheap-but-rejected", "verdict": "REJECT", "reason": "GPU0 clocks held down"},
        {"host": "half-measured", "verdict": "INCOMPLETE",
         "reason": "not verified: GPU model: not judged: gpu facts not gathered"},
        {"host": "gone", "verdict": "UNREACHABLE", "reason": "ssh: connect to host gone port 22: No route to host"},
    ]
    document = cost_document(cost_chart_view([rejected, good, incomplete, unreachable], JOB))
    assert [offer["hosts"] for offer in document["offers"]] == [["good"]]
    assert [item["host"] for item in document["not_offers"]] == ["cheap-but-rejected", "half-measured", "gone"]


def test_nvlink_at_a_higher_price_trains_the_large_model_cheaper_and_pcie_the_small_one():
    nvlink = node("nvl", 23.5, True, benchmarks=[allreduce("allreduce_single", CURVE, ["nvl"])])
    pcie = node("pcie", 21.0, False)
    view = cost_view([pcie, nvlink], JOB)
    rows = {row["hosts"][0]: row for row in view["rows"]}
    # 7B: data parallel on one node either way; the gradients' all-reduce hides behind the backward pass except its
    # last 25 MiB bucket: 26,214,400 B x 2(8-1)/8 = 45,875,200 B at 40 GB/s (PCIe 5.0) = 1.1469 ms, and at the
    # NVLink curve's 226.85 GB/s (log-linear between 120 GB/s at 8 MiB and 380 at 128 MiB: 120 + 260 x ln(3.125) /
    # ln(16)) = 0.2022 ms. The steps differ by those 0.945 ms only, so the cheaper hour wins
    nvl_step, pcie_step = (rows[host]["estimates"][0]["step_time_s"] for host in ("nvl", "pcie"))
    assert nvl_step["compute"] == pytest.approx(pcie_step["compute"])
    assert pcie_step["dp_comm"] - nvl_step["dp_comm"] == pytest.approx(0.0009447, rel=1e-3)
    assert rows["pcie"]["estimates"][0]["cost"] < rows["nvl"]["estimates"][0]["cost"]
    # 70B: tensor parallelism needs NVLink; on PCIe the layout must pipeline 16 ways with full recomputation (an
    # extra forward pass): slower by more than the 11.9 % price difference
    assert rows["pcie"]["estimates"][1]["parallelism"]["tp"] == 1
    assert rows["pcie"]["estimates"][1]["parallelism"]["recompute"] == "full"
    assert rows["nvl"]["estimates"][1]["parallelism"]["tp"] > 1
    assert rows["nvl"]["estimates"][1]["cost"] < rows["pcie"]["estimates"][1]["cost"]
    # ranked by the largest model: NVLink first
    assert [row["hosts"] for row in view["rows"]] == [["nvl"], ["pcie"]]
    # the PCIe node's busbw in a node is the typical PCIe 5.0 figure (its GPUs' PCIe generation), an assumption
    intra = rows["pcie"]["inputs"]["intra_node_busbw_gbs"]
    assert (intra["value"], intra["kind"]) == (40.0, "assumed") and "pcie5" in intra["source"]


def test_the_chart_and_table_show_layout_memory_and_communication_share():
    nvlink = node("nvl", 23.5, True, benchmarks=[allreduce("allreduce_single", CURVE, ["nvl"])])
    view = cost_chart_view([nvlink, node("pcie", 21.0, False)], JOB)
    assert [item["model"] for item in view["charts"]] == ["7B", "70B"]
    cell = view["rows"][0]["cells"][1]
    estimate = view["rows"][0]["estimates"][1]
    layout = estimate["parallelism"]
    assert cell["layout"].startswith("tp %d \u00b7 pp %d \u00b7 dp %d, ZeRO-%d" % (
        layout["tp"], layout["pp"], layout["dp"], layout["zero_stage"]))
    assert cell["memory"] == "%.1f GB" % estimate["memory_per_gpu_gb"]
    assert cell["comm_share"] == "%.1f %%" % (100 * estimate["communication_share"])
    drawn = view["charts"][1]["chart"]["bars"][0]
    assert drawn["value"].startswith("${:,.0f}, ".format(estimate["cost"]))
    # what is not measured is named per row, by kind: no gpu_compute record, no multi-node run, the price claimed
    assert view["rows"][0]["not_measured"] == ("assumed: GEMM rate per GPU, all-reduce busbw across nodes; "
                                               "claimed: price per node-hour")


def test_a_model_that_needs_more_nodes_without_an_inter_node_figure_says_so():
    lonely = node("lonely", 23.5, True, nics=False)
    estimate = cost_view([lonely], JOB)["rows"][0]["estimates"][1]
    assert not estimate["feasible"] and estimate["cost"] is None
    assert estimate["reason"].startswith("does not fit in 86 GB per GPU on 1 node(s): needs ")
    assert estimate["reason"].endswith("; no inter-node busbw measured or claimed to cost it across nodes")


def test_a_measured_multi_node_run_is_preferred_to_the_claimed_nics():
    run = allreduce("allreduce_multi", [(8388608, 40.0), (8589934592, 180.0)], ["a", "b"])
    view = cost_view([node("a", 23.5, True, benchmarks=[run]), node("b", 23.5, True, benchmarks=[run])], JOB)
    row = view["rows"][0]
    assert row["hosts"] == ["a", "b"]  # alike: one offer
    inter = row["inputs"]["inter_node_busbw_gbs"]
    assert inter["kind"] == "measured" and inter["value"] == [[8388608.0, 40.0], [8589934592.0, 180.0]]
    assert inter["source"] == "allreduce_multi on a, b: 2 sizes, 180 GB/s at 8589934592 bytes"


def test_alike_nodes_take_the_slowest_gemm_and_the_lowest_curve():
    fast = node("fast", 23.5, True, benchmarks=[compute_record(790.0), allreduce("allreduce_single", CURVE, ["fast"])])
    slow_curve = [(8388608, 100.0), (4294967296, 400.0)]
    slow = node("slow", 23.5, True, benchmarks=[compute_record(700.0),
                                                allreduce("allreduce_single", slow_curve, ["slow"])])
    row = cost_view([fast, slow], JOB)["rows"][0]
    assert row["hosts"] == ["fast", "slow"]
    assert row["inputs"]["gemm_tflops"]["value"] == 700.0
    assert row["inputs"]["intra_node_busbw_gbs"]["value"] == [[8388608.0, 100.0], [4294967296.0, 400.0]]


def test_bridged_pairs_keep_tensor_parallelism_to_two_and_a100_gets_its_own_figures():
    record = node("pairs", 14.7, True, model=A100)
    record["facts"]["topology"]["summary"]["nvlink_pairs"] = 4
    for gpu in record["facts"]["gpu"]["gpus"]:
        gpu["pcie_link_gen_max"] = 4
    inputs = cost_view([record], JOB)["rows"][0]["inputs"]
    assert inputs["nvlink_domain_gpus"]["value"] == 2
    assert inputs["intra_node_busbw_gbs"]["value"] == 20.0  # pcie4: an all-GPU all-reduce crosses PCIe
    # A100 bf16 dense peak 312 x 0.8 = 249.6 TFLOP/s, assumed (no gpu_compute record)
    assert inputs["gemm_tflops"]["value"] == pytest.approx(249.6) and inputs["gemm_tflops"]["kind"] == "assumed"
    nvswitch = node("dgx", 14.0, True, model=A100)
    assert cost_view([nvswitch], JOB)["rows"][0]["inputs"]["intra_node_busbw_gbs"]["value"] == 230.0


def test_an_unknown_part_without_a_record_is_not_estimated():
    view = cost_view([node("odd", 9.0, False, model="NVIDIA Mystery GPU")], JOB)
    assert view["rows"] == [] and not view["available"]
    assert view["unavailable"][0]["reason"].startswith("gemm_tflops unknown: no gpu_compute record and no published")
    assert cost_view([dict(node("free", 1.0, False), claim={})], JOB) is None  # no price anywhere: no view


def test_reference_job_errors_name_the_key():
    with pytest.raises(ReferenceJobError, match=r"unknown key\(s\) mfu \(known: models, tokens, precision"):
        validate_job({"mfu": 0.4})
    with pytest.raises(ReferenceJobError, match=r"models 13B: missing layers, hidden, heads, seq_len, vocab"):
        validate_job({"models": [{"name": "13B", "parameters": 13e9}]})
    with pytest.raises(ReferenceJobError, match=r"precision: 'fp16' is not one of bf16, fp8"):
        validate_job({"precision": "fp16"})
    with pytest.raises(ReferenceJobError, match=r"hidden 5000 is not a multiple of heads 48"):
        validate_job({"models": [dict(SEVEN, name="x", hidden=5000, heads=48)]})
    with pytest.raises(ReferenceJobError, match=r"global_batch_tokens: 2048 is less than one sequence of model 7B"):
        validate_job({"global_batch_tokens": 2048})
    job = validate_job({"models": [dict(SEVEN, name="13B", parameters=13e9, layers=40, hidden=5120, heads=40)]})
    assert [model["name"] for model in job["models"]] == ["13B"] and job["tokens"] == 1e12
