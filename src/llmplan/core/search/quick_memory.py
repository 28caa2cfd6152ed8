"""The search's memory per GPU: the training engine's own functions, called on arrays of layouts.

Nothing here is a formula of its own. Every term is the engine's (``core.training``), so the
search and the estimate agree on what fits:

- the pipeline stages that can be the worst-loaded, their layers and the micro-batches they hold:
  ``stages.split_layers``, ``memory.candidate_stages``, ``stages.layers_in_flight`` and
  ``stages.warmup_chunks``, once per (pp, virtual stages, micro-batches) and cached;
- the parameters on one GPU of a stage: ``shard.stage_params`` once per (tp, ep, stage role) at 0
  and 1 layers (it is linear in the layer count), LoRA's adapters from ``bytes_per_param``;
- model states: ``states.model_states`` on arrays, once per (ZeRO stage, offload);
- activations, embedding, logits, recompute working set and buffers: ``activations`` and
  ``memory`` on arrays, once per (sequence parallelism, replicated KV heads, recompute, pp > 1),
  the switches those functions branch on;
- the CUDA context and the allocator's fragmentation: the framework profile's ``context_bytes`` and
  ``fragmentation``; the allocator's reserve for side-stream ZeRO-3 / FSDP gathers:
  ``memory.fused_gather_reserve``.

Eager-kernel profiles (``eager_stage_memory``) are priced by the engine's ``memory.worst_stage`` once per
distinct layout, with every fine-tuning switch's term (paged optimizer, activation offload,
optimizer-in-backward, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from llmplan.core.bytes_per_param import lora_params
from llmplan.core.framework_profile import FrameworkProfile, offload_view
from llmplan.core.lora_modules import expert_adapters
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.training import activations as act
from llmplan.core.training import memory as mem
from llmplan.core.training import recompute_modules
from llmplan.core.training.lora import merged_expert_bytes, unquantised_expert_share
from llmplan.core.training.ops import loss_kind, titan_eager
from llmplan.core.training.shard import StageParams, stage_params
from llmplan.core.training.stages import layers_in_flight, split_layers, warmup_chunks
from llmplan.core.training.states import model_states
from llmplan.core.workload import TrainingSettings

ROLES = ("only", "first", "middle", "last")
# the codes of Columns.recompute; the search enumerates 0-2, selective_op (3) only where a plan keeps it
RECOMPUTE_NAMES = ("none", "selective", "full", "selective_op")


@dataclass(frozen=True, slots=True)
class Rows:
    """The fields of a ``training.layout.Layout`` the engine's memory functions read, one candidate
    layout per array element; ``sp`` and ``kv_replicated`` are one value for the whole batch (the
    functions branch on them), ``pp`` too (only whether it exceeds 1 is read)."""

    tp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    micro_batch: np.ndarray
    seq_len: int
    sp: bool
    kv_replicated: bool
    pp: int = 1


@dataclass(frozen=True, slots=True)
class StageMemoryRows:
    """Bytes per GPU of the worst-loaded stage of each candidate, and its parts."""

    total: np.ndarray
    weights: np.ndarray
    grads: np.ndarray
    optimizer: np.ndarray  # master weights + optimizer states
    activations: np.ndarray
    # what the engine's step time reads of that stage (``training.estimate_training``): its parameters,
    # experts among them, trainable ones, and the states' bytes per parameter and dense sharding group
    params: np.ndarray
    expert: np.ndarray
    trainable: np.ndarray
    weight_bytes: np.ndarray
    grad_bytes: np.ndarray
    master_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    shard_dense: np.ndarray
    shard_expert: np.ndarray
    offloaded_weights: np.ndarray  # ZeRO-3 parameter offload: the partition fetched every pass


_FIELDS = 15  # StageMemoryRows' arrays


@dataclass(frozen=True, slots=True)
class _Layer:
    """What a Layout offers ``candidate_stages``: the stage count and the split."""

    pp: int
    split: object


@lru_cache(maxsize=4096)
def _stages(layers: int, pp: int, vp: int, micro_batches: int) -> tuple[tuple[int, int, float, float], ...]:
    """(role, layers, layer × micro-batch activations held, micro-batches in flight) per candidate stage."""
    split = split_layers(layers, pp, vp)
    out = []
    for index in mem.candidate_stages(_Layer(pp, split)):
        role = 0 if pp == 1 else 1 if index == 0 else 3 if index == pp - 1 else 2
        out.append((role, split.per_stage[index], float(layers_in_flight(split, index, micro_batches)),
                    warmup_chunks(pp, vp, index, micro_batches) / vp))
    return tuple(out)


@lru_cache(maxsize=1024)
def _params(m: ModelSpec, tp: int, ep: int, role: int) -> tuple[StageParams, StageParams]:
    """The engine's parameters on one GPU of a ``role`` stage with 0 and with 1 layer."""
    kv_rep = m.mla is None and m.num_kv_heads % tp != 0
    view = Rows(np.array(tp), np.array(1), np.array(ep), np.array(1), 0, tp > 1, kv_rep)
    return stage_params(m, view, ROLES[role], 0), stage_params(m, view, ROLES[role], 1)


