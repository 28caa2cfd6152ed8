"""Memory of the worst-loaded GPU: model states + activations + buffers + overhead.

Every pipeline stage that could be the worst is sized with its own layer count (``stages``):
the first holds the embedding and the most in-flight micro-batches, the last the head and
the fp32 logits, and with an uneven split a middle stage may hold one layer more than
either. The largest is reported, and named, because the job fails when any GPU runs out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from llmplan.core.bytes_per_param import frozen_weight_bytes, gathered_weight_bytes
from llmplan.core.explain import Figure, total, zero
from llmplan.core.framework_profile import FrameworkProfile, kbit_upcast, transformers_modules_eager
from llmplan.core.lora_modules import adapted_modules, expert_adapters, lora_modules, stacked_expert_params
from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, count_params
from llmplan.core.result import MemoryBreakdown
from llmplan.core.training import activations as act
from llmplan.core.training import allocator_reserve as reserve
from llmplan.core.training import deepspeed_zero as ds
from llmplan.core.training import recompute_modules
from llmplan.core.training.eager_memory import (
    EAGER_PHASES,
    eager_peak,
    loss_bytes_per_logit,
    prefetched_gather,
)
from llmplan.core.training.grad_offload import EVEN_RATE, DrainedGradients, backward_seconds, drained
from llmplan.core.training.layout import Layout
from llmplan.core.training.lora import (
    adapter_params,
    base_bits_per_param,
    merged_expert_bytes,
    unquantised_expert_share,
)
from llmplan.core.training.ops import dequant_transient_bytes, head_ops, layer_ops, loss_kind, titan_eager
from llmplan.core.training.shard import StageParams, role, stage_params_cached
from llmplan.core.training.stages import layers_in_flight
from llmplan.core.training.states import StateBytes, model_states, optimizer_bytes
from llmplan.core.training.switches import embedding_and_head, largest_tensor, lm_head_adapter
from llmplan.core.training.timing import OpShape
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
    host_activations: float = 0.0  # activation offload: saved tensors in pinned host memory
    paged_host: float = 0.0  # paged optimizer: states the GPU has no room for, in host memory
    paged: float = 0.0  # paged optimizer: all its states (outside PyTorch's allocator, not in the total)
    gather_reserve: float = 0.0  # ZeRO-3/FSDP side-stream gathers: reserved beyond allocated (in ``overhead``)
    gather_unit: float = 0.0  # the gathered block's bytes that reserve is counted in
    grad_drain: DrainedGradients | None = None  # torchao's offload_gradients: the bound on the GPU's gradients

    @property
    def total(self) -> float:
        s = self.states
        return (s.weights + self.gradients + s.master + s.optimizer + self.activations + self.buffers
                + self.overhead)


def phase_memory(prof: FrameworkProfile) -> bool:
    """Whether a step's memory is the peak over its phases (``eager_memory``: Hugging Face-style eager modules,
    with or without Triton kernels or torch.compile); otherwise block by block (fused kernels, and torchtitan's
    modules compiled or not: ``FrameworkProfile.eager_modules``)."""
    return transformers_modules_eager(prof)


def _block_bytes(m: ModelSpec, lay: Layout, tr, prof: FrameworkProfile) -> tuple[float, float]:
    """(per-block activation bytes kept under the plan's recompute, LoRA's included; the working set of the
    block being recomputed, 0 without recompute): the same for every stage, so worked out once per layout.
    torchtitan's uncompiled modules keep more (``activations.eager_block_extra``)."""
    eager = titan_eager(tr, prof)
    per_layer = act.average_layer_bytes(m, lay, tr, eager=eager) + lora_activation_bytes(m, lay, tr, prof)
    work = (act.average_layer_bytes(m, lay, tr, "none", eager) + merged_expert_bytes(m, lay, tr, prof=prof)
            if tr.recompute in ("full", "selective_op") else recompute_modules.working_bytes(m, lay, tr))
    return per_layer, work


