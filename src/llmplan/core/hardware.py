"""Hardware specs: an accelerator, a node, a network, and a cluster built from them.

All figures are SI: bytes, bytes/s, FLOP/s (dense, i.e. without 2:4 sparsity), watts.
``memory_bytes`` is what the device itself reports (an H100 80GB HBM3 reports
81,559 MiB), with the marketing size kept beside it for display.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from llmplan.core.frozen import FrozenModel

# Plausibility bounds: wider than any device or link that exists, narrow enough that the engine's
# floats stay finite (a bandwidth of 5e-324 B/s would make a step take infinitely long).
MIN_RATE, MAX_RATE = 1e6, 1e16  # bytes/s of a memory or a link
MAX_FLOPS = 1e19  # FLOP/s of one device (a B200 is ~1e16 at fp4)
MIN_MEMORY, MAX_MEMORY = 2**20, 2**50


def _check_rate(name: str, value: float | None, lo: float, hi: float) -> None:
    if value and not lo <= value <= hi:
        raise ValueError(f"{name} = {value:g} is not plausible; give a value between {lo:g} and {hi:g} (or 0)")


Dtype = Literal["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "int4"]


class PeakFlops(FrozenModel):
    """Dense peak throughput per dtype in FLOP/s (OP/s for int8/int4). None: not supported."""

    fp64: float | None = Field(None, ge=0)
    fp32: float | None = Field(None, ge=0)
    tf32: float | None = Field(None, ge=0)
    fp16: float | None = Field(None, ge=0, description="fp16 with fp32 accumulate (what training uses)")
    bf16: float | None = Field(None, ge=0)
    fp8: float | None = Field(None, ge=0)
    int8: float | None = Field(None, ge=0)
    fp4: float | None = Field(None, ge=0)
    int4: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _plausible(self) -> PeakFlops:
        for name, value in self.model_dump().items():
            _check_rate(f"peak_flops.{name}", value, MIN_RATE, MAX_FLOPS)
        return self

    def for_dtype(self, dtype: str) -> float:
        """Peak for ``dtype``, falling back to the nearest wider type the device supports."""
        order = {
            "fp4": ("fp4", "fp8", "int8", "fp16", "bf16", "fp32"),
            "int4": ("int4", "int8", "fp16", "bf16", "fp32"),
            "fp8": ("fp8", "fp16", "bf16", "fp32"),
            "int8": ("int8", "fp16", "bf16", "fp32"),
            "bf16": ("bf16", "fp16", "fp32"),
            "fp16": ("fp16", "bf16", "fp32"),
            "tf32": ("tf32", "fp32"),
            "fp32": ("fp32",),
            "fp64": ("fp64", "fp32"),
        }.get(dtype, (dtype, "bf16", "fp16", "fp32"))
        for d in order:
            v = getattr(self, d, None)
            if v:
                return float(v)
        return 0.0


class GpuSpec(FrozenModel):
    """One accelerator (a GPU, a GCD of an MI250X, an Apple Silicon GPU with its unified memory)."""

    id: str = Field(min_length=1, description="stable catalog id, e.g. 'nvidia-h100-sxm-80gb'")
    name: str = Field(min_length=1, description="display name, e.g. 'NVIDIA H100 SXM 80GB'")
    vendor: Literal["nvidia", "amd", "intel", "apple", "google", "other"]
    memory_bytes: int = Field(gt=0, description="memory as the device reports it, in bytes")
    memory_marketing: str = Field("", description="the size as marketed, e.g. '80 GB'")
    memory_bandwidth: float = Field(gt=0, description="peak memory bandwidth, bytes/s")
    peak_flops: PeakFlops
    nvlink_bandwidth: float = Field(0.0, ge=0, description="per-GPU GPU-to-GPU link bandwidth, bytes/s, one direction")
    pcie_bandwidth: float = Field(0.0, ge=0, description="host link bandwidth, bytes/s, one direction")
    tdp_watts: float = Field(0.0, ge=0)
    price_per_hour: float | None = Field(None, ge=0, le=1e6, description="typical cloud price, USD per GPU-hour")
    unified_memory: bool = Field(False, description="shares system memory with the CPU (Apple Silicon, GH200...)")
    gpu_memory_fraction: float = Field(
        1.0, ge=0.01, le=1, description="share of memory_bytes the GPU may use (Apple: the wired-memory limit)"
    )
    driver_reserved_bytes: int = Field(
        0, ge=0, description="memory the driver keeps for itself out of memory_bytes (NVML's 'Reserved'; an H100 "
        "SXM reports 81,559 MiB of which 480 MiB are reserved): frameworks can allocate only the rest"
    )
    form_factor: str = Field("", description="e.g. 'SXM5', 'PCIe', 'OAM', 'SoC'; display only")
    segment: Literal["", "datacenter", "workstation", "consumer"] = Field(
        "", description="market segment; a single machine of 'workstation' or 'consumer' GPUs (Apple Silicon is "
        "'consumer') gets a personal machine's beyond-the-GPU defaults instead of a data centre's; '' unknown"
    )
    compute_capability: str | None = Field(None, description="CUDA compute capability, e.g. '9.0' (NVIDIA)")
    nvlink_generation: int | None = Field(None, ge=1, description="NVLink generation; None: no NVLink")
    pcie_generation: int | None = Field(None, ge=1, le=7, description="host PCIe generation")
    pcie_lanes: int | None = Field(None, ge=1, le=32, description="host PCIe lanes")
    gpu_cores: int | None = Field(None, ge=1, description="GPU core count where variants differ (Apple)")

    @model_validator(mode="after")
    def _plausible(self) -> GpuSpec:
        if not MIN_MEMORY <= self.memory_bytes <= MAX_MEMORY:
            raise ValueError(f"memory_bytes = {self.memory_bytes:,} is not plausible; give the device memory "
                             f"in bytes, between {MIN_MEMORY:,} (1 MiB) and {MAX_MEMORY:,} (1 PiB)")
        _check_rate("memory_bandwidth", self.memory_bandwidth, MIN_RATE, MAX_RATE)
        _check_rate("nvlink_bandwidth", self.nvlink_bandwidth, MIN_RATE, MAX_RATE)
        _check_rate("pcie_bandwidth", self.pcie_bandwidth, MIN_RATE, MAX_RATE)
        share = int(self.memory_bytes * self.gpu_memory_fraction)
        if self.driver_reserved_bytes >= share:  # it left "0 B per GPU" and an estimate that offloaded everything
            raise ValueError(f"driver_reserved_bytes = {self.driver_reserved_bytes:,} leaves nothing of the "
                             f"{share:,} bytes the GPU may use; it is the few hundred MiB the driver keeps "
                             "(NVML's 'Reserved'), in bytes")
        return self

    @property
    def usable_memory_bytes(self) -> int:
        """What a framework can allocate: the share the GPU may use, less the driver's reserve."""
        return max(int(self.memory_bytes * self.gpu_memory_fraction) - self.driver_reserved_bytes, 0)


