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

import sys
from dataclasses import dataclass

from llmplan.core import bytes_per_param as facts
from llmplan.core.framework_profile import FrameworkProfile, offloads_params
from llmplan.core.training.shard import StageParams
from llmplan.core.workload import TrainingSettings

FP32_GRAD_BYTES = 4.0  # HybridDeviceOptimizer's pinned host gradient buffer, in its fp32 CPU copy's dtype


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
    """Bytes of one trainable weight on the GPU (``core.bytes_per_param``)."""
    return facts.weight_bytes(precision, params_are_master, regime)


def grad_bytes(tr: TrainingSettings, prof: FrameworkProfile | None = None) -> float:
    """``core.bytes_per_param.grad_bytes``, with the plan's fp32_grad_accumulation or, left open, the
    framework's."""
    acc = tr.fp32_grad_accumulation
    if acc is None:
        acc = prof.fp32_grad_accumulation if prof is not None else True
    return facts.grad_bytes(tr.precision, acc, tr.regime)


def optimizer_bytes(tr: TrainingSettings, sp: StageParams, trainable: float, full: bool) -> float:
    """Optimizer-state bytes (master weights excluded) for ``trainable`` parameters on this GPU.

    Adafactor and Muon depend on tensor shapes, known here only for full training; for LoRA's
    small adapters both are counted as one fp32 state per parameter (``core.bytes_per_param``).
    """
    return facts.optimizer_state_bytes(tr.optimizer, trainable, sp.factored if full else None,
                                       sp.matrices if full else None)


