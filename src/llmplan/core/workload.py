"""What the user wants to do with the model: the workload knobs and the parallel layout.

These sections are shared verbatim by the plan file (``llmplan.plan.planfile``), so their
field names are the contract of DESIGN.md §3 (``training.zero_stage``, ``parallelism.tp``
...). A ``Scenario`` is a fully resolved plan: the model and cluster specs themselves
rather than catalog ids. ``llmplan.core.engine(scenario)`` is a pure function of it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.frozen import FrozenModel
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.model import ModelSpec

Workload = Literal["pretrain", "finetune", "inference"]
Precision = Literal["fp32", "fp16", "bf16", "fp8"]
Optimizer = Literal["sgd", "momentum", "adamw", "adam8bit", "adafactor", "lion", "muon"]
Recompute = Literal["none", "selective", "full"]
Offload = Literal["none", "cpu", "nvme"]
Method = Literal["full", "lora", "qlora"]
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]


class TrainingSettings(FrozenModel):
    method: Method = "full"
    precision: Precision = "bf16"
    optimizer: Optimizer = "adamw"
    seq_len: int = Field(4096, ge=1, le=10_000_000, description="tokens per sequence")
    micro_batch: int = Field(1, ge=1, le=100_000, description="sequences per GPU per forward/backward pass")
    global_batch: int = Field(
        0, ge=0, le=100_000_000, description="sequences per optimizer step over all replicas; 0: micro_batch·dp"
    )
    tokens: float = Field(1e12, gt=0, le=1e17, description="tokens to train on (for time and cost)")
    recompute: Recompute = "selective"
    flash_attention: bool = True
    zero_stage: Literal[0, 1, 2, 3] = 1
    offload: Offload = "none"
    offload_params: bool = Field(False, description="ZeRO-Infinity/FSDP: offload parameters too (stage 3)")
    distributed_optimizer: bool = Field(False, description="Megatron's distributed optimizer (≈ ZeRO-1)")
    shard_group: int = Field(
        0, ge=0, le=1_000_000,
        description="ranks ZeRO/FSDP shards over; 0: all of dp·cp; e.g. 8: FSDP HYBRID_SHARD within a node",
    )
    fp32_grad_accumulation: bool = Field(True, description="keep a fp32 gradient buffer (Megatron default)")
    lora_rank: int = Field(16, ge=1, le=65_536)
    lora_targets: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")
    qlora_double_quant: bool = True
    dropout: float = Field(
        0.0, ge=0, lt=1, description="attention and hidden dropout; > 0 stores 1-byte masks (modern LLMs use 0)"
    )
    overlap_grad_reduce: bool = Field(
        True, description="overlap the data-parallel gradient reduction with the last micro-batch's backward"
    )


class InferenceSettings(FrozenModel):
    weight_format: str = Field("bf16", min_length=1, description="fp16, bf16, fp8, int8, awq-4bit, q4_k_m ...")
    kv_dtype: str = Field("bf16", min_length=1)
    batch: int = Field(1, ge=1, le=1_000_000, description="concurrent sequences")
    prompt_tokens: int = Field(1024, ge=1, le=100_000_000)
    output_tokens: int = Field(256, ge=1, le=100_000_000)
    engine: str = Field("vllm", min_length=1, description="engine profile id (vllm, llama.cpp, ...)")
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="vLLM's setting; None: engine default")
    gpu_layers: int | None = Field(None, ge=0, description="llama.cpp -ngl: layers on the GPU; None: as many as fit")
    host_memory_bandwidth: float | None = Field(
        None, gt=0, description="bytes/s for layers left in host RAM (partial offload); None: engine default"
    )
    shared_prefix_tokens: int = Field(0, ge=0, description="leading prompt tokens all sequences share (cached once)")
    draft_tokens: int = Field(0, ge=0, le=64, description="speculative decoding: tokens the draft proposes per step")
    draft_acceptance: float = Field(0.7, ge=0, lt=1, description="probability the target accepts each draft token")
    draft_cost_ratio: float = Field(
        0.05, ge=0, le=1, description="time of one draft-model step relative to one target-model step"
    )


class ParallelLayout(FrozenModel):
    tp: int = Field(1, ge=1, le=1024, description="tensor parallel size")
    pp: int = Field(1, ge=1, le=1024, description="pipeline parallel stages")
    dp: int = Field(1, ge=1, le=1_000_000, description="data parallel replicas")
    cp: int = Field(1, ge=1, le=1024, description="context parallel size (sequence split for attention)")
    ep: int = Field(1, ge=1, le=1024, description="expert parallel size (within data parallel)")
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism alongside TP")
    virtual_stages: int = Field(1, ge=1, le=128, description="interleaved pipeline chunks per GPU")
    first_stage_layers: int | None = Field(
        None, ge=0, le=100_000,
        description="transformer layers on the first pipeline stage (Megatron --decoder-first-pipeline-num-layers); "
                    "None: automatic balanced split",
    )
    last_stage_layers: int | None = Field(
        None, ge=0, le=100_000,
        description="transformer layers on the last pipeline stage (Megatron --decoder-last-pipeline-num-layers); "
                    "None: automatic balanced split",
    )

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


class EfficiencyOverrides(FrozenModel):
    """Optional per-plan overrides of the catalog's achievable fractions (None: keep default)."""

    matmul: float | None = Field(None, gt=0, le=1)
    memory_bandwidth: float | None = Field(None, gt=0, le=1)
    network: float | None = Field(None, gt=0, le=1)
    host_memory_bandwidth: float | None = Field(
        None, gt=0, le=1, description="fraction of host DRAM bandwidth the CPU optimizer reaches (offload)"
    )
    pcie: float | None = Field(None, gt=0, le=1, description="fraction of the GPU's PCIe rate copies reach (offload)")

    def apply(self, base: Efficiency) -> Efficiency:
        changes = {k: v for k, v in self.model_dump().items() if v is not None}
        return base.model_copy(update=changes) if changes else base


class Scenario(FrozenModel):
    """A resolved plan: everything ``estimate`` needs, nothing it has to look up."""

    model: ModelSpec
    cluster: ClusterSpec
    workload: Workload = "pretrain"
    training: TrainingSettings = TrainingSettings()
    inference: InferenceSettings = InferenceSettings()
    parallelism: ParallelLayout = ParallelLayout()
    efficiency: Efficiency = Efficiency()
    engine_profile: EngineProfile | None = Field(
        None, description="inference: the engine's catalog profile (None: a neutral runtime)"
    )

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.workload == "pretrain" and self.training.method != "full":
            raise ValueError("pre-training trains every weight: set training.method to 'full'")
        return self
