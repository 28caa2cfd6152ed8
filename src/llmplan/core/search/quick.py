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
  and the last (head, logits);
- eager-kernel profiles (Hugging Face, torchtune, unsloth): the engine's phase peak with the fine-tuning
  switches' terms, once per distinct layout (``quick_memory.eager_stage_memory``); their step time adds
  the engine's PCIe term for activation offload and paged optimizer states (``switches.host_transfer_time``).
Time per step (Narayanan et al. 2021, §3): (m + (pp-1)/v) micro-batch slots of the
slowest stage (⌈L/pp⌉ layers: an uneven split costs time), each its FLOPs at the achievable matmul rate plus its exposed TP and
PP traffic; then the gradient reduction not hidden behind the last backward pass
(NCCL ring volumes 2(n-1)/n), the expert all-to-alls, and the optimizer update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmplan.core import bytes_per_param as facts
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.search.offload import offload_seconds
from llmplan.core.search.quick_memory import RECOMPUTE_NAMES, eager_stage_memory, stage_memory
from llmplan.core.search.shape import ModelShape
from llmplan.core.training import timing
from llmplan.core.training.nccl import latency_array, ramp_array
from llmplan.core.training.placement import bus_bandwidth
from llmplan.core.training.switches import host_transfer_time
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
    optimizer_time: np.ndarray
    tokens_per_step: np.ndarray
    model_flops: np.ndarray  # per step, all GPUs

    @property
    def tokens_per_s(self) -> np.ndarray:
        return self.tokens_per_step / self.step_time


