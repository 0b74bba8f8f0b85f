# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When interconnect decides training speed and when it does not (gpufleet/plan/training.py), with figures worked by
hand. The busbw figures here are flat ASSUMPTIONS written for the arithmetic (an 8x A100 NVSwitch node's large-message
230 GB/s, docs/baselines.md 3a, and 20 GB/s for the same GPUs over PCIe), not recordings; the model configurations
are Llama 2's (arXiv 2307.09288: 13B = 40 layers, hidden 5120, 40 heads; 70B = 80 layers, hidden 8192, 64 heads;
vocabulary 32,000) and a 1.3B GPT (24 layers, hidden 2048, 16 heads, vocabulary 51,200)."""

from __future__ import annotations

import pytest

from gpufleet.plan import training

A100_GEMM = 271.2  # TFLOP/s, docs/baselines.md 12b


def offer(nvlink, nodes=1, memory=80):
    busbw = 230.0 if nvlink else 20.0
    return training.Offer("A100", memory, 8, nodes, 8 if nvlink else 1, A100_GEMM, training.Curve.of(busbw),
                          training.Curve.of(25.0), 10.0, peak_tflops=312)


def test_curve_reads_log_linearly_between_points_and_flat_beyond():
    curve = training.Curve.of([[1 << 20, 10.0], [1 << 30, 40.0]])
    assert curve.busbw(1 << 10) == 10.0 and curve.busbw(1 << 40) == 40.0
    # 32 MiB is half way from 1 MiB to 1 GiB in log(size): 10 + 30 / 2
    assert curve.busbw(1 << 25) == pytest.approx(25.0)
    # ring all-reduce of 1 GB over 8 ranks at 40 GB/s busbw: 1e9 * 2 * 7/8 / 40e9
    assert training.Curve.of(40.0).allreduce_s(1e9, 8) == pytest.approx(0.04375)
    assert training.Curve.of(40.0).allreduce_s(1e9, 1) == 0.0
    with pytest.raises(training.EstimateError, match="busbw points"):
        training.Curve.of([[1, "fast"]])


def test_a_small_data_parallel_job_barely_sees_nvlink():
    # 1.3B, 512 sequences of 2048 on one 8-GPU node: tp 1 on both boxes (the PCIe box has no NVLink domain). Compute
    # per step ~8 s: 9.0e9 FLOPs/token x 1,048,576 tokens / (8 GPUs x 271.2 TFLOP/s x 0.545). The fp32 gradient
    # all-reduce, 5.2 GB x 2 x 7/8 / 20 GB/s = 0.455 s over PCIe, hides behind 0.8 x 2/3 of it (4.3 s): what remains
    # is the last 25 MiB bucket, 2.3 ms over PCIe and 0.2 ms over NVLink. The two differ by well under 5 % (MLPerf
    # Training v2.0 BERT on one 4x A100 PCIe server with and without NVLink bridges: about 1 %).
    job = training.Job(1.3e9, 24, 2048, 16, 2048, 51200, 512 * 2048, 100e9)
    nvlink, pcie = training.estimate(job, offer(True)), training.estimate(job, offer(False))
    assert nvlink.feasible and pcie.feasible
    assert (nvlink.layout.tp, pcie.layout.tp) == (1, 1)
    assert pcie.step_time_s.total / nvlink.step_time_s.total <= 1.05
    assert pcie.step_time_s.dp_comm == pytest.approx(25 * 2 ** 20 * 2 * 7 / 8 / 20e9)


def test_a_13b_model_on_one_node_trains_2_3_times_faster_with_nvlink():
    # Llama 2 13B, 256 sequences of 4096 (1M tokens), FSDP (ZeRO-3) over the 8 GPUs of one node, micro-batch 1, full
    # recomputation, on both boxes. By hand:
    # - hardware FLOPs per token: layer parameters 13e9 - 32000 x 5120 = 12.836e9; forward 2 x 12.836e9 + 4 x 40 x
    #   4096 x 5120 + 2 x 32000 x 5120 = 29.355e9; training 3 x that = 88.064e9, plus recomputation's forward of the
    #   layers 25.672e9 + 3.355e9 = 117.091e9;
    # - efficiency: w = 2 x 4096 x 5120^2 / 1e9 = 214.75, 0.64 x 214.75 / 217.75 = 0.6312;
    # - compute: 1,048,576 x 117.091e9 / (8 x 271.2e12 x 0.6312) = 89.65 s;
    # - ZeRO-3 gathers, forward and backward, for each of 256 / 8 = 32 micro-batches: 2 x 2 bytes x 13e9 x 32 =
    #   1.664e12 bytes, at 2 x 7/8 / busbw seconds a byte: 145.6 s over PCIe (20 GB/s), 12.66 s over NVLink (230);
    # - the fp32 gradients (52 GB: 4.55 s over PCIe) hide behind 0.8 x 2/3 x 89.65 s: only the last bucket remains.
    # Step: 89.65 + 145.6 = 235.3 s over PCIe, 89.65 + 12.66 = 102.3 s over NVLink: NVLink is 2.30 times faster.
    job = training.Job(13e9, 40, 5120, 40, 4096, 32000, 256 * 4096, 100e9)
    fixed = {"tp": 1, "pp": 1, "dp": 8, "zero_stage": 3, "micro_batch": 1, "recompute": "full"}
    nvlink, pcie = training.estimate(job, offer(True), fixed), training.estimate(job, offer(False), fixed)
    compute = 1048576 * 117.091e9 / (8 * 271.2e12 * 0.64 * 214.75 / 217.75)
    assert nvlink.step_time_s.compute == pytest.approx(compute, rel=1e-3)
    assert pcie.step_time_s.dp_comm == pytest.approx(1.664e12 * 2 * 7 / 8 / 20e9, rel=1e-3)
    assert nvlink.step_time_s.dp_comm == pytest.approx(1.664e12 * 2 * 7 / 8 / 230e9, rel=1e-3)
    factor = (compute + 1.664e12 * 2 * 7 / 8 / 20e9) / (compute + 1.664e12 * 2 * 7 / 8 / 230e9)
    assert factor == pytest.approx(2.30, abs=0.01)
    assert pcie.step_time_s.total / nvlink.step_time_s.total == pytest.approx(factor, rel=1e-3)
    # at the same hourly price the NVLink box costs 1/2.30 as much for the same tokens
    assert pcie.cost / nvlink.cost == pytest.approx(factor, rel=1e-3)


def test_70b_does_not_fit_one_8x80gb_node_and_needs_three():
    # Llama 2 70B: weights (2 bytes), fp32 gradients (4) and Adam with fp32 master weights (12) are 18 bytes a
    # parameter, 1.26 TB. Usable per GPU: 80 GB less the 10 % reserve = 72 GB. However the state is split (tensor,
    # pipeline, ZeRO), 16 GPUs hold 1.26e12 / 16 = 78.75 GB each: 2 nodes do not fit. On 24 GPUs, tp 8 x dp 3 (1536
    # sequences: dp 3 divides the batch) with ZeRO-2 holds 8.75e9 parameters' weights (17.5 GB) and a third of their
    # gradients and Adam state (11.667 + 35.0 GB), 64.167 GB, plus activations with full recomputation: each layer's
    # input, 2 x 4096 x 8192 / 8 bytes x 80 layers = 0.671 GB, and the recomputed layer's, 4096 x 8192 x (34 + 5 x 64
    # x 4096 / 8192) / 8 = 0.814 GB: 65.652 GB. It fits, and it is faster than ZeRO-3, which gathers the weights again.
    job = training.Job(70e9, 80, 8192, 64, 4096, 32000, 1536 * 4096, 2e12)
    got = training.estimate(job, offer(True))
    assert not got.feasible
    assert got.nodes_needed == 3
    assert got.reason == "does not fit in 80 GB per GPU on 1 node(s): needs 3 nodes"
    three = training.estimate(job, offer(True, nodes=3))
    assert three.feasible
    assert (three.layout.tp, three.layout.dp, three.layout.zero_stage, three.layout.recompute) == (8, 3, 2, "full")
    assert three.memory_per_gpu_gb == pytest.approx(65.652, rel=1e-4)


def test_a_job_that_cannot_be_estimated_says_which_key():
    with pytest.raises(training.EstimateError, match="precision"):
        training.estimate(training.Job(1e9, 2, 64, 4, 8, 8, 64, 64, precision="fp4"), offer(True))
    with pytest.raises(training.EstimateError, match="hidden: 65 is not a multiple of heads"):
        training.estimate(training.Job(1e9, 2, 65, 4, 8, 8, 64, 64), offer(True))