class NetworkSpec(FrozenModel):
    """The scale-out network between nodes.

    A node has ``nics_per_node`` NICs of ``nic_bandwidth`` each; NCCL spreads a group's rings over all
    of them (through NVLink to the NIC's GPU where needed, "PXN"), so a group sees the node's whole
    bandwidth, shared with the other groups of the node that communicate at the same time. Old plans give
    only ``bandwidth_per_gpu`` (``nics_per_node`` = 0): one NIC of that speed per GPU.
    """

    id: str = "none"
    name: str = "none (single node)"
    bandwidth_per_gpu: float = Field(0.0, ge=0, description="bytes/s per GPU, one direction (the node's "
                                     "NIC bandwidth / its GPUs); used where nics_per_node is 0")
    latency_s: float = Field(5e-6, ge=0, le=1, description="one switch hop; each switch tier a group crosses "
                             "beyond the leaf adds it to every inter-node step")
    nics_per_node: int = Field(0, ge=0, le=1024, description="scale-out NICs per node; 0: one per GPU at "
                               "bandwidth_per_gpu")
    nic_bandwidth: float = Field(0.0, ge=0, description="bytes/s of one NIC, one direction")
    rail_optimized: bool = Field(True, description="NIC k of every node on the same leaf switch (rail): "
                                 "rings stay on one rail; False: cross-rail traffic climbs a tier")
    nodes_per_leaf: int = Field(0, ge=0, le=1_000_000, description="nodes under one leaf switch / scalable "
                                "unit; a group spanning more crosses the spine; 0: one non-blocking tier")
    oversubscription: float = Field(1.0, ge=1, le=64, description="bandwidth below the spine / above it; "
                                    "a group that crosses the spine gets its share divided by this")

    @model_validator(mode="after")
    def _plausible(self) -> NetworkSpec:
        _check_rate("bandwidth_per_gpu", self.bandwidth_per_gpu, MIN_RATE, MAX_RATE)
        _check_rate("nic_bandwidth", self.nic_bandwidth, MIN_RATE, MAX_RATE)
        if self.nics_per_node and not self.nic_bandwidth:
            raise ValueError("nics_per_node needs nic_bandwidth (bytes/s of one NIC)")
        return self

    def node_bandwidth(self, gpus_per_node: int) -> float:
        """Bytes/s one node can send, one direction, over all its NICs."""
        if self.nics_per_node:
            return self.nics_per_node * self.nic_bandwidth
        return self.bandwidth_per_gpu * gpus_per_node

    def per_gpu(self, gpus_per_node: int) -> float:
        return self.node_bandwidth(gpus_per_node) / max(gpus_per_node, 1)


