"""The step's operation list: every kernel the step time is the sum of, with its FLOPs, bytes, rate and time.

The step time is a per-operation roofline (``op_time``), summed over one average block, the head and loss and the
embedding, stretched to the slowest pipeline stage's layers and the step's micro-batches (``timing._micro_batch``),
plus the optimizer's pass, gradient clipping, the host's excess launch time and the exposed communication. This
module lists those operations one by one for a user who wants to see what a step time is made of
(docs/training.md, "Reading the operation list"). It prices nothing itself: each row is one operation passed alone
through the functions ``timing`` sums (``op_time.forward_gemms``, ``backward_gemms``, ``ew_forward``,
``ew_backward``, ``layer_forward``, ``layer_backward``, ``head_time``, ``embedding_time``), at the clock
``timing.micro_batch_clock`` gives, and the step-level parts are the estimate's own ``compute.breakdown`` entries.
So the rows add up to the estimate's compute time (and, with the exposed communication, bubble and offload, its
step time) to rounding.

Run only on request (the CLI's ``--ops``, the app's Operations dialog; ~1 ms on the 2-core dev VM), not part of an
estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from llmplan.core.params import count_params
from llmplan.core.result import Estimate
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training import op_time as ot
from llmplan.core.training import timing
from llmplan.core.training.autograd_kernels import embedding_ops
from llmplan.core.training.elementwise import Elementwise
from llmplan.core.training.layout import resolve
from llmplan.core.training.ops import Gemm, head_ops, layer_ops, residual_bytes
from llmplan.core.workload import Scenario

FORWARD, BACKWARD, OPTIMIZER, COMMUNICATION, OTHER = "forward", "backward", "optimizer", "communication", "other"
HEAD_GROUP = "embedding, head and loss"
STEP_GROUP = "step"

# step-level parts of ``compute.breakdown`` (seconds per step), with the row's name and phase; the first four are in
# the compute time, the rest only in the step time
_STEP_PARTS = (("optimizer", "optimizer step (the pass over its states)", OPTIMIZER, True),
               ("gradient_clipping", "gradient clipping (norm and scale)", OPTIMIZER, True),
               ("launch_overhead", "host launch time beyond the GPU's work", OTHER, True),
               ("exposed_communication", "exposed communication (TP, CP, EP, PP, DP)", COMMUNICATION, False),
               ("pipeline_bubble", "pipeline bubble (fill and drain)", OTHER, False),
               ("offload", "exposed offload (CPU, PCIe, NVMe)", COMMUNICATION, False),
               ("host_transfers", "host transfers (activation offload, paged optimizer)", COMMUNICATION, False))


@dataclass(frozen=True, slots=True)
class OpRow:
    """One operation of the step, summed over the step (every layer of the slowest stage, every micro-batch)."""

    name: str  # as docs/training.md names it
    group: str  # dense block, MoE block, embedding/head/loss, step
    phase: str  # forward, backward (recompute included), optimizer, communication, other
    count: float  # kernel launches (GEMM calls for GEMMs) per step on this GPU; 0 where not a kernel count
    flops: float  # FLOPs per step (GEMMs and attention)
    bytes: float  # bytes moved per step (elementwise kinds, loss, GEMM operands)
    seconds: float  # its time per step
    rate: float  # the rate it ran at: FLOP/s (GEMMs, attention) or bytes/s (memory-bound); 0: none applies
    rate_unit: str  # "FLOP/s", "B/s" or ""
    priced_by: str  # what set the rate: the catalog key or kernel_rates constant
    source: str  # the measurement behind it (a source id of catalogs/sources, or a plain description)
    in_compute: bool = True  # part of the estimate's compute time (not exposed communication, bubble, offload)

    def as_dict(self, step_s: float) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["share"] = self.seconds / step_s if step_s else 0.0
        return d


@dataclass(frozen=True, slots=True)
class StepOps:
    rows: tuple[OpRow, ...]
    compute_s: float  # Σ rows in the compute time: the estimate's compute_time_s
    step_s: float  # Σ all rows: the estimate's step_time_s
    layers: int  # blocks on the slowest stage
    micro_batches: int  # per step
    clock: float  # share of its full clock the GPU holds (GEMMs and attention are slowed by it)
    notes: tuple[str, ...]


def _gemm_flops(g: Gemm, backward: bool) -> float:
    return 2.0 * g.m * g.n * g.k * g.count * ((2.0 if g.trainable else 1.0) if backward else 1.0)


def _gemm_bytes(g: Gemm, r: ot.Rates, backward: bool) -> float:
    _, eb, ob = ot.gemm_operands(g, r)
    one = kr.gemm_bytes(g.m, g.n, g.k, eb, ob) * g.count
    return one * ((2.0 if g.trainable else 1.0) if backward else 1.0)


def _gemm_key(g: Gemm, r: ot.Rates) -> str:
    if g.fp8 and r.fp8_gemm:
        return f"efficiency.matmul × FP8_MATMUL_RATIO {kr.FP8_MATMUL_RATIO:.3f} at the fp8 peak, roofline + 3 µs"
    return "efficiency.matmul × peak at its shape's roofline + 3 µs (kernel_rates.gemm_time)"


_GEMM_SOURCE = "GEMM sweep, H100/H200 SXM, torch 2.11 / CUDA 13.0, 2026-11-28 (microbench-h100)"
_EW_SOURCE = "elementwise kinds, H100 SXM, torch 2.11, CUDA-graph replay, 2026-11-28 (microbench-h100)"


def _ew_key(e: Elementwise, backward: bool) -> str:
    up = e.backward_upcast if backward else e.upcast
    key = f"{e.kind}: {kr.EW_RATIO[e.kind]:.3f} × efficiency.elementwise"
    return key + (f", {up:.0%} as bf16 → fp32 casts at {kr.EW_RATIO[kr.EW_UPCAST]:.3f}" if up else "")


class _Rows:
    """Collects rows per micro-batch of one part (a block, the head), scaled to the step by ``times``."""

    def __init__(self, r: ot.Rates, clock: float):
        self.r, self.clock, self.rows = r, clock, []

    def add(self, name, group, phase, times, count, flops, moved, seconds, unit, key, source):
        s = seconds * times
        rate = (flops if unit == "FLOP/s" else moved) * times / s if s > 0 and unit else 0.0
        self.rows.append(OpRow(name, group, phase, count * times, flops * times, moved * times, s, rate, unit, key,
                               source))

    def gemms(self, ops, gemms, group, times, backward, prefix=""):
        """Each GEMM's pass; ``prefix``: a full recompute's forward again (in the backward phase). Returns the
        seconds listed."""
        listed = 0.0
        for g in gemms:
            t, calls = (ot.backward_gemms if backward else ot.forward_gemms)(ops, self.r, (g,))
            phase = BACKWARD if backward or prefix else FORWARD
            self.add(prefix + g.name, group, phase, times, calls, _gemm_flops(g, backward),
                     _gemm_bytes(g, self.r, backward), t / self.clock, "FLOP/s", _gemm_key(g, self.r), _GEMM_SOURCE)
            listed += t / self.clock
        return listed

    def elementwise(self, ew, group, times, backward, prefix=""):
        r, listed = self.r, 0.0
        for e in ew:
            if backward:
                t = ot.ew_backward((e,), r)
                self.add(e.name, group, BACKWARD, times, ot.backward_launches(e), 0.0, e.backward * e.bytes, t,
                         "B/s", _ew_key(e, True), _EW_SOURCE)
            elif not e.backward_only:
                t = ot.ew_forward((e,), r)
                self.add(prefix + e.name, group, BACKWARD if prefix else FORWARD, times, e.kernels, 0.0, e.bytes, t,
                         "B/s", _ew_key(e, False), _EW_SOURCE)
            else:
                continue
            listed += t
        return listed

    def lumps(self, p: ot.PartTimes, group, phase, times, prefix=""):
        """The parts of a PartTimes no single op of the list carries: dequantisation, weight casts, fp8 casts and
        the idle gaps between kernels."""
        copy = f"copy: {kr.EW_RATIO[kr.EW_COPY]:.3f} × efficiency.elementwise"
        for name, s, key in ((prefix + "NF4 dequantisation of the base weights", p.dequant, copy),
                             (prefix + "weight casts (fp32 ↔ 16-bit copies, gradient upcasts)", p.casts,
                              "pointwise / upcast × efficiency.elementwise"),
                             (prefix + "fp8 amax, casts and transposes", p.fp8, copy)):
            if s:
                self.add(name, group, phase, times, 0.0, 0.0, 0.0, s, "", key, _EW_SOURCE)
        if p.gaps:
            self.add(prefix + "idle gaps between kernels (1.8 µs each)", group, phase, times,
                     p.kernels + p.gemm_calls, 0.0, 0.0, p.gaps, "", "kernel_rates.KERNEL_GAP_S",
                     "torch.profiler, Llama-3.1-8B blocks, H100 SXM, 2026-11-28")


def _minus(a: ot.PartTimes, b: ot.PartTimes) -> ot.PartTimes:
    return ot.PartTimes(**{f.name: getattr(a, f.name) - getattr(b, f.name) for f in fields(ot.PartTimes)})


def block_group(m) -> str:
    moe, n = m.moe_layer_count, m.num_layers
    if not moe:
        return "dense block"
    if moe == n:
        return "MoE block"
    return f"block (average of {moe} MoE and {n - moe} dense)"


def step_operations(sc: Scenario, est: Estimate) -> StepOps:
    """The operation list of ``est`` (the training estimate of ``sc``), slowest stage, per step (module doc)."""
    m, tr, prof, gpu, eff = sc.model, sc.training, sc.framework, sc.cluster.gpu, sc.efficiency
    lay = resolve(sc)
    r, _ = timing.rates(gpu, eff, tr.precision)
    shape = timing.OpShape.of(lay, tr, prof)
    pb = count_params(m)
    ops = layer_ops(m, pb, shape, tr, prof, shape.cast_shard)  # type: ignore[arg-type]  # reads OpShape's fields
    clock = timing.micro_batch_clock(m, shape, tr, prof, r)
    rest = timing.layer_and_head(m, shape, tr, prof, r)[1]  # backward + recompute, clocked
    emb = timing.embedding_time(m, shape, tr, prof, r) if lay.pp == 1 else None
    split = lay.split
    on_last = timing.head_on_slowest(m, lay, tr, prof, r)
    layers = split.per_stage[-1] if on_last else split.before_last
    steps = lay.accumulation
    rows = _Rows(r, clock)
    grp, n = block_group(m), layers * steps
    rows.gemms(ops, ops.gemms, grp, n, False)
    lf = ot.layer_forward(ops, r)
    what = "flash attention (SDPA)" if ops.flash else "attention (two batched GEMMs and the softmax)"
    att_key = ("flash_share(length, head size) × peak" if ops.flash else "GEMM rate; softmax at the copy rate")
    att_src = "SDPA causal forward / backward, H100 SXM, torch 2.11, 2026-11-24 (microbench-h100)"
    att_flops = ops.attention_flops if ops.flash else ops.square_flops
    rows.add(what, grp, FORWARD, n, 1.0, att_flops, 0.0, lf.attention / clock, "FLOP/s", att_key, att_src)
    rows.elementwise(ops.elementwise, grp, n, False)
    rows.lumps(lf, grp, FORWARD, n)
    rows.gemms(ops, ops.gemms, grp, n, True)
    lb = ot.layer_backward(ops, r)
    rows.add(what, grp, BACKWARD, n, 1.0, (2.5 if ops.flash else 2.0) * att_flops, 0.0, lb.attention / clock,
             "FLOP/s", att_key, att_src)
    rows.elementwise(ops.elementwise, grp, n, True)
    rows.lumps(lb, grp, BACKWARD, n)
    rec = _minus(rest, lb.clocked(clock))  # what the recompute runs again (timing._full_clock's branches)
    if tr.recompute == "full":  # the forward again, op by op; its casts and gaps as the forward's lumps
        label = "recompute: "
        g_s = rows.gemms(ops, ops.gemms, grp, n, False, label)
        rows.add(label + what, grp, BACKWARD, n, 1.0, att_flops, 0.0, rec.attention, "FLOP/s", att_key, att_src)
        e_s = rows.elementwise(ops.elementwise, grp, n, False, label)
        rest_of = _minus(rec, ot.PartTimes(gemm=g_s, attention=rec.attention, elementwise=e_s))
        rows.lumps(rest_of, grp, BACKWARD, n, label)
    elif tr.recompute != "none":
        label = f"recompute ({tr.recompute}): "
        for name, s in (("GEMMs", rec.gemm), ("attention", rec.attention), ("elementwise kernels", rec.elementwise)):
            if s > 1e-18:
                rows.add(label + name, grp, BACKWARD, n, 0.0, 0.0, 0.0, s, "", "the forward's rates, again", "")
        rows.lumps(rec, grp, BACKWARD, n, label)
    if on_last:
        ho = head_ops(m, pb, shape, tr, prof, ops.residual_bytes, shape.cast_shard)  # type: ignore[arg-type]
        ht = ot.head_time(ho, r)
        hg = (ho.gemm, *ho.extra)
        rows.gemms(ho, hg, HEAD_GROUP, steps, False)
        rows.elementwise(ho.elementwise, HEAD_GROUP, steps, False)
        per_logit = ho.loss_bytes or kr.CE_BYTES_PER_LOGIT
        rows.add("loss (cross-entropy, forward and backward)", HEAD_GROUP, FORWARD, steps, 0.0, 0.0,
                 ho.logits * per_logit, ht.loss, "B/s", f"{per_logit:g} B per logit at efficiency.memory_bandwidth",
                 "fp32 cross-entropy, 8,192 tokens × 128,256 / 151,936, H100 SXM, 2026-11-24" if not ho.loss_bytes
                 else "bytes read in the loss kernel's code (ops.LOSS_BYTES)")
        rows.gemms(ho, hg, HEAD_GROUP, steps, True)
        rows.elementwise(ho.elementwise, HEAD_GROUP, steps, True)
        rows.lumps(ht, HEAD_GROUP, FORWARD, steps, "head: ")
        if emb is not None:
            eo = embedding_ops(m, shape, tr, prof, residual_bytes(tr, prof))  # type: ignore[arg-type]
            rows.elementwise(eo, HEAD_GROUP, steps, False)
            rows.elementwise(eo, HEAD_GROUP, steps, True)
            rows.lumps(emb, HEAD_GROUP, BACKWARD, steps, "embedding: ")
    parts = est.compute.breakdown
    for key, name, phase, in_compute in _STEP_PARTS:
        s = parts.get(key, 0.0)
        if s:
            rows.rows.append(OpRow(name, STEP_GROUP, phase, 0.0, 0.0, 0.0, s, 0.0, "", f"compute.breakdown.{key}",
                                   "the estimate's own figure (docs/training.md)", in_compute))
    out = tuple(rows.rows)
    compute = sum(o.seconds for o in out if o.in_compute)
    notes = (f"{layers} blocks on the slowest stage × {steps} micro-batches; GEMMs and attention at {clock:.1%} of "
             "the full clock",)
    return StepOps(out, compute, sum(o.seconds for o in out), layers, steps, clock, notes)
