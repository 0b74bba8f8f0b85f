# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How fast a dense transformer trains on an offer, and what it costs (pure; docs/baselines.md section 14).

A *job* (the model and its batch) and an *offer* (GPUs, nodes, the measured GEMM rate and all-reduce busbw curves, the
price) go in; the parallel layouts a practitioner would run are enumerated: tensor parallel inside the NVLink domain,
pipeline parallel, data parallel with ZeRO stage 0-3, the micro-batch and activation recomputation. A layout is kept
when its memory per GPU fits; each kept layout gets a step time; the fastest wins, or the answer is "does not fit"
with the node count that would.

Step time of a layout (1F1B pipeline schedule, Narayanan et al. 2021):

- compute: the step's FLOPs (forward + backward, plus recomputation's extra forward) over the GPUs at the measured
  GEMM rate times the compute efficiency :func:`compute_efficiency` (fitted on published runs, see
  :data:`CALIBRATION`);
- tensor-parallel collectives: per layer and micro-batch two all-reduces forward and two backward (three forward
  with full recomputation) of ``micro_batch x seq_len x hidden`` activations, on the critical path, each timed on the
  intra-node busbw curve at that message size;
- the pipeline bubble: ``(pp - 1)`` micro-batch times of one stage;
- data-parallel / ZeRO collectives: the gradients (``grad_reduce_bytes`` per parameter, fp32 by default: Megatron's
  default for bf16 training) reduced in buckets of :data:`DP_BUCKET_BYTES`, ZeRO-3 gathering the parameters once
  more forward and backward; timed at the bucket size on the inter-node curve when the data-parallel group spans
  nodes, and hidden behind the backward pass up to :data:`DP_OVERLAP` of it.

Memory per GPU (Rajbhandari et al. 2020, Korthikanti et al. 2022): bf16 weights (2 bytes/parameter), gradients
(``grad_reduce_bytes``), Adam state with fp32 master weights (12), sharded by ZeRO's stage, plus activations, against
the GPU's memory less :data:`MEMORY_RESERVE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, List, Optional, Tuple

RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
MICRO_BATCHES = (1, 2, 4, 8)
INTERLEAVES = (1, 2, 4)
PRECISIONS = ("bf16", "fp8")
# The GPU memory a layout may use: CUDA context, NCCL buffers and the allocator's fragmentation take the rest.
MEMORY_RESERVE = 0.10
# PyTorch DDP's default bucket (bucket_cap_mb=25): the message size of a data-parallel collective.
DP_BUCKET_BYTES = 25 * 1024 * 1024
# The share of the backward pass that gradient reduction hides behind (bucketed, overlapped reduction).
DP_OVERLAP = 0.8
WEIGHT_BYTES = 2  # bf16 (fp8 training keeps bf16 weights; only its GEMMs run in fp8)
ADAM_BYTES = 12  # fp32 master weights, first and second moments
ACTIVATION_BYTES = 2
MAX_NODES = 65536


@dataclass(frozen=True)
class Calibration:
    """Compute efficiency = ``eta_max * w / (w + w_half)``, w the FLOPs of one GEMM of a layer per GPU over 1e9
    (``2 * seq_len * hidden**2 / tp``): larger GEMMs run closer to the GEMM benchmark's rate."""

    eta_max: float
    w_half: float
    fitted_on: Tuple[str, ...]


# Fitted on five runs of Narayanan et al. 2021, Table 1 (docs/baselines.md 14; tests/unit/gpufleet/plan/
# test_training_published.py predicts the others and prints the error, test_training_published_h100.py the H100 runs
# of the Megatron-LM README and Llama 3, without refitting).
CALIBRATION = Calibration(
    eta_max=0.64,
    w_half=3.0,
    fitted_on=("megatron-1.7B", "megatron-7.5B", "megatron-39.1B", "megatron-145.6B", "megatron-529.6B"),
)


class EstimateError(ValueError):
    """A job, offer or parallelism that cannot be estimated; the message names the key and what it must be."""