def _stage(sc: Scenario, pb: ParamBreakdown, lay: Layout, index: int,
           blocks: tuple[float, float] | None = None) -> StageMemory:
    """``blocks``: ``_block_bytes`` of this layout, when the caller has it already."""
    m: ModelSpec = sc.model
    tr = sc.training
    prof = sc.framework
    stage = role(index, lay.pp)
    layers = lay.split.per_stage[index]
    sp = stage_params_cached(m, pb, lay, stage, layers)
    full = tr.method == "full"
    layer_share = layers / m.num_layers
    saved_copy = 0.0  # modules_to_save: embeddings and head trained in full, in the base's dtype
    if full:
        trainable, frozen = sp.total, 0.0
    else:
        trainable = adapter_params(pb, m, lay, tr, layer_share)
        if tr.lora_on_lm_head and stage in ("last", "only"):
            trainable += lm_head_adapter(m, tr.lora_rank, lay.tp)
        # transformers 5's stacked experts escape bitsandbytes (``lora.unquantised_expert_share``)
        frozen = frozen_bytes(tr, sp.total, sp.matrices - sp.expert * unquantised_expert_share(m, pb, tr), prof)
        rest = frozen_weight_bytes(tr.precision)  # modules_to_save copies follow the base's dtype
        if tr.modules_to_save and lay.pp == 1:
            saved_copy = embedding_and_head(m, lay.tp)
    st = model_states(tr, sp, trainable, frozen, lay.shard, lay.ep, full, prof)
    if saved_copy:  # the trainable copy, its gradient and its optimizer states follow the base's dtype
        opt = optimizer_bytes(tr, sp, saved_copy, False) * rest / 4
        st = replace(st, weights=st.weights + saved_copy * rest, gradients=st.gradients + saved_copy * rest,
                     optimizer=st.optimizer + opt)
        trainable += saved_copy
    if phase_memory(prof):  # Hugging Face-style modeling code run op by op (eager, or with Triton kernels)
        return _eager_stage(sc, pb, lay, index, stage, layers, sp, trainable, st)
    per_layer, work = blocks or _block_bytes(m, lay, tr, prof)
    flight = act.in_flight(lay, index)
    extra = 0.0
    if stage in ("first", "only"):
        extra += act.embedding_bytes(m, lay, tr) * flight
    if not layers:  # the block being recomputed holds its full activations meanwhile: none on this stage
        work = 0.0
    if stage in ("last", "only"):  # the loss's backward and the first recompute come one after the other
        extra += act.logits_bytes(m, lay) + max(act.loss_peak_bytes(m, lay, loss_kind(tr, prof)), work)
        if norm := titan_eager(tr, prof):
            extra += act.final_norm_extra(m, lay, norm)
    else:
        extra += work
    activ = per_layer * layers_in_flight(lay.split, index, lay.accumulation) + extra
    buffers = st.gather_buffer + comm_buffers(m, lay)
    buffers += dequant_buffer(m, lay, tr)
    allocated = st.weights + st.gradients + st.master + st.optimizer + activ + buffers
    unit, held = fused_gather_reserve(prof, tr, st, sp.largest_layer)
    overhead = prof.context_bytes + prof.fragmentation * allocated + held
    return StageMemory(index, layers, sp, trainable, st, activ, per_layer, flight, extra, buffers, overhead,
                       st.gradients, gather_reserve=held, gather_unit=unit)


@functools.lru_cache(maxsize=512)
def _layer_ops(m: ModelSpec, shape: OpShape, tr, prof: FrameworkProfile):
    """``layer_ops`` for the memory model, cached by the per-GPU shape the list reads (``timing.OpShape``): the search
    asks for the eager stage memory of every layout, and layouts that differ only in DP or PP share one list. Memory
    reads ``cast_params`` only, so the time model's ``cast_shard`` is left at 0."""
    return layer_ops(m, count_params(m), shape, tr, prof)  # type: ignore[arg-type]  # reads only OpShape's fields


