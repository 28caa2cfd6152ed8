"""The per-operation time of one micro-batch on one GPU (the optimizer step: ``optimizer_kernel``).

Each GEMM costs ``kernel_rates.gemm_time`` at its own shape (forward; backward: the input
gradient, and the weight gradient where the weight trains); flash attention its measured share
of peak at its length and head size; each elementwise op its bytes at its kind's rate, at least its kernels'
floor (``kernel_rates.elementwise_time``). The GPU cannot run kernels faster than the host issues them: a micro-batch takes
max(GPU time, launches × launch cost) — the host-bound case of small models and eager code.
Recompute adds the forward again (full: every block; selective without flash: attention;
selective_op: the matmuls torchtitan's policy did not keep and the elementwise kernels; Megatron-Core's
named modules: ``recompute_modules.recompute_time``).
QLoRA dequantises each NF4 weight before every use (forward, recompute, input gradient).
fp8 training runs the block's linears in fp8 (their three GEMMs at the fp8 rate, 1-byte operands) and
pays their casts as memory-bound passes (``fp8_casts``); attention, the head and the loss stay bf16.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training.elementwise import BACKWARD_FACTOR, Elementwise
from llmplan.core.training.ops import Gemm, HeadOps, LayerOps
from llmplan.core.training.selective_op import recomputed_gemms


@dataclass(frozen=True, slots=True)
class PartTimes:
    """Seconds per micro-batch on one GPU, by kind, and the host's launch time beside them."""

    gemm: float = 0.0
    attention: float = 0.0
    elementwise: float = 0.0
    loss: float = 0.0
    dequant: float = 0.0
    casts: float = 0.0  # autocast weight copies and gradient upcasts (fp32 parameters)
    fp8: float = 0.0  # fp8 training: amax, casts and transposed copies around the fp8 GEMMs
    kernels: float = 0.0  # launches
    gemm_calls: float = 0.0
    host_extra: float = 0.0  # measured host seconds beyond the launches (eager Hugging Face blocks: host_time)

    # Spelled out field by field (not a generator over the fields): an estimate adds and scales these on every
    # call, and the generator form cost a few microseconds of the 0.2 ms budget. Same sums, same order.
    def __add__(self, o: PartTimes) -> PartTimes:
        return PartTimes(self.gemm + o.gemm, self.attention + o.attention, self.elementwise + o.elementwise,
                         self.loss + o.loss, self.dequant + o.dequant, self.casts + o.casts, self.fp8 + o.fp8,
                         self.kernels + o.kernels, self.gemm_calls + o.gemm_calls, self.host_extra + o.host_extra)

    def scale(self, f: float) -> PartTimes:
        return PartTimes(self.gemm * f, self.attention * f, self.elementwise * f, self.loss * f, self.dequant * f,
                         self.casts * f, self.fp8 * f, self.kernels * f, self.gemm_calls * f, self.host_extra * f)

    @property
    def gaps(self) -> float:
        """GPU idle between queued kernels: ``kernel_rates.KERNEL_GAP_S`` per kernel and GEMM call."""
        return (self.kernels + self.gemm_calls) * kr.KERNEL_GAP_S

    @property
    def gpu(self) -> float:
        return (self.gemm + self.attention + self.elementwise + self.loss + self.dequant + self.casts + self.fp8
                + self.gaps)

    def clocked(self, factor: float) -> PartTimes:
        """The compute-bound parts (GEMMs, attention) at ``factor`` of the full clock (kernel_rates.clock_factor);
        memory-bound kernels keep their time: HBM does not slow with the SM clock."""
        if factor == 1.0:
            return self
        return replace(self, gemm=self.gemm / factor, attention=self.attention / factor)

    def host(self, prof: FrameworkProfile) -> float:
        return self.kernels * prof.launch_s + self.gemm_calls * prof.gemm_launch_s + self.host_extra


