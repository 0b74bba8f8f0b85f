# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The training-performance model (gpufleet/plan/training.py) against published H100 runs, as predictions: the
calibration (training.CALIBRATION) was fitted on A100 runs only (test_training_published.py) and is not refitted.

Megatron-LM README, commit f2e5db402c (2024-07-15, "New scaling figures on H100 GPUs"), its table of weak-scaling
runs (images/model_table.png, Megatron-Core r0.8.0): GPT models, vocabulary 131,072, sequence 4,096, up to 6,144
H100. Stated: tp, pp, dp, the GPU count, the batch in sequences, per-GPU teraFLOP/s and MFU; fine-grained overlap of
data-parallel (``--overlap-grad-reduce --overlap-param-gather``), tensor-parallel (``--tp-comm-overlap``) and pipeline
communication. ``--overlap-param-gather`` runs only with the distributed optimizer (Megatron-Core r0.8.0,
megatron/training/arguments.py asserts it): ZeRO stage 1, pinned. Micro-batch and recomputation are not stated: the
model searches them. The stated parameter counts are those of untied input and output embeddings (7.1B = 12 x 30 x
4096^2 + 2 x 131072 x 4096), so the jobs say ``tied_embeddings=False``. The teraFLOP/s are counted with Megatron-Core
r0.8.0's ``num_floating_point_operations`` (megatron/training/training.py; :func:`megatron_flops_per_token`), which
for a plain GPT is ``72 B s l h^2 (1 + s/6h + V/12lh)`` per step; divided by that count per token it is the published
tokens/s per GPU compared here.

Llama 3 405B ("The Llama 3 Herd of Models", arXiv 2407.21783, Table 4, the 405B pre-training configurations): 126
layers, hidden 16,384, 128 heads (8 key/value heads), SwiGLU FFN 53,248, vocabulary 128,256, untied embeddings,
sequence 8,192, 16M tokens a batch; 8,192 GPUs (TP 8, PP 16, DP 64, 430 TFLOP/s per GPU, 43 % BF16 MFU) and 16,384
(DP 128, 400 TFLOP/s, 41 %). Its third row (131,072-token sequences, context parallelism 16) is left out: the model
has no context parallelism. Meta does not state its FLOP count; Megatron-Core's (GQA and SwiGLU terms included) is
used. A known miss, printed and not asserted within 20 % (docs/baselines.md 14, "Known misses").

The offer of every run (DGX H100 / Eos class, as Meta's Grand Teton: 8 H100 SXM 80 GB per node on NVSwitch, 8x 400G
per node):
- GEMM rate 794.5 TFLOP/s: the measured maximum bf16 matmul of an H100 SXM (docs/baselines.md 12b); peak 989.4;
- the intra-node curve: the recording of one 8x H100 80GB HBM3 NVSwitch node, NVLS all-reduce from 128 MiB to 4 GiB
  (tests/fixtures/nccl/h100-8gpu-1node-nvls-...), 383-474 GB/s, held flat below 128 MiB;
- the inter-node curve: the recording of 16 p5en.48xlarge nodes (8x H200 and 3,200 Gb/s of EFA per node, as 8x 400G)
  (tests/fixtures/nccl/aws-p5en-16node-...), 370 GB/s at 16 GiB, the only row its elided table keeps, so held flat at
  every size. It is the only healthy recording here of 3,200 Gb/s nodes at more than 2 nodes; the 2-node NDR
  recordings of H100 (h100-2node-16rank-ndr-ib-...) are of a degraded cluster (155 and 90 GB/s where about 370-390
  are expected), not of the clusters these runs were measured on.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import replace

import pytest

from gpufleet.parsers.registry import parse
from gpufleet.plan import training

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl")
H100_GEMM, H100_PEAK = 794.5, 989.4  # TFLOP/s, docs/baselines.md 12b and 12
SEQ, VOCAB = 4096, 131072