def model_states(tr: TrainingSettings, sp: StageParams, trainable: float, frozen_bytes: float,
                 dp_group: int, ep: int, full: bool, prof: FrameworkProfile | None = None) -> StateBytes:
    """Per-GPU model states for one stage. ``trainable`` parameters on the GPU; ``frozen_bytes`` of
    frozen base weights (LoRA/QLoRA); ``dp_group`` = dp·cp, the ZeRO sharding group."""
    prof = prof or FrameworkProfile()
    wb = weight_bytes(tr.precision, prof.params_are_master, tr.regime)
    gb = grad_bytes(tr, prof)
    mb = facts.master_bytes(tr.precision, prof.params_are_master, tr.regime)
    ob_total = optimizer_bytes(tr, sp, trainable, full)
    if (tr.regime == "pure" or tr.bf16_optimizer_states) and tr.optimizer != "adam8bit":
        ob_total = ob_total / 2  # states in the parameters' 16-bit dtype, or a bf16-state optimizer (switches)
    expert_share = _ratio(sp.expert, sp.total) if full else 0.0
    d_dense = dp_group
    d_exp = _at_least_one(dp_group // ep)
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
        gather = sp.largest_layer * (wb + facts.gathered_grad_bytes(tr.precision))
    host = nvme = fetched = 0.0
    if tr.offload != "none" and prof.offload_style == "torchao":
        host, master, optim = _torchao_offload(trainable, wb, optim, notes)
    elif tr.offload != "none" and prof.offload_style == "optimizer":
        host, master, optim = _hybrid_offload(tr, trainable, shard if opt_sharded else (lambda x: x), master, optim,
                                              notes)
    elif tr.offload != "none":
        grads_go = grads_offloaded(stage, prof)
        off = master + optim + (grads if grads_go else 0.0)
        if tr.offload == "cpu":
            host += off
        else:
            nvme += off
        master = optim = 0.0
        if grads_go:
            grads = 0.0
        notes.append(f"master weights and optimizer states offloaded to {tr.offload}")
        if offloads_params(tr.offload, tr.offload_params, prof) and stage == 3:
            if tr.offload == "cpu":
                host += weights + frozen
            else:
                nvme += weights + frozen
            fetched = weights + frozen
            weights = frozen = 0.0
            notes.append("parameters offloaded too (" + ("FSDP CPU offload" if prof.offload_style == "fsdp" else
                                                         "ZeRO-Infinity") + "); the GPU holds the gathered block")
    return StateBytes(weights + frozen, grads, master, optim, host, nvme, gather, wb, gb, mb,
                      _ratio(ob_total, trainable), d_dense, d_exp, tuple(notes), fetched)


def _hybrid_offload(tr: TrainingSettings, trainable: float, shard, master: float, optim: float,
                    notes: list[str]) -> tuple[float, float, float]:
    """Megatron-Core's ``--optimizer-cpu-offload`` (offload style ``optimizer``): (host bytes, master and optimizer
    bytes left on the GPU). ``HybridDeviceOptimizer._get_sub_optimizer_param_groups`` (NVIDIA/Megatron-LM
    megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py at d98e8a6) walks the optimizer's parameters in
    order (this rank's shards with the distributed optimizer) and moves each to the host while the moved count is
    below ``--optimizer-offload-fraction`` F × the total, so F of them go (the parameter that crosses the line
    goes whole: an overshoot of at most one tensor, not modelled). Per moved parameter the host keeps an fp32
    copy (``param_update_in_fp32=True``), torch AdamW's two fp32 states and a pinned fp32 gradient buffer
    (``cpu_copy_map_grad``, the CPU copy's dtype): 4 + 8 + 4 B with AdamW. The rest keep their fp32 master and
    states on the GPU for the GPU Adam; the gradient buffer and the 16-bit parameters stay on the GPU."""
    f = tr.optimizer_offload_fraction
    grads = FP32_GRAD_BYTES * shard(trainable) * f
    notes.append((f"{f:.0%} of the optimizer's parameters" if f < 1 else "the master weights and optimizer states")
                 + " offloaded to cpu with fp32 gradient buffers (Megatron-Core HybridDeviceOptimizer); "
                 "the gradient buffer stays on the GPU" + (", the rest stepped by the GPU's Adam" if f < 1 else ""))
    return f * (master + optim) + grads, (1 - f) * master, (1 - f) * optim


def _torchao_offload(trainable: float, wb: float, optim: float, notes: list[str]) -> tuple[float, float, float]:
    """torchao's ``CPUOffloadOptimizer`` (offload style ``torchao``; pytorch/ao torchao/optim/cpu_offload.py at
    36027d8): for each trained parameter a pinned host copy ``empty_like(p_device)`` in the parameter's own dtype,
    its pinned gradient of the same dtype, and the base optimizer's states on the host (torch AdamW's
    ``zeros_like(param)``: 2 × 2 B in pure bf16, the "4x model size" of torchtune's memory-optimisation docs); no
    master copy anywhere, so the GPU keeps its parameters and no optimizer state. Its gradients stay on the GPU
    until ``zero_grad`` (``offload_gradients=False``, the class's default); with ``training.offload_gradients``
    (torchtune's docs show ``offload_gradients: True``) each is freed once copied, as far as PCIe keeps up with the
    backward: the phase-by-phase peak bounds what is left (``grad_offload``), these bytes stay all of them.
    Parameters under 4,096 elements
    (``minimal_size``: norm weights of models narrower than 4,096) stay on the GPU with a GPU optimizer: not
    counted (under 0.01% of the parameters). (host bytes, master and optimizer bytes left on the GPU)"""
    notes.append("optimizer states, a copy of each parameter and its gradient in pinned CPU RAM (torchao "
                 "CPUOffloadOptimizer); no master copy")
    return trainable * 2 * wb + optim, 0.0, 0.0


def grads_offloaded(stage: int, prof: FrameworkProfile) -> bool:
    """Whether an offloading plan keeps this GPU's gradients on the host: DeepSpeed at ZeRO-2/3 (each
    micro-batch's reduced partition goes to the host's fp32 gradient partition; stage_1_and_2.py
    ``async_accumulate_grad_in_cpu_via_gpu``, stage3.py ``partition_grads``), FSDP's CPU offload at every
    sharding (the reduced shard is copied to the host: FSDP1 ``_offload_grad``'s ``cpu_offload.offload_params``
    path, FSDP2 ``foreach_reduce`` with its CPUOffloadPolicy), never Megatron-Core's HybridDeviceOptimizer (its
    gradient buffer stays on the GPU and is copied to pinned CPU buffers in ``step()``). torchao's CPUOffloadOptimizer
    copies each gradient to its pinned host buffer from a post-accumulate-grad hook, per micro-batch behind the
    backward (``offload_time``); its GPU gradients stay as well unless ``offload_gradients`` (``grad_offload``)."""
    if prof.offload_style == "optimizer":
        return False
    return prof.offload_style in ("fsdp", "torchao") or stage >= 2


# The search's quick model calls ``model_states`` on NumPy arrays of candidate layouts (one call per
# ZeRO stage and offload setting): these keep it working on floats and arrays alike. NumPy is not
# imported for the engine's floats (its import, 0.2–0.4 s on the 2-core dev VM, was a large part of the
# app's start-up): an array exists only if the caller has imported NumPy already.
def _array(x) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _ratio(a, b):
    """a / b, and 0 where b is 0."""
    if _array(b):
        import numpy as np

        return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b != 0)
    return a / b if b else 0.0


def _at_least_one(x):
    if _array(x):
        import numpy as np

        return np.maximum(x, 1)
    return max(1, x)
