# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training-performance model (gpufleet/plan/training.py) against published training runs.

Each run's stated configuration goes in; its published throughput comes out within 20 %. Source of every row:
Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (arXiv
2104.04473): Table 1 (weak scaling, 1.7B-1T) and Table 2 (the PTD-P rows: GPT-3 175B and the 530B model at a fixed
batch on 384-2240 GPUs). All on Selene (DGX A100 80 GB, NVSwitch, 8x HDR 200G per node), sequence 2048, vocabulary
51,200, activation recomputation, micro-batch 1 in Table 2. The paper reports "achieved teraFLOP/s per GPU" counted
with its equation (3), ``96 B s l h^2 (1 + s/6h + V/16lh)`` per step; divided by that count per token it is the
published tokens/s per GPU compared here.

The offer of every run (the inputs the model is given, as a user would give them for such a cluster):
- GEMM rate 271.2 TFLOP/s: the measured maximum bf16 matmul of an A100 SXM (docs/baselines.md 12b);
- the intra-node busbw curve: the recording of an 8x A100 SXM4 NVSwitch node (tests/fixtures/nccl/superbench-...);
- the inter-node curve: the recording of 4 DGX A100 with 8x HDR 200G (tests/fixtures/nccl/deepops-4x-...).

The calibration (training.CALIBRATION) was fitted on the five Table 1 runs it names; the other five Table 1 runs and
the six Table 2 PTD-P runs are predictions.
"""

from __future__ import annotations

import os
import statistics

import pytest

from gpufleet.parsers.registry import parse
from gpufleet.plan import training

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl")
SEQ, VOCAB = 2048, 51200

# name: (parameters in billions, heads, hidden, layers, tp, pp, GPUs, batch, published TFLOP/s per GPU)
TABLE_1 = {
    "megatron-1.7B": (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    "megatron-3.6B": (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    "megatron-7.5B": (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    "megatron-18.4B": (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    "megatron-39.1B": (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    "megatron-76.1B": (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    "megatron-145.6B": (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    "megatron-310.1B": (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    "megatron-529.6B": (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    "megatron-1008B": (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
}
TABLE_2_PTD = {
    "ptd-174.6B-384": (174.6, 96, 12288, 96, 8, 12, 384, 1536, 153),
    "ptd-174.6B-768": (174.6, 96, 12288, 96, 8, 12, 768, 1536, 149),
    "ptd-174.6B-1536": (174.6, 96, 12288, 96, 8, 12, 1536, 1536, 141),
    "ptd-529.6B-560": (529.6, 128, 20480, 105, 8, 35, 560, 2240, 171),
    "ptd-529.6B-1120": (529.6, 128, 20480, 105, 8, 35, 1120, 2240, 167),
    "ptd-529.6B-2240": (529.6, 128, 20480, 105, 8, 35, 2240, 2240, 159),
}


def recorded_curve(name):
    parsed = parse("nccl", open(os.path.join(FIXTURES, name), encoding="utf-8").read())
    return training.Curve.of([[row["size_bytes"], row["out_of_place"]["busbw_gbs"]] for row in parsed["rows"]
                              if row["out_of_place"]["busbw_gbs"]])


@pytest.fixture(scope="module", name="selene")
def selene_fixture():
    """The offer's curves: recordings of an 8x A100 NVSwitch node and of 4 DGX A100 over 8x HDR."""
    return (recorded_curve("superbench-a100-sxm4-40gb-8gpu-single-node-allreduce-oldheader.txt"),
            recorded_curve("deepops-4x-dgx-a100-ib-allreduce-PARTIAL-table-only.txt"))


def relative_error(selene, row, micro_batch=None):
    billions, heads, hidden, layers, tp, pp, gpus, batch, tflops = row
    job = training.Job(billions * 1e9, layers, hidden, heads, SEQ, VOCAB, batch * SEQ, 300e9)
    offer = training.Offer("A100-SXM4-80GB", 80, 8, gpus // 8, 8, 271.2, selene[0], selene[1], 1.0, peak_tflops=312)
    fixed = {"tp": tp, "pp": pp, "recompute": "full", "zero_stage": 0}
    if micro_batch:
        fixed["micro_batch"] = micro_batch
    got = training.estimate(job, offer, fixed)
    assert got.feasible, got.reason
    per_token = 96.0 * layers * hidden ** 2 * (1 + SEQ / (6.0 * hidden) + VOCAB / (16.0 * layers * hidden))
    published = tflops * 1e12 / per_token
    return got.tokens_per_second_per_gpu / published - 1.0


def test_every_published_run_within_20_percent_and_the_errors_printed(selene):
    errors = {name: relative_error(selene, row) for name, row in TABLE_1.items()}
    errors.update({name: relative_error(selene, row, micro_batch=1) for name, row in TABLE_2_PTD.items()})
    fitted = set(training.CALIBRATION.fitted_on)
    assert fitted < set(TABLE_1) and len(fitted) * 2 <= len(errors)
    for name, error in sorted(errors.items(), key=lambda item: item[0]):
        print("%-18s %-9s %+6.1f %%" % (name, "fitted" if name in fitted else "predicted", 100 * error))
    predicted = [abs(error) for name, error in errors.items() if name not in fitted]
    on_fit = [abs(error) for name, error in errors.items() if name in fitted]
    every = [abs(error) for error in errors.values()]
    print("median |error| %.1f %% over %d runs, worst %.1f %%; predicted only: median %.1f %%, worst %.1f %%; fitted "
          "only: median %.1f %%, worst %.1f %%" % (
              100 * statistics.median(every), len(every), 100 * max(every), 100 * statistics.median(predicted),
              100 * max(predicted), 100 * statistics.median(on_fit), 100 * max(on_fit)))
    assert {name: round(error, 3) for name, error in errors.items() if abs(error) > 0.20} == {}


def test_the_fitted_runs_are_named_and_the_constants_are_the_fit():
    assert training.CALIBRATION.fitted_on == ("megatron-1.7B", "megatron-7.5B", "megatron-39.1B", "megatron-145.6B",
                                              "megatron-529.6B")
    assert (training.CALIBRATION.eta_max, training.CALIBRATION.w_half) == (0.64, 3.0)
