# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-GPU compute and memory checks (gpufleet/checks/compute.py).

The ``parsed`` dicts are SYNTHETIC, hand-written in the shape of gpufleet/parsers/gpubench.py's result (inputs, not
recordings); the NVML summaries are hand-written in the shape of gpufleet/facts/nvml_samples.py ``summarise``.
Expected figures are worked out by hand from the published peaks (docs/baselines.md 12): H100 SXM bf16 989.4,
fp8 1978.9, tf32 494.7, fp32 66.9 TFLOP/s, HBM 3350 GB/s; floors 0.60 x the GEMM peaks, 0.65 x the HBM peak
(0.50 x the GEMM peaks of the PCIe Hopper parts); a sustained phase fails past a 10 % sag (12d).
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


def gpu(index, name=H100, gemm=None, hbm=None, **keys):
    out = {
        "index": index,
        "name": name,
        "bus_id": BUSES[index],
        "gemm_tflops": dict(HEALTHY if gemm is None else gemm),
        "hbm_gbs": dict(HEALTHY_HBM if hbm is None else hbm),
    }
    out.update(keys)  # the keys of gpubench 1.1 (fast_accum, sustained) where a test gives them
    return out


def sustained(first=712.0, lowest=705.0, mean=708.0, last=706.0, seconds=60.0):
    return {"dtype": "bf16", "tflops": mean, "first": first, "last": last, "min": lowest, "seconds": seconds,
            "windows": int(seconds)}