def stage_memory(m: ModelSpec, t: TrainingSettings, tp, pp, vp, dp, cp, ep, zero, offload, recompute, mb, accum,
                 sequence_parallel: bool, prof: FrameworkProfile | None = None) -> StageMemoryRows:
    """The engine's memory of the worst-loaded GPU for each candidate (arrays of equal length), under a
    fused-kernel framework profile (eager profiles: ``eager_stage_memory``)."""
    prof = prof or FrameworkProfile()
    n = len(tp)
    if not n:
        return StageMemoryRows(*(np.zeros(0) for _ in range(_FIELDS)))
    L = m.num_layers
    full = t.method == "full"
    pb = count_params(m)
    shard = np.full(n, t.shard_group) if t.shard_group else dp * cp
    # ---- per-block activations and buffers: the engine's functions, grouped by their switches ----
    sp_rows = sequence_parallel & (tp > 1)
    kv_rows = (tp > 1) & (m.num_kv_heads % np.maximum(tp, 1) != 0) if m.mla is None else np.zeros(n, bool)
    per_layer, emb, logits, work, buffers, loss = (np.zeros(n) for _ in range(6))
    loss_name = loss_kind(t, prof)
    eager = titan_eager(t, prof)  # torchtitan's uncompiled modules (memory._block_bytes)
    keys = sp_rows * 16 + kv_rows * 8 + recompute * 2 + (pp > 1)
    for key in np.unique(keys):
        idx = np.nonzero(keys == key)[0]
        sp, kv, rc, piped = bool(key // 16), bool(key // 8 % 2), int(key // 2 % 4), int(key % 2)
        view = Rows(tp[idx], cp[idx], ep[idx], mb[idx], t.seq_len, sp, kv, 2 if piped else 1)
        tr = t.model_copy(update={"recompute": RECOMPUTE_NAMES[rc]})
        per_layer[idx] = act.average_layer_bytes(m, view, tr, eager=eager) + mem.lora_activation_bytes(m, view, tr, prof)
        emb[idx] = act.embedding_bytes(m, view, tr)
        logits[idx] = act.logits_bytes(m, view) + (act.final_norm_extra(m, view, eager) if eager else 0.0)
        loss[idx] = act.loss_peak_bytes(m, view, loss_name)
        if RECOMPUTE_NAMES[rc] in ("full", "selective_op"):  # the block being recomputed (memory.stage_memory)
            work[idx] = act.average_layer_bytes(m, view, tr, "none", eager) + merged_expert_bytes(m, view, tr, prof=prof)
        elif RECOMPUTE_NAMES[rc] == "selective":  # Megatron-Core's named modules (memory._block_bytes)
            work[idx] = recompute_modules.working_bytes(m, view, tr)
        buffers[idx] = mem.comm_buffers(m, view) + mem.dequant_buffer(m, view, tr)
    # ---- the candidate stages of each (pp, vp, micro-batches) -------------------------------------
    # (one integer per row: np.unique over 1-D keys is far faster than over rows)
    shape_keys = (pp.astype(np.int64) * 64 + vp) * 2**24 + np.minimum(accum, pp * (vp + 1))
    uniq, inverse = np.unique(shape_keys, return_inverse=True)
    tables = [_stages(L, int(k // 2**24 // 64), int(k // 2**24 % 64), int(k % 2**24)) for k in uniq]
    slots = max(len(x) for x in tables)
    stage_cols = np.full((len(uniq), slots, 4), np.nan)
    for u, rows in enumerate(tables):
        stage_cols[u, : len(rows)] = rows
    # ---- parameters per (tp, ep) -----------------------------------------------------------------
    te_keys = tp.astype(np.int64) * 2**24 + ep
    te_uniq, te_inv = np.unique(te_keys, return_inverse=True)
    te_uniq = np.stack([te_uniq // 2**24, te_uniq % 2**24], 1)
    fields = ("total", "expert", "matrices", "factored")
    base = np.zeros((len(te_uniq), 4, len(fields)))
    slope = np.zeros_like(base)
    layer = np.zeros((len(te_uniq), 4))
    adapters = np.zeros(len(te_uniq))
    unquantised = unquantised_expert_share(m, pb, t)  # QLoRA: transformers 5's stacked experts stay 16/32-bit
    for u, (a, e) in enumerate(te_uniq):
        for r in range(4):
            p0, p1 = _params(m, int(a), int(e), r)
            base[u, r] = [getattr(p0, f) for f in fields]
            slope[u, r] = [getattr(p1, f) - getattr(p0, f) for f in fields]
            layer[u, r] = p1.largest_layer
        if not full:
            adapters[u] = lora_params(pb, t.lora_rank, t.lora_targets, int(a), int(e), 1.0 / L,
                                      expert_adapters(m, t.lora_experts))
    # ---- every candidate stage, the worst kept ------------------------------------------------------
    out = None
    for k in range(slots):
        role_f, layers_f, held, flight = (stage_cols[inverse, k, i] for i in range(4))
        present = ~np.isnan(role_f)
        role = np.where(present, role_f, 2).astype(np.int64)
        layers = np.where(present, layers_f, 0.0)
        held, flight = np.nan_to_num(held), np.nan_to_num(flight)
        parts = base[te_inv, role] + slope[te_inv, role] * layers[:, None]
        total, expert, matrices, factored = (parts[:, i] for i in range(4))
        sp_rows_k = StageParams("", total, expert, matrices, factored, layer[te_inv, role], False, False)
        trainable = total if full else adapters[te_inv] * layers
        frozen = 0.0 if full else mem.frozen_bytes(t, total, matrices - expert * unquantised, prof)
        activ = per_layer * held + np.where((role == 0) | (role == 1), emb * flight, 0.0)
        working = np.where(layers > 0, work, 0.0)  # last stage: the loss's backward or the first recompute
        last = (role == 0) | (role == 3)
        activ = activ + np.where(last, logits + np.maximum(loss, working), working)
        w, g, o, gather, wb, gb, mb_, ob, sd, se, fetched, held = (np.zeros(n) for _ in range(12))
        z_keys = zero * 2 + offload
        for zk in np.unique(z_keys):
            idx = np.nonzero(z_keys == zk)[0]
            tr = t.model_copy(update={"zero_stage": int(zk // 2),
                                      "offload": (t.offload if t.offload != "none" else "cpu") if zk % 2 else "none"})
            sub = StageParams("", *(getattr(sp_rows_k, f)[idx] for f in (*fields, "largest_layer")), False, False)
            fz = frozen if full else frozen[idx]
            # offload at ZeRO-0 runs on one GPU only (space.training_columns): the profile's one-GPU offload
            st = model_states(tr, sub, trainable[idx], fz, shard[idx], ep[idx], full,
                              offload_view(prof, tr.offload, tr.zero_stage, 1))
            w[idx], g[idx], o[idx], gather[idx] = st.weights, st.gradients, st.master + st.optimizer, st.gather_buffer
            wb[idx], gb[idx], mb_[idx], ob[idx], sd[idx], se[idx], fetched[idx] = (
                st.weight_bytes, st.grad_bytes, st.master_bytes, st.optimizer_bytes, st.shard_dense, st.shard_expert,
                st.offloaded_weights)
            held[idx] = mem.fused_gather_reserve(prof, tr, st, sub.largest_layer)[1]
        allocated = w + g + o + activ + buffers + gather
        stage_total = np.where(present, allocated * (1 + prof.fragmentation) + prof.context_bytes + held, -np.inf)
        row = (stage_total, w, g, o, activ, total, expert, trainable * np.ones(n), wb, gb, mb_, ob, sd, se, fetched)
        if out is None:
            out = list(row)
        else:
            worse = stage_total > out[0]
            out = [np.where(worse, new, old) for new, old in zip(row, out, strict=True)]
    return StageMemoryRows(*out)


@dataclass(frozen=True, slots=True)
class EagerRows:
    """The engine's memory for each candidate under an eager-kernel profile, and the host traffic its
    switches make (activation offload, paged optimizer states beyond the GPU's free memory)."""

    memory: StageMemoryRows
    host_activations: np.ndarray  # bytes per micro-batch offloaded to pinned host memory
    paged_host: np.ndarray  # paged optimizer states the GPU has no room for, paged in each step


def eager_stage_memory(m: ModelSpec, t: TrainingSettings, prof: FrameworkProfile, cluster, cols,
                       sequence_parallel: bool) -> EagerRows:
    """The engine's memory of the worst-loaded GPU under an eager-kernel profile (Hugging Face, torchtune,
    unsloth and their configurations), for each candidate layout ``cols`` (``quick.Columns``).

    Eager profiles have no Korthikanti-style per-block model: their peak is the largest of a step's phases
    (``training.eager_memory``), with the switches' terms — paged optimizer states outside PyTorch's
    allocator, activation offload's two blocks on the GPU, optimizer-in-backward's one gradient, ZeRO-offload
    of the optimizer. So each distinct layout is priced by the engine's ``memory.worst_stage`` itself, once
    (an eager profile allows only one GPU or plain data parallelism, so the distinct layouts are few); a
    layout the engine refuses is infinite."""
    from llmplan.core.training.layout import resolve
    from llmplan.core.workload import ParallelLayout, Scenario
    from llmplan.errors import LlmplanError

    n = len(cols)
    out = np.zeros((_FIELDS + 2, n))
    if not n:
        return EagerRows(StageMemoryRows(*out[:_FIELDS]), out[_FIELDS], out[_FIELDS + 1])
    pb = count_params(m)
    names = ("tp", "pp", "vp", "dp", "cp", "ep", "zero", "offload", "recompute", "mb", "accum")
    keys = np.stack([getattr(cols, f) for f in names], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for k, (tp, pp, vp, dp, cp, ep, zero, off, rc, mb, accum) in enumerate(uniq.tolist()):
        p = ParallelLayout(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, virtual_stages=vp,
                           sequence_parallel=sequence_parallel and tp > 1)
        tr = t.model_copy(update={"micro_batch": mb, "global_batch": mb * dp * accum if t.global_batch else 0,
                                  "zero_stage": zero, "recompute": RECOMPUTE_NAMES[rc],
                                  "offload": (t.offload if t.offload != "none" else "cpu") if off else "none"})
        gpus = p.gpus
        c = (cluster.model_copy(update={"gpus_per_node": gpus, "nodes": 1}) if gpus < cluster.gpus_per_node
             else cluster.model_copy(update={"nodes": gpus // cluster.gpus_per_node}))
        sc = Scenario(model=m, cluster=c, workload="pretrain" if tr.method == "full" else "finetune", training=tr,
                      parallelism=p, framework_profile=prof)
        try:
            sm = mem.worst_stage(sc, pb, resolve(sc))
        except LlmplanError:
            out[:, inverse == k] = 0.0
            out[0, inverse == k] = np.inf
            continue
        st = sm.states
        row = (sm.total, st.weights, sm.gradients, st.master + st.optimizer, sm.activations, sm.params.total,
               sm.params.expert, sm.trainable, st.weight_bytes, st.grad_bytes, st.master_bytes, st.optimizer_bytes,
               st.shard_dense, st.shard_expert, st.offloaded_weights, sm.host_activations, sm.paged_host)
        out[:, inverse == k] = np.array(row)[:, None]
    return EagerRows(StageMemoryRows(*out[:_FIELDS]), out[_FIELDS], out[_FIELDS + 1])