@dataclass(frozen=True, slots=True)
class Rates:
    gemm: float  # FLOP/s a typical shape sustains (16-bit, or fp32)
    attention_scale: float  # this GPU's attention rate relative to the H100 measurement (× its peak)
    peak: float  # the dense peak attention runs against (bf16 under fp8 training)
    bandwidth: float  # achievable bytes/s (efficiency.memory_bandwidth: the loss's and the optimizer's)
    elem_bytes: float  # GEMM operand bytes
    fp8_gemm: float = 0.0  # FLOP/s a typical fp8 GEMM sustains (fp8 training; 0 otherwise)
    sustained_clock: float = 1.0  # clock share held with compute-bound kernels all the time (kernel_rates.clock_factor)
    full_clock_share: float = 0.4  # compute-bound share of the GPU's time up to which it keeps its full clock
    pointwise: float = 0.0  # bytes/s of a large pointwise kernel (efficiency.elementwise; 0: ``bandwidth``)

    @property
    def ew(self) -> float:
        """The pointwise rate the elementwise kinds are priced against (``kernel_rates.elementwise_time``)."""
        return self.pointwise or self.bandwidth

    @property
    def copy(self) -> float:
        """Bytes/s of the copy kind: memory-bound work of no measured kind."""
        return self.ew * kr.EW_RATIO[kr.EW_COPY]


def ew_forward(elementwise: tuple[Elementwise, ...], r: Rates) -> float:
    """Seconds of the elementwise ops' forward kernels, each at its kind's rate and floor."""
    pw = r.ew
    return sum(kr.elementwise_time(e.bytes, e.kernels, e.kind, pw, e.upcast) for e in elementwise if not e.backward_only)


def ew_backward(elementwise: tuple[Elementwise, ...], r: Rates) -> float:
    """Seconds of their backward kernels (``Elementwise.backward`` × the forward's bytes, ``backward_launches``)."""
    pw = r.ew
    return sum(kr.elementwise_time(e.backward * e.bytes, backward_launches(e), e.kind, pw, e.backward_upcast)
               for e in elementwise)


def cast_time(cast_down: float, cast_up: float, kernels: float, r: Rates) -> float:
    """Seconds of weight casts, 6 B per parameter: fp32 -> bf16 copies for the forward (``cast_down`` parameters)
    and bf16 gradients cast up into fp32 .grad (``cast_up``)."""
    moved = 6.0 * (cast_down + cast_up)
    return kr.elementwise_time(moved, kernels, kr.EW_POINTWISE, r.ew, cast_up / (cast_down + cast_up)) if moved else 0.0


def gemm_operands(g: Gemm, r: Rates) -> tuple[float, float, float | None]:
    """(rate, operand bytes, output bytes or None for the operands') of ``g``: fp8 runs at the fp8 peak with 1-byte
    operands and a bf16 output (module doc of kernel_rates)."""
    return (r.fp8_gemm, 1.0, 2.0) if g.fp8 and r.fp8_gemm else (r.gemm, r.elem_bytes, None)


def _gemm_pass(ops: LayerOps | HeadOps, r: Rates, backward: bool,
               only: tuple[Gemm, ...] | None = None) -> tuple[float, float]:
    gemms = only if only is not None else ops.gemms if isinstance(ops, LayerOps) else (ops.gemm, *ops.extra)
    t = calls = 0.0
    for g in gemms:
        rate, eb, ob = gemm_operands(g, r)
        if g.group != 1.0:  # one call per ``group`` GEMMs: a mixture of experts' grouped local experts
            t_g, c_g = _grouped_pass(g, rate, r.bandwidth, eb, ob, backward)
            t += t_g
            calls += c_g
            continue
        if not backward:
            t += g.count * kr.gemm_time(g.m, g.n, g.k, rate, r.bandwidth, eb, ob)
            calls += g.count
            continue
        t += g.count * kr.gemm_time(g.m, g.k, g.n, rate, r.bandwidth, eb, ob)  # input gradient
        calls += g.count
        if g.trainable:
            t += g.count * kr.gemm_time(g.n, g.k, g.m, rate, r.bandwidth, eb, ob)  # weight gradient
            calls += g.count
    return t, calls


