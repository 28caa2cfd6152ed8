"""The search's quick model: memory and step time of many layouts at once, with NumPy.

Every candidate is a row of integer arrays (tp, pp, vp, dp, cp, ep, zero, offload, recompute,
micro-batch, accumulation steps). Nothing here is a formula of its own: every term is the training
engine's function, evaluated once per distinct per-GPU shape or group and spread over the rows, so
thousands of layouts cost milliseconds and each agrees with ``llmplan.core.engine.estimate`` of that
layout (the sync tests: to rounding). The full engine still re-estimates the short list.

Memory (``quick_memory.py``): the worst-loaded pipeline stage's model states, activations, buffers and
overhead from the engine's ``states``, ``activations`` and ``memory`` on arrays; eager-kernel profiles
(Hugging Face, torchtune, unsloth) the engine's per-phase peak with the fine-tuning switches' terms, once
per distinct layout (``quick_memory.eager_stage_memory``).

Time per step, composed as the estimate composes it (Narayanan et al. 2021, §3): (m + (pp-1)/v)
micro-batch slots of the slowest stage (the engine's split), each its compute (``timing.layer_and_head``)
plus its share of the exposed TP, CP, PP and EP traffic; then the exposed data-parallel collectives, the
gradient clipping and the optimizer's pass or the offload path, and (eager profiles) the host transfers
(``switches.host_transfer_time``). The traffic, optimizer and offload terms are in ``quick_time.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmplan.core.framework_profile import DEFAULT_PROFILE, FrameworkProfile, in_effect
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.params import count_params
from llmplan.core.search.quick_memory import RECOMPUTE_NAMES, eager_stage_memory, stage_memory
from llmplan.core.search.quick_time import (
    clip_seconds,
    context_parallel_seconds,
    data_parallel_seconds,
    deepspeed_rows,
    distinct_rows,
    inner_seconds,
    last_stage_layers,
    offload_seconds,
    optimizer_seconds,
)
from llmplan.core.search.shape import ModelShape
from llmplan.core.training import timing
from llmplan.core.training.flops import step_flops, token_flops
from llmplan.core.training.lora import adapter_params
from llmplan.core.training.memory import phase_memory
from llmplan.core.training.ops import casts_weights, fsdp_cast_shard
from llmplan.core.training.recompute_modules import named
from llmplan.core.training.switches import host_transfer_time, largest_tensor
from llmplan.core.workload import TrainingSettings


@dataclass(frozen=True, slots=True)
class Columns:
    """One candidate layout per row."""

    tp: np.ndarray
    pp: np.ndarray
    vp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    zero: np.ndarray
    offload: np.ndarray  # 0 none, 1 cpu
    recompute: np.ndarray  # 0 none, 1 selective, 2 full, 3 selective_op (quick_memory.RECOMPUTE_NAMES)
    mb: np.ndarray
    accum: np.ndarray

    def __len__(self) -> int:
        return int(self.tp.shape[0])

    def take(self, idx: np.ndarray) -> Columns:
        return Columns(*(getattr(self, f)[idx] for f in self.__slots__))


@dataclass(frozen=True, slots=True)
class QuickResult:
    memory: np.ndarray  # bytes per GPU
    weights: np.ndarray  # the GPU's own share (ZeRO-3: its shard; the gathered layers are in ``memory``)
    grads: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    step_time: np.ndarray  # s
    compute: np.ndarray  # s of model compute in a step (no bubble, no recomputation)
    bubble: np.ndarray  # s lost to the pipeline fill and drain
    tp_comm: np.ndarray  # s of exposed tensor/context-parallel traffic
    pp_comm: np.ndarray
    dp_comm: np.ndarray  # s of exposed data-parallel traffic
    ep_comm: np.ndarray
    recompute: np.ndarray  # s spent recomputing activations
    optimizer_time: np.ndarray  # s of the optimizer step (or offload path) and the gradient clipping before it
    tokens_per_step: np.ndarray
    model_flops: np.ndarray  # per step, all GPUs

    @property
    def tokens_per_s(self) -> np.ndarray:
        return self.tokens_per_step / self.step_time


def evaluate(c: Columns, s: ModelShape, cluster: ClusterSpec, t: TrainingSettings, eff: Efficiency,
             sequence_parallel: bool = True, prof: FrameworkProfile | None = None) -> QuickResult:
    # one default object for every batch of a search: the data-parallel price cache is keyed by the objects'
    # identity (quick_time._dp_prices), so a fresh FrameworkProfile() per batch would price every group again
    prof = prof if prof is not None else DEFAULT_PROFILE
    f = np.float64
    pp, vp, dp = (x.astype(f) for x in (c.pp, c.vp, c.dp))
    mb, m = c.mb.astype(f), c.accum.astype(f)
    seq = float(t.seq_len)

    # ---- memory: the training engine's own functions, on arrays (quick_memory.py) ----------------
    # eager-kernel profiles: the engine's phase peak with the switches' terms, per distinct layout
    eager = (eager_stage_memory(s.spec, t, prof, cluster, c, sequence_parallel)
             if prof is not None and phase_memory(prof) else None)
    sm = eager.memory if eager is not None else stage_memory(
        s.spec, t, c.tp, c.pp, c.vp, c.dp, c.cp, c.ep, c.zero, c.offload, c.recompute, c.mb, c.accum,
        sequence_parallel, prof)
    memory, weights, grads, opt, acts = sm.total, sm.weights, sm.grads, sm.optimizer, sm.activations

    zero = c.zero
    # the engine's FLOPs per token (``flops.token_flops``): model FLOPs for MFU, attention's share for CP
    pb = count_params(s.spec)
    adapters = 0.0 if t.method == "full" else adapter_params(pb, s.spec, None, t)
    tf = token_flops(s.spec, pb, t.seq_len, adapters)

    # ---- time ------------------------------------------------------------------------------------
    # the engine's per-operation model (timing.layer_and_head), once per distinct per-GPU shape
    t_compute_mb, t_recompute_mb, pace = _op_times(s.spec, t, prof, cluster, eff, c, sequence_parallel)

    # TP, CP, PP and EP traffic per step, as the engine prices and hides it (quick_time.py); it stretches
    # with the compute by the bubble, as in the estimate ((compute + exposed inner traffic) × (1 + bubble))
    t_tp, t_pp, t_ep = inner_seconds(c, s.spec, cluster, eff, t, prof, sequence_parallel, t_compute_mb, m)
    t_cp = context_parallel_seconds(c, s.spec, cluster, eff, t, prof, t_compute_mb, m,
                                    tf.attention / tf.forward if tf.forward else 0.0)
    slots = m + (pp - 1) / vp
    slot = t_compute_mb + (t_tp + t_cp + t_pp + t_ep) / m
    compute = m * (t_compute_mb - t_recompute_mb)  # recomputation is reported apart
    # the fill and drain slots are the other stages' (timing.fill_pace); no bubble, even where a row is priced infinite
    bubble = np.where(slots > m, (slots - m) * slot * pace, 0.0)

    t_dp = data_parallel_seconds(sm, c, s.spec, cluster, eff, t, prof, t_compute_mb, m)

    # the optimizer's pass or the offload path, with the gradient clipping before the step (0 on offload rows)
    t_opt = np.where(c.offload == 1, offload_seconds(sm, c, t, cluster, eff, t_compute_mb, m, prof,
                                                   largest_tensor(pb)),
                     optimizer_seconds(sm, zero, t, cluster, eff, prof)) + clip_seconds(sm, c, s.spec, t, prof, cluster, eff)

    step = m * slot + bubble + t_dp + t_opt
    if eager is not None:  # activation offload and paged optimizer states cross PCIe (the engine's own term)
        pcie = 0.0 if cluster.gpu.unified_memory else cluster.gpu.pcie_bandwidth * eff.pcie
        host_s, _ = host_transfer_time(eager.host_activations * m, eager.paged_host, pcie, m * t_compute_mb)
        step = step + host_s
    tokens_step = mb * m * dp * seq
    model_flops = tokens_step * step_flops(tf, 1.0, t).model  # the estimate's model FLOPs (PaLM MFU: no recompute)
    return QuickResult(
        memory=memory, weights=weights, grads=grads, optimizer=opt, activations=acts, step_time=step,
        compute=compute, bubble=bubble, tp_comm=t_tp + t_cp, pp_comm=t_pp, dp_comm=t_dp,
        ep_comm=t_ep, recompute=m * t_recompute_mb, optimizer_time=t_opt, tokens_per_step=tokens_step,
        model_flops=model_flops,
    )


def _op_times(m, t: TrainingSettings, prof: FrameworkProfile | None, cluster: ClusterSpec, eff: Efficiency,
              c: Columns, sequence_parallel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seconds per micro-batch on the slowest stage, the recomputed part of them, and ``timing.fill_pace``,
    from the engine's own per-operation model: every distinct (tp, cp, ep, micro-batch, recompute) is priced
    once by ``timing.layer_and_head``, then composed over the rows as the engine composes it
    (``timing._micro_batch``: the last stage's blocks + the head and loss, or the fullest other stage's
    blocks, whichever is slower; never faster than the host issues its kernels)."""
    base = prof or FrameworkProfile()
    r, _ = timing.rates(cluster.gpu, eff, t.precision)  # a dtype the GPU cannot train in: its InputError says so
    # the ZeRO stage matters where the profile hands ZeRO to DeepSpeed (``framework_profile.in_effect``) and where
    # the weights are gathered per micro-batch (``comms.per_micro_batch``: FSDP's weight casts, fp8's sharded casts)
    d = c.dp * c.cp
    # only where a per-micro-batch gather changes the block's ops: fp32 weights cast per gather, or fp8's casts;
    # elsewhere one key per (tp, cp, ep, mb, recompute) keeps the search's per-operation pricing to a few hundred
    casts = casts_weights(t, base)
    gathered = ((c.zero == 3) | ((c.zero == 2) & base.fsdp_zero2)) & (casts or t.precision == "fp8")
    zero = np.where(gathered, c.zero, 0)
    if base.zero_engine == "deepspeed":  # ``framework_profile.deepspeed_stage`` on the rows
        zero = np.where(deepspeed_rows(base, c), c.zero, 0)
    # the sharding group each gather casts its shard of (``ops.fsdp_cast_shard``; the layout's min(shard, dp·cp))
    shard = np.where(gathered & casts, np.minimum(t.shard_group, d) if t.shard_group else d, 0)
    keys = np.stack([c.tp, c.cp, c.ep, c.mb, c.recompute, zero, shard], axis=1)
    first, inverse = distinct_rows(keys)
    per_key = np.zeros((len(first), 7))  # layer GPU, layer host, head GPU, head host, recomputed, embedding GPU, host
    for k, (tp, cp, ep, mb, rc, z, n) in enumerate(keys[first].tolist()):
        prof = in_effect(base, int(z))
        kv_rep = m.mla is None and tp > 1 and m.num_kv_heads % tp != 0
        tr = t.model_copy(update={"recompute": RECOMPUTE_NAMES[int(rc)], "micro_batch": int(mb), "zero_stage": int(z)})
        shape = timing.OpShape(int(tp), int(cp), int(ep), int(mb), t.seq_len, bool(sequence_parallel and tp > 1),
                               bool(kv_rep), fsdp_cast_shard(tr, prof, int(n)))
        fwd, rest, head = timing.layer_and_head(m, shape, tr, prof, r)
        layer = fwd + rest
        emb = timing.embedding_time(m, shape, tr, prof, r)
        per_key[k] = (layer.gpu, layer.host(prof), head.gpu, head.host(prof),
                      _recomputed(m, shape, tr, prof, r, fwd, rest, int(rc)), emb.gpu, emb.host(prof))
    layer_gpu, layer_host, head_gpu, head_host, rec, emb_gpu, emb_host = (per_key[inverse, i] for i in range(7))
    one = c.pp == 1  # the embedding with the head where one stage holds the whole model (timing._micro_batch)
    head_gpu, head_host = head_gpu + np.where(one, emb_gpu, 0.0), head_host + np.where(one, emb_host, 0.0)
    last, before = (x.astype(np.float64) for x in last_stage_layers(m.num_layers, c.pp, c.vp))
    last_gpu, other_gpu = last * layer_gpu + head_gpu, before * layer_gpu
    on_last = (c.pp == 1) | (last_gpu >= other_gpu)
    gpu = np.where(on_last, last_gpu, other_gpu)
    host = np.where(on_last, last * layer_host + head_host, before * layer_host)
    pace = timing.fill_pace(m.num_layers * layer_gpu + head_gpu, gpu, c.pp)
    return np.maximum(gpu, host), np.where(on_last, last, before) * rec, pace


def _recomputed(m, shape, tr: TrainingSettings, prof, r, fwd, rest, rc: int) -> float:
    """GPU seconds per layer and micro-batch spent recomputing (reported apart from the model's compute):
    full recompute re-runs the forward; selective the attention core without flash attention;
    ``selective_op`` what its backward runs beyond the plain backward's (``RECOMPUTE_NAMES``)."""
    if rc == 1 and not named(tr):
        return fwd.attention if not tr.flash_attention else 0.0
    if rc in (1, 2, 3):  # full: the forward again (under FSDP without its weight casts, ``timing.layer_and_head``);
        # Megatron-Core's named modules: what recompute_modules.recompute_time adds (timing._full_clock)
        return rest.gpu - timing.layer_and_head(m, shape, tr.model_copy(update={"recompute": "none"}), prof, r)[1].gpu
    return 0.0
