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

from llmplan.core.explain import Figure
from llmplan.core.params import ParamBreakdown
from llmplan.core.system.settings import StoragePreset
from llmplan.core.workload import Scenario

# Bytes per parameter of the saved weights, by training precision. fp8 training keeps
# bf16 weights and casts to fp8 per GEMM (Transformer Engine), so it saves 2 bytes.
_WEIGHT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 2}

# Optimizer state bytes per trainable parameter: AdamW two fp32 moments; 8-bit Adam two
# 1-byte moments (Dettmers et al. 2022, block-wise quantisation, scales ignored); SGD none;
# momentum, Lion and Muon one fp32 buffer; Adafactor (no momentum) keeps only factored
# row and column statistics, O(rows + cols): negligible per parameter.
OPTIMIZER_BYTES = {"adamw": 8, "adam8bit": 2, "sgd": 0, "momentum": 4, "lion": 4, "muon": 4, "adafactor": 0}

_LORA_MODULES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
                 "gate": "gate_proj", "up": "up_proj", "down": "down_proj"}


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


def lora_params(params: ParamBreakdown, rank: int, targets: tuple[str, ...]) -> int:
    """Adapter parameters: r·(d_in + d_out) for every targeted matrix (Hu et al. 2022, §4.1)."""
    suffixes = tuple(f".{_LORA_MODULES[t]}" for t in targets)
    total = 0
    for g in params.groups:
        if len(g.shape) == 2 and g.name.endswith(suffixes):
            total += g.count * rank * (g.shape[0] + g.shape[1])
    return total


def checkpoint_size(scenario: Scenario, params: ParamBreakdown) -> CheckpointSize:
    """Bytes of one checkpoint for the scenario's workload, precision and optimizer."""
    par = scenario.parallelism
    gpus = max(1, scenario.cluster.total_gpus)
    shards = par.tp * par.pp
    if scenario.workload == "inference":
        return _weights_only(scenario, params, shards, gpus)
    t = scenario.training
    w = _WEIGHT_BYTES[t.precision]
    master = 0 if t.precision == "fp32" else 4
    opt = OPTIMIZER_BYTES[t.optimizer]
    if t.method == "full":
        trainable = params.total
        per_param = w + master + opt
        total = trainable * per_param
        formula = "params × (weight bytes + fp32 master + optimizer bytes)"
        assumptions: tuple[str, ...] = ("gradients are not saved; replicated copies are saved once",)
    else:
        trainable = lora_params(params, t.lora_rank, t.lora_targets)
        # Adapters train in fp32 (PEFT's default), with the optimizer's states; the frozen
        # base model is not re-saved with each checkpoint.
        per_param = 4 + opt
        total = trainable * per_param
        w, master = 4, 0
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
    bytes_per = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}.get(fmt)
    if bytes_per is None:
        # Quantised formats: the engine's own weight size is authoritative; use 2 bytes
        # here only as an upper bound and say so.
        bytes_per = 2
        note: tuple[str, ...] = (f"'{fmt}' is quantised; upper bound at 2 bytes/param (use the engine's "
                                 "inference.weight_bytes for the exact size)",)
    else:
        note = ()
    total = params.total * bytes_per
    inputs = {"params": params.total, "bytes_per_param": bytes_per, "weight_format": fmt}
    return CheckpointSize(
        total=Figure.of(total, "B", "params × bytes per weight", inputs, "checkpoint", note),
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