def _grouped_pass(g: Gemm, rate: float, bandwidth: float, eb: float, ob: float | None,
                  backward: bool) -> tuple[float, float]:
    """Seconds and calls of a grouped GEMM's pass (``ops.expert_grouping``): count / group calls, each running
    ``group`` GEMMs and paying ``fixed`` fixed costs; kept apart so that the common one-GEMM path stays as fast."""
    n, grp, fix = g.count / g.group, g.group, g.fixed
    if not backward:
        return n * kr.gemm_time(g.m, g.n, g.k, rate, bandwidth, eb, ob, grp, fix), n
    t = n * kr.gemm_time(g.m, g.k, g.n, rate, bandwidth, eb, ob, grp, fix)  # input gradient
    if not g.trainable:
        return t, n
    return t + n * kr.gemm_time(g.n, g.k, g.m, rate, bandwidth, eb, ob, grp, fix), 2 * n  # + weight gradient


def backward_launches(e: Elementwise) -> float:
    """Kernels an elementwise op's backward launches: the count read in its code where the op states it, else its
    forward's launches scaled by the backward's share of the bytes, at least one."""
    return e.backward_kernels if e.backward_kernels >= 0 else max(e.backward * e.kernels, 1.0)


def weight_casts(ops: LayerOps | HeadOps) -> tuple[float, float]:
    """Weights cast to 16 bits per micro-batch: (in the forward, again in the backward). Autocast casts every
    fp32 weight each forward; FSDP casts its local 1/n shard before each gather, the backward's gather
    (FULL_SHARD) included (``ops.fsdp_cast_shard``)."""
    if not ops.cast_shard:
        return ops.cast_params, 0.0
    shard = ops.cast_params / ops.cast_shard
    return shard, shard * (ops.cast_gathers - 1)


def _flash_pass(ops: LayerOps, r: Rates, backward: bool) -> float:
    """Seconds of flash attention's forward, or of its backward (forward + backward, 3.5× the forward's FLOPs, at
    the measured forward + backward share, less the forward): the full layers at the share of their length, the
    sliding-window layers at their window's (``kernel_rates.window_share``)."""
    t = 0.0
    for flops, window in ((ops.attention_flops - ops.sliding_flops, 0.0), (ops.sliding_flops, ops.window)):
        if flops <= 0:
            continue
        fwd = flops / (r.peak * _flash_rate(ops, window, False) * r.attention_scale)
        if backward:
            t += max(3.5 * flops / (r.peak * _flash_rate(ops, window, True) * r.attention_scale) - fwd, 0.0)
        else:
            t += fwd
    return t


def _flash_rate(ops: LayerOps, window: float, both: bool) -> float:
    if window:
        return kr.window_share(ops.attention_seq, window, ops.head_dim, both)
    return kr.flash_share(ops.attention_seq, ops.head_dim, both)


def layer_forward(ops: LayerOps, r: Rates, weight_cast: bool = True) -> PartTimes:
    """One block's forward; ``weight_cast`` False: a full recompute under FSDP, which runs on the weights the
    backward's gather cast."""
    gemm, calls = _gemm_pass(ops, r, False)
    if ops.flash:
        attn = _flash_pass(ops, r, False)
    else:  # two batched GEMMs over the whole s×s square (no causal skipping) + the softmax traffic
        attn = ops.square_flops / r.gemm + ops.scores_bytes / r.copy
    ew = ew_forward(ops.elementwise, r)
    launches = sum(e.kernels for e in ops.elementwise) + 1
    deq = ops.dequant_params * ops.dequant_bytes / r.copy
    n_q = sum(g.count for g in ops.gemms if g.quantised) * ops.dequant_kernels
    n_cast = sum(g.count for g in ops.gemms) if ops.cast_params and weight_cast else 0.0
    cast = cast_time(weight_casts(ops)[0], 0.0, n_cast, r) if weight_cast else 0.0  # read fp32, write the 16-bit copy
    f8 = ops.fp8_casts
    fp8, n_fp8 = (f8.forward / r.copy, f8.forward_kernels) if f8 else (0.0, 0.0)
    return PartTimes(gemm, attn, ew, 0.0, deq, cast, fp8, launches + n_q + n_cast + n_fp8, calls)


def forward_gemms(ops: LayerOps, r: Rates, gemms: tuple[Gemm, ...]) -> tuple[float, float]:
    """Seconds and calls of the forward of ``gemms`` (some of ``ops.gemms``), at this block's prices: what a
    recompute runs again (``recompute_modules``)."""
    return _gemm_pass(ops, r, False, gemms)


