"""Model states per GPU: weights, gradients, fp32 master weights and optimizer states.

Bytes per parameter follow ZeRO's notation (Rajbhandari et al. 2020 §3.1): mixed-precision
Adam keeps 2 B of fp16/bf16 weights, 2 B of gradients and K = 12 B of optimizer state (fp32
master copy, momentum and variance), 16 B in all; Megatron keeps fp32 gradients (4 B,
``fp32_grad_accumulation``), 18 B in all. ZeRO stage 1 (and Megatron's distributed
optimizer) shards master weights and optimizer states over the data-parallel group, stage 2
also the gradients, stage 3 also the weights. Routed experts are sharded over the smaller
expert-data-parallel group (dp·cp/ep).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.training.shard import StageParams
from llmplan.core.workload import TrainingSettings

_ADAM8_BLOCK = 2048  # bitsandbytes blockwise 8-bit optimizers: one fp32 absmax per 2048 values per state


@dataclass(frozen=True, slots=True)
class StateBytes:
    """Bytes per GPU of each model state, with how they were derived (for ``Figure``)."""

    weights: float
    gradients: float
    master: float
    optimizer: float
    host: float  # per GPU on the host (CPU offload)
    nvme: float  # per GPU on NVMe
    gather_buffer: float  # ZeRO-3: one block's gathered weights and (16-bit) gradients
    weight_bytes: float  # bytes per trainable weight on the GPU (before sharding)
    grad_bytes: float
    master_bytes: float
    optimizer_bytes: float  # per trainable parameter (average)
    shard_dense: int
    shard_expert: int
    notes: tuple[str, ...]
    offloaded_weights: float = 0.0  # this GPU's weight partition kept off the GPU (fetched every pass)


def weight_bytes(precision: str, params_are_master: bool = False, regime: str = "amp") -> float:
    """Bytes of one trainable weight on the GPU. fp8 (Transformer Engine): bf16 weight + fp8 GEMM copy.
    Under AMP with fp32 parameters (``params_are_master``) the stored weight is the fp32 master itself."""
    if params_are_master and regime == "amp" and precision != "fp8":
        return 4.0
    return {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 3.0}[precision]


def master_bytes(tr: TrainingSettings, prof: FrameworkProfile) -> float:
    """A separate fp32 master copy exists only in mixed precision where the weights themselves are 16-bit."""
    if tr.precision == "fp32" or tr.regime == "pure" or (prof.params_are_master and tr.precision != "fp8"):
        return 0.0
    return 4.0


def grad_bytes(tr: TrainingSettings, prof: FrameworkProfile | None = None) -> float:
    """fp32 training and fp32 gradient buffers: 4 B; pure 16-bit training: 2 B; otherwise the plan's
    ``fp32_grad_accumulation``, or the framework's when the plan leaves it open."""
    if tr.precision == "fp32":
        return 4.0
    if tr.regime == "pure":
        return 2.0
    acc = tr.fp32_grad_accumulation
    if acc is None:
        acc = prof.fp32_grad_accumulation if prof is not None else True
    return 4.0 if acc else 2.0


def optimizer_bytes(tr: TrainingSettings, sp: StageParams, trainable: float, full: bool) -> float:
    """Optimizer-state bytes (master weights excluded) for ``trainable`` parameters on this GPU.

    Adafactor and Muon depend on tensor shapes, known here only for full training; for LoRA's
    small adapters both are counted as one fp32 state per parameter (an upper bound for Adafactor).
    """
    opt = tr.optimizer
    if opt == "sgd":
        return 0.0
    if opt in ("momentum", "lion"):
        return 4.0 * trainable
    if opt == "adamw":
        return 8.0 * trainable
    if opt == "adam8bit":
        return (2.0 + 2 * 4.0 / _ADAM8_BLOCK) * trainable
    if opt == "adafactor":  # factored second moment (rows + cols per matrix), no first moment
        return 4.0 * (sp.factored if full else trainable)  # adapters: counted unfactored (an upper bound)
    # muon: one fp32 momentum for the block matrices, AdamW for embeddings, head and vectors
    if full:
        return 4.0 * sp.matrices + 8.0 * (trainable - sp.matrices)
    return 4.0 * trainable


def model_states(tr: TrainingSettings, sp: StageParams, trainable: float, frozen_bytes: float,
                 dp_group: int, ep: int, full: bool, prof: FrameworkProfile | None = None) -> StateBytes:
    """Per-GPU model states for one stage. ``trainable`` parameters on the GPU; ``frozen_bytes`` of
    frozen base weights (LoRA/QLoRA); ``dp_group`` = dp·cp, the ZeRO sharding group."""
    prof = prof or FrameworkProfile()
    wb = weight_bytes(tr.precision, prof.params_are_master, tr.regime)
    gb = grad_bytes(tr, prof)
    mb = master_bytes(tr, prof)
    ob_total = optimizer_bytes(tr, sp, trainable, full)
    if (tr.regime == "pure" or tr.bf16_optimizer_states) and tr.optimizer != "adam8bit":
        ob_total /= 2  # states in the parameters' 16-bit dtype, or a bf16-state optimizer (switches module doc)
    expert_share = sp.expert / sp.total if full and sp.total else 0.0
    d_dense = dp_group
    d_exp = max(1, dp_group // ep)
    notes: list[str] = []

    def shard(x: float) -> float:
        return x * (1 - expert_share) / d_dense + x * expert_share / d_exp

    stage = tr.zero_stage
    opt_sharded = stage >= 1 or tr.distributed_optimizer
    weights = trainable * wb
    grads = trainable * gb
    master = trainable * mb
    optim = ob_total
    if opt_sharded:
        master, optim = shard(master), shard(optim)
    if stage >= 2:
        grads = shard(grads)
    gather = 0.0
    frozen = frozen_bytes
    if stage == 3:
        weights = shard(weights)
        frozen = frozen_bytes / d_dense
        # one gathered block: its weights, and its gradients in 16 bits before the reduce-scatter
        gather = sp.largest_layer * (wb + (4.0 if tr.precision == "fp32" else 2.0))
    host = nvme = fetched = 0.0
    if tr.offload != "none":
        off = master + optim + (grads if stage >= 2 else 0.0)
        if tr.offload == "cpu":
            host += off
        else:
            nvme += off
        master = optim = 0.0
        if stage >= 2:
            grads = 0.0
        notes.append(f"master weights and optimizer states offloaded to {tr.offload}")
        if tr.offload_params and stage == 3:
            if tr.offload == "cpu":
                host += weights + frozen
            else:
                nvme += weights + frozen
            fetched = weights + frozen
            weights = frozen = 0.0
            notes.append("parameters offloaded too (ZeRO-Infinity); the GPU holds the gathered block")
    return StateBytes(weights + frozen, grads, master, optim, host, nvme, gather, wb, gb, mb,
                      ob_total / trainable if trainable else 0.0, d_dense, d_exp, tuple(notes), fetched)
