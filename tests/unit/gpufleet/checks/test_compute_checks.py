# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-GPU compute and memory checks (gpufleet/checks/compute.py).

The ``parsed`` dicts are SYNTHETIC, hand-written in the shape of gpufleet/parsers/gpubench.py's result (inputs, not
recordings); the NVML summaries are hand-written in the shape of gpufleet/facts/nvml_samples.py ``summarise``.
Expected figures are worked out by hand from the published peaks (docs/baselines.md 12): H100 SXM bf16 989.4,
fp8 1978.9, tf32 494.7, fp32 66.9 TFLOP/s, HBM 3350 GB/s; floors 0.60 x the GEMM peaks, 0.65 x the HBM peak.
"""

from __future__ import annotations

import copy

import pytest

from gpufleet.checks import compute, engine
from gpufleet.checks.model import FAIL, INCOMPLETE, PASS, REJECT, SKIP, NodeContext

H100 = "NVIDIA H100 80GB HBM3"
BUSES = [
    "00000000:18:00.0",
    "00000000:2A:00.0",
    "00000000:3A:00.0",
    "00000000:5D:00.0",
    "00000000:9A:00.0",
    "00000000:AB:00.0",
    "00000000:BA:00.0",
    "00000000:DB:00.0",
]
HEALTHY = {"bf16": 712.3, "fp16": 705.1, "fp8": 1302.0, "tf32": 378.0, "fp32": 51.2}
HEALTHY_HBM = {"copy": 2950.1, "triad": 3010.4}


def gpu(index, name=H100, gemm=None, hbm=None):
    return {
        "index": index,
        "name": name,
        "bus_id": BUSES[index],
        "gemm_tflops": dict(HEALTHY if gemm is None else gemm),
        "hbm_gbs": dict(HEALTHY_HBM if hbm is None else hbm),
    }


def parsed(gpus, errors=()):
    return {
        "tool": "gpubench",
        "version": "1.0",
        "cuda": "12.4",
        "driver": "550.54.15",
        "gpus": gpus,
        "errors": list(errors),
    }


def record(parsed_output, outcome="ok", reason=None, samples=None):
    out = {
        "name": "gpubench",
        "kind": "gpu_compute",
        "hosts": ["w1"],
        "outcome": outcome,
        "reason": reason,
        "parsed": parsed_output,
        "started": "2026-01-01T00:00:00Z",
        "duration_s": 60.0,
    }
    if samples is not None:
        out["samples"] = samples
    return out


def node(name, records, gpu_facts=None, settings=None):
    facts = {"gpu": {"gpu_count": len(gpu_facts), "gpus": gpu_facts}} if gpu_facts is not None else {}
    return NodeContext(name, facts=facts, settings=dict(settings or {}, benchmarks=records))


def only(items, check_id):
    return [item for item in items if item["id"] == check_id]


# --- published peaks ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, sku",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H800", "H800 SXM"),
        ("NVIDIA H20", "H20"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA GH200 480GB", "GH200 96GB HBM3"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10", "A10"),
    ],
)
def test_published_peak_names_the_part_from_real_nvidia_smi_names(name, sku):
    assert compute.published_peak(name)["sku"] == sku


def test_published_peaks_are_the_dense_figures_not_the_sparse_headline():
    h100 = compute.published_peak("NVIDIA H100 80GB HBM3")
    # the datasheet headlines 1,979 (bf16) and 3,958 (fp8) TFLOPS with sparsity; dense is half
    assert h100["dense_tflops"] == {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}
    assert h100["hbm_gbs"] == 3350.0 and h100["source"]
    assert compute.published_peak("NVIDIA H200")["hbm_gbs"] == 4800.0
    assert compute.published_peak("NVIDIA L40S")["dense_tflops"]["fp8"] == 733.0
    assert "fp8" not in compute.published_peak("NVIDIA A100-SXM4-80GB")["dense_tflops"]  # Ampere has no FP8


@pytest.mark.parametrize("name", ["NVIDIA A10G", "Tesla V100-SXM2-32GB", "NVIDIA L40", "", None])
def test_unknown_parts_have_no_published_peak(name):
    assert compute.published_peak(name) is None


# --- the node check -------------------------------------------------------------------------------------------------


def test_a_healthy_h100_node_passes_naming_its_lowest_fraction():
    items = compute.check_gpu_compute(node("w1", [record(parsed([gpu(index) for index in range(8)]))]))
    assert [item["status"] for item in items] == [PASS]
    # lowest: fp8 1302.0 of 1978.9 = 65.8 %
    assert items[0]["message"] == (
        "8 GPU(s): every GEMM dtype and HBM figure at or above its floor; lowest 66% of the "
        "published peak (floors: 60% GEMM, 65% HBM)"
    )


def test_a_power_capped_gpu_below_the_floor_fails_with_what_nvml_saw():
    gpus = [gpu(index) for index in range(8)]
    gpus[4]["gemm_tflops"]["bf16"] = 500.0  # 50.5 % of 989.4, floor 593.6
    summary = {
        "index": 4,
        "uuid": "GPU-4",
        "name": H100,
        "pci_bus_id": BUSES[4],
        "samples": 12,
        "lost": False,
        "t_first": 1000.0,
        "t_last": 1060.0,
        "temp_max_c": 71,
        "sm_clock_median_mhz": 1410.0,
        "power_mean_w": 690.0,
        "power_max_w": 700.0,
        "counters_start": {
            "clock_event_ns.sw_power_cap": 0,
            "clock_event_ns.sw_thermal": 0,
            "clock_event_ns.hw_thermal": 0,
            "clock_event_ns.hw_power_brake": 0,
        },
        "counters_end": {
            "clock_event_ns.sw_power_cap": 42_000_000_000,
            "clock_event_ns.sw_thermal": 0,
            "clock_event_ns.hw_thermal": 0,
            "clock_event_ns.hw_power_brake": 0,
        },
    }
    facts = [
        {"index": index, "name": H100, "clocks_max_sm_mhz": 1980, "power_limit_w": 700, "power_max_limit_w": 700}
        for index in range(8)
    ]
    items = compute.check_gpu_compute(node("w1", [record(parsed(gpus), samples=[summary])], gpu_facts=facts))
    assert [item["status"] for item in items] == [FAIL]
    item = items[0]
    assert item["subject"] == "GPU4" and item["measured"] == 500.0 and item["expected"] == 593.6
    # 42 s of sw_power_cap in 60 s: 70 %; SM clock 1410 of 1980 MHz: 28.8 % below
    assert item["message"] == (
        "GPU4 (H100 SXM, 00000000:9A:00.0) bf16 500 TFLOP/s is 51% of the published peak 989.4 TFLOP/s, "
        "below the floor 593.6 TFLOP/s (60% of peak); NVML during the run: power-capped 70% of the run "
        "(sw_power_cap, up to 700 W); SM clock median 1410 MHz, 29% below its max 1980 MHz"
    )


def test_a_low_hbm_figure_without_samples_says_so():
    gpus = [gpu(0, hbm={"copy": 2000.0, "triad": 3010.4})]  # floor 0.65 x 3350 = 2177.5
    items = compute.check_gpu_compute(node("w1", [record(parsed(gpus))]))
    assert [item["status"] for item in items] == [FAIL]
    assert items[0]["message"] == (
        "GPU0 (H100 SXM, 00000000:18:00.0) hbm.copy 2000 GB/s is 60% of the published peak 3350 GB/s, "
        "below the floor 2177.5 GB/s (65% of peak); no NVML samples of this GPU during the run"
    )


def test_a_dtype_the_part_has_but_the_run_did_not_measure_is_not_verified():
    gemm = {key: value for key, value in HEALTHY.items() if key != "fp8"}
    out = parsed([gpu(0, gemm=gemm)], errors=["gpu 0 fp8: cuBLASLt of this CUDA has no FP8 GEMM"])
    items = compute.check_gpu_compute(node("w1", [record(out)]))
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU0 fp8: not measured (gpubench: gpu 0 fp8: cuBLASLt of this CUDA has no FP8 GEMM)")
    ]


def test_an_a100_without_fp8_passes_fp8_is_not_asked_of_it():
    gemm = {"bf16": 270.0, "fp16": 268.0, "tf32": 140.0, "fp32": 18.0}
    out = parsed(
        [gpu(0, name="NVIDIA A100-SXM4-80GB", gemm=gemm, hbm={"copy": 1700.0, "triad": 1750.0})],
        errors=["gpu 0 fp8: not supported on this part (compute capability 8.0 < 8.9)"],
    )
    items = compute.check_gpu_compute(node("w1", [record(out)]))
    assert [item["status"] for item in items] == [PASS]


def test_a_part_without_published_peaks_is_not_verified():
    items = compute.check_gpu_compute(node("w1", [record(parsed([gpu(0, name="NVIDIA A10G")]))]))
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU0 (NVIDIA A10G): no published peak for this part in gpufleet/profiles/gpu_peaks.yml")
    ]


def test_a_gpu_of_the_node_missing_from_the_output_is_not_verified():
    facts = [{"index": index, "name": H100} for index in range(2)]
    items = compute.check_gpu_compute(node("w1", [record(parsed([gpu(0)]))], gpu_facts=facts))
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU1: not in the gpu_compute output")
    ]


@pytest.mark.parametrize(
    "rec, message",
    [
        (None, "not judged: no gpu_compute run recorded (per-GPU GEMM and HBM benchmark)"),
        (
            record(
                None,
                outcome="missing_binary",
                reason="gpubench not found: run playbooks/provision.yml",
            ),
            "not judged: gpu_compute missing binary: gpubench not found: run playbooks/provision.yml",
        ),
        (
            record(
                None, outcome="failed", reason="exited 0 without gpubench results: its output begins 'usage: gpubench'"
            ),
            "not judged: gpu_compute output could not be parsed: exited 0 without gpubench results: "
            "its output begins 'usage: gpubench'",
        ),
        (record(None, outcome="ok"), "not judged: gpu_compute output could not be parsed"),
    ],
)
def test_no_figures_is_a_skip_with_the_reason(rec, message):
    items = compute.check_gpu_compute(node("w1", [] if rec is None else [rec]))
    assert [(item["status"], item["message"]) for item in items] == [(SKIP, message)]


def test_a_crashed_run_fails():
    items = compute.check_gpu_compute(
        node("w1", [record(None, outcome="crash", reason="Xid 79: GPU has fallen off the bus")])
    )
    assert [(item["status"], item["message"]) for item in items] == [
        (FAIL, "gpu_compute crash: Xid 79: GPU has fallen off the bus")
    ]


def test_required_at_the_level_a_missing_run_makes_the_node_incomplete_and_a_slow_gpu_rejects_it():
    settings = {"required_benchmarks": ["gpu_compute"]}
    missing = engine.run_checks([node("w1", [], settings=settings)], families=["compute"])["nodes"]["w1"]
    assert missing["verdict"] == INCOMPLETE
    assert missing["coverage"]["incomplete"] == [
        "benchmark per-GPU compute and memory throughput: not judged: "
        "no gpu_compute run recorded (per-GPU GEMM and HBM benchmark)",
        "nothing was judged: no check found evidence on this node",
    ]  # only this family ran, on a node without facts
    gpus = [gpu(0, gemm=dict(HEALTHY, tf32=250.0))]  # floor 0.60 x 494.7 = 296.8
    slow = engine.run_checks([node("w1", [record(parsed(gpus))], settings=settings)], families=["compute"])["nodes"][
        "w1"
    ]
    assert slow["verdict"] == REJECT and "benchmarks.gpu_compute" in slow["failed"]
    assert "compute" in engine.DEFAULT_FAMILIES


# --- the fleet-relative rule ----------------------------------------------------------------------------------------


def eight_gpus(slow_index=None, slow_bf16=600.0):
    values = [712.0, 715.0, 709.0, 711.0, 713.0, 710.0, 714.0, 716.0]
    gpus = []
    for index, value in enumerate(values):
        gemm = dict(HEALTHY, bf16=slow_bf16 if index == slow_index else value)
        gpus.append(gpu(index, gemm=gemm))
    return gpus


def test_a_slow_gpu_among_eight_is_named_by_the_fleet_rule():
    out = compute.check_gpu_compute_relative([node("w1", [record(parsed(eight_gpus(slow_index=6)))])])
    fails = [item for item in out["w1"] if item["status"] == FAIL]
    assert [item["subject"] for item in fails] == ["GPU6"]
    # bf16 of the eight: 712 715 709 711 713 710 600 716 -> median (711 + 712) / 2 = 711.5; 600 is 15.7 % below
    assert fails[0]["message"] == (
        "GPU6 (H100 SXM, 00000000:BA:00.0) bf16 600 TFLOP/s is 16% below the fleet median 711.5 "
        "TFLOP/s of 8 H100 SXM GPUs (more than 10% below fails); no NVML samples of this GPU "
        "during the run"
    )
    assert fails[0]["expected"] == round(711.5 * 0.9, 1)
    # 600 is still above the absolute floor 593.6: only the fleet rule catches this card
    assert [
        item["status"] for item in compute.check_gpu_compute(node("w1", [record(parsed(eight_gpus(slow_index=6)))]))
    ] == [PASS]


def test_the_fleet_rule_spans_nodes_and_passes_the_healthy_one():
    gpus = eight_gpus(slow_index=5)
    first, second = copy.deepcopy(gpus[:4]), copy.deepcopy(gpus[4:])
    out = compute.check_gpu_compute_relative([node("a", [record(parsed(first))]), node("b", [record(parsed(second))])])
    assert [item["status"] for item in out["a"]] == [PASS]
    assert (
        out["a"][0]["message"] == "28 figure(s) of this node's GPUs within 10% of their part's fleet median"
    )  # 4 GPUs x 7
    assert [(item["status"], item["subject"]) for item in out["b"]] == [(FAIL, "GPU5")]


def test_the_fleet_rule_needs_three_gpus_of_a_part():
    out = compute.check_gpu_compute_relative(
        [node("w1", [record(parsed([gpu(0), gpu(1, gemm=dict(HEALTHY, bf16=300.0))]))]), node("w2", [])]
    )
    assert [item["status"] for item in out["w1"]] == [SKIP]
    assert [item["status"] for item in out["w2"]] == [SKIP]