def evaluate(c: Columns, s: ModelShape, cluster: ClusterSpec, t: TrainingSettings, eff: Efficiency,
             sequence_parallel: bool = True, prof: FrameworkProfile | None = None) -> QuickResult:
    f = np.float64
    overlap = bool(getattr(t, "overlap_grad_reduce", True))
    tp, pp, vp, dp, cp, ep = (x.astype(f) for x in (c.tp, c.pp, c.vp, c.dp, c.cp, c.ep))
    mb, m = c.mb.astype(f), c.accum.astype(f)
    L, h, seq = s.layers, float(s.hidden), float(t.seq_len)
    gpn = cluster.gpus_per_node
    stage_layers = np.ceil(L / pp)
    wbytes = facts.weight_bytes(t.precision)

    # ---- memory: the training engine's own functions, on arrays (quick_memory.py) ----------------
    # eager-kernel profiles: the engine's phase peak with the switches' terms, per distinct layout
    eager = (eager_stage_memory(s.spec, t, prof, cluster, c, sequence_parallel)
             if prof is not None and prof.kernels != "fused" else None)
    sm = eager.memory if eager is not None else stage_memory(
        s.spec, t, c.tp, c.pp, c.vp, c.dp, c.cp, c.ep, c.zero, c.offload, c.recompute, c.mb, c.accum,
        sequence_parallel, prof)
    memory, weights, grads, opt, acts = sm.total, sm.weights, sm.grads, sm.optimizer, sm.activations

    # ---- the slowest stage's parameters, for the time terms ---------------------------------------
    per_layer = s.layer_split / tp + s.layer_replicated + s.layer_expert / (ep * tp)
    first = s.first_split / tp + s.first_replicated
    last = s.last_split / tp + s.last_replicated + (s.first_split / tp if s.tied else 0.0)
    ends = np.where(pp == 1, first + s.last_split / tp + s.last_replicated, np.maximum(first, last))
    stage_params = stage_layers * per_layer + ends  # the slowest stage, with the heavier end (for time)
    shard = dp * cp
    zero = c.zero
    grad_b = facts.grad_bytes(t.precision, t.fp32_grad_accumulation)
    master = facts.master_bytes(t.precision)
    trainable = stage_params * (s.trainable_params / s.total_params)
    q, kv = float(s.q_width), float(s.kv_width)
    span = _span(s, seq)
    tokens_mb = mb * seq / cp

    # ---- time ------------------------------------------------------------------------------------
    attn_fwd = 4.0 * span * q  # QK^T and AV per token per layer (Narayanan et al. eq. 3, no causal halving)
    layer_fwd = 2.0 * s.layer_active_matmul + attn_fwd
    logit_fwd = 2.0 * h * s.vocab
    passes = 3.0 if t.method == "full" else 2.0  # frozen weights need no weight gradient
    # the engine's per-operation model (timing.layer_and_head), once per distinct per-GPU shape
    t_compute_mb, t_recompute_mb, peak = _op_times(s.spec, t, prof, cluster, eff, c, sequence_parallel,
                                                   stage_layers, pp)

    # Group bandwidths from the engine's placement (Megatron order tp, cp, dp, pp; NICs shared per node)
    tp_bw = bus_bandwidth(tp, 1, cluster, eff)
    act_bytes = tokens_mb * h * 2
    n_tp_coll = 4 + 2 * (c.recompute == 2) + (c.recompute == 3)  # selective_op: all-gathers again, not the RS
    tp_bw = np.where(tp <= gpn, tp_bw * ramp_array(cluster.fabric, act_bytes), tp_bw)  # message-size ramp
    tp_nodes = np.ceil(tp / gpn)
    t_tp_lat = stage_layers * n_tp_coll * latency_array("all-reduce", tp, np.minimum(tp, gpn), tp_nodes)
    t_tp_mb = stage_layers * n_tp_coll * 2 * (tp - 1) / tp * act_bytes / tp_bw + t_tp_lat
    cp_bw = bus_bandwidth(cp, tp, cluster, eff, p2p=True)
    cp_bytes = stage_layers * 3 * (cp - 1) * tokens_mb * 2 * kv * 2 / tp
    profile = prof or FrameworkProfile()
    # ring CP hides behind the attention; all-gather CP (profile.cp_comm) is on the critical path (comms.py)
    hidden_cp = 0.0 if profile.cp_comm == "all-gather" else stage_layers * passes * attn_fwd * tokens_mb / (tp * peak)
    t_cp_mb = np.maximum(0.0, cp_bytes / cp_bw - hidden_cp)
    pp_bw = bus_bandwidth(pp, tp * cp * dp, cluster, eff, p2p=True)
    t_pp_mb = np.where(pp > 1, 2 * vp * act_bytes / tp / pp_bw, 0.0)
    if profile.pp_comm_overlap:  # asynchronous point-to-point: only what the stage's compute cannot cover
        t_pp_mb = np.maximum(0.0, t_pp_mb - t_compute_mb)
    slots = m + (pp - 1) / vp
    slot = t_compute_mb + t_tp_mb + t_cp_mb + t_pp_mb
    compute = m * (t_compute_mb - t_recompute_mb)  # recomputation is reported apart
    bubble = np.where(slots > m, (slots - m) * slot, 0.0)  # no bubble, even where a row is priced infinite

    dp_bw = bus_bandwidth(shard, tp, cluster, eff)
    ring = 2 * (shard - 1) / shard
    dp_per_node = np.where(tp >= gpn, 1.0, np.clip(np.floor(gpn / tp), 1.0, shard))
    buckets = np.ceil(trainable / np.maximum(40e6, 1e6 * shard))  # Megatron's default bucket (profile)
    dp_lat = buckets * latency_array("all-reduce", shard, dp_per_node, np.ceil(shard / dp_per_node))
    t_grads = ring * trainable * grad_b / dp_bw + dp_lat
    window = (2.0 / 3.0) * t_compute_mb if overlap else 0.0
    tail = t_grads / np.maximum(buckets, 1.0) if overlap else 0.0  # the last bucket cannot hide (comms.Overlap)
    t_dp = tail + np.maximum(0.0, t_grads - tail - window)
    if prof is not None and not prof.overlap_param_gather:  # ZeRO-1/2: the updated weights are all-gathered
        # after the optimizer step, on the critical path (comms.py); only the gradients' reduce-scatter hides
        w_prof = facts.weight_bytes(t.precision, prof.params_are_master, t.regime)
        t_rs = 0.5 * ring * trainable * grad_b / dp_bw + dp_lat
        rs_tail = t_rs / np.maximum(buckets, 1.0) if overlap else 0.0
        t_ag = 0.5 * ring * trainable * w_prof / dp_bw
        t_dp = np.where((zero >= 1) & (zero <= 2), rs_tail + np.maximum(0.0, t_rs - rs_tail - window) + t_ag, t_dp)
    t_gather = np.where(zero >= 3, 1.5 * ring * stage_params * wbytes / dp_bw * m, 0.0)
    head = t_gather / np.maximum(3.0 * stage_layers * m, 1.0)  # the first layer's gather: nothing to hide behind
    t_dp = t_dp + head + np.maximum(0.0, t_gather - head - m * slot)

    moe_layers = stage_layers * s.moe_layer_fraction
    ep_bw = bus_bandwidth(ep, tp * cp, cluster, eff)
    a2a = moe_layers * 4 * (ep - 1) / ep * tokens_mb * s.experts_per_token * h * 2 / tp / ep_bw
    t_ep = m * a2a

    opt_b = facts.optimizer_state_bytes(t.optimizer, 1.0)  # per parameter, for the update's traffic
    upd_bytes = trainable * (2 * (opt_b + master) + grad_b + wbytes)
    upd_bytes = np.where(zero >= 1, upd_bytes / shard, upd_bytes)
    bw_mem = cluster.gpu.memory_bandwidth * eff.memory_bandwidth
    t_off = offload_seconds(trainable, stage_params, shard, zero, tp * pp * dp * cp, m, t_compute_mb, c.recompute,
                            opt_b, grad_b, wbytes, cluster, eff, t)  # search/offload.py
    t_opt = np.where(c.offload == 1, t_off, upd_bytes / bw_mem)

    step = m * slot + bubble + t_dp + t_ep + t_opt
    if eager is not None:  # activation offload and paged optimizer states cross PCIe (the engine's own term)
        pcie = 0.0 if cluster.gpu.unified_memory else cluster.gpu.pcie_bandwidth * eff.pcie
        host_s, _ = host_transfer_time(eager.host_activations * m, eager.paged_host, pcie, m * slot + bubble)
        step = step + host_s
    tokens_step = mb * m * dp * seq
    model_flops = tokens_step * passes * (L * layer_fwd + logit_fwd)  # PaLM MFU: no recompute
    return QuickResult(
        memory=memory, weights=weights, grads=grads, optimizer=opt, activations=acts, step_time=step,
        compute=compute, bubble=bubble, tp_comm=m * (t_tp_mb + t_cp_mb), pp_comm=m * t_pp_mb, dp_comm=t_dp,
        ep_comm=t_ep, recompute=m * t_recompute_mb, optimizer_time=t_opt, tokens_per_step=tokens_step,
        model_flops=model_flops,
    )


