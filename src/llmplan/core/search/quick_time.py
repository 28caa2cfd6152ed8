"""The search's step-time terms that are the engine's own functions, called on arrays of candidate layouts
(the counterpart of ``quick_memory.py`` for time). Nothing here is a formula of its own:

- data parallelism: every collective of ``comms.data_parallel_calls`` (gradient buckets, the distributed
  optimizer's gather, ZeRO-3's per-layer gathers and reduce-scatters, hybrid sharding), priced by the NCCL
  model (``comms.data_parallel_times``, latency included: at thousands of ranks it is most of a ZeRO-3
  gather) once per distinct group and message, then hidden behind each layout's compute windows by
  ``comms.exposed``, the windows the estimate gives them;
- context parallelism's K/V exchange (``comms.context_parallel_call``), and the tensor-parallel, pipeline
  and expert-parallel traffic (``tensor_parallel_call``, ``pipeline_call``, ``expert_parallel_call``),
  priced and hidden the same way;
- the optimizer's pass over its states: ``optimizer_kernel.optimizer_time``; the gradient clipping before it:
  ``grad_clip.clip_time``;
- CPU offload: ``offload_time.offload_time`` on arrays, once per (ZeRO stage, recompute).

Each reads the worst-loaded pipeline stage's parameters and state bytes from ``quick_memory`` (what the
estimate reads from ``memory.worst_stage``). ``c`` is a ``quick.Columns``, ``sm`` a
``quick_memory.StageMemoryRows``.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from llmplan.core.framework_profile import DEFAULT_PROFILE, FrameworkProfile, in_effect, offload_view
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.params import count_params
from llmplan.core.search.quick_memory import RECOMPUTE_NAMES
from llmplan.core.training import grad_clip
from llmplan.core.training.comms import (
    call_time,
    chunk_tail,
    context_parallel_call,
    data_parallel_times,
    expert_parallel_call,
    exposed,
    hidden,
    interleaved_windows,
    pipeline_call,
    tensor_parallel_call,
)
from llmplan.core.training.offload_time import offload_time
from llmplan.core.training.optimizer_kernel import optimizer_rate, optimizer_time
from llmplan.core.training.placement import span_stride, topology
from llmplan.core.training.stages import split_layers
from llmplan.core.workload import TrainingSettings


def data_parallel_seconds(sm, c, m, cluster: ClusterSpec, eff: Efficiency, t: TrainingSettings,
                          prof: FrameworkProfile | None, t_compute_mb: np.ndarray, accum: np.ndarray) -> np.ndarray:
    """Exposed data-parallel seconds per step, as the estimate prices them: each distinct group and message
    (ZeRO stage, the worst-loaded stage's parameters) by the engine's ``comms.data_parallel_times`` once,
    then hidden row by row with ``comms.exposed`` behind the windows the estimate gives them
    (``training.estimate_training``: the step's compute, the last micro-batch's backward, its forward; with
    interleaving chunk by chunk, ``comms.interleaved_windows`` and ``comms.chunk_tail``)."""
    prof = prof or FrameworkProfile()
    n = len(c.tp)
    if not n:
        return np.zeros(0)
    d = c.dp * c.cp
    shard = np.full(n, t.shard_group) if t.shard_group else d
    share = np.divide(sm.expert, sm.params, out=np.zeros(n), where=sm.params > 0)
    keys = np.stack([c.tp, c.cp, c.ep, d, shard, slowest_stage_layers(m.num_layers, c.pp, c.vp), c.zero, sm.trainable,
                     sm.params, share, sm.grad_bytes, sm.weight_bytes], axis=1).astype(np.float64)
    first, inverse = distinct_rows(keys)
    cache = _dp_prices(cluster, eff, t, prof)
    priced = []
    for tp, cp, ep, dd, sh, lay, zero, trainable, params, es, gb, wb in keys[first].tolist():
        key = (tp, cp, ep, dd, sh, lay, zero, trainable, params, es, gb, wb)
        hit = cache.times.get(key)
        if hit is None:
            hit = cache.times[key] = data_parallel_times(cache.topo, cluster.fabric, cache.zero(int(zero)), prof,
                                                         int(tp), int(cp), int(ep), int(dd), int(sh), int(lay),
                                                         trainable, params, gb, wb, es)
        priced.append(hit)
    width = max((len(p) for p in priced), default=0)
    if not width:
        return np.zeros(n)
    shape = (len(priced), width)
    secs, call, kind, unhidden = np.zeros(shape), np.zeros(shape), np.zeros(shape, np.int64), np.zeros(shape, bool)
    prev = np.full(shape, -1, np.int64)
    for u, calls in enumerate(priced):
        for j, (sec, call_s, window, hide, after) in enumerate(calls):
            secs[u, j], call[u, j], kind[u, j], unhidden[u, j] = sec, call_s, _WINDOWS.index(window), hide
            prev[u, j] = after
    bwd = (2.0 if t.method == "full" else 1.0) / (3.0 if t.method == "full" else 2.0)
    dp_bwd, dp_fwd = interleaved_windows(t_compute_mb * bwd, t_compute_mb * (1 - bwd), c.vp, c.pp, accum)
    windows = np.stack([np.zeros(n), accum * t_compute_mb, dp_bwd, dp_fwd])
    rows = np.arange(n)
    out = np.zeros(n)
    # ZeRO-3's (and FSDP SHARD_GRAD_OP's) calls repeat every micro-batch (comms module doc)
    per_step = np.where((c.zero == 3) | ((c.zero == 2) & prof.fsdp_zero2), accum, 1)
    left = np.zeros((width, n))  # compute still free after call j hid behind its window (comms.shared_window)
    for j in range(width):
        k = kind[inverse, j]
        sec = secs[inverse, j] * per_step
        chunks = np.where(k >= _WINDOWS.index("last_backward"), c.vp, 1)  # interleaved: chunk by chunk
        p = prev[inverse, j]
        window = np.where(p >= 0, left[np.maximum(p, 0), rows], windows[k, rows])
        exp = exposed(sec, chunk_tail(sec, call[inverse, j], chunks), window, unhidden[inverse, j])[0]
        left[j] = np.maximum(0.0, window - hidden(sec, exp))
        out += exp
    return out


def context_parallel_seconds(c, m, cluster: ClusterSpec, eff: Efficiency, t: TrainingSettings,
                             prof: FrameworkProfile | None, t_compute_mb: np.ndarray, accum: np.ndarray,
                             attention_share: float) -> np.ndarray:
    """Exposed seconds per step of the context-parallel K/V exchange, as the estimate prices it: the engine's
    ``comms.context_parallel_call`` priced by ``nccl`` once per distinct (tp, cp, micro-batch, recompute) for
    one block and micro-batch (its calls are that many times blocks × micro-batches), hidden by
    ``comms.exposed`` behind the step's attention compute (the estimate's window: the step's compute × the
    attention's share of the forward FLOPs, ``flops.token_flops``, given as ``attention_share``)."""
    n = len(c.tp)
    out = np.zeros(n)
    rows = np.nonzero(c.cp > 1)[0]
    if not len(rows):
        return out
    topo = _dp_prices(cluster, eff, t, None).topo
    cp_comm = (prof or FrameworkProfile()).cp_comm
    keys = np.stack([c.tp[rows], c.cp[rows], c.mb[rows], c.recompute[rows]], axis=1)
    first, inverse = distinct_rows(keys)
    unit = np.zeros((len(first), 2))  # seconds for one block and micro-batch, seconds of one call
    for k, (tp, cp, mb, rc) in enumerate(keys[first].tolist()):
        tr = t if t.recompute == RECOMPUTE_NAMES[rc] else t.model_copy(update={"recompute": RECOMPUTE_NAMES[rc]})
        unit[k] = call_time(context_parallel_call(m, tr, tp, cp, mb, t.seq_len, 1, 1, cp_comm), topo, cluster.fabric)
    # (few distinct keys: tp × cp × micro-batch × recompute)
    layers = slowest_stage_layers(m.num_layers, c.pp[rows], c.vp[rows])
    secs = unit[inverse, 0] * layers * accum[rows]
    hidden = 0.0 if cp_comm == "all-gather" else attention_share  # all-gather CP is on the critical path
    out[rows] = exposed(secs, unit[inverse, 1], accum[rows] * t_compute_mb[rows] * hidden, False)[0]
    return out


def inner_seconds(c, m, cluster: ClusterSpec, eff: Efficiency, t: TrainingSettings, prof: FrameworkProfile | None,
                  sequence_parallel: bool, t_compute_mb: np.ndarray, accum: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exposed seconds per step of tensor-parallel, pipeline and expert-parallel traffic (TP, PP, EP), as the
    estimate prices them: the engine's ``comms.tensor_parallel_call``, ``pipeline_call`` and
    ``expert_parallel_call`` priced by ``nccl`` once per distinct shape. TP and PP calls are priced for one
    block and one micro-batch and scaled (their calls are that many times blocks × micro-batches); the
    all-to-all's call count is rounded by the engine, so it is priced with the row's own micro-batches. TP
    and PP hide behind the step's compute where the profile overlaps them (``tp_comm_overlap``,
    ``pp_comm_overlap``; ``comms.exposed``)."""
    prof = prof or FrameworkProfile()
    n = len(c.tp)
    tp_s, pp_s, ep_s = np.zeros(n), np.zeros(n), np.zeros(n)
    cache = _dp_prices(cluster, eff, t, prof)  # kept over the search's batches
    layers = slowest_stage_layers(m.num_layers, c.pp, c.vp)
    zeros = np.zeros(0, dtype=np.int64)

    def priced(kind: str, rows: np.ndarray, cols: list[np.ndarray], make) -> np.ndarray:
        """(seconds, seconds of one call) of ``make(*key)`` for each row, priced once per distinct key."""
        keys = np.stack([x[rows] for x in cols], axis=1) if len(rows) else zeros.reshape(0, len(cols))
        first, inverse = distinct_rows(keys)
        unit = np.zeros((len(first), 2))
        for u, k in enumerate(keys[first].tolist()):
            hit = cache.times.get((kind, *k))
            if hit is None:
                hit = cache.times[(kind, *k)] = call_time(make(*k), cache.topo, cluster.fabric)
            unit[u] = hit
        return unit[inverse]

    def training(rc: int) -> TrainingSettings:
        return t if t.recompute == RECOMPUTE_NAMES[rc] else t.model_copy(update={"recompute": RECOMPUTE_NAMES[rc]})

    rows = np.nonzero(c.tp > 1)[0]
    if len(rows):
        sp = bool(sequence_parallel)
        unit = priced("tp", rows, [c.tp, c.cp, c.mb, c.recompute], lambda tp, cp, mb, rc: tensor_parallel_call(
            m, training(rc), tp, cp, sp, mb, t.seq_len, 1, 1))
        secs = unit[:, 0] * layers[rows] * accum[rows]
        window = accum[rows] * t_compute_mb[rows] if prof.tp_comm_overlap else np.zeros(len(rows))
        tp_s[rows] = exposed(secs, unit[:, 1], window, False)[0]
    rows = np.nonzero(c.pp > 1)[0]
    if len(rows):
        sp_rows = (c.tp > 1) & bool(sequence_parallel)
        # the same span: priced once
        stride = span_stride(c.tp * c.cp * c.dp, cluster.gpus_per_node, cluster.network.nodes_per_leaf)
        # priced for one chunk boundary and micro-batch: its calls are 2 · v · micro-batches
        unit = priced("pp", rows, [c.tp, c.cp, stride, c.pp, c.mb, sp_rows], lambda tp, cp, st, pp, mb, sp:
                      pipeline_call(m, tp, cp, st, pp, 1, bool(sp), mb, t.seq_len, 1, prof.pp_comm_overlap))
        secs = unit[:, 0] * c.vp[rows] * accum[rows]
        window = accum[rows] * t_compute_mb[rows] if prof.pp_comm_overlap else np.zeros(len(rows))
        pp_s[rows] = exposed(secs, unit[:, 1], window, False)[0]  # asynchronous p2p hides behind the compute
    moe = m.moe_layer_count / m.num_layers * layers
    rows = np.nonzero((c.ep > 1) & (moe > 0))[0] if m.moe else zeros
    if len(rows):
        sp_rows = (c.tp > 1) & bool(sequence_parallel)
        unit = priced("ep", rows, [c.tp, c.cp, c.ep, sp_rows, c.mb, c.recompute, moe, accum],
                      lambda tp, cp, ep, sp, mb, rc, moe_l, mbs: expert_parallel_call(
                          m, training(int(rc)), int(tp), int(cp), int(ep), bool(sp), int(mb), t.seq_len, moe_l,
                          int(mbs)))
        ep_s[rows] = unit[:, 0]
    return tp_s, pp_s, ep_s


def distinct_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of one row per distinct row of ``keys``, each row's distinct index), exactly: each column is
    numbered by its distinct values and the numbers are combined column by column into one integer
    (1-D ``np.unique`` is far faster than ``np.unique(axis=0)`` over rows of floats)."""
    code = np.zeros(len(keys), np.int64)
    for col in keys.T:
        values, number = np.unique(col, return_inverse=True)
        code = code * len(values) + number.reshape(-1)
        if code.max(initial=0) > 2**40:  # renumber before the product could overflow
            code = np.unique(code, return_inverse=True)[1].reshape(-1)
    _u, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


class _DpPrices:
    """Priced collectives of one (cluster, efficiency, training, profile), kept while the
    search evaluates its batches with the same objects (found by identity: hashing the pydantic models
    field by field would cost more than the pricing). It holds the objects, so their ids stay theirs."""

    def __init__(self, cluster, eff, t, prof) -> None:
        self.objects = (cluster, eff, t, prof)
        self.topo = topology(cluster, eff)
        self.times: dict = {}
        self._zero: dict = {}

    def zero(self, stage: int) -> TrainingSettings:
        """The training settings at this ZeRO stage (the plan's own for the other knobs)."""
        if stage not in self._zero:
            t = self.objects[2]
            self._zero[stage] = t if t.zero_stage == stage else t.model_copy(update={"zero_stage": stage})
        return self._zero[stage]


_DP_PRICES: dict[tuple[int, ...], _DpPrices] = {}  # searches in worker threads each get their own entry


def _dp_prices(cluster, eff, t, prof) -> _DpPrices:
    objects = (cluster, eff, t, prof)
    key = tuple(id(o) for o in objects)
    hit = _DP_PRICES.get(key)
    if hit is None or any(a is not b for a, b in zip(hit.objects, objects, strict=True)):
        if len(_DP_PRICES) >= 16:
            _DP_PRICES.clear()
        hit = _DP_PRICES[key] = _DpPrices(*objects)
    return hit


_WINDOWS = ("", "compute", "last_backward", "first_forward")  # comms.Windows' fields a DP collective hides behind


def deepspeed_rows(prof: FrameworkProfile, c) -> np.ndarray:
    """The search's rows where DeepSpeed's engine runs the step (``framework_profile.deepspeed_stage`` > 0): a
    profile that hands ZeRO to DeepSpeed, at ZeRO-2/3, or ZeRO-1 with more than one data-parallel rank or offload."""
    if prof.zero_engine != "deepspeed":
        return np.zeros(len(c.tp), dtype=bool)
    return (c.zero >= 2) | ((c.zero == 1) & ((c.dp * c.cp > 1) | (c.offload == 1)))


def _optimizer_params(sm, zero: np.ndarray, t: TrainingSettings) -> np.ndarray:
    """Trainable parameters this GPU's optimizer steps: the worst-loaded stage's, sharded where ZeRO or the
    distributed optimizer shards the states."""
    sharded = (zero >= 1) | bool(t.distributed_optimizer)
    return np.where(sharded, sm.trainable / np.maximum(sm.shard_dense, 1), sm.trainable)


def optimizer_seconds(sm, zero: np.ndarray, t: TrainingSettings, cluster: ClusterSpec, eff: Efficiency,
                      prof: FrameworkProfile | None = None) -> np.ndarray:
    """The optimizer's pass over its states on the GPU, as the estimate prices it (``optimizer_kernel``, the
    fused AdamW kernel at its measured rate per dtype, on the worst-loaded stage's trainable parameters after
    ZeRO sharding)."""
    params = _optimizer_params(sm, zero, t)
    separate = sm.master_bytes > 0
    master = np.where(separate, sm.master_bytes, sm.weight_bytes)
    # the separate 16-bit copy's write is weight bytes where a master copy exists (the function's flag)
    return optimizer_time(params, master, sm.grad_bytes, sm.optimizer_bytes, np.where(separate, sm.weight_bytes, 0.0),
                          True, optimizer_rate(cluster.gpu, eff, t, prof))


def clip_seconds(sm, c, m, t: TrainingSettings, prof: FrameworkProfile | None, cluster: ClusterSpec,
                 eff: Efficiency) -> np.ndarray:
    """The gradient clipping before the optimizer step, as the estimate prices it (``grad_clip.clip_time`` on the
    worst-loaded stage's gradients after sharding, in their dtype), under DeepSpeed's view of the profile on the
    rows whose ZeRO stage DeepSpeed runs (``framework_profile.deepspeed_stage``), nothing on the rows that offload
    (the offload path's own)."""
    base = prof if prof is not None else DEFAULT_PROFILE
    params = _optimizer_params(sm, c.zero, t)
    tensors = grad_clip.tensors_on_gpu(count_params(m), m, t, params)
    bandwidth = cluster.gpu.memory_bandwidth * eff.memory_bandwidth
    deepspeed = deepspeed_rows(base, c)
    out = np.zeros(len(c.tp))
    for view, rows in ((base, ~deepspeed), (in_effect(base, 2), deepspeed)):
        if rows.any() and grad_clip.clips(t, view):
            out = np.where(rows, grad_clip.clip_time(params, tensors, sm.grad_bytes, view, bandwidth).seconds, out)
    return np.where(c.offload == 1, 0.0, out)


def offload_seconds(sm, c, t: TrainingSettings, cluster: ClusterSpec, eff: Efficiency, t_compute_mb: np.ndarray,
                    accum: np.ndarray, prof: FrameworkProfile, largest: float = 0.0) -> np.ndarray:
    """Exposed offload seconds per step of the rows that offload, as the estimate prices them: the engine's
    ``offload_time.offload_time`` on arrays, once per (ZeRO stage, recompute), with the worst-loaded stage's
    states and the estimate's windows (the step's compute, one micro-batch's backward), under the framework's
    offload (``prof.offload_style``; on one GPU without ZeRO its one-GPU offload, ``framework_profile.offload_view``).
    ``largest``: elements of the model's largest parameter tensor (a full fine-tune's; the estimate's fill and drain
    of Megatron-Core's overlapped copies, split over each row's TP)."""
    out = np.zeros(len(c.tp))
    rows = np.nonzero(c.offload == 1)[0]
    if not len(rows):
        return out
    full = t.method == "full"
    bwd = (2.0 if full else 1.0) / (3.0 if full else 2.0)
    single = c.tp[rows] * c.pp[rows] * c.dp[rows] * c.cp[rows] == 1
    keys = (c.zero[rows] * 3 + c.recompute[rows]) * 2 + single
    for both in np.unique(keys):
        idx = rows[keys == both]
        key = both // 2
        tr = t.model_copy(update={"zero_stage": int(key // 3), "recompute": ("none", "selective", "full")[key % 3],
                                  "offload": t.offload if t.offload != "none" else "cpu"})
        gpus = c.tp[idx] * c.pp[idx] * c.dp[idx] * c.cp[idx]
        view = offload_view(prof, tr.offload, tr.zero_stage, 1 if both % 2 else 2)
        st = SimpleNamespace(optimizer_bytes=sm.optimizer_bytes[idx], grad_bytes=sm.grad_bytes[idx],
                             master_bytes=sm.master_bytes[idx], weight_bytes=sm.weight_bytes[idx],
                             shard_dense=sm.shard_dense[idx], shard_expert=sm.shard_expert[idx],
                             offloaded_weights=sm.offloaded_weights[idx])
        share = np.divide(sm.expert[idx], sm.params[idx], out=np.zeros(len(idx)), where=sm.params[idx] > 0) \
            if full else 0.0
        mb_s = t_compute_mb[idx]
        off = offload_time(SimpleNamespace(training=tr, cluster=cluster, efficiency=eff, framework=view),
                           SimpleNamespace(gpus=gpus, accumulation=accum[idx]), st, sm.trainable[idx], share,
                           accum[idx] * mb_s, mb_s * bwd, largest / c.tp[idx] if full else 0.0)
        out[idx] = off.exposed_s
    return out


@lru_cache(maxsize=4096)
def _ends(layers: int, pp: int, vp: int) -> tuple[int, int, int]:
    """(the slowest stage's layers, the last stage's, the most on any other stage) under the engine's split
    (``stages.split_layers``)."""
    split = split_layers(layers, pp, vp)
    return split.slowest, split.per_stage[-1], split.before_last


def _split_rows(layers: int, pp: np.ndarray, vp: np.ndarray) -> np.ndarray:
    """``_ends`` of each row, one column each, worked out once per distinct (pp, vp)."""
    keys = pp.astype(np.int64) * 4096 + vp
    uniq, inverse = np.unique(keys, return_inverse=True)
    ends = np.array([_ends(layers, int(k // 4096), int(k % 4096)) for k in uniq]).reshape(-1, 3)
    return ends[inverse.reshape(-1)]


def slowest_stage_layers(layers: int, pp: np.ndarray, vp: np.ndarray) -> np.ndarray:
    """The most layers any pipeline stage of each row holds: the layers whose traffic every step carries."""
    return _split_rows(layers, pp, vp)[:, 0]


def last_stage_layers(layers: int, pp: np.ndarray, vp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (last stage's layers, most layers on any other stage): the last stage also runs the head and
    loss, so either can be the slowest (``timing._micro_batch``)."""
    ends = _split_rows(layers, pp, vp)
    return ends[:, 1], ends[:, 2]