@dataclass(frozen=True)
class Curve:
    """All-reduce busbw (GB/s) by message size (bytes), as nccl-tests prints it; read log-linearly between points,
    held flat beyond the ends."""

    points: Tuple[Tuple[float, float], ...]

    @classmethod
    def of(cls, value: Any) -> "Curve":
        """A number (one figure at every size) or ``[[bytes, GB/s], ...]``."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value <= 0:
                raise EstimateError("busbw must be > 0 GB/s, got %s" % value)
            return cls(((1.0, float(value)),))
        points = []
        for item in value or []:
            if not (isinstance(item, (list, tuple)) and len(item) == 2 and all(_is_number(x) for x in item)):
                raise EstimateError("busbw points are [bytes, GB/s] pairs, got %r" % (item,))
            if item[0] > 0 and item[1] > 0:
                points.append((float(item[0]), float(item[1])))
        if not points:
            raise EstimateError("busbw needs a figure > 0 at some size > 0")
        return cls(tuple(sorted(points)))

    def busbw(self, size: float) -> float:
        points = self.points
        if size <= points[0][0]:
            return points[0][1]
        if size >= points[-1][0]:
            return points[-1][1]
        for (s0, b0), (s1, b1) in zip(points, points[1:]):
            if s0 <= size <= s1:
                return b0 + (b1 - b0) * (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
        return points[-1][1]  # pragma: no cover - the loop always finds the interval

    def allreduce_s(self, size: float, ranks: int) -> float:
        """Seconds of one ring all-reduce of ``size`` bytes over ``ranks`` (nccl-tests: busbw = algbw * 2(n-1)/n)."""
        if ranks <= 1 or size <= 0:
            return 0.0
        return size * 2.0 * (ranks - 1) / ranks / (self.busbw(size) * 1e9)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Job:
    parameters: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    global_batch_tokens: float
    tokens: float
    precision: str = "bf16"
    grad_reduce_bytes: int = 4
    # False: separate input embedding and output (logit) matrices, both counted in ``parameters`` (Llama; GPT with
    # Megatron's --untie-embeddings-and-output-weights); True: one matrix for both (GPT-2, Narayanan et al. 2021)
    tied_embeddings: bool = True

    @property
    def global_batch_seqs(self) -> int:
        return int(round(self.global_batch_tokens / self.seq_len))


@dataclass(frozen=True)
class Offer:
    gpu_model: str
    gpu_memory_gb: float
    gpus_per_node: int
    nodes: int
    nvlink_domain_gpus: int
    gemm_tflops: float
    intra_node: Curve
    inter_node: Optional[Curve]
    price_per_node_hour: float
    peak_tflops: Optional[float] = None

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    zero_stage: int
    micro_batch: int
    recompute: str
    # virtual pipeline stages per GPU (Megatron's interleaved 1F1B schedule): the bubble shrinks by this factor
    interleave: int = 1


@dataclass(frozen=True)
class StepTime:
    compute: float
    tp_comm: float
    pp_bubble: float
    dp_comm: float
    total: float


@dataclass(frozen=True)
class Estimate:
    feasible: bool
    reason: str
    layout: Optional[Layout] = None
    memory_per_gpu_gb: Optional[float] = None
    step_time_s: Optional[StepTime] = None
    tokens_per_second_per_gpu: Optional[float] = None
    mfu: Optional[float] = None
    days: Optional[float] = None
    gpu_hours: Optional[float] = None
    cost: Optional[float] = None
    nodes_needed: Optional[int] = None


# -- FLOPs ----------------------------------------------------------------------------------------------------


def layer_parameters(job: Job) -> float:
    """The parameters outside the embeddings: what the transformer layers' GEMMs multiply by. The input embedding is
    a table lookup, not a GEMM; the output matrix's GEMM is the logits, counted apart (:func:`forward_flops_per_token`).
    Tied, one ``vocab x hidden`` matrix is both; untied, ``parameters`` holds two."""
    embeddings = (1 if job.tied_embeddings else 2) * job.vocab * job.hidden
    return max(job.parameters - embeddings, 0.0)


def forward_flops_per_token(job: Job) -> float:
    """Forward FLOPs per token: 2 per layer parameter, attention's QK^T and AV (4 * seq_len * hidden per layer), the
    logits (2 * vocab * hidden). Narayanan et al. 2021 equation (3) is 4x this layer part plus 3x the logits."""
    return 2.0 * layer_parameters(job) + 4.0 * job.layers * job.seq_len * job.hidden + 2.0 * job.vocab * job.hidden


def model_flops_per_token(job: Job) -> float:
    """Training FLOPs per token without recomputation (forward + backward = 3 forwards): what MFU counts."""
    return 3.0 * forward_flops_per_token(job)


def hardware_flops_per_token(job: Job, recompute: str) -> float:
    """What the GPUs execute: recomputation runs the layers' forward again (full) or attention's core (selective)."""
    extra = 0.0
    if recompute == "full":
        extra = 2.0 * layer_parameters(job) + 4.0 * job.layers * job.seq_len * job.hidden
    elif recompute == "selective":
        extra = 4.0 * job.layers * job.seq_len * job.hidden
    return model_flops_per_token(job) + extra


def compute_efficiency(job: Job, tp: int, calibration: Calibration = CALIBRATION) -> float:
    work = 2.0 * job.seq_len * job.hidden ** 2 / tp / 1e9
    return calibration.eta_max * work / (work + calibration.w_half)


# -- memory ---------------------------------------------------------------------------------------------------


def activation_bytes_per_layer(job: Job, layout: Layout) -> float:
    """Korthikanti et al. 2022 (tensor + sequence parallel): ``s b h (34 + 5 a s / h) / t``; selective recomputation
    drops the attention core's ``5 a s / h`` (as FlashAttention does); full keeps the layer's input, ``2 s b h / t``."""
    sbh = float(job.seq_len) * layout.micro_batch * job.hidden
    if layout.recompute == "full":
        return 2.0 * sbh / layout.tp
    if layout.recompute == "selective":
        return 34.0 * sbh / layout.tp
    return sbh * (34.0 + 5.0 * job.heads * job.seq_len / job.hidden) / layout.tp


def memory_per_gpu_bytes(job: Job, layout: Layout) -> float:
    shard = job.parameters / (layout.tp * layout.pp)
    dp = layout.dp
    weights = WEIGHT_BYTES * shard / (dp if layout.zero_stage >= 3 else 1)
    grads = job.grad_reduce_bytes * shard / (dp if layout.zero_stage >= 2 else 1)
    optimizer = ADAM_BYTES * shard / (dp if layout.zero_stage >= 1 else 1)
    microbatches = max(1, job.global_batch_seqs // (dp * layout.micro_batch))
    # 1F1B: the first stage holds pp micro-batches in flight, each through layers/pp layers
    in_flight = min(layout.pp, microbatches)
    activations = activation_bytes_per_layer(job, layout) * job.layers / layout.pp * in_flight
    if layout.recompute == "full":
        # the layer being recomputed holds its full activations during its backward
        activations += activation_bytes_per_layer(job, replace(layout, recompute="none"))
    return weights + grads + optimizer + activations


# -- time -----------------------------------------------------------------------------------------------------


def step_time(job: Job, offer: Offer, layout: Layout, calibration: Calibration = CALIBRATION) -> StepTime:
    gpus = layout.tp * layout.pp * layout.dp
    microbatches = job.global_batch_seqs / (layout.dp * layout.micro_batch)
    rate = offer.gemm_tflops * 1e12 * compute_efficiency(job, layout.tp, calibration)
    compute = job.global_batch_tokens * hardware_flops_per_token(job, layout.recompute) / (gpus * rate)
    activation = float(layout.micro_batch) * job.seq_len * job.hidden * ACTIVATION_BYTES
    per_layer = 6 if layout.recompute == "full" else 4
    tp_per_micro = per_layer * job.layers / layout.pp * offer.intra_node.allreduce_s(activation, layout.tp)
    tp_comm = tp_per_micro * microbatches
    stage_micro = compute / microbatches + tp_per_micro
    bubble = (layout.pp - 1) * stage_micro / layout.interleave
    dp_comm = _dp_exposed(job, offer, layout, compute)
    total = compute + tp_comm + bubble + dp_comm
    return StepTime(compute=compute, tp_comm=tp_comm, pp_bubble=bubble, dp_comm=dp_comm, total=total)


def _dp_exposed(job: Job, offer: Offer, layout: Layout, compute: float) -> float:
    if layout.dp <= 1:
        return 0.0
    grad_bytes = job.parameters / (layout.tp * layout.pp) * job.grad_reduce_bytes
    # ZeRO-3 gathers the bf16 parameters forward and again backward (Rajbhandari et al. 2020: 1.5x the volume), for
    # every micro-batch: gradient accumulation runs the whole model again each time
    microbatches = job.global_batch_seqs / (layout.dp * layout.micro_batch)
    gathers = 0.0
    if layout.zero_stage == 3:
        gathers = 2 * WEIGHT_BYTES * job.parameters / (layout.tp * layout.pp) * microbatches
    spans_nodes = layout.tp * layout.dp > offer.gpus_per_node
    curve = offer.inter_node if spans_nodes and offer.inter_node is not None else offer.intra_node
    # across nodes, the tp data-parallel groups of a node reduce at once and share its NICs: the measured busbw is
    # what all the node's GPUs get together
    sharing = min(layout.tp, offer.gpus_per_node) if spans_nodes else 1
    bucket = min(DP_BUCKET_BYTES, grad_bytes)
    per_byte = curve.allreduce_s(bucket, layout.dp) * sharing / bucket
    hidden = DP_OVERLAP * compute * 2.0 / 3.0
    # the last bucket waits for the end of the backward pass whatever the overlap; ZeRO-3's gathers sit on the
    # critical path (a layer cannot start before its parameters are whole; measured ZeRO-3 runs show no overlap)
    reduce = max(grad_bytes * per_byte - hidden, curve.allreduce_s(bucket, layout.dp))
    return reduce + gathers * per_byte


# -- layouts --------------------------------------------------------------------------------------------------


def _divisors(value: int) -> List[int]:
    return [d for d in range(1, value + 1) if value % d == 0]


def layouts(job: Job, offer: Offer, fixed: Optional[Dict[str, object]] = None) -> Iterator[Layout]:
    """Every layout a practitioner would run on ``offer``, restricted to ``fixed``'s keys."""
    fixed = fixed or {}
    domain = min(offer.nvlink_domain_gpus, offer.gpus_per_node)
    seqs = job.global_batch_seqs
    for tp in _divisors(max(domain, 1)):
        if job.heads % tp or fixed.get("tp", tp) != tp:
            continue
        # a searched pipeline splits the layers evenly; one asked for may not (Llama 3's 126 layers over 16 stages)
        for pp in ([int(str(fixed["pp"]))] if "pp" in fixed else _divisors(job.layers)):
            if pp < 1 or pp > job.layers or offer.gpus % (tp * pp):
                continue
            dp = offer.gpus // (tp * pp)
            if fixed.get("dp", dp) != dp:
                continue
            yield from _inner(tp, pp, dp, seqs, fixed)