def _op_times(m, t: TrainingSettings, prof: FrameworkProfile | None, cluster: ClusterSpec, eff: Efficiency,
              c: Columns, sequence_parallel: bool, stage_layers: np.ndarray, pp: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """Seconds per micro-batch on the slowest stage (and the recomputed part of them), from the engine's
    own per-operation model: every distinct (tp, cp, ep, micro-batch, recompute) is priced once by
    ``timing.layer_and_head``, then spread over the rows as the engine composes it (the slowest stage's
    blocks + the head's share, never faster than the host issues its kernels)."""
    prof = prof or FrameworkProfile()
    n = len(c.tp)
    r, _ = timing.rates(cluster.gpu, eff, t.precision)  # a dtype the GPU cannot train in: its InputError says so
    layer_gpu, layer_host, head_gpu, head_host, rec = (np.zeros(n) for _ in range(5))
    keys = np.stack([c.tp, c.cp, c.ep, c.mb, c.recompute], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for k, (tp, cp, ep, mb, rc) in enumerate(uniq.tolist()):
        kv_rep = m.mla is None and tp > 1 and m.num_kv_heads % tp != 0
        shape = timing.OpShape(int(tp), int(cp), int(ep), int(mb), t.seq_len, bool(sequence_parallel and tp > 1),
                               bool(kv_rep))
        tr = t.model_copy(update={"recompute": RECOMPUTE_NAMES[int(rc)], "micro_batch": int(mb)})
        fwd, rest, head = timing.layer_and_head(m, shape, tr, prof, r)
        idx = inverse == k
        layer = fwd + rest
        layer_gpu[idx], layer_host[idx] = layer.gpu, layer.host(prof)
        head_gpu[idx], head_host[idx] = head.gpu, head.host(prof)
        rec[idx] = fwd.gpu if rc == 2 else (fwd.attention if rc == 1 and not t.flash_attention else 0.0)
        if rc == 3:  # selective_op: what its backward runs beyond the plain backward's
            rec[idx] = rest.gpu - timing.layer_and_head(m, shape, tr.model_copy(update={"recompute": "none"}),
                                                        prof, r)[1].gpu
    gpu = stage_layers * layer_gpu + head_gpu / pp
    host = stage_layers * layer_host + head_host / pp
    return np.maximum(gpu, host), stage_layers * rec, r.gemm


def _span(s: ModelShape, seq: float) -> float:
    """Keys a query attends to, averaged over layers (sliding-window layers see at most the window)."""
    if not s.sliding_window:
        return seq
    return (1 - s.sliding_fraction) * seq + s.sliding_fraction * min(seq, float(s.sliding_window))