class FabricSpec(FrozenModel):
    """How the GPUs inside a node talk, as NCCL sees it: the kind of fabric, whether all-reduce can
    use in-switch reduction (NVLink SHARP, "NVLS"), and the achieved share of the NVLink bus bandwidth
    by message size (a published nccl-tests curve, cited in catalogs/systems/nodes.toml)."""

    id: str = "generic"
    kind: Literal["nvswitch", "nvlink", "xgmi", "pcie"] = "nvlink"
    nvls_share: float = Field(0.0, ge=0, le=4, description="NVLS all-reduce bus bandwidth / per-GPU link "
                              "bandwidth; 0: no NVLS")
    ramp_bytes: tuple[float, ...] = Field((), description="message sizes (bytes) of the measured curve")
    ramp_share: tuple[float, ...] = Field((), description="bus bandwidth at each size / at the largest")
    source: str = ""

    @model_validator(mode="after")
    def _ramp(self) -> FabricSpec:
        if len(self.ramp_bytes) != len(self.ramp_share):
            raise ValueError("ramp_bytes and ramp_share need the same length")
        if any(b <= a for a, b in zip(self.ramp_bytes, self.ramp_bytes[1:], strict=False)):
            raise ValueError("ramp_bytes must increase")
        return self


class Efficiency(FrozenModel):
    """Achievable fractions of peak (the catalog's defaults, overridable per plan)."""

    matmul: float = Field(0.6, ge=0.01, le=1, description="fraction of dense peak FLOP/s large GEMMs reach")
    memory_bandwidth: float = Field(0.8, ge=0.01, le=1, description="fraction of peak HBM bandwidth reached")
    network: float = Field(0.8, ge=0.01, le=1, description="fraction of link bandwidth collectives reach (bus bw)")
    intra_node: float = Field(0.8, ge=0.01, le=1, description="fraction of NVLink/PCIe bandwidth collectives reach")
    host_memory_bandwidth: float = Field(
        0.7, ge=0.01, le=1, description="fraction of the host's theoretical DRAM bandwidth a streaming CPU "
        "optimizer step reaches (offload)"
    )
    pcie: float = Field(0.8, ge=0.01, le=1, description="fraction of the GPU's PCIe payload rate pinned copies reach")
    sustained_clock: float = Field(
        688.1 / 792.1, ge=0.3, le=1, description="GEMM rate held over seconds of full load / the rate the matmul "
        "fraction was measured at (clocks drop at the power limit); the default is the H100 SXM's 688.1 / 792.1"
    )
    full_clock_share: float = Field(
        0.40, ge=0, lt=1, description="share of a step's GPU time in compute-bound kernels (GEMMs, attention) up to "
        "which the GPU holds its full clock; above it the clock falls linearly to sustained_clock at a share of 1 "
        "(the H100 SXM's, measured with GEMMs between memory-bound kernels, 2026-11-28)"
    )
    elementwise: float = Field(
        0.9004, ge=0.01, le=1, description="share of peak memory bandwidth a large vectorised pointwise kernel "
        "(add, mul, SiLU, an fp32 -> bf16 cast) reaches; the training time model prices the other elementwise kinds "
        "relative to it (docs/training.md, 'Elementwise kernels by kind'); the default is the H100 SXM's, 3,016 of "
        "3,350 GB/s (2026-11-28)"
    )
    adamw_fp32: float = Field(
        0.765, ge=0.01, le=1, description="share of peak memory bandwidth at which the fused AdamW kernel moves its "
        "bytes with fp32 tensors (parameter, gradient and both moments: 28 B per parameter); the default is the "
        "H100 SXM's, 2^28 parameters in 2.931 ms (docs/training.md, 'The optimizer kernel')"
    )
    adamw_16bit: float = Field(
        0.561, ge=0.01, le=1, description="share of peak memory bandwidth at which the fused AdamW kernel moves its "
        "bytes with 16-bit tensors (14 B per parameter): lower than fp32's, the kernel is not bound by HBM there; "
        "the default is the H100 SXM's, profiled in bf16 training steps (2026-11-28)"
    )