def _eager_stage(sc: Scenario, pb: ParamBreakdown, lay: Layout, index: int, stage: str, layers: int,
                 sp: StageParams, trainable: float, st: StateBytes) -> StageMemory:
    """Eager modeling code: the peak over the step's phases (``eager_memory``)."""
    m, tr, prof = sc.model, sc.training, sc.framework
    ops = _layer_ops(m, OpShape.of(lay, tr, prof), tr, prof)
    head = head_ops(m, pb, lay, tr, prof, ops.residual_bytes) if stage in ("last", "only") else None
    largest = largest_tensor(pb) * st.grad_bytes if tr.optimizer_in_backward else 0.0
    drain = None
    if tr.offload_gradients and prof.offload_style == "torchao" and lay.accumulation == 1:  # (more is refused)
        pcie = 0.0 if sc.cluster.gpu.unified_memory else sc.cluster.gpu.pcie_bandwidth * sc.efficiency.pcie
        drain = drained(st.gradients, _largest_trainable(m, pb, tr) * st.grad_bytes, pcie, backward_seconds(sc, lay, pb))
        largest = drain.held
    zs = sc.deepspeed_stage  # DeepSpeed's buffers (``deepspeed_zero``), where DeepSpeed runs the step
    on_gpu = trainable / st.shard_dense
    piece = ds.largest_gradient_piece(_largest_trainable(m, pb, tr), on_gpu, st.shard_dense, zs)
    budget = ds.prefetch_elements(m, prof) if zs == 3 else 0.0
    blocks, ahead, unit = _gathered_blocks(tr, prof, sp, st, trainable, layers, budget)
    head_bytes = head.gemm.n * head.gemm.k * frozen_weight_bytes(tr.precision) if head is not None else 0.0
    gathered = ds.gathered_by_phase(blocks, head_bytes, ahead, st.shard_dense, zs)
    step = ds.step_transient(on_gpu, piece, tr, zs) if zs else foreach_intermediates(tr, prof, st)
    if gathered is None:
        gathered = dict.fromkeys(EAGER_PHASES, blocks)
    pk = eager_peak(m, lay, tr, prof, st, ops, head, layers, largest, ds.backward_buckets(m, tr, prof, zs), step,
                    gathered)
    buffers = pk.weight_copies + pk.gathered
    buffers += _gathered_root(m, lay, tr, prof, st)
    buffers += pk.framework_buffers + ds.persistent_bucket(m, tr, prof, zs)
    if tr.method == "qlora":  # one block matrix dequantised at a time (``ops.dequant_transient_bytes``)
        buffers += dequant_transient_bytes(tr, prof) * max(m.intermediate_size, m.q_width) * m.hidden_size / lay.tp
    allocated = st.weights + pk.gradients + st.master + st.optimizer + pk.activations + buffers
    paged = paged_host = 0.0
    if tr.paged_optimizer and st.optimizer:  # unified memory, outside PyTorch's allocator (switches module doc)
        paged = st.optimizer
        st = replace(st, optimizer=0.0)
        allocated -= paged
    held = gathered_reserve(prof, st, unit, ahead, 2 if ahead else 1)
    if held:  # the side stream's pool keeps the most it ever gathered, whatever the peak phase holds
        held += max(gathered.values()) - pk.gathered
    overhead = prof.context_bytes + prof.fragmentation * allocated + held
    if paged:  # they use what the allocator leaves free; the rest lives on the host and pages in each step
        paged_host = min(paged, max(0.0, paged - (sc.cluster.gpu.usable_memory_bytes - allocated - overhead)))
    return StageMemory(index, layers, sp, trainable, st, pk.activations, ops.saved, 1.0,
                       pk.activations - pk.blocks, buffers, overhead, pk.gradients, pk.phase,
                       pk.offloaded, paged_host, paged, held, unit, drain)


def fused_gather_reserve(prof: FrameworkProfile, tr, st: StateBytes, largest_layer):
    """(one gathered block's weights, ``gathered_reserve``) under fused kernels, where one block is counted
    gathered (``states.model_states``) and a prefetch budget (``prefetch_params``) caps a fetch. The block is
    allocated in the dtype it is gathered in: a full fine-tune's compute dtype (FSDP's ``param_dtype``,
    ``bytes_per_param.gathered_weight_bytes``), LoRA's frozen base in its stored format. Floats or arrays: the
    estimate and the search's quick model both call it."""
    per_param = gathered_weight_bytes(tr.precision) if tr.method == "full" else frozen_bytes(tr, 1.0, 1.0, prof)
    unit = largest_layer * per_param
    if not (prof.gather_pending_blocks or prof.gather_flat_copy):
        return unit, 0.0
    budget = prof.prefetch_params
    if not budget:
        fetch = unit
    elif reserve.is_scalar(largest_layer):
        fetch = min(largest_layer, budget) * per_param
    else:  # the search's quick model: one row per candidate layout
        import numpy as np

        fetch = np.minimum(largest_layer, budget) * per_param
    return unit, gathered_reserve(prof, st, unit, fetch, 1)