# Megatron-LM README (f2e5db402c), images/model_table.png, one row each:
# name: (parameters in billions, heads, hidden, layers, tp, pp, GPUs, batch in sequences, published TFLOP/s per GPU)
README_H100 = {
    "mcore-h100-1.7B": (1.7, 16, 2048, 24, 1, 1, 48, 192, 408.8),  # dp 48, MFU 41 %
    "mcore-h100-7.1B": (7.1, 32, 4096, 30, 2, 1, 96, 192, 465.9),  # dp 48, MFU 47 %
    "mcore-h100-16B": (16.0, 48, 6144, 32, 4, 1, 192, 192, 489.1),  # dp 48, MFU 49 %
    "mcore-h100-32B": (32.0, 56, 7168, 48, 8, 1, 384, 192, 459.6),  # dp 48, MFU 46 %
    "mcore-h100-70B": (70.0, 64, 8192, 84, 8, 2, 768, 384, 419.7),  # dp 48, MFU 42 %
    "mcore-h100-119B": (119.0, 80, 10240, 92, 8, 4, 1536, 768, 420.5),  # dp 48, MFU 43 %
    "mcore-h100-177B": (177.0, 96, 12288, 96, 8, 6, 2304, 1152, 432.8),  # dp 48, MFU 44 %
    "mcore-h100-314B": (314.0, 128, 16384, 96, 8, 8, 3072, 1536, 474.4),  # dp 48, MFU 48 %
    "mcore-h100-462B": (462.0, 144, 18432, 112, 8, 16, 6144, 3072, 459.9),  # dp 48, MFU 47 %
}
# Beyond 20 % and documented (docs/baselines.md 14, "Known misses"): tensor-parallel and data-parallel collectives,
# which Megatron-Core overlaps with compute and the model puts on the critical path, at 2,048 tokens per GPU a step.
README_KNOWN_MISSES = {"mcore-h100-32B"}

# Llama 3 405B, arXiv 2407.21783 Table 4: name: (GPUs, DP, published TFLOP/s per GPU); TP 8, CP 1, PP 16, sequence
# 8,192, 16M tokens a batch (batch size per DP 32 and 16 sequences)
LLAMA3_SEQ, LLAMA3_VOCAB, LLAMA3_BATCH_SEQS = 8192, 128256, 2048
LLAMA3_405B = {
    "llama3-405B-8192": (8192, 64, 430.0),  # BF16 MFU 43 %
    "llama3-405B-16384": (16384, 128, 400.0),  # BF16 MFU 41 %
}


def recorded_curve(name):
    parsed = parse("nccl", open(os.path.join(FIXTURES, name), encoding="utf-8").read())
    return training.Curve.of([[row["size_bytes"], row["out_of_place"]["busbw_gbs"]] for row in parsed["rows"]
                              if row["out_of_place"]["busbw_gbs"]])


@pytest.fixture(scope="module", name="curves")
def curves_fixture():
    """The offer's curves: one 8x H100 NVSwitch node (NVLS) and 16 nodes of 3,200 Gb/s (module docstring)."""
    return (recorded_curve("h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"),
            recorded_curve("aws-p5en-16node-allreduce-ELIDED.txt"))


def h100_offer(curves, gpus):
    return training.Offer("H100-SXM-80GB", 80, 8, gpus // 8, 8, H100_GEMM, curves[0], curves[1], 1.0,
                          peak_tflops=H100_PEAK)


def megatron_flops_per_token(layers, hidden, heads, seq, vocab, kv_heads=None, ffn=None, swiglu=False):
    """Megatron-Core r0.8.0 ``num_floating_point_operations`` (megatron/training/training.py) over batch x seq:
    ``12 l h^2 ((1 + kv/a + s/h) + ffn/h x (3/2 if SwiGLU) + V/2lh)``; for a plain GPT (kv = a, ffn = 4h)
    ``72 l h^2 (1 + s/6h + V/12lh)``."""
    kv_heads = kv_heads or heads
    ffn = ffn or 4 * hidden
    attention = 1 + kv_heads / heads + seq / hidden
    mlp = ffn / hidden * (1.5 if swiglu else 1.0)
    return 12.0 * layers * hidden ** 2 * (attention + mlp + vocab / (2.0 * layers * hidden))