class ClusterSpec(FrozenModel):
    """``nodes`` nodes of ``gpus_per_node`` identical GPUs, joined by ``network``."""

    gpu: GpuSpec
    gpus_per_node: int = Field(1, ge=1, le=1024)
    nodes: int = Field(1, ge=1, le=1_000_000)
    intra_node_bandwidth: float | None = Field(
        None, gt=0, description="bytes/s per GPU inside a node; None: the GPU's NVLink, else its PCIe"
    )
    network: NetworkSpec = NetworkSpec()
    fabric: FabricSpec = FabricSpec()
    price_per_gpu_hour: float | None = Field(None, ge=0, le=1e6, description="USD; None: the GPU's catalog price")
    host_memory_bandwidth: float | None = Field(
        None, gt=0, description="theoretical host DRAM bandwidth of one node, bytes/s (sockets × channels × "
        "MT/s × 8 B); the CPU optimizer step of offloaded training streams through it; None: unknown"
    )
    nvme_read_bandwidth: float | None = Field(
        None, gt=0, description="one node's NVMe offload drives, read, bytes/s; None: unknown"
    )
    nvme_write_bandwidth: float | None = Field(
        None, gt=0, description="one node's NVMe offload drives, write, bytes/s; None: unknown"
    )
    host_cpu_vendor: Literal["intel", "amd", "arm"] | None = Field(
        None, description="the host CPU's vendor (node preset): NCCL/RCCL cap LL bandwidth across nodes and "
        "price each network step by it; None: unknown, NCCL's default (non-AMD) row"
    )

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        _check_rate("intra_node_bandwidth", self.intra_node_bandwidth, MIN_RATE, MAX_RATE)
        _check_rate("host_memory_bandwidth", self.host_memory_bandwidth, MIN_RATE, MAX_RATE)
        _check_rate("nvme_read_bandwidth", self.nvme_read_bandwidth, MIN_RATE, MAX_RATE)
        _check_rate("nvme_write_bandwidth", self.nvme_write_bandwidth, MIN_RATE, MAX_RATE)
        if self.nodes > 1 and self.network.node_bandwidth(self.gpus_per_node) <= 0:
            raise ValueError(f"{self.nodes} nodes need a network between them; choose a network preset")
        return self

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def intra_bandwidth(self) -> float:
        if self.intra_node_bandwidth:
            return self.intra_node_bandwidth
        return self.gpu.nvlink_bandwidth or self.gpu.pcie_bandwidth or 16e9

    @property
    def hourly_price(self) -> float | None:
        return self.price_per_gpu_hour if self.price_per_gpu_hour is not None else self.gpu.price_per_hour

    @property
    def is_personal_machine(self) -> bool:
        return personal_machine(self.gpu, self.nodes)


def personal_machine(gpu: GpuSpec, nodes: int) -> bool:
    """One machine of desktop or workstation GPUs (a gaming PC, a Mac, a workstation under a desk):
    its storage, power overhead and electricity are not a data centre's."""
    return nodes == 1 and gpu.segment in ("consumer", "workstation")
