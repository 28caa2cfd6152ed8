"""Communication per training step and per GPU: what each collective moves, over which link.

Volumes follow NCCL's ring algorithms: an all-reduce moves 2(n-1)/n of the buffer per GPU,
an all-gather or a reduce-scatter (n-1)/n, an all-to-all (n-1)/n. Per block and
micro-batch, tensor parallelism does 2 all-reduces of the block's activations forward and
2 backward (Narayanan et al. 2021 §3.3; with sequence parallelism each becomes an
all-gather plus a reduce-scatter of the same total volume, Korthikanti §4.2.2), and 2 more
when full recompute re-runs the forward. Data parallelism all-reduces the gradients, or
with ZeRO/distributed optimizer reduce-scatters them and all-gathers the updated weights;
ZeRO-3 gathers the weights again for the backward (1.5× ZeRO-2's volume, Rajbhandari §7).

A group uses NVLink when it lies within one node (stride × size ≤ GPUs per node, ranks
ordered tp, cp, pp, dp from innermost), else the scale-out network. Exposure: TP, EP and PP
transfers sit on the critical path; CP's ring exchange hides behind attention compute; the
DP reduction hides behind the last micro-batch's backward when ``overlap_grad_reduce``;
ZeRO-3 prefetches hide behind the whole forward/backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.model import ModelSpec
from llmplan.core.result import Collective
from llmplan.core.training.layout import Layout
from llmplan.core.workload import Scenario


@dataclass(frozen=True, slots=True)
class Windows:
    """Compute time (per GPU, per step) that each kind of transfer can hide behind."""

    compute: float
    attention: float
    last_backward: float


def _link(lay: Layout, stride: int, size: int) -> str:
    return "intra-node" if lay.intra_node(stride, size) else "inter-node"


def collectives(sc: Scenario, lay: Layout, trainable_on_gpu: float, weights_on_gpu: float, grad_bytes: float,
                weight_bytes: float, expert_share: float, moe_layers_on_gpu: float, win: Windows,
                intra_bw: float, inter_bw: float) -> tuple[Collective, ...]:
    m: ModelSpec = sc.model
    tr = sc.training
    out: list[Collective] = []
    s_loc = lay.seq_len / lay.cp
    b = lay.micro_batch
    h = m.hidden_size
    act = 2.0  # bf16/fp16 activations on the wire
    mbs = lay.accumulation
    L = lay.max_stage_layers  # the slowest stage's blocks: its traffic is on the step's critical path
    recompute_fwd = tr.recompute == "full"

    def add(name: str, group: str, size: int, stride: int, volume: float, formula: str,
            inputs: dict[str, object], exposed_of: float | None) -> None:
        link = _link(lay, stride, size)
        bw = intra_bw if link == "intra-node" else inter_bw
        t = volume / bw if bw > 0 else 0.0
        exp = t if exposed_of is None else max(0.0, t - exposed_of)
        bfig = Figure.of(volume, "B", formula, inputs, "nccl")
        tfig = Figure.of(t, "s", "bytes / achievable link bandwidth", {"bytes": volume, "bandwidth_Bps": bw}, "nccl")
        efig = Figure.of(exp, "s", "time" if exposed_of is None else "max(0, time − overlappable compute)",
                         {"time_s": t, "overlappable_s": exposed_of or 0.0}, "assumption")
        window = win.compute if exposed_of is None else exposed_of
        need = Figure.of(volume / window if window > 0 else 0.0, "B/s", "bytes / compute time it could hide behind",
                         {"bytes": volume, "window_s": window}, "assumption")
        out.append(Collective(name, group, size, link, bfig, tfig, efig, need))

    if lay.tp > 1:
        n_ar = 4 + (2 if recompute_fwd else 0)
        ring = 2 * (lay.tp - 1) / lay.tp
        vol = n_ar * ring * s_loc * b * h * act * L * mbs
        kind = "all-gather + reduce-scatter" if lay.sp else "all-reduce"
        add(f"TP {kind} (per block)", "tp", lay.tp, 1, vol,
            "n · 2(t-1)/t · s·b·h·2 B · blocks · micro-batches",
            {"n": n_ar, "t": lay.tp, "s": s_loc, "b": b, "h": h, "blocks": L, "micro_batches": mbs}, None)
    if lay.cp > 1:
        kv = (m.num_kv_heads * m.head_dim if not m.mla else m.mla.kv_lora_rank + m.mla.qk_rope_head_dim)
        kv_tp = kv / (1 if m.mla else min(lay.tp, m.num_kv_heads))
        passes = 3 + (1 if recompute_fwd else 0)  # K,V forward; K,V and dK,dV backward
        vol = passes * (lay.cp - 1) * 2 * s_loc * b * kv_tp * act * L * mbs
        add("CP ring exchange of K/V", "cp", lay.cp, lay.tp, vol,
            "passes · (cp-1) · 2·(s/cp)·b·kv_width·2 B · blocks · micro-batches",
            {"passes": passes, "cp": lay.cp, "kv_width": kv_tp, "blocks": L, "micro_batches": mbs},
            win.attention)
    if lay.pp > 1:
        rep = lay.tp if lay.sp else 1
        vol = 2 * lay.vp * s_loc * b * h * act / rep * mbs
        add("PP send/receive of activations", "pp", lay.pp, lay.tp * lay.cp, vol,
            "2 (activation + gradient) · v · s·b·h·2 B / t_sp · micro-batches",
            {"v": lay.vp, "s": s_loc, "b": b, "h": h, "micro_batches": mbs}, None)
    if lay.ep > 1 and moe_layers_on_gpu > 0 and m.moe:
        k = m.moe.experts_per_token
        n_a2a = 4 + (2 if recompute_fwd else 0)
        rep = lay.tp if lay.sp else 1
        vol = n_a2a * (lay.ep - 1) / lay.ep * s_loc * b * k * h * act / rep * moe_layers_on_gpu * mbs
        add("EP all-to-all of tokens", "ep", lay.ep, lay.tp * lay.cp * lay.pp, vol,
            "n · (ep-1)/ep · s·b·k·h·2 B · MoE blocks · micro-batches",
            {"n": n_a2a, "ep": lay.ep, "k": k, "moe_blocks": moe_layers_on_gpu, "micro_batches": mbs}, None)
    d = lay.dp * lay.cp
    if d > 1 and trainable_on_gpu > 0:
        sharded = tr.zero_stage >= 1 or tr.distributed_optimizer
        grads = trainable_on_gpu * grad_bytes
        overlap = win.last_backward if tr.overlap_grad_reduce else 0.0
        size = d if expert_share < 1 else max(1, d // lay.ep)
        stride = max(1, lay.gpus // size)  # dp is outermost: the group spans the whole cluster
        inputs = {"d": d, "trainable_params": trainable_on_gpu, "grad_bytes": grad_bytes}
        if not sharded:
            add("DP gradient all-reduce", "dp", size, stride, 2 * (d - 1) / d * grads,
                "2(d-1)/d · gradient bytes", inputs, overlap)
            return tuple(out)
        n = min(lay.shard, size)
        frac = (n - 1) / n
        add("DP gradient reduce-scatter + weight all-gather", "dp", n, stride, frac * (grads + trainable_on_gpu
            * weight_bytes), "(n-1)/n · (gradient bytes + weight bytes), n = sharding group", {**inputs, "n": n},
            overlap)
        replicas = size // n
        if replicas > 1:  # hybrid sharding: the shards are all-reduced across the replicas
            add("DP all-reduce of gradient shards across replicas (hybrid sharding)", "dp", replicas, stride * n,
                2 * (replicas - 1) / replicas * grads / n, "2(r-1)/r · gradient bytes / n",
                {"r": replicas, "n": n}, overlap)
        if tr.zero_stage == 3:
            add("ZeRO-3 weight all-gather for the backward", "dp", n, stride, frac * weights_on_gpu * weight_bytes,
                "(n-1)/n · weight bytes (forward gathers are counted above)", {"n": n, "params": weights_on_gpu},
                win.compute)
    return tuple(out)