def test_megatron_count_is_the_models_count_for_an_untied_gpt():
    # 7.1B: 12 x 30 x 4096^2 + 2 x 131072 x 4096 = 7.114e9 parameters. The model's layer parameters (both embeddings
    # out) 6.040e9; forward 2 x 6.040e9 + 4 x 30 x 4096 x 4096 + 2 x 131072 x 4096 = 15.167e9, x 3 = 45.500e9, which
    # is Megatron's 72 x 30 x 4096^2 (1 + 4096/24576 + 131072/1474560) = 45.500e9. Tied (the parameters counted
    # once), the input embedding would count as a GEMM: 6 x 131072 x 4096 = 3.2e9 FLOPs more a token (+7 %).
    exact = 12 * 30 * 4096 ** 2 + 2 * 131072 * 4096
    untied = training.Job(exact, 30, 4096, 32, SEQ, VOCAB, 192 * SEQ, 1e12, tied_embeddings=False)
    assert training.layer_parameters(untied) == 12 * 30 * 4096 ** 2
    assert training.model_flops_per_token(untied) == pytest.approx(megatron_flops_per_token(30, 4096, 32, SEQ, VOCAB))
    assert training.model_flops_per_token(untied) == pytest.approx(45.500e9, rel=1e-4)
    tied = replace(untied, tied_embeddings=True)
    assert training.model_flops_per_token(tied) - training.model_flops_per_token(untied) == pytest.approx(
        6.0 * 131072 * 4096)
    # Llama 3 405B: 126 x (2.125 x 16384^2 + 3 x 16384 x 53248) + 2 x 128256 x 16384 = 405.85e9 parameters; with
    # them the model's count is Megatron's with the GQA and SwiGLU terms (attention core 4 l s h forward either way)
    llama = training.Job(405.85e9, 126, 16384, 128, LLAMA3_SEQ, LLAMA3_VOCAB, 1, 1, tied_embeddings=False)
    assert training.model_flops_per_token(llama) == pytest.approx(megatron_flops_per_token(
        126, 16384, 128, LLAMA3_SEQ, LLAMA3_VOCAB, kv_heads=8, ffn=53248, swiglu=True), rel=1e-3)


def readme_error(curves, row):
    billions, heads, hidden, layers, tp, pp, gpus, batch, tflops = row
    job = training.Job(billions * 1e9, layers, hidden, heads, SEQ, VOCAB, batch * SEQ, 1e12, tied_embeddings=False)
    got = training.estimate(job, h100_offer(curves, gpus), {"tp": tp, "pp": pp, "zero_stage": 1})
    assert got.feasible, got.reason
    published = tflops * 1e12 / megatron_flops_per_token(layers, hidden, heads, SEQ, VOCAB)
    return got.tokens_per_second_per_gpu / published - 1.0, got


def test_megatron_readme_h100_runs_within_20_percent_and_the_errors_printed(curves):
    errors = {}
    for name, row in README_H100.items():
        errors[name], got = readme_error(curves, row)
        layout = got.layout
        print("%-17s predicted %+6.1f %%  %s micro-batch %d, %s recompute, interleave %d%s" % (
            name, 100 * errors[name], "predicted MFU %.1f %%," % (100 * got.mfu), layout.micro_batch, layout.recompute,
            layout.interleave, "  (known miss)" if name in README_KNOWN_MISSES else ""))
    every = [abs(error) for error in errors.values()]
    kept = [abs(error) for name, error in errors.items() if name not in README_KNOWN_MISSES]
    print("H100 (Megatron-LM README), predicted: median |error| %.1f %% over %d runs, worst %.1f %%; without the "
          "known miss: median %.1f %%, worst %.1f %%" % (100 * statistics.median(every), len(every), 100 * max(every),
                                                         100 * statistics.median(kept), 100 * max(kept)))
    # every run within 20 % but the documented miss; a miss that comes within 20 % fails here: update the docs
    assert {name for name, error in errors.items() if abs(error) > 0.20} == README_KNOWN_MISSES


