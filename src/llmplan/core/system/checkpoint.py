"""Checkpoint size and the time to write and read one.

A training checkpoint holds what a restart needs to continue bit-for-bit: the weights in
the training precision, the fp32 master copy (mixed precision only) and the optimizer
states. Gradients are not saved: they are rebuilt by the next step. This is why a
checkpoint of mixed-precision AdamW is 2 + 4 + 8 = 14 bytes per parameter, not the 16
of ZeRO's model-state memory (which also counts the 2-byte gradients; Rajbhandari et
al. 2020, §3.1). The layout (TP/PP/DP, ZeRO stage) changes how the bytes are split into
files, not how many there are: replicated copies are saved once (PyTorch Distributed
Checkpoint and Megatron's distributed checkpoint deduplicate them and spread the writes
over all ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core import bytes_per_param as facts
from llmplan.core.explain import Figure
from llmplan.core.lora_modules import expert_adapters
from llmplan.core.params import ParamBreakdown
from llmplan.core.system.settings import StoragePreset
from llmplan.core.workload import Scenario

# Bytes per parameter come from ``core.bytes_per_param`` (the engine's own facts): the saved
# weight (fp8 training saves its bf16 weights), the fp32 master copy and the optimizer states,
# Adafactor's factored moments and Muon's per-matrix split included.

@dataclass(frozen=True, slots=True)
class CheckpointSize:
    total: Figure  # bytes of one full checkpoint
    per_model_shard: Figure  # bytes one tensor/pipeline-parallel rank's files hold (tp·pp shards)
    per_gpu: Figure  # bytes each GPU writes when the save is spread over all ranks
    bytes_per_param: Figure  # bytes per trainable parameter (weights + master + optimizer)
    trainable_params: Figure


@dataclass(frozen=True, slots=True)
class CheckpointIO:
    write_s: Figure  # time a save blocks training
    read_s: Figure  # time to load it on restart
    write_bandwidth: Figure
    read_bandwidth: Figure


def checkpoint_size(scenario: Scenario, params: ParamBreakdown) -> CheckpointSize:
    """Bytes of one checkpoint for the scenario's workload, precision and optimizer."""
    par = scenario.parallelism
    gpus = max(1, scenario.cluster.total_gpus)
    shards = par.tp * par.pp
    if scenario.workload == "inference":
        return _weights_only(scenario, params, shards, gpus)
    t = scenario.training
    master = facts.master_bytes(t.precision)
    if t.method == "full":
        trainable = params.total
        w = facts.saved_weight_bytes(t.precision)
        factored, matrices = facts.shape_states(params)
        opt = facts.optimizer_state_bytes(t.optimizer, trainable, factored, matrices) / trainable
        per_param = w + master + opt
        total = trainable * per_param
        formula = "params × (weight bytes + fp32 master + optimizer bytes)"
        assumptions: tuple[str, ...] = ("gradients are not saved; replicated copies are saved once",)
    else:
        trainable = facts.lora_params(params, t.lora_rank, t.lora_targets,
                                      experts=expert_adapters(scenario.model, t.lora_experts))
        # A restart needs the adapters' fp32 copy (the master in mixed precision, the weights in
        # fp32) and the optimizer's states; the frozen base model is not re-saved with each checkpoint.
        opt = facts.optimizer_state_bytes(t.optimizer, 1.0)
        w, master = master or facts.saved_weight_bytes(t.precision), 0.0
        per_param = w + opt
        total = trainable * per_param
        formula = "LoRA params × (fp32 adapter + optimizer bytes)"
        assumptions = ("the frozen base model is not part of the checkpoint", "adapters kept in fp32")
    inputs = {"params": trainable, "weight_bytes": w, "master_bytes": master, "optimizer_bytes": opt,
              "optimizer": t.optimizer, "precision": t.precision}
    return CheckpointSize(
        total=Figure.of(total, "B", formula, inputs, "zero", assumptions),
        per_model_shard=Figure.of(total / shards, "B", "total / (tp × pp)", {"total": total, "tp": par.tp,
                                                                             "pp": par.pp}, "megatron-2021"),
        per_gpu=Figure.of(total / gpus, "B", "total / GPUs (saves spread over all ranks)",
                          {"total": total, "gpus": gpus}, "assumption"),
        bytes_per_param=Figure.of(per_param, "B", "weight + master + optimizer bytes per parameter", inputs, "zero"),
        trainable_params=Figure.of(trainable, "params", "trainable parameters", {"method": t.method}, "lora"
                                   if t.method != "full" else "checkpoint"),
    )


def _weights_only(scenario: Scenario, params: ParamBreakdown, shards: int, gpus: int) -> CheckpointSize:
    fmt = scenario.inference.weight_format
    total = facts.weight_format_bytes(scenario.model, fmt)  # core.quant, tensor by tensor
    bytes_per = facts.weight_format_bits(scenario.model, fmt) / 8
    inputs = {"params": params.total, "bytes_per_param": bytes_per, "weight_format": fmt}
    return CheckpointSize(
        total=Figure.of(total, "B", "stored bytes of every tensor in the weight format", inputs, "checkpoint",
                        ("MTP modules are not part of served weights",) if params.mtp else ()),
        per_model_shard=Figure.of(total / shards, "B", "total / (tp × pp)", {"total": total}, "megatron-2021"),
        per_gpu=Figure.of(total / gpus, "B", "total / GPUs", {"total": total, "gpus": gpus}, "assumption"),
        bytes_per_param=Figure.of(bytes_per, "B", "bytes per weight", inputs, "checkpoint"),
        trainable_params=Figure.of(0, "params", "0 (inference trains nothing)"),
    )


def checkpoint_io(size: CheckpointSize, storage: StoragePreset, nodes: int, *, async_save: bool = False,
                  pcie_bandwidth: float = 0.0) -> CheckpointIO:
    """Write and read times at the storage preset's bandwidth for a job on ``nodes`` nodes.

    With ``async_save`` the step only waits for the device-to-host copy of each GPU's
    share over PCIe (the storage write then overlaps training), as in PyTorch DCP's
    async_save and Megatron's async checkpointing.
    """
    wbw = storage.bandwidth("write", nodes)
    rbw = storage.bandwidth("read", nodes)
    caps = {"per_node": storage.write_per_node, "aggregate": storage.write_aggregate, "nodes": nodes}
    write_bw = Figure.of(wbw, "B/s", "min(nodes × write_per_node, write_aggregate)", caps, storage.source)
    read_bw = Figure.of(rbw, "B/s", "min(nodes × read_per_node, read_aggregate)",
                        {"per_node": storage.read_per_node, "aggregate": storage.read_aggregate, "nodes": nodes},
                        storage.source)
    total = size.total.value
    if async_save and pcie_bandwidth > 0:
        write = Figure.of(size.per_gpu.value / pcie_bandwidth, "s", "per-GPU share / PCIe bandwidth (async save)",
                          {"per_gpu": size.per_gpu.value, "pcie_bandwidth": pcie_bandwidth}, "assumption",
                          ("the background write to storage finishes before the next save",))
    else:
        write = Figure.of(total / wbw, "s", "checkpoint bytes / write bandwidth",
                          {"bytes": total, "write_bandwidth": wbw}, storage.source)
    read = Figure.of(total / rbw, "s", "checkpoint bytes / read bandwidth",
                     {"bytes": total, "read_bandwidth": rbw}, storage.source)
    return CheckpointIO(write, read, write_bw, read_bw)
