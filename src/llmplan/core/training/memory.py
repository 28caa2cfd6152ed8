"""Memory of the worst-loaded GPU: model states + activations + buffers + overhead.

Every pipeline stage that could be the worst is sized with its own layer count (``stages``):
the first holds the embedding and the most in-flight micro-batches, the last the head and
the fp32 logits, and with an uneven split a middle stage may hold one layer more than
either. The largest is reported, and named, because the job fails when any GPU runs out.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure, total, zero
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.result import MemoryBreakdown
from llmplan.core.training import activations as act
from llmplan.core.training.eager_memory import eager_peak
from llmplan.core.training.layout import Layout
from llmplan.core.training.lora import adapter_params, nf4_bits_per_param
from llmplan.core.training.ops import head_ops, layer_ops
from llmplan.core.training.shard import StageParams, role, stage_params
from llmplan.core.training.stages import layers_in_flight
from llmplan.core.training.states import StateBytes, model_states
from llmplan.core.workload import Scenario

_OPTIMIZER_SOURCE = {"adam8bit": "adam8bit", "adafactor": "adafactor", "lion": "lion", "muon": "muon"}


@dataclass(frozen=True, slots=True)
class StageMemory:
    index: int  # pipeline stage, 0-based
    layers: int  # transformer blocks on this stage
    params: StageParams
    trainable: float
    states: StateBytes
    activations: float
    layer_activations: float  # one block, one micro-batch (as kept under the plan's recompute)
    in_flight: float  # micro-batches whose activations the stage holds at its peak (chunk passes / v)
    extra_activations: float  # embedding / logits / recompute working set
    buffers: float
    overhead: float
    gradients: float  # gradient bytes present at the peak (all of them unless the framework frees them)
    phase: str = ""  # eager profiles: the phase of the step that sets the peak

    @property
    def total(self) -> float:
        s = self.states
        return (s.weights + self.gradients + s.master + s.optimizer + self.activations + self.buffers
                + self.overhead)


def _stage(sc: Scenario, pb: ParamBreakdown, lay: Layout, index: int) -> StageMemory:
    m: ModelSpec = sc.model
    tr = sc.training
    prof = sc.framework
    stage = role(index, lay.pp)
    layers = lay.split.per_stage[index]
    sp = stage_params(m, lay, stage, layers)
    full = tr.method == "full"
    layer_share = layers / m.num_layers
    if full:
        trainable, frozen = sp.total, 0.0
    else:
        trainable = adapter_params(pb, m, lay, tr.lora_rank, tr.lora_targets, layer_share)
        base = 4.0 if tr.precision == "fp32" else 2.0
        if tr.method == "qlora":
            q = sp.matrices
            # prepare_model_for_kbit_training casts what is not quantised (embeddings, head, norms) to fp32
            rest = 4.0 if prof.kernels == "eager" else base
            frozen = q * nf4_bits_per_param(tr.qlora_double_quant) / 8 + (sp.total - q) * rest
        else:
            frozen = sp.total * base
    st = model_states(tr, sp, trainable, frozen, lay.shard, lay.ep, full, prof)
    if prof.kernels == "eager":
        return _eager_stage(sc, pb, lay, index, stage, layers, sp, trainable, st)
    per_layer = act.average_layer_bytes(m, lay, tr)
    if not full and tr.recompute != "full":  # the A-projection outputs (r wide) of every targeted projection
        per_layer += 2 * lay.seq_len / lay.cp * lay.micro_batch * tr.lora_rank * len(tr.lora_targets)
    flight = act.in_flight(lay, index)
    extra = 0.0
    if stage in ("first", "only"):
        extra += act.embedding_bytes(m, lay, tr) * flight
    if stage in ("last", "only"):
        extra += act.logits_bytes(m, lay)
    if tr.recompute == "full" and layers:  # the block being recomputed holds its full activations meanwhile
        extra += act.average_layer_bytes(m, lay, tr, "none")
    activ = per_layer * layers_in_flight(lay.split, index, lay.accumulation) + extra
    buffers = st.gather_buffer + comm_buffers(m, lay)
    if tr.method == "qlora":  # one block matrix dequantised to bf16 at a time
        buffers += 2.0 * max(m.intermediate_size, m.q_width) * m.hidden_size / lay.tp
    allocated = st.weights + st.gradients + st.master + st.optimizer + activ + buffers
    overhead = prof.context_bytes + prof.fragmentation * allocated
    return StageMemory(index, layers, sp, trainable, st, activ, per_layer, flight, extra, buffers, overhead,
                       st.gradients)


def _eager_stage(sc: Scenario, pb: ParamBreakdown, lay: Layout, index: int, stage: str, layers: int,
                 sp: StageParams, trainable: float, st: StateBytes) -> StageMemory:
    """Eager modeling code: the peak over the step's phases (``eager_memory``)."""
    m, tr, prof = sc.model, sc.training, sc.framework
    ops = layer_ops(m, pb, lay, tr, prof)
    head = head_ops(m, pb, lay, tr, prof, ops.residual_bytes) if stage in ("last", "only") else None
    pk = eager_peak(m, lay, tr, prof, st, ops, head, layers)
    buffers = pk.weight_copies
    if tr.method == "qlora":  # one block matrix dequantised to bf16 at a time
        buffers += 2.0 * max(m.intermediate_size, m.q_width) * m.hidden_size / lay.tp
    allocated = st.weights + pk.gradients + st.master + st.optimizer + pk.activations + buffers
    overhead = prof.context_bytes + prof.fragmentation * allocated
    return StageMemory(index, layers, sp, trainable, st, pk.activations, ops.saved, 1.0,
                       pk.activations - ops.saved * layers, buffers, overhead, pk.gradients, pk.phase)


