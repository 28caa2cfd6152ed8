"""The search's quick model: memory and step time of many layouts at once, with NumPy.

Every candidate is a row of integer arrays (tp, pp, vp, dp, cp, ep, zero, offload,
recompute, micro-batch, accumulation steps). The formulas are the published ones, kept
first-order so thousands of layouts cost milliseconds; the full engine
(``llmplan.core.engine``) then re-estimates the short list.

Memory (bytes per GPU, worst pipeline stage):
- model states: weights, gradients, Adam moments and fp32 master weights, divided by
  ZeRO stage over the data-parallel (× context-parallel) group (Rajbhandari et al. 2020, §5);
  ZeRO-3 also holds two gathered layers (the one in use and the prefetched next one);
- activations per layer per token: the Korthikanti et al. (2022, Table 2) count
  generalised to GQA and gated MLPs, divided by TP with sequence parallelism; full
  recompute keeps only each layer's input; 1F1B keeps min(pp, m) micro-batches in
  flight on the first stage, interleaving adds (pp-1)/(pp·v) (§4.2.3);
- the stages that can be the worst are sized with their own layer counts under the
  engine's split rule (uneven splits put the extra layers on the middle stages): the
  first (embedding, most in flight), the earliest middle stage with the most layers,
  and the last (head, logits).
Time per step (Narayanan et al. 2021, §3): (m + (pp-1)/v) micro-batch slots of the
slowest stage (⌈L/pp⌉ layers: an uneven split costs time), each its FLOPs at the achievable matmul rate plus its exposed TP and
PP traffic; then the gradient reduction not hidden behind the last backward pass
(NCCL ring volumes 2(n-1)/n), the expert all-to-alls, and the optimizer update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.search.offload import offload_seconds
from llmplan.core.search.shape import ModelShape
from llmplan.core.workload import TrainingSettings

OVERHEAD_BYTES = 1.5 * 2**30  # CUDA context, NCCL and allocator reserve (assumption, typical PyTorch)
_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 2}  # fp8 training keeps bf16 weights (Transformer Engine)
# fp32 Adam state bytes per trainable param (moments), before the fp32 master copy
_OPT_STATE = {"sgd": 0, "momentum": 4, "adamw": 8, "adam8bit": 2, "adafactor": 0.1, "lion": 4, "muon": 4}
_RECOMPUTE = {"none": 0, "selective": 1, "full": 2}


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
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
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
    optimizer_time: np.ndarray
    tokens_per_step: np.ndarray
    model_flops: np.ndarray  # per step, all GPUs

    @property
    def tokens_per_s(self) -> np.ndarray:
        return self.tokens_per_step / self.step_time


def evaluate(c: Columns, s: ModelShape, cluster: ClusterSpec, t: TrainingSettings, eff: Efficiency,
             sequence_parallel: bool = True) -> QuickResult:
    f = np.float64
    dropout = float(getattr(t, "dropout", 0.0)) > 0  # a field the training engine adds
    overlap = bool(getattr(t, "overlap_grad_reduce", True))
    tp, pp, vp, dp, cp, ep = (x.astype(f) for x in (c.tp, c.pp, c.vp, c.dp, c.cp, c.ep))
    mb, m = c.mb.astype(f), c.accum.astype(f)
    L, h, seq = s.layers, float(s.hidden), float(t.seq_len)
    gpn = cluster.gpus_per_node
    stage_layers = np.ceil(L / pp)
    wbytes = _BYTES[t.precision]

    # ---- model states ------------------------------------------------------------------------
    per_layer = s.layer_split / tp + s.layer_replicated + s.layer_expert / (ep * tp)
    first = s.first_split / tp + s.first_replicated
    last = s.last_split / tp + s.last_replicated + (s.first_split / tp if s.tied else 0.0)
    ends = np.where(pp == 1, first + s.last_split / tp + s.last_replicated, np.maximum(first, last))
    stage_params = stage_layers * per_layer + ends  # the slowest stage, with the heavier end (for time)
    shard = dp * cp
    zero = c.zero
    frozen_bytes = 0.5625 if t.method == "qlora" else wbytes  # NF4 + double-quantised scales (QLoRA §3)
    grad_b = 4.0 if (t.fp32_grad_accumulation or t.precision == "fp32") else 2.0
    master = 0.0 if t.precision == "fp32" else 4.0

    def states(params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Weights, gradients and optimizer bytes of ``params`` parameters on one GPU."""
        trainable = params * (s.trainable_params / s.total_params)
        weights = params * (wbytes if t.method == "full" else frozen_bytes)
        if t.method != "full":
            weights = weights + trainable * 2
        weights = np.where(zero >= 3, weights / shard, weights)
        grads = np.where(zero >= 2, trainable * grad_b / shard, trainable * grad_b)
        opt = trainable * (_OPT_STATE[t.optimizer] + master)
        opt = np.where(zero >= 1, opt / shard, opt)
        return weights, grads, np.where(c.offload == 1, 0.0, opt)

    trainable = stage_params * (s.trainable_params / s.total_params)

    # ---- activations ---------------------------------------------------------------------------
    q, kv = float(s.q_width), float(s.kv_width)
    split_part = 2 * q + 4 * kv + 2 * q + 2 * s.mlp_act_width  # q, k, v, context, MLP internals (bf16)
    repl_part = 4 * h + 2 * h + 2 * h + (2 * h if dropout else 0)  # norm inputs, GEMM inputs, masks
    sp = sequence_parallel
    per_token = np.where(sp | (tp == 1), (split_part + repl_part) / tp, split_part / tp + repl_part)
    span = _span(s, seq)
    if not t.flash_attention:
        # softmax output 2·a·s per token (bf16); with dropout also its 1-byte mask and output (5·a·s)
        score_bytes = (5.0 if dropout else 2.0) * s.heads * span
        per_token = per_token + np.where(c.recompute == 0, score_bytes / tp, 0.0)
    per_token = np.where(c.recompute == 2, 2 * h / np.where(sp, tp, 1.0), per_token)
    tokens_mb = mb * seq / cp
    logits = 6.0 * tokens_mb * s.vocab / tp  # fp32 logits + bf16 copy on the last stage

    # ---- the stages that can be the worst-loaded (split rule of llmplan.core.training.stages:
    # ⌊L/p⌋ layers each, the remainder one each to the middle stages from p-2 down, then the last)
    base = np.floor(L / pp)
    extra = L - base * pp
    r_mid = np.minimum(extra, np.maximum(pp - 2, 0))
    mid_stage = np.where(r_mid > 0, pp - 1 - r_mid, 1.0)  # the earliest middle stage with the most layers
    candidates = (  # (layers, parameters besides the blocks, stage index, logits)
        (base, np.where(pp == 1, ends, first), 0.0, np.where(pp == 1, logits, 0.0)),
        (base + (r_mid > 0), 0.0, mid_stage, 0.0),
        (base + ((extra == pp - 1) & (pp > 1)), last, pp - 1, logits),
    )
    memory = weights = grads = opt = acts = None
    for k, (n, own, stage, head) in enumerate(candidates):
        w, g, o = states(n * per_layer + own)
        held = n * _in_flight(pp, vp, m, stage)  # layers × micro-batches of activations
        if k == 0:  # interleaved: p·v + p - 1 chunk passes = every chunk p times + chunk 0 (the smallest) p-1 times
            held = np.where(vp > 1, pp * n + (pp - 1) * np.floor(n / vp), held)
        a = held * per_token * tokens_mb + head
        total = w + g + o + a
        if k == 1:
            total = np.where(pp >= 3, total, 0.0)  # no middle stage
        if memory is None:
            memory, weights, grads, opt, acts = total, w, g, o, a
        else:
            worse = total > memory
            memory = np.where(worse, total, memory)
            weights, grads = np.where(worse, w, weights), np.where(worse, g, grads)
            opt, acts = np.where(worse, o, opt), np.where(worse, a, acts)
    # ZeRO-3 gathers each layer's full (TP-sharded) weights before using it, and prefetches the next
    gather = np.where(zero >= 3, 2 * per_layer * wbytes, 0.0)
    memory = memory + gather + OVERHEAD_BYTES

    # ---- time ------------------------------------------------------------------------------------
    peak = cluster.gpu.peak_flops.for_dtype(t.precision) * eff.matmul
    attn_fwd = 4.0 * span * q  # QK^T and AV per token per layer (Narayanan et al. eq. 3, no causal halving)
    layer_fwd = 2.0 * s.layer_active_matmul + attn_fwd
    logit_fwd = 2.0 * h * s.vocab
    passes = 3.0 if t.method == "full" else 2.0  # frozen weights need no weight gradient
    extra = np.select([c.recompute == 2, c.recompute == 1], [layer_fwd, attn_fwd * (not t.flash_attention)], 0.0)
    stage_flops_tok = stage_layers * (passes * layer_fwd + extra) + passes * logit_fwd * (pp == 1)
    last_stage_extra = passes * logit_fwd * (pp > 1)
    t_compute_mb = (stage_flops_tok + last_stage_extra) * tokens_mb / (tp * peak)
    t_recompute_mb = stage_layers * extra * tokens_mb / (tp * peak)

    intra = cluster.intra_bandwidth * eff.intra_node
    inter = max(cluster.network.bandwidth_per_gpu * eff.network, 1.0)
    act_bytes = tokens_mb * h * 2
    n_tp_coll = 4 + 2 * (c.recompute == 2)
    t_tp_mb = stage_layers * n_tp_coll * 2 * (tp - 1) / tp * act_bytes / intra
    cp_bw = np.where(tp * cp > gpn, inter, intra)
    cp_bytes = stage_layers * 3 * (cp - 1) * tokens_mb * 2 * kv * 2 / tp
    t_cp_mb = np.maximum(0.0, cp_bytes / cp_bw - stage_layers * passes * attn_fwd * tokens_mb / (tp * peak))
    pp_bw = np.where(tp * cp * dp >= gpn, inter, intra)
    t_pp_mb = np.where(pp > 1, 2 * vp * act_bytes / tp / pp_bw, 0.0)
    slots = m + (pp - 1) / vp
    slot = t_compute_mb + t_tp_mb + t_cp_mb + t_pp_mb
    compute = m * (t_compute_mb - t_recompute_mb)  # recomputation is reported apart
    bubble = (slots - m) * slot

    dp_bw = np.where(tp * cp * dp > gpn, inter, intra)
    ring = 2 * (shard - 1) / shard
    t_grads = ring * trainable * grad_b / dp_bw
    window = (2.0 / 3.0) * t_compute_mb if overlap else 0.0
    t_dp = np.maximum(0.0, t_grads - window)
    t_gather = np.where(zero >= 3, 1.5 * ring * stage_params * wbytes / dp_bw * m, 0.0)
    t_dp = t_dp + np.maximum(0.0, t_gather - m * slot)

    moe_layers = stage_layers * s.moe_layer_fraction
    ep_bw = np.where(tp * ep > gpn, inter, intra)
    a2a = moe_layers * 4 * (ep - 1) / ep * tokens_mb * s.experts_per_token * h * 2 / tp / ep_bw
    t_ep = m * a2a

    upd_bytes = trainable * (2 * (_OPT_STATE[t.optimizer] + master) + grad_b + wbytes)
    upd_bytes = np.where(zero >= 1, upd_bytes / shard, upd_bytes)
    bw_mem = cluster.gpu.memory_bandwidth * eff.memory_bandwidth
    t_off = offload_seconds(trainable, stage_params, shard, zero, tp * pp * dp * cp, m, t_compute_mb, c.recompute,
                            _OPT_STATE[t.optimizer], grad_b, wbytes, cluster, eff, t)  # search/offload.py
    t_opt = np.where(c.offload == 1, t_off, upd_bytes / bw_mem)

    step = m * slot + bubble + t_dp + t_ep + t_opt
    tokens_step = mb * m * dp * seq
    model_flops = tokens_step * passes * (L * layer_fwd + logit_fwd)  # PaLM MFU: no recompute
    return QuickResult(
        memory=memory, weights=weights, grads=grads, optimizer=opt, activations=acts, step_time=step,
        compute=compute, bubble=bubble, tp_comm=m * (t_tp_mb + t_cp_mb), pp_comm=m * t_pp_mb, dp_comm=t_dp,
        ep_comm=t_ep, recompute=m * t_recompute_mb, optimizer_time=t_opt, tokens_per_step=tokens_step,
        model_flops=model_flops,
    )


def _in_flight(pp: np.ndarray, vp: np.ndarray, m: np.ndarray, stage: np.ndarray | float) -> np.ndarray:
    """Micro-batches of activations stage ``stage`` holds at its peak: min(m, p-s) for 1F1B;
    (2·(p-s-1) + (v-1)·p + 1)/v chunk passes interleaved (Megatron's warm-up; p·(1 + (p-1)/(p·v))
    on the first stage, Korthikanti et al. 2022 §4.2.3)."""
    one_f_one_b = np.minimum(m, pp - stage)
    interleaved = (2 * (pp - stage - 1) + (vp - 1) * pp + 1) / vp
    return np.where(pp == 1, 1.0, np.where(vp > 1, interleaved, one_f_one_b))


def _span(s: ModelShape, seq: float) -> float:
    """Keys a query attends to, averaged over layers (sliding-window layers see at most the window)."""
    if not s.sliding_window:
        return seq
    return (1 - s.sliding_fraction) * seq + s.sliding_fraction * min(seq, float(s.sliding_window))
