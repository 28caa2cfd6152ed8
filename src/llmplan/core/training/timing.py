"""Step time, throughput, MFU and the cost of a training run.

One GPU's step = (matmul time + memory-bound time + exposed TP/CP/EP/PP communication)
stretched by the pipeline bubble, plus the data-parallel reduction that did not hide
behind the last backward. Matmul time is the hardware FLOPs at the dtype's dense peak ×
``efficiency.matmul``. Memory-bound time is the elementwise traffic (norms, activations,
softmax, dropout, residual adds, casts), each op's bytes at its kind's measured rate relative to
HBM bandwidth × ``efficiency.elementwise`` and at least its kernels' floor
(``kernel_rates.elementwise_time``; roofline, Williams et al. 2009).

Where the work sits (docs/training.md, "Pipeline stages: the head on the last"): the output head
and the loss run on the last pipeline stage, the embedding on the first, as Megatron-LM,
DeepSpeed's PipelineModule and torchtitan place them. A stage's time per micro-batch is its
blocks' time, plus the head and loss on the last stage; the embedding's lookup and dense backward are
priced only where one stage holds the whole model (pp = 1, ``embedding_time``), not on a pipeline's first stage.

Pipeline pace (Narayanan et al. 2021 §2.2, 1F1B): every micro-batch waits for the slowest stage,
so the steady state is m of its time slots; the fill and drain are the other p-1 stages' slots,
one each. Step = m·t_slowest + Σ_(other stages) t_s / v, i.e. the ideal time m·t_slowest stretched
by the bubble (p-1)/(m·v) × (the other stages' mean time / t_slowest). With equal stages this is
the textbook (p-1)/(m·v); with a head-heavy last stage the steady state is the last stage's and the
fill and drain the lighter stages'. 126 layers on 16 stages as 7, 8 ×14, 7 (Llama 3 405B): a
middle stage's 8 layers set the pace, 1.6% longer than an even spread of the layers. Exposed
TP/PP/EP traffic is counted on the stage with the most layers and stretched with it. MFU follows
PaLM App. B: model FLOPs (no recompute) per second over the cluster's peak; HFU counts the
recomputed FLOPs too.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, count_params
from llmplan.core.result import ComputeReport
from llmplan.core.training import batch
from llmplan.core.training import grad_clip as gc
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training import op_time as ot
from llmplan.core.training import recompute_modules as rm
from llmplan.core.training.autograd_kernels import embedding_ops
from llmplan.core.training.flops import StepFlops
from llmplan.core.training.host_time import block_host_seconds
from llmplan.core.training.layout import Layout
from llmplan.core.training.ops import fsdp_cast_shard, grouped_mlp_extras, head_ops, layer_ops, residual_bytes
from llmplan.core.training.optimizer_kernel import optimizer_rate, optimizer_time
from llmplan.core.workload import Scenario, TrainingSettings
from llmplan.errors import InputError


@dataclass(frozen=True, slots=True)
class OpShape:
    """What the operation list reads of a layout: the per-GPU shape of one micro-batch."""

    tp: int
    cp: int
    ep: int
    micro_batch: int
    seq_len: int
    sp: bool
    kv_replicated: bool
    # FSDP with fp32 parameters (``ops.fsdp_cast_shard``): the sharding group n whose local 1/n shard each
    # weight gather casts to 16 bits; 0 where autocast casts the whole weight every forward
    cast_shard: int = 0

    @classmethod
    def of(cls, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile) -> OpShape:
        return cls(lay.tp, lay.cp, lay.ep, lay.micro_batch, lay.seq_len, lay.sp, lay.kv_replicated,
                   fsdp_cast_shard(tr, prof, min(lay.shard, lay.dp * lay.cp)))


@dataclass(frozen=True, slots=True)
class ComputeTimes:
    """Seconds per optimizer step on the slowest GPU, from the per-operation model (``op_time``)."""

    matmul: float  # weight GEMMs and attention
    memory_bound: float  # elementwise kernels, loss, dequantisation, autocast casts
    optimizer: float  # the optimizer's pass over its states (on the GPU)
    launch: float  # host launch time beyond the GPU's own (host-bound steps)
    peak: float  # FLOP/s of one GPU at the training dtype
    hbm: float  # achievable bytes/s
    imbalance: float  # slowest stage's layers / mean layers per stage (1 for an even split)
    parts: dict[str, float]  # seconds per step by kind, for compute.breakdown
    notes: tuple[str, ...] = ()
    pace: float = 1.0  # the other stages' mean time per micro-batch / the slowest stage's (``fill_pace``)
    head_stage: bool = False  # the slowest stage is the last, with the head and loss (pp > 1)
    clock: float = 1.0  # share of its full clock the GPU holds over the step (``micro_batch_clock``)
    clip: gc.ClipTime | None = None  # the gradient clipping before the optimizer step (``grad_clip``); None: none
    pointwise: float = 0.0  # bytes/s of a large pointwise kernel, the elementwise kinds' reference (``Rates.pointwise``)

    @property
    def clipping(self) -> float:
        return self.clip.seconds if self.clip is not None else 0.0

    @property
    def step_end(self) -> float:
        """Seconds once per step after the last backward: the gradient clipping and the optimizer's pass (not
        stretched by the pipeline bubble, no window for the data-parallel reduction)."""
        return self.optimizer + self.clipping

    @property
    def total(self) -> float:
        return self.matmul + self.memory_bound + self.optimizer + self.launch + self.clipping


def training_peak(gpu_name: str, peaks, precision: str) -> tuple[float, tuple[str, ...]]:
    """Dense peak for the training dtype. fp8 needs fp8 tensor cores (refused otherwise); bf16 on a GPU
    without bf16 tensor cores (V100, T4) runs, as PyTorch runs it there, at the fp32 rate, with a warning."""
    own = getattr(peaks, precision, None)
    if own:
        return float(own), ()
    if precision == "fp8":
        have = [d for d in ("bf16", "fp16", "fp32") if getattr(peaks, d, None)]
        raise InputError(f"{gpu_name} has no fp8 tensor cores; set training.precision to one it supports "
                         f"({', '.join(have) or 'none listed'})")
    if precision in ("bf16", "fp16") and peaks.fp32:
        return float(peaks.fp32), (f"{gpu_name} has no {precision} tensor cores: {precision} GEMMs run at its fp32 "
                                   f"rate ({peaks.fp32 / 1e12:.1f} TFLOP/s); fp16 is the fast path there"
                                   if precision == "bf16" and peaks.fp16 else
                                   f"{gpu_name} lists no {precision} rate: charged at its fp32 rate",)
    raise InputError(f"{gpu_name} has no peak FLOP/s for {precision}; set its peak_flops.{precision} or choose "
                     "another training.precision")


@functools.lru_cache(maxsize=512)
def layer_and_head(m: ModelSpec, shape: OpShape, tr: TrainingSettings, prof: FrameworkProfile,
                   r: ot.Rates) -> tuple[ot.PartTimes, ot.PartTimes, ot.PartTimes]:
    """One micro-batch of one average block — (forward, backward + recompute) — and of the head and loss,
    on one GPU of this shape, at the clock the GPU holds over it (``micro_batch_clock``). Cached per shape:
    the search, the charts and the estimate ask for the same few shapes again and again, and the search calls
    this for each distinct (tp, cp, micro-batch)."""
    fwd, rest, head = _full_clock(m, shape, tr, prof, r)
    clock = micro_batch_clock(m, shape, tr, prof, r)
    fwd, rest, head = fwd.clocked(clock), rest.clocked(clock), head.clocked(clock)
    measured = block_host_seconds(tr, prof, m)
    if measured is not None:  # eager Hugging Face blocks: their measured host time, where above the launches'
        extra = measured[0] - (fwd + rest).host(prof)
        if extra > 0:
            rest = rest + ot.PartTimes(host_extra=extra)
    return fwd, rest, head


@functools.lru_cache(maxsize=512)
def _full_clock(m: ModelSpec, shape: OpShape, tr: TrainingSettings, prof: FrameworkProfile,
                r: ot.Rates) -> tuple[ot.PartTimes, ot.PartTimes, ot.PartTimes]:
    """``layer_and_head`` at the GPU's full clock, before the host's measured time."""
    pb = count_params(m)
    ops = layer_ops(m, pb, shape, tr, prof, shape.cast_shard)  # type: ignore[arg-type]  # reads only OpShape's fields
    fwd = ot.layer_forward(ops, r)
    rest = ot.layer_backward(ops, r)
    if tr.recompute == "full":  # under FSDP the recompute runs on the weights the backward's gather cast
        rest = rest + (ot.layer_forward(ops, r, weight_cast=False) if ops.cast_shard else fwd)
    elif tr.recompute == "selective":
        if rm.reruns_core_attention(tr, prof):  # the attention core's forward again (one fused kernel with flash)
            rest = rest + ot.PartTimes(attention=fwd.attention, kernels=1 if tr.flash_attention else 2)
        if rm.named(tr):  # Megatron-Core's --recompute-modules
            rest = rest + rm.recompute_time(m, ops, r, tr)
    elif tr.recompute == "selective_op":
        rest = rest + ot.selective_op_recompute(ops, r)
    head = ot.head_time(head_ops(m, pb, shape, tr, prof, ops.residual_bytes, shape.cast_shard), r)  # type: ignore[arg-type]
    return fwd, rest, head


@functools.lru_cache(maxsize=512)
def embedding_time(m: ModelSpec, shape: OpShape, tr: TrainingSettings, prof: FrameworkProfile,
                   r: ot.Rates) -> ot.PartTimes:
    """The embedding's lookup and dense backward per micro-batch (``autograd_kernels.embedding_ops``), charged where
    the whole model runs on one stage (pp = 1: ``_micro_batch``)."""
    return ot.embedding_time(embedding_ops(m, shape, tr, prof, residual_bytes(tr, prof)), r)  # type: ignore[arg-type]


def micro_batch_clock(m: ModelSpec, shape: OpShape, tr: TrainingSettings, prof: FrameworkProfile,
                      r: ot.Rates) -> float:
    """Share of its full clock the GPU holds over a micro-batch of the whole model (``kernel_rates.clock_factor``),
    set by the share of its GPU time in compute-bound kernels (GEMMs and attention) at full clock."""
    fwd, rest, head = _full_clock(m, shape, tr, prof, r)
    layer = fwd + rest
    compute = m.num_layers * (layer.gemm + layer.attention) + head.gemm + head.attention
    total = m.num_layers * layer.gpu + head.gpu
    return kr.clock_factor(compute / total if total > 0 else 0.0, r.sustained_clock, r.full_clock_share)


def rates(gpu, eff, precision: str) -> tuple[ot.Rates, tuple[str, ...]]:
    """The kernel rates of this GPU at the training dtype (raises for a dtype it cannot train in). fp8
    training runs only the block's linears in fp8 (``fp8_casts``): the other GEMMs and attention keep the
    bf16 rates, the linears get ``Rates.fp8_gemm`` (``kernel_rates.FP8_MATMUL_RATIO``)."""
    peak, notes = training_peak(gpu.name, gpu.peak_flops, precision)
    hbm = gpu.memory_bandwidth * eff.memory_bandwidth
    clock = {"sustained_clock": eff.sustained_clock, "full_clock_share": eff.full_clock_share,
             "pointwise": gpu.memory_bandwidth * eff.elementwise}
    if precision == "fp8":
        bf16, _ = training_peak(gpu.name, gpu.peak_flops, "bf16")
        fp8 = kr.gemm_rate(peak, eff.matmul * kr.FP8_MATMUL_RATIO)
        return ot.Rates(kr.gemm_rate(bf16, eff.matmul), eff.matmul / kr.H100_MATMUL, bf16, hbm, 2.0, fp8,
                        **clock), notes
    elem = 4.0 if precision == "fp32" else 2.0
    gemm = kr.gemm_rate(peak, eff.matmul)
    return ot.Rates(gemm, eff.matmul / kr.H100_MATMUL, peak, hbm, elem, **clock), notes


_PER_MICRO_BATCH = IdentityCache(512)  # (model, training, profile) objects + shape -> PartTimes
_COMPUTE_TIMES = IdentityCache(64)  # (gpu, efficiency, training, profile, model) objects + layout -> ComputeTimes


def fill_pace(total_s, slowest_s, pp):
    """The other stages' mean time per micro-batch over the slowest stage's: the share of a slowest-stage
    slot that each of the p-1 fill-and-drain slots takes (module doc). 1 with one stage or equal stages.
    Scalars or numpy arrays (the search's rows)."""
    if isinstance(pp, int):
        return (total_s - slowest_s) / ((pp - 1) * slowest_s) if pp > 1 and slowest_s > 0 else 1.0
    import numpy as np  # the search's arrays only: the estimate's hot path stays scalar

    den = (pp - 1) * slowest_s
    return np.divide(total_s - slowest_s, den, out=np.ones_like(den, dtype=float), where=(pp > 1) & (den > 0))


def _micro_batch(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile,
                 r: ot.Rates) -> tuple[ot.PartTimes, float, bool]:
    """One micro-batch through the slowest stage — its blocks forward, backward and recomputed, and on the
    last stage the head and loss — with ``fill_pace`` and whether that stage is the last (module doc).

    Looked up first by the identity of the (frozen) model, training and profile objects (``core.memo``):
    the search asks for many layouts with the same objects, and hashing pydantic models field by field
    would cost more than the rest of this function."""
    split = lay.split
    objs, rest = (m, tr, prof), (OpShape.of(lay, tr, prof), r, split.per_stage[-1], split.before_last, lay.pp)
    hit = _PER_MICRO_BATCH.get(objs, rest)
    if hit is not None:
        return hit
    fwd, rest_t, head = layer_and_head(m, rest[0], tr, prof, r)
    if lay.pp == 1:  # the embedding runs on the first stage: priced where that is the only one (module doc)
        head = head + embedding_time(m, rest[0], tr, prof, r)
    layer = fwd + rest_t
    last = layer.scale(split.per_stage[-1]) + head
    other = layer.scale(split.before_last)
    on_last = lay.pp == 1 or last.gpu >= other.gpu
    slow = last if on_last else other
    total = layer.gpu * m.num_layers + head.gpu
    return _PER_MICRO_BATCH.put(objs, rest, (slow, fill_pace(total, slow.gpu, lay.pp), on_last and lay.pp > 1))


def head_on_slowest(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile, r: ot.Rates) -> bool:
    """Whether the slowest stage, whose micro-batch the step time counts, holds the head and loss (the last stage, or
    the only one): ``_micro_batch``'s choice, for the step's operation list (``step_ops``)."""
    return lay.pp == 1 or _micro_batch(m, lay, tr, prof, r)[2]


def compute_times(sc: Scenario, lay: Layout, pb: ParamBreakdown, optimizer_params: float,
                  state_bytes: tuple[float, float, float, float, bool]) -> ComputeTimes:
    """Per-operation step time of the slowest stage (module doc of ``op_time``).

    ``optimizer_params``: trainable parameters this GPU's optimizer updates (after ZeRO sharding);
    ``state_bytes``: (master/parameter, gradient, optimizer-state, weight bytes per parameter, whether the
    16-bit weights are a separate copy of the master). Cached per (spec objects, layout, state sizes):
    the app re-estimates a plan on every edit, and an edit that leaves these alone keeps the objects."""
    gpu, eff, tr, prof, m = sc.cluster.gpu, sc.efficiency, sc.training, sc.framework, sc.model
    objs, key = (gpu, eff, tr, prof, m), (lay, optimizer_params, state_bytes)
    return _COMPUTE_TIMES.get(objs, key) or _COMPUTE_TIMES.put(objs, key, _compute_times(
        gpu, eff, tr, prof, m, lay, optimizer_params, state_bytes))


def _compute_times(gpu, eff, tr: TrainingSettings, prof: FrameworkProfile, m: ModelSpec, lay: Layout,
                   optimizer_params: float, state_bytes: tuple[float, float, float, float, bool]) -> ComputeTimes:
    r, notes = rates(gpu, eff, tr.precision)
    hbm = r.bandwidth
    peak = training_peak(gpu.name, gpu.peak_flops, tr.precision)[0] if r.fp8_gemm else r.peak  # MFU: the dtype's
    per_mb, pace, head_stage = _micro_batch(m, lay, tr, prof, r)
    clock = micro_batch_clock(m, OpShape.of(lay, tr, prof), tr, prof, r)
    steps = lay.accumulation
    gpu_s, host_s = per_mb.gpu * steps, per_mb.host(prof) * steps
    launch = max(host_s - gpu_s, 0.0)
    opt, clip = 0.0, None
    if tr.offload == "none":
        mb, gb, sb, wb, separate = state_bytes
        opt = optimizer_time(optimizer_params, mb, gb, sb, wb, separate, optimizer_rate(gpu, eff, tr, prof))
        if gc.clips(tr, prof):
            clip = gc.clip_time(optimizer_params, gc.tensors_on_gpu(count_params(m), m, tr, optimizer_params), gb,
                                prof, hbm)
    parts = {"gemm": per_mb.gemm * steps, "attention": per_mb.attention * steps,
             "memory_bound": (per_mb.elementwise + per_mb.casts) * steps, "loss": per_mb.loss * steps,
             "dequantisation": per_mb.dequant * steps, "kernel_gaps": per_mb.gaps * steps}
    if per_mb.fp8:  # fp8 training only: the amax, cast and transpose passes around its fp8 GEMMs (fp8_casts)
        parts["fp8_casts"] = per_mb.fp8 * steps
    parts["optimizer"], parts["launch_overhead"] = opt, launch
    if clip is not None:
        parts["gradient_clipping"] = clip.seconds
    if per_mb.fp8:
        notes += (fp8_note(prof, r, parts["fp8_casts"]),)
    if launch:
        measured = block_host_seconds(tr, prof, m) if per_mb.host_extra else None
        how = (f"the blocks' measured host time ({measured[0] * 1e3:.3g} ms per block and micro-batch, {measured[1]}; "
               "eager Hugging Face modules, docs/training.md 'Host-bound steps')" if measured else
               f"issuing {per_mb.kernels * steps:,.0f} kernels and {per_mb.gemm_calls * steps:,.0f} GEMM calls")
        notes += (f"host-bound: {how} takes {host_s:.3g} s, longer than the GPU's {gpu_s:.3g} s of work",)
    matmul = parts["gemm"] + parts["attention"]
    mem = (parts["memory_bound"] + parts["loss"] + parts["dequantisation"] + parts.get("fp8_casts", 0.0)
           + parts["kernel_gaps"])
    extras = grouped_mlp_extras(m, lay, prof)
    if extras:
        moved = sum(e.bytes * (1 + e.backward) for e in extras)
        notes += (f"Megatron-Core's TEGroupedMLP runs eager PyTorch ops beside its fused activation: "
                  f"{'; '.join(e.name for e in extras)}: {moved / 1e9:.3g} GB per average block and micro-batch "
                  "(forward and backward), in the memory-bound time (docs/training.md 'Mixture of experts')",)
    if clock < 1.0:
        notes += (f"power limit: GEMMs and attention fill enough of the GPU's time that it holds {clock:.0%} of its "
                  f"full clock (full up to {eff.full_clock_share:.0%} of the time, {eff.sustained_clock:.0%} at "
                  "100%; measured on an H100/H200 with GEMMs between memory-bound kernels, docs/training.md "
                  "'The clock')",)
    return ComputeTimes(matmul, mem, opt, launch, peak, hbm, lay.split.imbalance(), parts, notes, pace, head_stage,
                        clock, clip, r.ew)


_FP8_RECIPES = {
    "torchao-tensorwise": "torchao Float8Linear, dynamic tensorwise scaling (torchtitan): an amax pass and a cast "
                          "of each input and output gradient, transposed fp8 copies for the backward",
    "transformer-engine": "Transformer Engine, delayed scaling: casts fused with the norms, a cast_transpose of "
                          "the other inputs and of each output gradient",
}


def fp8_note(prof: FrameworkProfile, r: ot.Rates, cast_s: float) -> str:
    """What fp8 training runs in fp8 and what its casts cost, for the step-time figure's explanation."""
    return (f"fp8 training ({_FP8_RECIPES[prof.fp8_recipe]}). The blocks' linears run in fp8 at {r.fp8_gemm / 1e12:.0f} "
            f"TFLOP/s (a typical shape: {kr.FP8_MATMUL_RATIO:.3f} of the bf16 GEMMs' share of peak, from e4m3 GEMMs "
            f"measured on an H100), attention and the output head in bf16 at {r.gemm / 1e12:.0f} TFLOP/s; the casts "
            f"move {cast_s * r.copy / 1e9:,.1f} GB per step at {r.copy / 1e9:,.0f} GB/s (the copy rate): {cast_s:.3g} s "
            "(fp8_casts in compute.breakdown; docs/training.md, 'fp8 training')")


def clip_figure(sc: Scenario, ct: ComputeTimes) -> Figure | None:
    """The gradient clipping's seconds per step with what they are made of (``grad_clip``), None where it does not
    run (off, or under CPU offload)."""
    c = ct.clip
    if c is None:
        return None
    prof, tr = sc.framework, sc.training
    how = {"foreach": "torch.nn.utils.clip_grad_norm_: _foreach_norm reads the gradients, _foreach_mul_ reads and "
                      "writes them (3 passes in their dtype)",
           "multi_tensor": "Megatron-Core clip_grad_norm_fp32: multi_tensor_l2norm reads the main grads this rank "
                           "owns, multi_tensor_scale_tensor reads and writes them (3 passes)",
           "deepspeed": "DeepSpeed ZeRO: an fp64 copy of each 16-bit gradient written and read for its norm, then "
                        "the fp32 partition scaled (runs at every step, clipping or not)"}[prof.grad_clip_kernels]
    notes = ((f"training.grad_clip is {tr.grad_clip}, but DeepSpeed's optimizer computes the norm and scales the "
              "gradients at every step all the same",) if tr.grad_clip == "off" else ())
    return Figure.own(c.seconds, "s", "max(bytes / achievable bandwidth + kernels × idle gap, Python-level calls × "
                      "launch_s) + one launch_s where the loop reads the norm on the host (.item())",
                      {"how": how, "bytes": c.bytes, "kernels": c.kernels, "host_s": c.host_s, "sync_s": c.sync_s,
                       "bandwidth": ct.hbm, "grad_clip": tr.grad_clip, "framework": prof.name}, "grad-clip", notes)


def bubble_fraction(lay: Layout) -> float:
    if lay.pp == 1:
        return 0.0
    return (lay.pp - 1) / (lay.accumulation * lay.vp)


def real_token_share(tr) -> float:
    """Share of the tokens a step computes that are real: padded batches (training.batching) compute every
    sequence at seq_len but carry mean_sequence_tokens real tokens each; packed batches are all real."""
    if tr.batching == "padded" and tr.mean_sequence_tokens:
        return tr.mean_sequence_tokens / tr.seq_len
    return 1.0


def report(sc: Scenario, lay: Layout, sf: StepFlops, ct: ComputeTimes, exposed_inner: float,
           exposed_dp: float, offload: Figure | None = None, host_s: float = 0.0) -> ComputeReport:
    """``host_s``: exposed seconds of the switches' host transfers (activation offload, paged optimizer)."""
    tr, eff = sc.training, sc.efficiency
    gpus = lay.gpus
    bub = bubble_fraction(lay)
    ideal = ct.total - ct.step_end + exposed_inner
    exposed_offload = offload.value if offload is not None else 0.0  # offload_time.py
    fill = ideal * bub * ct.pace  # the p-1 fill-and-drain slots are the other stages' (module doc)
    step = ideal + fill + ct.step_end + exposed_dp + exposed_offload + host_s
    breakdown = {**ct.parts, "exposed_communication": exposed_inner + exposed_dp, "pipeline_bubble": fill,
                 "offload": exposed_offload}
    if host_s:
        breakdown["host_transfers"] = host_s
    share = real_token_share(tr)
    tokens = lay.tokens_per_step * share
    tps = tokens / step
    peak_all = ct.peak * gpus
    mfu = sf.model / step / peak_all if peak_all else 0.0
    hfu = sf.hardware / step / peak_all if peak_all else 0.0
    seconds = tr.tokens / tps
    days = seconds / 86400
    gpu_hours = seconds / 3600 * gpus
    price = sc.cluster.hourly_price
    cost = None
    if price is not None:
        cost = Figure.own(gpu_hours * price, "USD", "GPU-hours × price per GPU-hour",
                          {"gpu_hours": gpu_hours, "usd_per_gpu_hour": price}, "assumption")
    src = "megatron-2021"
    split = lay.split
    stages = {"stage_layers": split.describe(), "slowest_stage_layers": split.slowest,
              "mean_stage_layers": sum(split.per_stage) / lay.pp, "stage_imbalance": ct.imbalance,
              "slowest_stage": ("the last, with the head and loss" if ct.head_stage else
                                "one stage" if lay.pp == 1 else "one without the head"),
              "fill_slot_share": ct.pace}
    uneven: tuple[str, ...] = ()
    if ct.imbalance != 1.0:
        uneven = (f"uneven pipeline: the slowest stage has {split.slowest} layers against a mean of "
                  f"{stages['mean_stage_layers']:.3g}, so every pipeline time slot is {ct.imbalance - 1:.1%} longer "
                  "than an even split's",)
    return ComputeReport(
        flops_per_step=Figure.own(sf.model, "FLOP", "tokens · (3 × forward FLOPs per token; frozen weights 2×)",
                                  {"tokens_per_step": tokens}, "korthikanti"),
        hardware_flops_per_step=Figure.own(sf.hardware, "FLOP", f"model FLOPs {sf.multiplier}",
                                           {"model_flops": sf.model, "recompute_flops": sf.recompute},
                                           "korthikanti"),
        step_time_s=Figure.own(step, "s",
                               "(GEMMs + attention + memory-bound kernels + launch-bound excess + exposed TP/CP/EP/PP "
                               "of the slowest pipeline stage; the last holds the head and loss) × (1 + bubble × the "
                               "other stages' time share) + gradient clipping + optimizer step + exposed DP + exposed "
                               "offload (CPU optimizer step, PCIe, NVMe)",
                               {"matmul_s": ct.matmul, "memory_bound_s": ct.memory_bound, "optimizer_s": ct.optimizer,
                                "grad_clip_s": ct.clipping,
                                "launch_s": ct.launch, "framework": sc.framework.name,
                                "exposed_inner_s": exposed_inner, "bubble": bub, "exposed_dp_s": exposed_dp,
                                "exposed_offload_s": exposed_offload, **stages},
                               src, uneven + ct.notes),
        compute_time_s=Figure.own(ct.total, "s",
                                  "Σ over the slowest stage's operations of max(FLOPs / GEMM rate, bytes / "
                                  "achievable bandwidth) + 3 µs per GEMM; each elementwise op max(kernels × floor, "
                                  "bytes / its kind's rate: pointwise, bf16 → fp32 cast, eager RMSNorm or copy); flash attention at its measured share of "
                                  "peak by length (sliding-window layers at their window's); GEMMs and attention at the clock the GPU holds (full up to "
                                  "full_clock_share of its time in them, then down to sustained_clock); 1.8 µs idle "
                                  "between kernels; max(GPU time, host time); + the optimizer's pass over its states (fused "
                                  "AdamW at its measured kernel rate for its tensors' dtype on this GPU class)"
                                  + ("; fp8: the linears' GEMMs at the fp8 rate, their casts' bytes / bandwidth"
                                     if "fp8_casts" in ct.parts else ""),
                                  {"peak_flops": ct.peak, "matmul_efficiency": eff.matmul,
                                   "gemm_rate_full_clock": kr.gemm_rate(ct.peak, eff.matmul),
                                   "clock_share_held": ct.clock, "sustained_clock": eff.sustained_clock,
                                   "full_clock_share": eff.full_clock_share,
                                   "bandwidth": ct.hbm, "pointwise_bandwidth": ct.pointwise,
                                   "framework": sc.framework.name, **ct.parts, **stages}, "microbench-h100",
                                  uneven + ct.notes),
        bubble_fraction=Figure.own(bub, "1", "(p-1)/(m·v) idle slots per micro-batch slot; each slot is one of "
                                   "the other stages' (their mean time, fill_slot_share of the slowest stage's)",
                                   {"p": lay.pp, "m": lay.accumulation, "v": lay.vp, "fill_slot_share": ct.pace}, src),
        tokens_per_s=Figure.own(tps, "tokens/s", "global_batch · seq_len × real-token share / step time",
                                {"tokens_per_step": tokens, "step_time_s": step, "real_token_share": share,
                                 "batching": tr.batching}, src),
        mfu=Figure.own(mfu, "1", "model FLOPs per step / (step time · GPUs · peak)",
                       {"model_flops": sf.model, "step_time_s": step, "gpus": gpus, "peak_flops": ct.peak},
                       "palm-mfu"),
        hfu=Figure.own(hfu, "1", "hardware FLOPs per step / (step time · GPUs · peak)",
                       {"hardware_flops": sf.hardware, "step_time_s": step}, "palm-mfu"),
        training_days=Figure.own(days, "d", "training.tokens / tokens per second / 86400",
                                 {"tokens": tr.tokens, "tokens_per_s": tps}, "assumption"),
        gpu_hours=Figure.own(gpu_hours, "h", "training seconds / 3600 × GPUs",
                             {"seconds": seconds, "gpus": gpus}, "assumption"),
        cost_usd=cost,
        offload_time_s=offload,
        grad_clip_s=clip_figure(sc, ct),
        breakdown=breakdown,
        global_batch=Figure.own(lay.global_batch, "1", "training.global_batch, else global_batch_tokens / "
                                "seq_len, else the published batch for the model size; rounded to a multiple of "
                                "micro-batch × DP where given in tokens",
                                {"tokens_per_step": lay.tokens_per_step, "rule": batch.describe(sc)},
                                "batch-published"),
        accumulation=Figure.own(lay.accumulation, "1", "global_batch / (micro_batch · dp)",
                                {"global_batch": lay.global_batch, "micro_batch": lay.micro_batch, "dp": lay.dp},
                                "megatron-2021"),
    )