def backward_gemms(ops: LayerOps | HeadOps, r: Rates, gemms: tuple[Gemm, ...]) -> tuple[float, float]:
    """Seconds and calls of the backward of ``gemms`` (input gradients, and weight gradients where trained): one
    GEMM's share of a pass, for the step's operation list (``step_ops``)."""
    return _gemm_pass(ops, r, True, gemms)


def selective_op_recompute(ops: LayerOps, r: Rates) -> PartTimes:
    """What operator-level selective checkpointing runs again in the backward (``selective_op``): the
    matmuls it did not keep and every elementwise kernel of the forward; the attention core too when it
    is not a fused SDPA kernel (whose output the policy keeps)."""
    gemm, calls = _gemm_pass(ops, r, False, recomputed_gemms(ops.gemms))
    attn = 0.0 if ops.flash else layer_forward(ops, r).attention
    ew = ew_forward(ops.elementwise, r)
    launches = sum(e.kernels for e in ops.elementwise)
    # no weight casts: FSDP2 (the one profile with this policy) recomputes with the bf16 weights it gathered;
    # fp8: the forward's casts again, without the amax passes the policy saved (fp8_casts module doc)
    f8 = ops.fp8_casts
    fp8, n_fp8 = (f8.recompute / r.copy, f8.recompute_kernels) if f8 else (0.0, 0.0)
    return PartTimes(gemm, attn, ew, 0.0, 0.0, 0.0, fp8, launches + n_fp8, calls)


def layer_backward(ops: LayerOps, r: Rates) -> PartTimes:
    gemm, calls = _gemm_pass(ops, r, True)
    if ops.flash:
        attn = _flash_pass(ops, r, True)
    else:
        attn = 2 * ops.square_flops / r.gemm + BACKWARD_FACTOR * ops.scores_bytes / r.copy
    ew = ew_backward(ops.elementwise, r)
    launches = sum(backward_launches(e) for e in ops.elementwise) + 1
    deq = ops.dequant_params * ops.dequant_bytes / r.copy
    # the 16-bit weight gradient upcast into the fp32 .grad (in full), and FSDP's cast of the shard it gathers again
    again = weight_casts(ops)[1]
    n_q = sum(g.count for g in ops.gemms if g.quantised) * ops.dequant_kernels
    n_cast = sum(g.count for g in ops.gemms) * (2 if again else 1) if ops.cast_params else 0.0
    cast = cast_time(again, ops.cast_params, n_cast, r)
    f8 = ops.fp8_casts
    fp8, n_fp8 = (f8.backward / r.copy, f8.backward_kernels) if f8 else (0.0, 0.0)
    return PartTimes(gemm, attn, ew, 0.0, deq, cast, fp8, launches + n_q + n_cast + n_fp8, calls)


def head_time(ops: HeadOps, r: Rates) -> PartTimes:
    """Forward and backward of the final norm, the output projection and the loss."""
    f, fc = _gemm_pass(ops, r, False)
    b, bc = _gemm_pass(ops, r, True)
    ew = ew_forward(ops.elementwise, r) + ew_backward(ops.elementwise, r)
    launches = sum(e.kernels + backward_launches(e) for e in ops.elementwise) + 8  # + loss kernels
    loss = ops.logits * (ops.loss_bytes or kr.CE_BYTES_PER_LOGIT) / r.bandwidth
    # the fp32 head weight cast to bf16 in the forward (FSDP: its shard, per gather); a trained head's bf16 gradient
    # is cast back to fp32 in the backward, a frozen one's cast has no backward (the input gradient reuses the
    # saved bf16 copy)
    cast = cast_time(sum(weight_casts(ops)), ops.cast_params if ops.gemm.trainable else 0.0, 0.0, r)
    return PartTimes(f + b, 0.0, ew, loss, 0.0, cast, 0.0, launches, fc + bc)


def embedding_time(ops: tuple[Elementwise, ...], r: Rates) -> PartTimes:
    """Forward and backward of the embedding's kernels (``autograd_kernels.embedding_ops``)."""
    ew = ew_forward(ops, r) + ew_backward(ops, r)
    return PartTimes(elementwise=ew, kernels=sum(e.kernels + backward_launches(e) for e in ops))