def gathered_reserve(prof: FrameworkProfile, st: StateBytes, unit, fetch, held: int):
    """The caching allocator's reserve beyond the allocated bytes for blocks gathered per use on a side stream
    (``allocator_reserve.gather_reserve``): only where ZeRO-3 / FSDP gathers (``st.gather_buffer``) over more than
    one GPU. ``unit``: one gathered block's bytes; ``fetch``: the prefetch in flight; ``held``: the gathered
    blocks the allocated bytes count. Floats or arrays (the search's quick model passes its rows)."""
    if not (prof.gather_pending_blocks or prof.gather_flat_copy):
        return 0.0
    if reserve.is_scalar(st.shard_dense) and reserve.is_scalar(st.gather_buffer):
        if not st.gather_buffer or st.shard_dense <= 1:
            return 0.0
        return reserve.gather_reserve(unit, fetch, held, prof)
    import numpy as np

    on = (st.gather_buffer > 0) & (st.shard_dense > 1)
    return np.where(on, reserve.gather_reserve(unit, fetch, held, prof), 0.0)


def foreach_intermediates(tr, prof: FrameworkProfile, st: StateBytes) -> float:
    """torch.optim AdamW's foreach step: ``prof.optimizer_intermediates`` tensor lists the size of one moment, in
    the parameters' dtype as the moments are (``zeros_like(param)``): half the states' bytes each. Where the
    trained tensors have two dtypes (LoRA's fp32 adapters, ``modules_to_save``'s 16-bit copies) the step takes
    one dtype at a time, so this is an upper bound there. None for another optimizer, its paged or 16-bit-state
    variants, or a step on the host."""
    if (not prof.optimizer_intermediates or tr.optimizer != "adamw" or tr.paged_optimizer
            or tr.bf16_optimizer_states or tr.optimizer_in_backward or tr.offload != "none"):
        return 0.0
    return prof.optimizer_intermediates * st.optimizer / 2


def _largest_trainable(m: ModelSpec, pb: ParamBreakdown, tr) -> float:
    """Elements of the largest trained tensor: the embedding or head in a full fine-tune or with
    ``modules_to_save``, else LoRA's widest factor (rank × the widest projection side; a stacked expert
    parameter's factors are r·E wide, ``core.lora_modules``)."""
    if tr.method == "full" or tr.modules_to_save:
        return largest_tensor(pb)
    widest = float(tr.lora_rank * max(m.hidden_size, m.intermediate_size, m.q_width))
    if stacked_expert_params(m, tr.lora_targets, how := expert_adapters(m, tr.lora_experts)):
        widest = max([widest] + [tr.lora_rank * g.copies_per_layer * max(g.shape)
                                 for g in lora_modules(pb, tr.lora_targets, how) if g.category == "expert"])
    return widest


def _gathered_blocks(tr, prof: FrameworkProfile, sp: StageParams, st: StateBytes, trainable: float,
                     layers: int, budget: float = 0.0) -> tuple[float, float]:
    """ZeRO-3 / FSDP under an eager profile: (the block gathered with its unsharded gradients and the next
    block's all-gather issued ahead of it, at most ``budget`` parameters where given; that prefetch alone:
    ``eager_memory.prefetched_gather``). A full fine-tune gathers the trained weights (``states.model_states``);
    LoRA gathers the frozen base in its stored format and the adapters, and only the adapters have gradients.
    Third: the gathered block's weights as its flat buffer holds them, the unit of ``gathered_reserve`` (a full
    fine-tune's in the dtype they are gathered in, FSDP's ``param_dtype``: ``gathered_weight_bytes``)."""
    if not st.gather_buffer:
        return 0.0, 0.0, 0.0
    if tr.method == "full":
        weights, gathered = sp.largest_layer * st.weight_bytes, st.gather_buffer
    else:
        adapters = trainable / max(layers, 1)
        weights = sp.largest_layer * frozen_bytes(tr, 1.0, 1.0, prof) + adapters * st.weight_bytes
        gathered = weights + adapters * st.grad_bytes
    ahead = prefetched_gather(sp.largest_layer, weights, prof, budget)
    unit = sp.largest_layer * gathered_weight_bytes(tr.precision) if tr.method == "full" else weights
    return gathered + ahead, ahead, unit