def _inner(tp: int, pp: int, dp: int, seqs: int, fixed: Dict[str, object]) -> Iterator[Layout]:
    for micro in MICRO_BATCHES:
        if seqs % (dp * micro) or fixed.get("micro_batch", micro) != micro:
            continue
        for zero in ZERO_STAGES:
            # ZeRO-2/3 shard what pipeline parallelism splits already: DeepSpeed and Megatron run them without it
            if (zero >= 2 and pp > 1) or fixed.get("zero_stage", zero) != zero:
                continue
            for recompute in RECOMPUTE:
                if fixed.get("recompute", recompute) != recompute:
                    continue
                for interleave in INTERLEAVES if pp > 1 else (1,):
                    if fixed.get("interleave", interleave) == interleave:
                        yield Layout(tp=tp, pp=pp, dp=dp, zero_stage=zero, micro_batch=micro, recompute=recompute,
                                     interleave=interleave)


def usable_memory_bytes(offer: Offer) -> float:
    return offer.gpu_memory_gb * 1e9 * (1.0 - MEMORY_RESERVE)


def _fits(job: Job, offer: Offer, fixed: Optional[Dict[str, object]]) -> bool:
    limit = usable_memory_bytes(offer)
    return any(memory_per_gpu_bytes(job, layout) <= limit for layout in layouts(job, offer, fixed))


