"""The typed, frozen results of ``estimate``. Every number is an explained ``Figure``.

The CLI's ``--json`` keys (DESIGN.md §3) are read from these objects by
``llmplan.cli.report``; add fields freely, never rename them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmplan.core.explain import Figure
from llmplan.core.params import ParamBreakdown


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Memory of the worst-loaded GPU, in bytes. ``total`` sums the parts."""

    weights: Figure
    gradients: Figure
    optimizer: Figure
    master_weights: Figure
    activations: Figure
    kv_cache: Figure
    buffers: Figure  # communication buckets, workspace, logits
    overhead: Figure  # CUDA context, framework, fragmentation
    total: Figure
    capacity: Figure  # usable memory of one GPU
    host_ram: Figure  # per node, for offload (0 when nothing is offloaded)
    nvme: Figure  # per node, for NVMe offload
    worst_gpu: str = ""  # which GPU this is, e.g. "pipeline stage 1 of 16 (first, ...)"; "" when not told
    margin: float = 0.0  # bytes of headroom below which the fit is "tight" (the allocator's fragmentation)

    @property
    def fits(self) -> bool:
        return self.total.value <= self.capacity.value

    @property
    def tight(self) -> bool:
        """Fits, but with less headroom than the caching allocator's fragmentation can take: a run may
        still run out of memory (measured reserved/allocated on an H100 ranged 1.04-1.16)."""
        return self.fits and self.headroom < self.margin

    @property
    def headroom(self) -> float:
        """Bytes left (negative: shortfall)."""
        return self.capacity.value - self.total.value

    def parts(self) -> dict[str, Figure]:
        """The stacked components, in display order."""
        return {
            "weights": self.weights,
            "master_weights": self.master_weights,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "activations": self.activations,
            "kv_cache": self.kv_cache,
            "buffers": self.buffers,
            "overhead": self.overhead,
        }


@dataclass(frozen=True, slots=True)
class Collective:
    """One kind of communication in a training step, per GPU."""

    name: str  # e.g. "TP all-reduce (per layer)", "DP gradient reduce-scatter"
    group: str  # "tp", "pp", "dp", "cp", "ep"
    group_size: int
    link: str  # "intra-node" or "inter-node"
    bytes_per_step: Figure  # bytes each GPU sends per step
    time_s: Figure  # at the link's achievable bandwidth
    exposed_s: Figure  # the part not hidden behind compute
    bandwidth_needed: Figure | None = None  # B/s that would hide it fully behind the compute it can overlap
    algorithm: str = ""  # NCCL algorithm/protocol, e.g. "ring/Simple", "nvls/Simple", "tree/LL128"
    span: str = ""  # where the group sits, e.g. "1 node, 8 GPUs" or "2 nodes × 8 GPUs"
    nodes: int = 1  # nodes the group spans
    message_bytes: float = 0.0  # bytes of one call (nccl-tests convention)
    calls: int = 0  # calls per step
    bus_bandwidth: float = 0.0  # bus bandwidth reached, bytes/s (nccl-tests busbw)
    latency_s: float = 0.0  # the latency part of time_s
    limit: str = ""  # what bounds it: "NVLink", "network" or "latency"
    hides_behind: str = ""  # the compute it overlaps with (framework profile); "" if on the critical path
    unhidden_s: float = 0.0  # the part of exposed_s that no compute can hide (e.g. the last gradient bucket)


@dataclass(frozen=True, slots=True)
class CommunicationReport:
    collectives: tuple[Collective, ...]
    intra_node_bytes: Figure
    inter_node_bytes: Figure
    intra_node_bandwidth_needed: Figure  # B/s to hide it behind compute
    inter_node_bandwidth_needed: Figure
    exposed_time_s: Figure
    bottleneck_link: str  # "intra-node", "inter-node" or "none"


@dataclass(frozen=True, slots=True)
class ComputeReport:
    flops_per_step: Figure  # model FLOPs (no recompute), all GPUs
    hardware_flops_per_step: Figure  # including recompute
    step_time_s: Figure
    compute_time_s: Figure
    bubble_fraction: Figure
    tokens_per_s: Figure
    mfu: Figure
    hfu: Figure
    training_days: Figure
    gpu_hours: Figure
    cost_usd: Figure | None
    offload_time_s: Figure | None = None  # exposed offload time per step (training.offload), its parts as inputs
    grad_clip_s: Figure | None = None  # gradient clipping per step (training.grad_clip), None where it does not run
    breakdown: dict[str, float] = field(default_factory=dict)  # seconds per part of a step (sums to step_time_s)
    global_batch: Figure | None = None  # sequences per optimizer step (training.batch: fixed across layouts)
    accumulation: Figure | None = None  # micro-batches per data-parallel replica per step


@dataclass(frozen=True, slots=True)
class InferenceReport:
    ttft_s: Figure
    tpot_s: Figure
    tokens_per_s: Figure  # aggregate output tokens/s at the plan's batch
    tokens_per_s_per_user: Figure
    max_concurrency: Figure  # sequences of the plan's length that fit
    kv_bytes_per_token: Figure
    weight_bytes: Figure
    prefill_bound: str  # "compute" or "memory bandwidth"
    decode_bound: str
    cost_per_million_input: Figure | None
    cost_per_million_output: Figure | None
    gpu_layers: Figure | None = None  # llama.cpp partial offload: layers on the GPU
    cpu_moe_layers: Figure | None = None  # llama.cpp --n-cpu-moe N: the first N layers' routed experts in host RAM
    kv_pool_bytes: Figure | None = None  # KV bytes per GPU the engine can hold (vLLM's preallocated pool)
    request_latency_s: Figure | None = None  # ttft + output_tokens · tpot
    prefill_tokens_per_s: Figure | None = None  # prompt tokens/s over all GPUs of the plan
    host_weight_bytes: Figure | None = None  # weights left in host RAM (partial offload)
    weight_format: str = ""
    engine: str = ""


@dataclass(frozen=True, slots=True)
class Bottleneck:
    kind: str  # "compute" | "memory bandwidth" | "memory capacity" | "interconnect" | "network" | "cpu" | ...
    statement: str  # one plain sentence for people


@dataclass(frozen=True, slots=True)
class Estimate:
    params: ParamBreakdown
    memory: MemoryBreakdown
    compute: ComputeReport | None
    communication: CommunicationReport | None
    inference: InferenceReport | None
    bottleneck: Bottleneck
    warnings: tuple[str, ...] = field(default=())

    @property
    def fits(self) -> bool:
        return self.memory.fits