def _gathered_root(m: ModelSpec, lay: Layout, tr, prof: FrameworkProfile, st: StateBytes) -> float:
    """FSDP1's root unit under a profile that leaves the embeddings and head in it (``fsdp_root_unsharded``):
    its unsharded flat parameter, allocated beside the local shard at the forward's start, is not freed after
    the forward (the root's parameters are needed again at once by the backward: torch
    ``fsdp/_runtime_utils.py`` ``_post_forward_reshard`` and ``_pre_forward_unshard``), so the whole embeddings
    and head are on every GPU through the peak, in the dtype they are gathered in: 16-bit for a LoRA base, the
    mixed-precision param_dtype of a full fine-tune (``_full_param_padded`` is allocated in it,
    ``FlatParamHandle.init_flat_param_attributes``). Also with CPU offload: the root is gathered on the GPU."""
    if not (prof.fsdp_root_unsharded and st.gather_buffer and tr.zero_stage == 3):
        return 0.0
    root = embedding_and_head(m, lay.tp)
    return root * gathered_weight_bytes(tr.precision) if tr.method == "full" else frozen_bytes(tr, root, 0.0, prof)


def frozen_bytes(tr, params, matrices, prof: FrameworkProfile | None = None):
    """Bytes of LoRA's frozen base weights on a GPU: 16-bit (fp32 in fp32 training), or under QLoRA
    the blocks' matrices in the quantised base format (NF4 by default) and the rest 16-bit
    (``core.bytes_per_param``) — fp32 where the framework runs prepare_model_for_kbit_training, which casts
    embeddings, head and norms to fp32 (``FrameworkProfile.kbit_fp32_modules``; not on a GPTQ base, which it
    leaves in its 16-bit dtype, nor on a sharded base: ``framework_profile.kbit_upcast``).
    Floats or arrays."""
    base = frozen_weight_bytes(tr.precision)
    if tr.method == "qlora":
        rest = 4.0 if kbit_upcast(tr.method, tr.quant_base, prof, tr.zero_stage) else base
        return matrices * base_bits_per_param(tr.quant_base, tr.qlora_double_quant) / 8 + (params - matrices) * rest
    return params * base


def lora_activation_bytes(m: ModelSpec, lay: Layout, tr, prof: FrameworkProfile | None = None) -> float:
    """Per block and micro-batch: the A-projection outputs (r wide, 16-bit) of every adapted module (a fused
    module's one, ``core.lora_modules.adapted_modules``) and the expert weights PEFT rebuilds with their adapters
    (``lora.merged_expert_bytes``), kept for the backward unless full recompute drops them."""
    if tr.method == "full" or tr.recompute == "full":
        return 0.0
    experts = expert_adapters(m, tr.lora_experts)
    return (2 * lay.seq_len / lay.cp * lay.micro_batch * tr.lora_rank * len(adapted_modules(m, tr.lora_targets, experts))
            + merged_expert_bytes(m, lay, tr, prof=prof))


def dequant_buffer(m: ModelSpec, lay: Layout, tr) -> float:
    """QLoRA dequantises one block matrix to bf16 at a time (bitsandbytes)."""
    if tr.method != "qlora":
        return 0.0
    return 2.0 * max(m.intermediate_size, m.q_width) * m.hidden_size / lay.tp


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


_WORST = IdentityCache(64)  # (model, training, profile, GPU, parameter counts) objects + layout -> StageMemory