def summary(index, bus_id, power_cap_s=0.0, thermal_s=0.0, clock=1980.0, temp=71):
    """An NVML per-GPU summary over a 60 s run: ``power_cap_s``/``thermal_s`` seconds of sw_power_cap/sw_thermal."""
    events = ("sw_power_cap", "sw_thermal", "hw_thermal", "hw_power_brake")
    held = {"sw_power_cap": power_cap_s, "sw_thermal": thermal_s}
    return {
        "index": index, "uuid": "GPU-%d" % index, "name": H100, "pci_bus_id": bus_id, "samples": 12, "lost": False,
        "t_first": 1000.0, "t_last": 1060.0, "temp_max_c": temp, "sm_clock_median_mhz": clock,
        "power_mean_w": 690.0, "power_max_w": 700.0,
        "counters_start": {"clock_event_ns.%s" % event: 0 for event in events},
        "counters_end": {"clock_event_ns.%s" % event: int(held.get(event, 0.0) * 1e9) for event in events},
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
        ("NVIDIA H20", "H20 96GB"),
        ("NVIDIA H20-3e", "H20-3e 141GB"),
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


def test_b200_memory_is_what_the_drivers_7680_bit_bus_gives():
    # 7680 bits / 8 x 3996 MHz x 2 transfers a clock = 7672.32 GB/s (pytorch/ao#4002), not the rounded 8 TB/s
    assert compute.published_peak("NVIDIA B200")["hbm_gbs"] == 7672.0
    assert round(7680 / 8 * 3996e6 * 2 / 1e9) == 7672


def test_the_141_gb_h20_is_judged_against_its_own_memory_not_the_96_gb_ones():
    assert compute.published_peak("NVIDIA H20")["hbm_gbs"] == 4000.0
    assert compute.published_peak("NVIDIA H20-3e")["hbm_gbs"] == 4800.0
    gemm = {"bf16": 120.0, "fp16": 120.0, "fp8": 240.0, "tf32": 60.0, "fp32": 35.0}
    # 2950 GB/s is above the 96 GB part's floor (0.65 x 4000 = 2600) but under the 141 GB one's (0.65 x 4800 = 3120)
    out = parsed([gpu(0, name="NVIDIA H20-3e", gemm=gemm, hbm={"copy": 2950.0, "triad": 3900.0})])
    items = compute.check_gpu_compute(node("w1", [record(out)]))
    assert [(item["status"], item["message"]) for item in items] == [(FAIL, (
        "GPU0 (H20-3e 141GB, 00000000:18:00.0) hbm.copy 2950 GB/s is 61% of the published peak 4800 GB/s, below the "
        "floor 3120 GB/s (65% of peak); no NVML samples of this GPU during the run"))]


def test_a_pcie_hopper_card_has_its_own_gemm_floor():
    # healthy H100 PCIe at 8192^3 (zzc0721/torch-performance-test-data#95): fp16 437.07 of 756 is 57.8 %, under the
    # default 0.60 floor (453.6); its own floor is 0.50 (378); fp8 900 of 1513 is 59.5 %, the lowest is fp16's 58 %
    healthy = {"bf16": 492.84, "fp16": 437.07, "fp8": 900.0, "tf32": 240.43, "fp32": 36.95}
    hbm = {"copy": 1500.0, "triad": 1600.0}
    card = gpu(0, name="NVIDIA H100 PCIe", gemm=healthy, hbm=hbm)
    items = compute.check_gpu_compute(node("w1", [record(parsed([card]))]))
    assert [(item["status"], item["message"], item["expected"]) for item in items] == [(PASS, (
        "1 GPU(s): every GEMM dtype and HBM figure at or above its floor; lowest 58% of the published peak (floors: "
        "50% GEMM, 65% HBM)"), 0.5)]
    slow = parsed([gpu(0, name="NVIDIA H100 PCIe", gemm=dict(healthy, bf16=350.0), hbm=hbm)])
    [item] = compute.check_gpu_compute(node("w1", [record(slow)]))
    assert (item["status"], item["expected"]) == (FAIL, 378.0)
    assert item["message"].startswith("GPU0 (H100 PCIe, 00000000:18:00.0) bf16 350 TFLOP/s is 46% of the published "
                                      "peak 756 TFLOP/s, below the floor 378 TFLOP/s (50% of peak); ")
    assert item["threshold_source"].startswith("0.50 x the datasheet dense peak for a 350 W PCIe Hopper card")


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


def test_a_gpu_is_matched_to_its_nvml_samples_and_facts_by_bus_id_in_either_form():
    # gpubench 1.0 printed CUDA's bus id form and CUDA's device order, which here is not nvidia-smi's: its GPU 1 is
    # the card at 18:00.0, nvidia-smi's GPU 0, power-capped 42 s of the 60 s run (70 %) with its limit set to 500 W
    gpus = [dict(gpu(1, gemm=dict(HEALTHY, bf16=500.0)), bus_id="0000:18:00.0"), dict(gpu(0), bus_id="0000:2a:00.0")]
    samples = [summary(0, "00000000:18:00.0", power_cap_s=42.0), summary(1, "00000000:2A:00.0")]
    facts = [
        {"index": 0, "name": H100, "pci_bus_id": "00000000:18:00.0", "clocks_max_sm_mhz": 1980, "power_limit_w": 500,
         "power_max_limit_w": 700},
        {"index": 1, "name": H100, "pci_bus_id": "00000000:2A:00.0", "clocks_max_sm_mhz": 1980, "power_limit_w": 700,
         "power_max_limit_w": 700},
    ]
    items = compute.check_gpu_compute(node("w1", [record(parsed(gpus), samples=samples)], gpu_facts=facts))
    assert [(item["status"], item["message"]) for item in items] == [(FAIL, (
        "GPU1 (H100 SXM, 0000:18:00.0) bf16 500 TFLOP/s is 51% of the published peak 989.4 TFLOP/s, below the floor "
        "593.6 TFLOP/s (60% of peak); NVML during the run: power-capped 70% of the run (sw_power_cap, up to 700 W, "
        "power limit set to 500 W of 700 W)"))]


@pytest.mark.parametrize("mode, words", [
    # fast accumulation outpaces the mode the floor's source figures (mamf-finder, torch._scaled_mm) ran in
    (1, "fp8 (fast_accum=1) 1000 TFLOP/s is 51% of the published peak 1978.9 TFLOP/s, below the floor 1187.3 TFLOP/s "
        "(60% of peak; its source figures ran without fast accumulation (fast_accum=0), which fast_accum=1 outpaces)"),
    (0, "fp8 (fast_accum=0) 1000 TFLOP/s is 51% of the published peak 1978.9 TFLOP/s, below the floor 1187.3 TFLOP/s "
        "(60% of peak)"),
])
def test_an_fp8_figure_is_judged_naming_its_accumulation_mode(mode, words):
    out = parsed([gpu(0, gemm=dict(HEALTHY, fp8=1000.0), fast_accum={"fp8": mode})])
    [item] = compute.check_gpu_compute(node("w1", [record(out)]))
    assert item["status"] == FAIL and item["gpu"]["fast_accum"] == [mode]
    assert item["message"] == "GPU0 (H100 SXM, 00000000:18:00.0) %s; no NVML samples of this GPU during the run" % words


TIMEOUT = "gpu 1 bf16: timeout: no result within the 25.0 s deadline of this test; no further test on this GPU"


def test_a_gpu_whose_test_timed_out_is_named_and_leaves_the_node_incomplete():
    out = parsed([gpu(0), gpu(1, gemm={}, hbm={})], errors=[TIMEOUT])
    items = compute.check_gpu_compute(node("w1", [record(out)]))
    # GPU 0's figures are judged (above their floors); GPU 1 is one line naming the timeout and what it cost
    gap = "GPU1: not measured: bf16, fp16, fp8, tf32, fp32, HBM (gpubench: %s)" % TIMEOUT
    assert [(item["status"], item["message"]) for item in items] == [(SKIP, "not verified: " + gap)]
    settings = {"required_benchmarks": ["gpu_compute"]}
    verdict = engine.run_checks([node("w1", [record(out)], settings=settings)], families=["compute"])["nodes"]["w1"]
    assert verdict["verdict"] == INCOMPLETE and any(gap in reason for reason in verdict["coverage"]["incomplete"])


def test_a_gpu_gpubench_could_not_open_is_named_with_its_error():
    facts = [{"index": index, "name": H100, "pci_bus_id": BUSES[index]} for index in range(2)]
    out = parsed([gpu(0)], errors=["gpu 1 device: cannot open the device"])
    items = compute.check_gpu_compute(node("w1", [record(out)], gpu_facts=facts))
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU1: not in the gpu_compute output (gpubench: gpu 1 device: cannot open the device)")]


def test_a_gpu_whose_sustained_clock_sags_fails_with_what_nvml_saw():
    gpus = [gpu(index, sustained=sustained()) for index in range(3)]
    # 700 -> 595: the lowest window is 105 / 700 = 15 % under the first; sw_thermal held 30 s of the 60 s run (50 %)
    gpus[1]["sustained"] = sustained(first=700.0, lowest=595.0, mean=640.0, last=600.0)
    samples = [summary(index, BUSES[index], thermal_s=30.0 if index == 1 else 0.0, temp=88) for index in range(3)]
    facts = [{"index": index, "name": H100, "pci_bus_id": BUSES[index], "clocks_max_sm_mhz": 1980}
             for index in range(3)]
    items = compute.check_gpu_compute(node("w1", [record(parsed(gpus), samples=samples)], gpu_facts=facts))
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in items] == [
        (FAIL, "GPU1", 0.15, 0.10)]
    assert items[0]["message"] == (
        "GPU1 (H100 SXM, 00000000:2A:00.0) sustained bf16 over 60 s: its lowest 1-s window 595 TFLOP/s is 15% under "
        "its first 700 TFLOP/s (mean 640, last 600; more than 10% fails); NVML during the run: thermal slowdown "
        "sw_thermal 50% of the run (max 88 C)")
    assert items[0]["gpu"]["figure"] == "sustained.bf16"