def nodes_needed(job: Job, offer: Offer, fixed: Optional[Dict[str, object]] = None) -> Optional[int]:
    """The fewest nodes of this offer on which some layout fits (None past :data:`MAX_NODES`)."""
    low, high = offer.nodes, offer.nodes
    while not _fits(job, replace(offer, nodes=high), fixed):
        low, high = high, high * 2
        if high > MAX_NODES:
            return None
    for nodes in range(low, high + 1):
        if _fits(job, replace(offer, nodes=nodes), fixed):
            return nodes
    return high  # pragma: no cover - high fits


def estimate(job: Job, offer: Offer, fixed: Optional[Dict[str, object]] = None,
             calibration: Calibration = CALIBRATION) -> Estimate:
    """The fastest layout of ``job`` on ``offer`` that fits, with its time, throughput, days, GPU-hours and cost."""
    check_job(job)
    limit = usable_memory_bytes(offer)
    best: Optional[Tuple[float, Layout, StepTime, float]] = None
    candidates = 0
    for layout in layouts(job, offer, fixed):
        candidates += 1
        memory = memory_per_gpu_bytes(job, layout)
        if memory > limit:
            continue
        times = step_time(job, offer, layout, calibration)
        if best is None or times.total < best[0]:
            best = (times.total, layout, times, memory)
    if best is None:
        return _does_not_fit(job, offer, fixed, candidates)
    _total, layout, times, memory = best
    return _priced(job, offer, layout, times, memory)