def llama3_job():
    # 405B as stated; untied embeddings (Llama 3's output matrix is its own)
    return training.Job(405e9, 126, 16384, 128, LLAMA3_SEQ, LLAMA3_VOCAB, LLAMA3_BATCH_SEQS * LLAMA3_SEQ, 15.6e12,
                        tied_embeddings=False)


def test_llama3_405b_known_miss_error_printed_not_asserted(curves):
    """On 80 GB the model keeps only full-recomputation layouts for TP 8 PP 16, whose extra forward pass the published
    430 TFLOP/s per GPU leaves no room for: about -30 %. With the memory check lifted, the stated layout without
    checkpointing ("selective": only the attention core recomputed, as FlashAttention does) is timed within 20 %: the
    miss is the memory side (docs/baselines.md 14). ZeRO-1 pinned: the model runs no gradient sharding beside
    pipeline parallelism."""
    job = llama3_job()
    per_token = megatron_flops_per_token(126, 16384, 128, LLAMA3_SEQ, LLAMA3_VOCAB, kv_heads=8, ffn=53248, swiglu=True)
    for name, (gpus, dp, tflops) in LLAMA3_405B.items():
        offer = h100_offer(curves, gpus)
        published = tflops * 1e12 / per_token
        got = training.estimate(job, offer, {"tp": 8, "pp": 16, "zero_stage": 1})
        lifted = training.estimate(job, replace(offer, gpu_memory_gb=1e6),
                                   {"tp": 8, "pp": 16, "zero_stage": 1, "recompute": "selective"})
        error = got.tokens_per_second_per_gpu / published - 1.0
        lifted_error = lifted.tokens_per_second_per_gpu / published - 1.0
        print("%-18s KNOWN MISS %+6.1f %% (%s recompute, %.1f GB per GPU); memory check lifted, no checkpointing: "
              "%+6.1f %% (%.1f GB per GPU, interleave %d)" % (
                  name, 100 * error, got.layout.recompute, got.memory_per_gpu_gb, 100 * lifted_error,
                  lifted.memory_per_gpu_gb, lifted.layout.interleave))
        assert got.feasible and (got.layout.dp, got.layout.recompute) == (dp, "full")
        assert lifted.memory_per_gpu_gb * 1e9 > training.usable_memory_bytes(offer)
        assert abs(lifted_error) <= 0.20


def test_llama3_405b_memory_of_the_stated_layout_by_hand():
    # TP 8, PP 16, DP 64, ZeRO-1, micro-batch 1, no checkpointing ("selective"). Per GPU 405e9 / 128 = 3.1641e9
    # parameters: bf16 weights 6.328 GB, fp32 gradients 12.656 GB, Adam 12 x 3.1641e9 / 64 = 0.593 GB (19.577 GB).
    # Activations (Korthikanti et al. 2022, 34 s b h / t a layer): 34 x 8192 x 16384 / 8 = 570.4 MB, 126 / 16 = 7.875
    # layers a stage, 16 micro-batches in flight on the first stage (1F1B): 71.873 GB. 91.450 GB > 72 GB usable.
    job = llama3_job()
    layout = training.Layout(tp=8, pp=16, dp=64, zero_stage=1, micro_batch=1, recompute="selective")
    assert training.activation_bytes_per_layer(job, layout) == 34 * 8192 * 16384 / 8
    assert training.memory_per_gpu_bytes(job, layout) == pytest.approx(91.450e9, rel=1e-4)
    # full recomputation: each layer's input, 2 x 8192 x 16384 / 8 = 33.55 MB x 7.875 x 16 = 4.228 GB, and the
    # recomputed layer's 8192 x 16384 x (34 + 5 x 128 x 8192 / 16384) / 8 = 5.939 GB: 29.744 GB
    full = replace(layout, recompute="full")
    assert training.memory_per_gpu_bytes(job, full) == pytest.approx(29.744e9, rel=1e-4)