def test_a_steady_sustained_phase_passes_naming_the_largest_sag():
    items = compute.check_gpu_compute(node("w1", [record(parsed([gpu(index, sustained=sustained())
                                                                 for index in range(2)]))]))
    # (712 - 705) / 712 = 1.0 %
    assert [item["status"] for item in items] == [PASS]
    assert items[0]["message"].endswith("; sustained phase: largest sag 1% (more than 10% fails)")


def test_a_gpu_without_the_sustained_phase_the_others_ran_is_not_verified():
    gpus = [gpu(0, sustained=sustained()), gpu(1)]
    out = parsed(gpus, errors=["gpu 1 sustained: cudaMalloc: out of memory"])
    items = compute.check_gpu_compute(node("w1", [record(out)]))
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU1 sustained: not measured (gpubench: gpu 1 sustained: cudaMalloc: out of memory)")]


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


def test_the_fleet_rule_judges_the_sustained_mean():
    gpus = [gpu(index, sustained=sustained()) for index in range(8)]
    # a steady card (2.5 % sag) that holds only 600: 15 % under the median 708 of the eight sustained means
    gpus[3]["sustained"] = sustained(first=610.0, lowest=595.0, mean=600.0, last=598.0)
    out = compute.check_gpu_compute_relative([node("w1", [record(parsed(gpus))])])
    assert [(item["status"], item["message"]) for item in out["w1"]] == [(FAIL, (
        "GPU3 (H100 SXM, 00000000:5D:00.0) sustained.bf16 600 TFLOP/s is 15% below the fleet median 708 TFLOP/s of 8 "
        "H100 SXM GPUs (more than 10% below fails); no NVML samples of this GPU during the run"))]


def test_the_fleet_rule_compares_fp8_figures_only_within_one_accumulation_mode():
    # 1302 is 10.3 % under the median 1451 of all six, but within its own mode's three it is the median
    slow = [gpu(index, fast_accum={"fp8": 0}) for index in range(3)]
    fast = [gpu(index, gemm=dict(HEALTHY, fp8=1600.0), fast_accum={"fp8": 1}) for index in range(3)]
    out = compute.check_gpu_compute_relative([node("a", [record(parsed(slow))]), node("b", [record(parsed(fast))])])
    assert [item["status"] for item in out["a"] + out["b"]] == [PASS, PASS]
    assert out["a"][0]["message"] == "21 figure(s) of this node's GPUs within 10% of their part's fleet median"