def worst_stage(sc: Scenario, pb: ParamBreakdown, lay: Layout) -> StageMemory:
    """The candidate stage with the most bytes. Cached per (spec objects, layout) (``core.memo``): a stage's
    memory reads only the model, the training settings, the framework profile and the GPU (``_stage``)."""
    objs = (sc.model, sc.training, sc.framework, sc.cluster.gpu, pb)
    hit = _WORST.get(objs, lay)
    if hit is not None:
        return hit
    stages = candidate_stages(lay)
    blocks = (_block_bytes(sc.model, lay, sc.training, sc.framework)
              if not phase_memory(sc.framework) and len(stages) > 1 else None)
    mems = [_stage(sc, pb, lay, s, blocks) for s in stages]
    return _WORST.put(objs, lay, max(mems, key=lambda x: x.total))


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


def _loss_terms(tr, prof: FrameworkProfile, micro_batch: int = 1) -> str:
    """The loss in effect and what it holds per logit, for the explanation (``eager_memory`` module doc)."""
    kind = loss_kind(tr, prof)
    if kind == "fused_linear" and tr.liger:
        return ("fused_linear (Liger): two chunks of bf16 logits at the head GEMM + the hidden states' gradient; "
                "a trained head's gradient from the loss forward on")
    if kind == "fused_linear":
        return "fused_linear: one chunk of bf16 logits + the hidden states' gradient"
    fwd, bwd = loss_bytes_per_logit(kind, bool(tr.torch_compile), micro_batch)
    if kind == "chunked_ce":
        return (f"chunked_ce (axolotl chunked_cross_entropy, 8 chunks, compiled): the whole bf16 logits"
                f"{' and their chunks copied' if micro_batch > 1 else ''}, {fwd:g} B per logit in the forward; "
                f"the chunks' bf16 gradients and their concatenation, {bwd:g} B in the backward")
    return f"{kind}: {fwd:g} B per logit in the forward, {bwd:g} B in the backward"


def _overhead_figure(sm: StageMemory, prof: FrameworkProfile) -> Figure:
    """The CUDA context, the allocator's fragmentation (an assumption) and, where ZeRO-3 / FSDP gathers on a side
    stream, the reserve the caching allocator's rules give (``allocator_reserve``)."""
    what = ("CUDA context and workspaces + allocator fragmentation × allocated bytes (with it the total is the "
            "device's figure, as nvidia-smi shows it; without it, PyTorch's allocated bytes, as "
            "torch.cuda.max_memory_allocated reads them)")
    inputs = {"context": prof.context_bytes, "fragmentation": prof.fragmentation, "framework": prof.name}
    if not sm.gather_reserve:
        return Figure.own(sm.overhead, "B", what, inputs, "assumption")
    inputs.update(gather_reserve=sm.gather_reserve, gathered_block=sm.gather_unit,
                  pending_blocks=prof.gather_pending_blocks, flat_copy=prof.gather_flat_copy)
    return Figure.own(sm.overhead, "B", f"{what} + {reserve.describe(prof)}", inputs, "caching-allocator",
                      ("the fragmentation share is an llmplan assumption; the side-stream reserve follows the "
                       "allocator's and the framework's code",))


# Why QLoRA can need more memory than LoRA (Llama-3.1-8B under the HF Trainer on an H100: 60.1 vs 56.0 GiB), said
# on the figures that carry it (``framework_profile.kbit_upcast``; docs/fine-tuning-frameworks.md).
KBIT_WEIGHTS = ("fp32 copies of norms, embeddings and head: prepare_model_for_kbit_training (PEFT) casts them to "
                "fp32, so QLoRA's frozen base here is more than its 4-bit matrices")
KBIT_ACTIVATIONS = ("fp32 copies of norms, embeddings and head: prepare_model_for_kbit_training (PEFT) casts them to "
                    "fp32, so the residual stream and the tensors saved around them are fp32: why QLoRA can take "
                    "more memory than LoRA under this framework")