def comm_buffers(m: ModelSpec, lay: Layout) -> float:
    """Transient communication buffers: the sequence-parallel all-gather of one block input
    (2·s·b·h) and the pipeline's send and receive buffers (2 × 2·s·b·h/t_sp)."""
    sbh2 = 2.0 * lay.seq_len / lay.cp * lay.micro_batch * m.hidden_size
    total = sbh2 if lay.sp else 0.0
    if lay.pp > 1:
        total += 2 * sbh2 / (lay.tp if lay.sp else 1)
    return total


def candidate_stages(lay: Layout) -> tuple[int, ...]:
    """The stages that can be the worst-loaded: the first, the last, and of the middle stages
    with the same chunks the earliest (it keeps the most micro-batches in flight). A middle stage
    with the first stage's chunks never outweighs it (fewer in flight, no embedding)."""
    if lay.pp == 1:
        return (0,)
    seen: set[tuple[int, ...]] = {lay.split.chunks[0]}
    middle = []
    for s in range(1, lay.pp - 1):
        chunks = lay.split.chunks[s]
        if chunks not in seen:
            seen.add(chunks)
            middle.append(s)
    return (0, *middle, lay.pp - 1)


def worst_stage(sc: Scenario, pb: ParamBreakdown, lay: Layout) -> StageMemory:
    mems = [_stage(sc, pb, lay, s) for s in candidate_stages(lay)]
    return max(mems, key=lambda x: x.total)


def stage_totals(sc: Scenario) -> tuple[float, ...]:
    """Bytes on one GPU of each pipeline stage, first to last (the estimate's breakdown is the worst of
    them): what a GPU of that stage holds, for showing per-GPU memory. Raises like ``estimate``."""
    from llmplan.core.params import count_params
    from llmplan.core.training.layout import resolve

    lay = resolve(sc)
    pb = count_params(sc.model)
    return tuple(_stage(sc, pb, lay, s).total for s in range(lay.pp))


def stage_name(lay: Layout, sm: StageMemory) -> str:
    """Which GPU a breakdown describes, e.g. "pipeline stage 2 of 16 (8 layers)"."""
    if lay.pp == 1:
        return "every GPU"
    what = {"first": "first, with the embedding", "last": "last, with the head and loss"}.get(sm.params.stage)
    held = f"{what}, {sm.layers} layers" if what else f"{sm.layers} layers"
    return f"pipeline stage {sm.index + 1} of {lay.pp} ({held})"


