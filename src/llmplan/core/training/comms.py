"""Communication per training step and per GPU: what each collective moves, over which link, how long.

Volumes follow NCCL's ring algorithms: an all-reduce moves 2(n-1)/n of the buffer per GPU,
an all-gather or a reduce-scatter (n-1)/n, an all-to-all (n-1)/n. Per block and
micro-batch, tensor parallelism does 2 all-reduces of the block's activations forward and
2 backward (Narayanan et al. 2021 §3.3; with sequence parallelism each becomes an
all-gather plus a reduce-scatter of the same total volume, Korthikanti §4.2.2), and 2 more
when full recompute re-runs the forward. Data parallelism all-reduces the gradients, or
with ZeRO/distributed optimizer reduce-scatters them and all-gathers the updated weights;
ZeRO-3 gathers the weights again for the backward (1.5× ZeRO-2's volume, Rajbhandari §7).

Each collective is a number of calls of one message size (a layer's activations, a gradient
bucket of the framework profile's size, a layer's weights under ZeRO-3), each priced by
``nccl.collective`` on the group's ``placement.span`` (Megatron rank order, TP innermost, PP
outermost).

Exposure follows the framework profile (``Overlap``: what compute a collective hides behind, and
which of its calls cannot hide because nothing is left to compute beside it). A hidden collective is not
free: its kernels share the SMs and the memory with the compute it runs beside, and that compute runs
slower. Across GPT and Llama training on 4 A100, H100, MI250 and MI210 GPUs the compute overlapped with
communication ran 18.9% slower on average (Lee et al. 2025, "Characterizing Compute-Communication
Overlap in GPU-Accelerated Distributed Deep Learning", arXiv 2507.03114, abstract: average 18.9%, at
most 40%), so each hidden second adds OVERLAP_SLOWDOWN = 0.189 s to the exposed time (``exposed``):

- TP, EP and PP transfers sit on the critical path, TP unless ``tp_comm_overlap`` (Transformer
  Engine userbuffers overlap them with the GEMMs), PP unless ``pp_comm_overlap`` (asynchronous
  point-to-point behind the stage's compute, as Llama 3 ran it: arXiv 2407.21783 §3.3.2).
- CP's ring exchange of K/V hides behind the attention compute (ring attention); with
  ``cp_comm = "all-gather"`` K/V are all-gathered and their gradients reduce-scattered on the
  critical path, the same bytes (Llama 3's CP, §3.3.2: "exposed in the critical path").
- The DP gradient reduction, bucketed (``dp_bucket_params``: DDP's 25 MiB, Megatron's
  max(40M, 1M·dp) parameters, DeepSpeed's reduce_bucket_size, FSDP's one wrapped layer), runs
  bucket by bucket during the last micro-batch's backward when ``overlap_grad_reduce``; the last
  bucket is ready only when the backward ends, so its call is always exposed (PyTorch DDP notes;
  Megatron-Core ``DistributedDataParallel`` with ``overlap_grad_reduce``).
  With an interleaved schedule (v model chunks per stage) each chunk's reduction starts when that
  chunk's last backward is done, not when the stage's last micro-batch is (Megatron-LM
  core/pipeline_parallel/schedules.py, ``forward_backward_pipelining_with_interleaving``: the
  ``grad_sync_func`` of a chunk is called after ``is_last_microbatch_for_model_chunk``). The last
  round of backwards runs the final N = min(p, m) micro-batches chunk by chunk (N: Megatron's
  ``microbatch_group_size_per_vp_stage``, default p), so chunk c's reduction hides behind c·N
  one-chunk backwards and the last chunk's (1/v of the bytes) behind none: exposed =
  max(t/v, t − (v−1)/v · N · one micro-batch's backward) (``interleaved_windows``). The weight
  all-gather after the step mirrors it in the next step's forwards.
- The distributed optimizer's weight all-gather hides behind the next step's first forward when
  ``overlap_param_gather`` (Megatron); the first bucket is needed before the first layer runs,
  so its call is exposed. Without it the gather runs after the optimizer step, exposed.
- ZeRO-3's gathers and reduce-scatters share one communicator, its links and the same compute: a reduce-scatter
  hides only behind the compute the gathers left free (``shared_window``), so together they never hide behind
  more than the step computes.
- ZeRO-3 / FSDP weight gathers are prefetched one layer (FSDP2) or one prefetch bucket
  (DeepSpeed ``stage3_prefetch_bucket_size``) ahead, so layer i+1's gather runs during layer i's
  compute; the first layer's gather has nothing to hide behind. With equal layers how far ahead
  the prefetch reaches does not change what is exposed: what is left is
  first call + max(0, remaining gather time − compute).
  Both run every micro-batch: ZeRO-3 frees a block's gathered weights after its forward and after its
  backward, so each micro-batch gathers them twice again, and reduce-scatters its gradients into the
  shard at the end of each backward (PyTorch FSDP FULL_SHARD, ``_should_free_in_backward``; Composer
  calls no ``no_sync`` under FSDP, mosaicml/composer trainer.py at 2deccf2c; DeepSpeed refuses
  ``no_sync`` when gradients are partitioned). The gather moves the compute dtype: FSDP's
  ``MixedPrecision``/``MixedPrecisionPolicy`` casts the local fp32 shard to ``param_dtype`` before the
  all-gather, and DeepSpeed stage 3 holds 16-bit weights. Only the step's first gather is counted as
  unhidden. FSDP's ZeRO-2 (SHARD_GRAD_OP, ``fsdp_zero2`` profiles) runs the same way with one gather a
  micro-batch: the forward's gathered weights stay for the backward (``reshard_after_forward=False``).

Exposed time = unhidden calls + max(0, time − unhidden − the compute it hides behind).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from llmplan.core.bytes_per_param import gathered_weight_bytes
from llmplan.core.explain import Figure
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.result import Collective
from llmplan.core.training.layout import Layout
from llmplan.core.training.nccl import Op, bus_factor, collective
from llmplan.core.training.placement import span, topology
from llmplan.core.workload import Scenario, TrainingSettings


@dataclass(frozen=True, slots=True)
class Windows:
    """Compute time (per GPU, per step) that each kind of transfer can hide behind. ``chunks``: model chunks per
    stage (v); above 1 one chunk's share (1/v) cannot hide: of a reduction behind ``last_backward`` the last
    chunk's, of a gather behind ``first_forward`` the first chunk's (module doc)."""

    compute: float
    attention: float
    last_backward: float
    first_forward: float = 0.0
    chunks: int = 1


OVERLAP_SLOWDOWN = 0.189  # compute slowed by a collective beside it, per hidden second (module doc)


def interleaved_windows(per_mb_backward, per_mb_forward, vp, pp, micro_batches):
    """(backward, forward) seconds a data-parallel reduction (gather) hides behind. Without interleaving: the
    last micro-batch's backward (the next step's first forward). Interleaved (``vp`` > 1): the other chunks'
    passes of the last N = min(pp, micro_batches) micro-batches, (v−1)/v · N micro-batch passes (module doc).
    Floats (the estimate) or NumPy arrays of rows (the search's quick model)."""
    if hasattr(vp, "shape"):
        import numpy as np

        scale = np.where(vp > 1, (vp - 1) / np.maximum(vp, 1) * np.minimum(pp, micro_batches), 1.0)
    else:
        scale = (vp - 1) / vp * min(pp, micro_batches) if vp > 1 else 1.0
    return per_mb_backward * scale, per_mb_forward * scale


def chunk_tail(t, call_s, chunks):
    """The part of a chunked reduction that cannot hide: its first (last) call, or with ``chunks`` model chunks the
    last chunk's share t/chunks, whichever is larger. Floats or NumPy arrays."""
    if hasattr(chunks, "shape"):
        import numpy as np

        return np.where(chunks > 1, np.maximum(call_s, t / np.maximum(chunks, 1)), call_s)
    return max(call_s, t / chunks) if chunks > 1 else call_s


@dataclass(frozen=True, slots=True)
class Overlap:
    """What a collective hides behind (module doc): ``window`` seconds of compute, described by
    ``behind``; ``unhidden``: "last call" (a bucketed reduction's last bucket), "first call" (a
    prefetched gather's first unit) or "" (every call can hide)."""

    window: float
    behind: str
    unhidden: str = ""


def exposure(t: float, call_s: float, ov: Overlap | None) -> tuple[float, float]:
    """(exposed seconds, of which the calls that cannot hide) for ``t`` seconds of one collective."""
    if ov is None:
        return t, t
    return exposed(t, call_s, ov.window, bool(ov.unhidden))


def exposed(t, call_s, window, unhidden):
    """(exposed seconds, unhidden seconds) of a collective of ``t`` seconds whose first or last call takes
    ``call_s`` and that hides behind ``window`` seconds of compute: unhidden calls + max(0, t − unhidden −
    window), + OVERLAP_SLOWDOWN × the hidden seconds (the compute beside them runs slower; module doc).
    Floats (the estimate) or NumPy arrays of rows (the search's quick model, where ``unhidden`` may be an
    array too): one formula for both."""
    if hasattr(t, "shape") or hasattr(window, "shape"):
        import numpy as np

        head = np.where(np.logical_and(unhidden, window > 0), np.minimum(t, call_s), 0.0)
        late = head + np.maximum(0.0, t - head - window)
        return late + OVERLAP_SLOWDOWN * (t - late), head
    head = min(t, call_s) if unhidden and window > 0 else 0.0
    late = head + max(0.0, t - head - window)
    return late + OVERLAP_SLOWDOWN * (t - late), head


def hidden(t, exposed_s):
    """Seconds of a collective that ran hidden behind compute, from its time and its exposed seconds (``exposed``,
    which charges OVERLAP_SLOWDOWN of them): what a shared window has left is the window less these. Floats or
    NumPy arrays."""
    return (t - exposed_s) / (1.0 - OVERLAP_SLOWDOWN)


def _buckets(total_bytes: float, bucket_bytes: float) -> tuple[int, float]:
    """(calls, bytes per call) of a reduction done in buckets of ``bucket_bytes`` (0: one call)."""
    if total_bytes <= 0:
        return 0, 0.0
    calls = 1 if bucket_bytes <= 0 else max(1, math.ceil(total_bytes / bucket_bytes))
    return calls, total_bytes / calls


def collectives(sc: Scenario, lay: Layout, trainable_on_gpu: float, weights_on_gpu: float, grad_bytes: float,
                weight_bytes: float, expert_share: float, moe_layers_on_gpu: float,
                win: Windows) -> tuple[Collective, ...]:
    """Every collective of a step (module doc). Cached per (spec objects, shape) (``core.memo``): the search's
    refinement, the charts and the app re-estimate the same layouts often."""
    objs = (sc.model, sc.training, sc.framework, sc.cluster, sc.efficiency)
    rest = (lay, trainable_on_gpu, weights_on_gpu, grad_bytes, weight_bytes, expert_share, moe_layers_on_gpu, win)
    hit = _COLLECTIVES.get(objs, rest)  # () on one GPU: compare with None
    return hit if hit is not None else _COLLECTIVES.put(objs, rest, _collectives(*objs, *rest))


_COLLECTIVES = IdentityCache(64)  # (model, training, profile, cluster, efficiency) objects + the rest -> calls


@functools.lru_cache(maxsize=256)  # equal but new spec objects (a plan resolved again) still hit here
def _collectives(m: ModelSpec, tr: TrainingSettings, prof: FrameworkProfile, cl: ClusterSpec, eff: Efficiency,
                 lay: Layout, trainable_on_gpu: float, weights_on_gpu: float, grad_bytes: float,
                 weight_bytes: float, expert_share: float, moe_layers_on_gpu: float,
                 win: Windows) -> tuple[Collective, ...]:
    out: list[Collective] = []
    b = lay.micro_batch
    mbs = lay.accumulation
    L = lay.max_stage_layers  # the slowest stage's blocks: its traffic is on the step's critical path

    topo = topology(cl, eff)
    fabric = cl.fabric

    def add(name: str, group: str, size: int, stride: int, parts: tuple[tuple[Op, int, float], ...],
            formula: str, inputs: dict[str, object], ov: Overlap | None, chunks: int = 1) -> None:
        """``parts``: (operation, calls per step, bytes per call) run on this group; ``chunks``: model chunks whose
        reductions run one after another (``chunk_tail``)."""
        sp = span(size, stride, topo)
        costs, calls, volume, t, lat = _price(parts, sp, fabric)
        main = costs[0]
        link = "inter-node" if sp.inter_node else "intra-node"
        where = (f"{sp.nodes} nodes × {sp.per_node} GPU{'s' if sp.per_node > 1 else ''}" if sp.inter_node
                 else f"1 node, {size} GPUs")
        exp, head = exposure(t, chunk_tail(t, main.seconds, chunks), ov)
        bw = volume / t if t > 0 else 0.0
        algo = "+".join(sorted({f"{c.algorithm}/{c.protocol}" for c in costs}))
        bfig = Figure.of(volume, "B", formula, inputs, "nccl")
        tfig = Figure.of(t, "s", "Σ calls · (latency + bytes·k / bus bandwidth reached at the message size)",
                         {"calls": calls, "message_bytes": parts[0][2], "algorithm": algo, "span": where,
                          "bus_bandwidth_Bps": bw, "latency_s": lat, "limit": main.limit}, "nccl")
        efig = Figure.of(exp, "s", "time (on the critical path)" if ov is None else
                         "unhidden calls + max(0, time − unhidden − overlappable compute) + 0.189 × hidden time "
                         "(the compute beside it slows)",
                         {"time_s": t, "overlappable_s": ov.window if ov else 0.0, "unhidden_s": head,
                          "hides_behind": ov.behind if ov else "nothing: on the critical path",
                          "unhidden": (ov.unhidden or "none") if ov else "every call"}, "assumption")
        window = win.compute if ov is None else ov.window
        need = Figure.of(volume / window if window > 0 else 0.0, "B/s", "bytes / compute time it could hide behind",
                         {"bytes": volume, "window_s": window}, "assumption")
        out.append(Collective(name, group, size, link, bfig, tfig, efig, need, algorithm=algo, span=where,
                              nodes=sp.nodes, message_bytes=parts[0][2], calls=calls, bus_bandwidth=bw,
                              latency_s=lat, limit=main.limit,
                              hides_behind=ov.behind if ov else "", unhidden_s=head if ov else exp))

    if lay.tp > 1:
        c = tensor_parallel_call(m, tr, lay.tp, lay.cp, lay.sp, b, lay.seq_len, L, mbs)
        add(c.name, "tp", c.size, c.stride, c.parts, c.formula, c.inputs,
            Overlap(win.compute, "the GEMMs (Transformer Engine userbuffers)") if prof.tp_comm_overlap else None)
    if lay.cp > 1:
        c = context_parallel_call(m, tr, lay.tp, lay.cp, b, lay.seq_len, L, mbs, prof.cp_comm)
        add(c.name, "cp", c.size, c.stride, c.parts, c.formula, c.inputs,
            Overlap(getattr(win, c.window), c.behind) if c.window else None)
    if lay.pp > 1:
        c = pipeline_call(m, lay.tp, lay.cp, lay.tp * lay.cp * lay.dp, lay.pp, lay.vp, lay.sp, b, lay.seq_len, mbs,
                          prof.pp_comm_overlap)
        add(c.name, "pp", c.size, c.stride, c.parts, c.formula, c.inputs,
            Overlap(getattr(win, c.window), c.behind) if c.window else None)
    if lay.ep > 1 and moe_layers_on_gpu > 0 and m.moe:
        c = expert_parallel_call(m, tr, lay.tp, lay.cp, lay.ep, lay.sp, b, lay.seq_len, moe_layers_on_gpu, mbs)
        add(c.name, "ep", c.size, c.stride, c.parts, c.formula, c.inputs, None)
    d = lay.dp * lay.cp
    if d > 1 and trainable_on_gpu > 0:
        calls = data_parallel_calls(tr, prof, lay.tp, lay.cp, lay.ep, d, lay.shard, lay.max_stage_layers,
                                    trainable_on_gpu, weights_on_gpu, grad_bytes, weight_bytes, expert_share, mbs)
        after = shared_window([(c.size, c.stride, c.window) for c in calls])
        left: list[float] = []  # compute still free after each call hid behind its window
        for c, prev in zip(calls, after, strict=True):
            chunked = win.chunks > 1 and c.window in ("last_backward", "first_forward")
            behind = _chunked_behind(c.window, win.chunks, min(lay.pp, mbs), prof.name) if chunked else c.behind
            window = (left[prev] if prev >= 0 else getattr(win, c.window)) if c.window else 0.0
            add(c.name, "dp", c.size, c.stride, c.parts, c.formula, c.inputs,
                Overlap(window, behind, c.unhidden) if c.window else None,
                win.chunks if chunked else 1)
            left.append(max(0.0, window - hidden(out[-1].time_s.value, out[-1].exposed_s.value)))
    return tuple(out)


def shared_window(sizes_strides_windows: list[tuple[int, int, str]]) -> list[int]:
    """For each data-parallel call, the index of the earlier call it shares its links and its compute window with
    (the same group, the same window), or -1. ZeRO-3's weight all-gathers and gradient reduce-scatters run on one
    NCCL communicator, one after another, while the same layers compute: the reduce-scatters hide only behind
    the compute the gathers left free. The estimate and the search's quick model both take these indices and give
    each call the compute its predecessor left free."""
    seen: dict[tuple[int, int, str], int] = {}
    out = []
    for j, key in enumerate(sizes_strides_windows):
        out.append(seen.get(key, -1) if key[2] else -1)
        if key[2]:
            seen[key] = j
    return out


def _chunked_behind(window: str, chunks: int, group: int, framework: str) -> str:
    """What an interleaved step's data-parallel reduction (gather) hides behind (module doc)."""
    if window == "last_backward":
        return (f"the other chunks' backwards of the last {group} micro-batches ({framework}, interleaved: each of "
                f"the {chunks} chunks' reductions starts after that chunk's last backward); the last chunk's share "
                "cannot hide")
    return (f"the next step's forwards of the other chunks ({framework}, interleaved: each of the {chunks} chunks' "
            "gathers is needed at that chunk's first forward); the first chunk's share cannot hide")


def _price(parts: tuple[tuple[Op, int, float], ...], sp, fabric) -> tuple[list, int, float, float, float]:
    """(each part's per-call cost, calls, bus volume, seconds, latency seconds) of ``parts`` —
    (operation, calls per step, bytes per call) — on the group ``sp``."""
    volume = t = lat = 0.0
    calls = 0
    costs = []
    for op, n_calls, msg in parts:
        c = collective(op, msg, sp, fabric)
        costs.append(c)
        calls += n_calls
        volume += n_calls * msg * bus_factor(op, sp.ranks)
        t += n_calls * c.seconds
        lat += n_calls * c.latency_s
    return costs, calls, volume, t, lat


@dataclass(frozen=True, slots=True)
class Call:
    """One data-parallel collective before it is priced: ``parts`` (operation, calls per step, bytes per
    call) on a group of ``size`` ranks ``stride`` apart; it hides behind the compute window named
    ``window`` (a field of ``Windows``; "" when it sits on the critical path), which ``behind`` describes;
    ``unhidden`` as in ``Overlap``."""

    name: str
    size: int
    stride: int
    parts: tuple[tuple[Op, int, float], ...]
    formula: str
    inputs: dict
    window: str
    behind: str = ""
    unhidden: str = ""


_ACT = 2.0  # bf16/fp16 activations on the wire


def _checkpointed_mlp_share(m: ModelSpec, tr: TrainingSettings) -> float:
    """Share of the blocks whose MLP runs its forward again under Megatron-Core's named-module recompute, with its
    tensor-parallel collective (one all-reduce, or one all-gather and one reduce-scatter): "mlp" checkpoints the
    dense layers' MLP, "moe" the MoE layers' (``recompute_modules``)."""
    if tr.recompute != "selective" or tr.recompute_modules == ("core_attn",):
        return 0.0
    moe = m.moe_layer_count / m.num_layers
    return ((1 - moe) if "mlp" in tr.recompute_modules else 0.0) + (moe if "moe" in tr.recompute_modules else 0.0)


def tensor_parallel_call(m: ModelSpec, tr: TrainingSettings, tp: int, cp: int, sp: bool, micro_batch: int,
                         seq_len: int, layers: int, micro_batches: int) -> Call:
    """Tensor parallelism's collectives: per block and micro-batch 2 all-reduces of the block's activations
    forward and 2 backward, 2 more when full recompute re-runs the forward (``selective_op``: its all-gathers
    or all-reduces only; Megatron-Core's mlp / moe modules: the MLP's one again, ``_checkpointed_mlp_share``); with sequence parallelism each is an all-gather plus a reduce-scatter. On the critical path unless the profile overlaps them with the
    GEMMs (the caller's ``Overlap``)."""
    # operator-level selective checkpointing keeps the reduce-scatter outputs but runs the all-gathers (and
    # all-reduces, which its save list does not name) again (``selective_op``)
    full = tr.recompute == "full"
    again = _checkpointed_mlp_share(m, tr)  # Megatron-Core's mlp / moe modules re-run the MLP's pair
    n_ar = 4 + (2 if full or tr.recompute == "selective_op" else 0) + again
    s_loc = seq_len / cp
    msg = s_loc * micro_batch * m.hidden_size * _ACT  # one block's activations: the all-reduce buffer
    calls = n_ar * layers * micro_batches  # a fraction where only some blocks' MLPs run again (search: per block)
    rs_calls = (4 + (2 if full else 0) + again) * layers * micro_batches
    parts: tuple[tuple[Op, int, float], ...] = (
        (("all-gather", calls, msg), ("reduce-scatter", rs_calls, msg)) if sp else (("all-reduce", calls, msg),))
    kind = "all-gather + reduce-scatter" if sp else "all-reduce"
    return Call(f"TP {kind} (per block)", tp, 1, parts, "n · 2(t-1)/t · s·b·h·2 B · blocks · micro-batches",
                {"n": n_ar, "t": tp, "s": s_loc, "b": micro_batch, "h": m.hidden_size, "blocks": layers,
                 "micro_batches": micro_batches}, "compute", "the GEMMs (Transformer Engine userbuffers)")


def pipeline_call(m: ModelSpec, tp: int, cp: int, stride: int, pp: int, vp: int, sp: bool, micro_batch: int,
                  seq_len: int, micro_batches: int, overlap: bool = False) -> Call:
    """Pipeline parallelism's sends: each micro-batch's activations forward and their gradient backward at
    each of the ``vp`` chunk boundaries of a rank, a tensor-parallel shard of them with sequence parallelism.
    On the critical path unless the profile sends asynchronously (``overlap``: ``pp_comm_overlap``, behind the
    stage's compute). ``stride``: tp·cp·dp, the distance between a PP group's ranks."""
    s_loc = seq_len / cp
    msg = s_loc * micro_batch * m.hidden_size * _ACT / (tp if sp else 1)
    return Call("PP send/receive of activations", pp, stride, (("p2p", 2 * vp * micro_batches, msg),),
                "2 (activation + gradient) · v · s·b·h·2 B / t_sp · micro-batches",
                {"v": vp, "s": s_loc, "b": micro_batch, "h": m.hidden_size, "micro_batches": micro_batches},
                "compute" if overlap else "", "the stage's compute (asynchronous point-to-point)" if overlap else "")


def expert_parallel_call(m: ModelSpec, tr: TrainingSettings, tp: int, cp: int, ep: int, sp: bool, micro_batch: int,
                         seq_len: int, moe_layers: float, micro_batches: int) -> Call:
    """Expert parallelism's all-to-alls: per MoE block and micro-batch, tokens to their experts and back,
    forward and backward (and again when full recompute re-runs the forward), each token k times.
    On the critical path."""
    k = m.moe.experts_per_token if m.moe else 1
    # full recompute, or Megatron-Core's "moe" module (the checkpointed MoE layer dispatches and combines again)
    n_a2a = 4 + (2 if tr.recompute == "full" or (tr.recompute == "selective" and "moe" in tr.recompute_modules)
                 else 0)
    msg = (seq_len / cp) * micro_batch * k * m.hidden_size * _ACT / (tp if sp else 1)
    calls = max(1, round(n_a2a * moe_layers * micro_batches))
    return Call("EP all-to-all of tokens", ep, tp * cp, (("all-to-all", calls, msg),),
                "n · (ep-1)/ep · s·b·k·h·2 B · MoE blocks · micro-batches",
                {"n": n_a2a, "ep": ep, "k": k, "moe_blocks": moe_layers, "micro_batches": micro_batches}, "")


def context_parallel_call(m: ModelSpec, tr: TrainingSettings, tp: int, cp: int, micro_batch: int, seq_len: int,
                          layers: int, micro_batches: int, cp_comm: str = "ring") -> Call:
    """The context-parallel ring exchange of K/V (ring attention), hidden behind the attention compute:
    per block and micro-batch, K and V forward, then K, V and their gradients backward (and K, V again
    when full recompute re-runs the forward), each a p2p send of this rank's K/V shard to the next.
    ``cp_comm = "all-gather"`` (the profile's; Llama 3, arXiv 2407.21783 §3.3.2): K/V (and recompute's) are
    all-gathered and their gradients reduce-scattered once, the same bytes, on the critical path."""
    kv = (m.num_kv_heads * m.head_dim if not m.mla else m.mla.kv_lora_rank + m.mla.qk_rope_head_dim)
    kv_tp = kv / (1 if m.mla else min(tp, m.num_kv_heads))
    passes = 3 + (1 if tr.recompute == "full" else 0)  # K,V forward; K,V and dK,dV backward
    msg = 2 * (seq_len / cp) * micro_batch * kv_tp * _ACT
    if cp_comm == "all-gather":
        gathers = passes - 1
        return Call("CP all-gather of K/V, reduce-scatter of their gradients", cp, tp,
                    (("all-gather", gathers * layers * micro_batches, msg * cp),
                     ("reduce-scatter", layers * micro_batches, msg * cp)),
                    "(cp-1)/cp · 2·s·b·kv_width·2 B · (gathers + 1 reduce-scatter) · blocks · micro-batches",
                    {"gathers": gathers, "cp": cp, "kv_width": kv_tp, "blocks": layers,
                     "micro_batches": micro_batches}, "")
    return Call("CP ring exchange of K/V", cp, tp, (("p2p", passes * (cp - 1) * layers * micro_batches, msg),),
                "passes · (cp-1) · 2·(s/cp)·b·kv_width·2 B · blocks · micro-batches",
                {"passes": passes, "cp": cp, "kv_width": kv_tp, "blocks": layers, "micro_batches": micro_batches},
                "attention", "the attention compute (ring attention)")


def call_time(c: Call, topo, fabric) -> tuple[float, float]:
    """(seconds per step, seconds of its first call) of ``c`` as the estimate prices it (``nccl``)."""
    costs, _calls, _volume, t, _lat = _price(c.parts, span(c.size, c.stride, topo), fabric)
    return t, costs[0].seconds


def data_parallel_times(topo, fabric, tr: TrainingSettings, prof: FrameworkProfile, tp: int, cp: int, ep: int,
                        d: int, shard: int, layers: int, trainable: float, weights: float, grad_bytes: float,
                        weight_bytes: float, expert_share: float) -> tuple[tuple[float, float, str, bool], ...]:
    """(seconds per step, seconds of its first call, window, whether one call cannot hide, the index of the earlier
    call whose compute window it shares (``shared_window``) or -1) of each
    data-parallel collective, priced as the estimate prices it (``data_parallel_calls`` on ``nccl``),
    before the compute windows are known: the search's quick model applies ``exposed`` to its rows.
    ``topo``: ``placement.topology`` of the cluster; ``fabric``: its node fabric. Priced for one
    micro-batch: under ZeRO-3 every call repeats each micro-batch (module doc), so the caller multiplies
    those seconds by its accumulation steps (the time is linear in the calls)."""
    if d <= 1 or trainable <= 0:
        return ()
    calls = data_parallel_calls(tr, prof, tp, cp, ep, d, shard, layers, trainable, weights, grad_bytes, weight_bytes,
                                expert_share)
    after = shared_window([(c.size, c.stride, c.window) for c in calls])
    return tuple((*call_time(c, topo, fabric), c.window, bool(c.unhidden), prev) for c, prev in zip(calls, after, strict=True))


def per_micro_batch(zero_stage: int, prof: FrameworkProfile) -> bool:
    """Whether the data-parallel collectives run per layer in every micro-batch (ZeRO-3, and FSDP's
    SHARD_GRAD_OP where the profile says ``fsdp_zero2``) rather than once a step in buckets (module doc)."""
    return zero_stage == 3 or (zero_stage == 2 and prof.fsdp_zero2)


def data_parallel_calls(tr: TrainingSettings, prof: FrameworkProfile, tp: int, cp: int, ep: int, d: int,
                        shard: int, layers: int, trainable: float, weights: float, grad_bytes: float,
                        weight_bytes: float, expert_share: float, micro_batches: int = 1) -> tuple[Call, ...]:
    """Gradient reduction (and, sharded, the weight all-gather) in the framework's buckets; ZeRO-3 per layer
    and micro-batch, its weights gathered in the compute dtype (module doc). ``d``: data-parallel ranks
    (dp·cp); ``shard``: the ZeRO/FSDP group; ``layers``: the slowest stage's; ``trainable``/``weights``:
    parameters on one GPU; ``micro_batches``: the step's accumulation steps."""
    out: list[Call] = []
    sharded = tr.zero_stage >= 1 or tr.distributed_optimizer
    grads = trainable * grad_bytes
    size = d if expert_share < 1 else max(1, d // ep)
    stride = tp if size == d else tp * cp * ep  # dp·cp groups sit just outside TP
    bucket_params = prof.dp_bucket_params or 0
    if bucket_params and prof.id == "megatron":
        bucket_params = max(bucket_params, 1_000_000 * d)  # Megatron: max(40M, 1M·dp) parameters
    layers = max(1, layers)
    per_layer = trainable / layers
    bucket = (bucket_params or per_layer) * grad_bytes
    unit = f"buckets of {bucket_params / 1e6:g}M parameters" if bucket_params else "one call per layer"
    reduce_window = "last_backward" if tr.overlap_grad_reduce else ""
    reduce_behind = (f"the last micro-batch's backward ({prof.name}: {unit}); the last bucket is ready only when "
                     "the backward ends")
    inputs = {"d": d, "trainable_params": trainable, "grad_bytes": grad_bytes,
              "bucket_params": bucket_params or per_layer}
    if not sharded:
        calls, msg = _buckets(grads, bucket)
        out.append(Call("DP gradient all-reduce", size, stride, (("all-reduce", calls, msg),),
                        "2(d-1)/d · gradient bytes, in buckets", inputs, reduce_window, reduce_behind, "last call"))
        return tuple(out)
    n = min(shard, size)
    per_layer_units = per_micro_batch(tr.zero_stage, prof)
    mb = max(1, micro_batches) if per_layer_units else 1
    if per_layer_units:  # FSDP / ZeRO-3: per layer and micro-batch, gathers prefetched, reduce-scatters overlapped
        w_layer = weights / layers * gathered_weight_bytes(tr.precision)
        passes = 2 if tr.zero_stage == 3 else 1  # SHARD_GRAD_OP keeps the forward's gathered weights for the backward
        out.append(Call("ZeRO-3 weight all-gather (forward and backward, per layer)" if passes == 2
                        else "FSDP SHARD_GRAD_OP weight all-gather (forward, per layer)", n, stride,
                        (("all-gather", passes * layers * mb, w_layer),),
                        f"{passes} · (n-1)/n · weight bytes (compute dtype), one call per layer, pass and micro-batch",
                        {"n": n, "params": weights, "layers": layers, "micro_batches": mb}, "compute",
                        f"the previous layer's forward/backward ({prof.name} prefetches "
                        + (f"up to {prof.prefetch_params / 1e6:g}M parameters" if prof.prefetch_params
                           else "the next layer")
                        + " ahead); the first layer's gather has nothing to hide behind", "first call"))
        out.append(Call(f"{'ZeRO-3' if passes == 2 else 'FSDP SHARD_GRAD_OP'} gradient reduce-scatter (per layer)", n, stride,
                        (("reduce-scatter", layers * mb, per_layer * grad_bytes),),
                        "(n-1)/n · gradient bytes, one call per layer and micro-batch",
                        {**inputs, "n": n, "micro_batches": mb},
                        "compute" if tr.overlap_grad_reduce else "",
                        f"the backward of the layers below ({prof.name}: one call per layer), in the compute the "
                        "weight gathers on the same links leave free; the last layer's reduce-scatter is exposed",
                        "last call"))
    else:
        calls, msg = _buckets(grads, bucket)
        out.append(Call("DP gradient reduce-scatter", n, stride, (("reduce-scatter", calls, msg),),
                        "(n-1)/n · gradient bytes, in buckets, n = sharding group", {**inputs, "n": n},
                        reduce_window, reduce_behind, "last call"))
        wcalls, wmsg = _buckets(trainable * weight_bytes, (bucket_params or per_layer) * weight_bytes)
        out.append(Call("DP weight all-gather after the optimizer step", n, stride, (("all-gather", wcalls, wmsg),),
                        "(n-1)/n · weight bytes, in buckets", {"n": n, "params": trainable,
                                                                "weight_bytes": weight_bytes},
                        "first_forward" if prof.overlap_param_gather else "",
                        f"the next step's first forward ({prof.name}: {unit}); the first bucket is needed before "
                        "the first layer runs", "first call"))
    replicas = size // n
    if replicas > 1:  # hybrid sharding: the shards are all-reduced across the replicas (ZeRO-3: each micro-batch)
        calls, msg = _buckets(grads / n, bucket / n)
        out.append(Call("DP all-reduce of gradient shards across replicas (hybrid sharding)", replicas, stride * n,
                        (("all-reduce", calls * mb, msg),), "2(r-1)/r · gradient bytes / n", {"r": replicas, "n": n},
                        reduce_window, reduce_behind, "last call"))
    return tuple(out)