def breakdown(sc: Scenario, lay: Layout, sm: StageMemory) -> MemoryBreakdown:
    tr = sc.training
    st = sm.states
    d = st.shard_dense
    zsrc = "zero"
    where = stage_name(lay, sm)
    prof = sc.framework
    kbit = (KBIT_WEIGHTS,) if kbit_upcast(tr.method, tr.quant_base, prof, tr.zero_stage) else ()
    w = Figure.own(st.weights, "B", "parameters on this GPU × bytes per weight (÷ d under ZeRO-3)",
                   {"params_on_gpu": sm.params.total, "trainable": sm.trainable, "bytes_per_weight": st.weight_bytes,
                    "zero_stage": tr.zero_stage, "d": d, "stage": where},
                   {"fp8": "transformer-engine", "qlora": "qlora"}.get(
                       "qlora" if tr.method == "qlora" else tr.precision, zsrc),
                   (("fp8: a bf16 weight plus a cached fp8 copy for the GEMMs",) if tr.precision == "fp8" else ()) + kbit)
    if sm.grad_drain is not None:  # torchao's offload_gradients: freed once copied to the host
        dr = sm.grad_drain
        g = Figure.own(sm.gradients, "B", "gradients not yet copied to the host at the peak phase, at most "
                       "min(all gradients, 2 × largest gradient + max(0, all gradients − PCIe × backward)) "
                       f"({EVEN_RATE})", {"phase": sm.phase, **dr.inputs(), "held_at_most": dr.held},
                       "torchao-offload")
    elif sm.phase:  # eager profile: gradients exist from the backward on and are freed after each step
        g = (Figure.own(sm.gradients, "B", "gradients allocated at the peak phase (freed after every step)",
                        {"phase": sm.phase, "all_gradients": st.gradients, "bytes_per_grad": st.grad_bytes,
                         "framework": prof.name}, "hf-eager")
             if sm.gradients else zero("B", f"the peak ({sm.phase}) comes before the backward allocates gradients"))
    else:
        g = (Figure.own(st.gradients, "B", "trainable parameters × bytes per gradient (÷ d from ZeRO-2)",
                        {"trainable": sm.trainable, "bytes_per_grad": st.grad_bytes, "d": d}, zsrc)
             if st.gradients else zero("B", "gradients sharded to the host or nothing trains"))
    ms = (Figure.own(st.master, "B", "trainable × 4 B fp32 master copy (÷ d from ZeRO-1)",
                     {"trainable": sm.trainable, "d": d}, zsrc)
          if st.master else zero("B", "fp32 training or master weights offloaded"))
    o = (Figure.own(st.optimizer, "B", f"{tr.optimizer} states (÷ d from ZeRO-1)",
                    {"trainable": sm.trainable, "bytes_per_param": st.optimizer_bytes, "d": d},
                    _OPTIMIZER_SOURCE.get(tr.optimizer, zsrc))
         if st.optimizer else zero("B", f"{tr.optimizer} keeps no state here"))
    if sm.paged:
        o = zero("B", f"paged {tr.optimizer}: its {sm.paged / 2**30:.2f} GiB of states live in CUDA unified memory, "
                 f"outside PyTorch's allocator, in the GPU memory it leaves free ({sm.paged_host / 2**30:.2f} GiB "
                 "of them paged to the host)")
    if sm.phase:
        a = Figure.own(sm.activations, "B", "saved tensors of the blocks (as the eager modeling code keeps them) + "
                       "the head's inputs + the loss's logits at the peak phase",
                       {"per_block": sm.layer_activations, "blocks": sm.layers, "phase": sm.phase,
                        "head_and_loss": sm.extra_activations, "loss": _loss_terms(tr, prof, lay.micro_batch),
                        "recompute": tr.recompute,
                        "flash_attention": tr.flash_attention, "framework": prof.name}, "hf-eager",
                       (KBIT_ACTIVATIONS,) if kbit else ())
    else:
        titan = titan_eager(tr, prof)
        a = Figure.own(sm.activations, "B", "per-block bytes × blocks on this GPU × micro-batches in flight + extras"
                       + (" (torchtitan's uncompiled modules: fp32 norm copies, K/V repeated to the query width, "
                          "SiLU's output)" if titan else ""),
                       {"per_block": sm.layer_activations, "blocks": sm.layers, "in_flight": sm.in_flight,
                        "stage": where, "embedding_logits_recompute": sm.extra_activations,
                        "recompute": tr.recompute, "flash_attention": tr.flash_attention, "tp": lay.tp,
                        "sequence_parallel": lay.sp, "cp": lay.cp,
                        **({"uncompiled_norm": titan} if titan else {})}, "korthikanti",
                       (KBIT_ACTIVATIONS,) if kbit else ())
    if not sm.buffers:
        b = zero("B", "no gather, pipeline, weight-copy or dequantisation buffers")
    elif sm.phase:
        inputs = {"phase": sm.phase, "method": tr.method}
        if st.gather_buffer:  # ZeRO-3 / FSDP2 (``_gathered_blocks``)
            inputs.update(block_params=sm.params.largest_layer, zero_stage=3)
        if sc.deepspeed_stage:  # ``deepspeed_zero``
            inputs.update(deepspeed_zero_stage=sc.deepspeed_stage)
        b = Figure.own(sm.buffers, "B", "autocast's 16-bit copies of the fp32 weights alive at the peak + QLoRA "
                       "dequantised matrix" + (" + ZeRO-3/FSDP2: one gathered block with its gradients and the next "
                                               "block's all-gather, issued ahead (prefetch)" if st.gather_buffer else "")
                       + (" + DeepSpeed's gradient buckets (reduce_bucket_size) and, at the optimizer step, its flat "
                          "16-bit and fp32 gradient copies (or the norm's fp64 copy of the largest gradient, if larger)"
                          + ("; ZeRO-3 gathers nothing on one GPU or at the step, and holds the output head "
                             "gathered through the loss" if sc.deepspeed_stage == 3 else "")
                          if sc.deepspeed_stage else ""),
                       inputs, "hf-eager")
    else:
        b = Figure.own(sm.buffers, "B", "ZeRO-3 gathered block (weights + 16-bit gradients) + sequence-parallel "
                       "all-gather (2·s·b·h) + pipeline send/receive buffers + QLoRA dequantised matrix",
                       {"zero3_gather": st.gather_buffer, "sequence_parallel": lay.sp, "pp": lay.pp,
                        "method": tr.method}, "korthikanti")
    ov = _overhead_figure(sm, prof)
    parts = {"weights": w, "master_weights": ms, "gradients": g, "optimizer": o, "activations": a,
             "buffers": b, "overhead": ov}
    gpn = sc.cluster.gpus_per_node
    host = (Figure.own(st.host * gpn, "B", "offloaded states per GPU × GPUs per node", {"per_gpu": st.host,
                       "gpus_per_node": gpn, "offload": prof.offload_setting or prof.offload_style},
                       "zero-offload", st.notes) if st.host else zero("B", "nothing offloaded to CPU"))
    if sm.host_activations or sm.paged_host:
        per_gpu = st.host + sm.host_activations + sm.paged_host
        host = Figure.own(per_gpu * gpn, "B", "(offloaded states + offloaded activations + paged optimizer states) "
                          "per GPU × GPUs per node",
                          {"states": st.host, "activations": sm.host_activations, "paged_optimizer": sm.paged_host,
                           "gpus_per_node": gpn, "framework": prof.name}, "framework-switches")
    nvme = (Figure.own(st.nvme * gpn, "B", "offloaded states per GPU × GPUs per node", {"per_gpu": st.nvme,
                       "gpus_per_node": gpn}, "zero-infinity") if st.nvme else zero("B", "nothing on NVMe"))
    cap = sc.cluster.gpu.usable_memory_bytes
    return MemoryBreakdown(
        weights=w, gradients=g, optimizer=o, master_weights=ms, activations=a,
        kv_cache=zero("B", "training keeps no KV cache"), buffers=b, overhead=ov,
        total=total(parts, "B", "memory per GPU"),
        capacity=Figure.own(cap, "B", "memory the device reports × usable fraction − the driver's reserve",
                            {"gpu": sc.cluster.gpu.name, "driver_reserved": sc.cluster.gpu.driver_reserved_bytes},
                            "assumption"),
        host_ram=host, nvme=nvme, worst_gpu=where,
        margin=max(sm.overhead - prof.context_bytes, 0.0),
    )