def breakdown(sc: Scenario, lay: Layout, sm: StageMemory) -> MemoryBreakdown:
    tr = sc.training
    st = sm.states
    d = st.shard_dense
    zsrc = "zero"
    where = stage_name(lay, sm)
    w = Figure.of(st.weights, "B", "parameters on this GPU × bytes per weight (÷ d under ZeRO-3)",
                  {"params_on_gpu": sm.params.total, "trainable": sm.trainable, "bytes_per_weight": st.weight_bytes,
                   "zero_stage": tr.zero_stage, "d": d, "stage": where},
                  {"fp8": "transformer-engine", "qlora": "qlora"}.get(
                      "qlora" if tr.method == "qlora" else tr.precision, zsrc),
                  ("fp8: a bf16 weight plus a cached fp8 copy for the GEMMs",) if tr.precision == "fp8" else ())
    prof = sc.framework
    if sm.phase:  # eager profile: gradients exist from the backward on and are freed after each step
        g = (Figure.of(sm.gradients, "B", "gradients allocated at the peak phase (freed after every step)",
                       {"phase": sm.phase, "all_gradients": st.gradients, "bytes_per_grad": st.grad_bytes,
                        "framework": prof.name}, "hf-eager")
             if sm.gradients else zero("B", f"the peak ({sm.phase}) comes before the backward allocates gradients"))
    else:
        g = (Figure.of(st.gradients, "B", "trainable parameters × bytes per gradient (÷ d from ZeRO-2)",
                       {"trainable": sm.trainable, "bytes_per_grad": st.grad_bytes, "d": d}, zsrc)
             if st.gradients else zero("B", "gradients sharded to the host or nothing trains"))
    ms = (Figure.of(st.master, "B", "trainable × 4 B fp32 master copy (÷ d from ZeRO-1)",
                    {"trainable": sm.trainable, "d": d}, zsrc)
          if st.master else zero("B", "fp32 training or master weights offloaded"))
    o = (Figure.of(st.optimizer, "B", f"{tr.optimizer} states (÷ d from ZeRO-1)",
                   {"trainable": sm.trainable, "bytes_per_param": st.optimizer_bytes, "d": d},
                   _OPTIMIZER_SOURCE.get(tr.optimizer, zsrc))
         if st.optimizer else zero("B", f"{tr.optimizer} keeps no state here"))
    if sm.phase:
        a = Figure.of(sm.activations, "B", "saved tensors of the blocks (as the eager modeling code keeps them) + "
                      "the head's inputs + the loss's logits at the peak phase",
                      {"per_block": sm.layer_activations, "blocks": sm.layers, "phase": sm.phase,
                       "head_and_loss": sm.extra_activations, "recompute": tr.recompute,
                       "flash_attention": tr.flash_attention, "framework": prof.name}, "hf-eager")
    else:
        a = Figure.of(sm.activations, "B", "per-block bytes × blocks on this GPU × micro-batches in flight + extras",
                      {"per_block": sm.layer_activations, "blocks": sm.layers, "in_flight": sm.in_flight,
                       "stage": where, "embedding_logits_recompute": sm.extra_activations,
                       "recompute": tr.recompute, "flash_attention": tr.flash_attention, "tp": lay.tp,
                       "sequence_parallel": lay.sp, "cp": lay.cp}, "korthikanti")
    if not sm.buffers:
        b = zero("B", "no gather, pipeline, weight-copy or dequantisation buffers")
    elif sm.phase:
        b = Figure.of(sm.buffers, "B", "autocast's 16-bit copies of the fp32 weights alive at the peak + QLoRA "
                      "dequantised matrix", {"phase": sm.phase, "method": tr.method}, "hf-eager")
    else:
        b = Figure.of(sm.buffers, "B", "ZeRO-3 gathered block (weights + 16-bit gradients) + sequence-parallel "
                      "all-gather (2·s·b·h) + pipeline send/receive buffers + QLoRA dequantised matrix",
                      {"zero3_gather": st.gather_buffer, "sequence_parallel": lay.sp, "pp": lay.pp,
                       "method": tr.method}, "korthikanti")
    ov = Figure.of(sm.overhead, "B", "CUDA context and workspaces + allocator fragmentation × allocated bytes",
                   {"context": prof.context_bytes, "fragmentation": prof.fragmentation, "framework": prof.name},
                   "assumption")
    parts = {"weights": w, "master_weights": ms, "gradients": g, "optimizer": o, "activations": a,
             "buffers": b, "overhead": ov}
    gpn = sc.cluster.gpus_per_node
    host = (Figure.of(st.host * gpn, "B", "offloaded states per GPU × GPUs per node", {"per_gpu": st.host,
                      "gpus_per_node": gpn}, "zero-offload") if st.host else zero("B", "nothing offloaded to CPU"))
    nvme = (Figure.of(st.nvme * gpn, "B", "offloaded states per GPU × GPUs per node", {"per_gpu": st.nvme,
                      "gpus_per_node": gpn}, "zero-infinity") if st.nvme else zero("B", "nothing on NVMe"))
    cap = sc.cluster.gpu.usable_memory_bytes
    return MemoryBreakdown(
        weights=w, gradients=g, optimizer=o, master_weights=ms, activations=a,
        kv_cache=zero("B", "training keeps no KV cache"), buffers=b, overhead=ov,
        total=total(parts, "B", "memory per GPU"),
        capacity=Figure.of(cap, "B", "memory the device reports × usable fraction − the driver's reserve",
                           {"gpu": sc.cluster.gpu.name, "driver_reserved": sc.cluster.gpu.driver_reserved_bytes},
                           "assumption"),
        host_ram=host, nvme=nvme, worst_gpu=where,
        margin=max(sm.overhead - prof.context_bytes, 0.0),
    )