def _does_not_fit(job: Job, offer: Offer, fixed: Optional[Dict[str, object]], candidates: int) -> Estimate:
    if not candidates:
        return Estimate(False, "no layout of %d GPUs matches the parallelism asked for (tp within the NVLink domain of "
                        "%d, pp dividing %d layers, the batch of %d sequences divisible by dp x micro-batch)"
                        % (offer.gpus, offer.nvlink_domain_gpus, job.layers, job.global_batch_seqs))
    needed = nodes_needed(job, offer, fixed)
    where = "needs %d nodes" % needed if needed else "needs more than %d nodes" % MAX_NODES
    return Estimate(False, "does not fit in %.0f GB per GPU on %d node(s): %s" % (
        offer.gpu_memory_gb, offer.nodes, where), nodes_needed=needed)


def _priced(job: Job, offer: Offer, layout: Layout, times: StepTime, memory: float) -> Estimate:
    steps = job.tokens / job.global_batch_tokens
    seconds = steps * times.total
    per_gpu = job.global_batch_tokens / times.total / offer.gpus
    mfu = None
    if offer.peak_tflops:
        mfu = model_flops_per_token(job) * per_gpu / (offer.peak_tflops * 1e12)
    return Estimate(True, "fits", layout=layout, memory_per_gpu_gb=memory / 1e9, step_time_s=times,
                    tokens_per_second_per_gpu=per_gpu, mfu=mfu, days=seconds / 86400.0,
                    gpu_hours=seconds / 3600.0 * offer.gpus,
                    cost=seconds / 3600.0 * offer.nodes * offer.price_per_node_hour)


def check_job(job: Job) -> None:
    if job.precision not in PRECISIONS:
        raise EstimateError("job precision: %r is not one of %s" % (job.precision, ", ".join(PRECISIONS)))
    if job.global_batch_seqs < 1:
        raise EstimateError("job global_batch_tokens: %s is less than one sequence of %d tokens"
                            % (job.global_batch_tokens, job.seq_len))
    if job.hidden % job.heads:
        raise EstimateError("job hidden: %d is not a multiple of heads (%d)" % (job.hidden, job.heads))


def comm_share(times: StepTime) -> float:
    """The share of the step spent in exposed communication (tensor-parallel and data-parallel)."""
    return (times.tp_comm + times.dp_comm) / times.total if times.total else 0.0
