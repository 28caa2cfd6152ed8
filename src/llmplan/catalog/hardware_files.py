"""The on-disk shape of hardware catalog files, validated with pydantic, and their conversion to specs.

Files speak in the units datasheets use (MiB, GB/s, TFLOP/s, Gb/s) so a person can check a row
against its source at a glance; everything is converted to SI (bytes, bytes/s, FLOP/s) here, once,
before it reaches ``llmplan.core``. See docs/hardware.md for the format.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from llmplan.core.hardware import GpuSpec, PeakFlops
from llmplan.core.strict_fields import StrictFields

MIB = 1 << 20
GIB = 1 << 30
GB_PER_S = 1e9
TERA = 1e12

# PCIe payload rate per lane, one direction, bytes/s: line rate x encoding efficiency / 8 bits.
# Gen 1-2 use 8b/10b, gen 3-5 128b/130b, gen 6 PAM4 FLIT mode (242 of 256 bytes carry data).
PCIE_LANE_BYTES_PER_S = {
    1: 2.5e9 * 8 / 10 / 8,
    2: 5e9 * 8 / 10 / 8,
    3: 8e9 * 128 / 130 / 8,
    4: 16e9 * 128 / 130 / 8,
    5: 32e9 * 128 / 130 / 8,
    6: 64e9 * 242 / 256 / 8,
}

# Figures an entry can state; each must name a source (the entry's `source` or `sources[figure]`).
GPU_FIGURES = (
    "memory_mib",
    "memory_gib",
    "memory_bytes",
    "driver_reserved_mib",
    "memory_bandwidth_gbs",
    "tflops",
    "nvlink_gbs",
    "pcie_generation",
    "pcie_gbs",
    "tdp_watts",
    "price_per_hour",
)


class _Strict(StrictFields):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourceRef(_Strict):
    """Where a figure comes from: a datasheet, a paper table, a recorded device output."""

    title: str = Field(min_length=1)
    url: str = Field(min_length=1)


class TflopsTable(_Strict):
    """Dense peak per dtype in TFLOP/s (TOP/s for integers)."""

    fp64: float | None = Field(None, ge=0)
    fp32: float | None = Field(None, ge=0)
    tf32: float | None = Field(None, ge=0)
    fp16: float | None = Field(None, ge=0)
    bf16: float | None = Field(None, ge=0)
    fp8: float | None = Field(None, ge=0)
    int8: float | None = Field(None, ge=0)
    fp4: float | None = Field(None, ge=0)
    int4: float | None = Field(None, ge=0)

    def to_peak_flops(self) -> PeakFlops:
        return PeakFlops(**{k: (v * TERA if v is not None else None) for k, v in self.model_dump().items()})


class GpuFileEntry(_Strict):
    """One ``[[gpu]]`` table (or one user JSON object)."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    vendor: Literal["nvidia", "amd", "intel", "apple", "google", "other"]
    match_names: list[str] = Field(default_factory=list)
    form_factor: str = ""
    segment: Literal["", "datacenter", "workstation", "consumer"] = ""
    compute_capability: str | None = None
    memory_mib: int | None = Field(None, gt=0, description="as the device reports it")
    memory_gib: float | None = Field(None, gt=0, description="marketing size, when no device report was found")
    memory_bytes: int | None = Field(None, gt=0, description="as the device reports it, in bytes")
    memory_marketing: str = ""
    driver_reserved_mib: int = Field(0, ge=0, description="NVML's 'Reserved' memory (nvidia-smi -q), MiB")
    memory_bandwidth_gbs: float = Field(gt=0)
    tflops: TflopsTable
    nvlink_generation: int | None = Field(None, ge=1)
    nvlink_gbs: float = Field(0.0, ge=0)
    pcie_generation: int | None = Field(None, ge=1, le=6)
    pcie_lanes: int | None = Field(None, ge=1, le=32)
    pcie_gbs: float | None = Field(None, gt=0, description="host link GB/s one direction; default: from generation")
    tdp_watts: float = Field(0.0, ge=0)
    price_per_hour: float | None = Field(None, ge=0)
    price_date: str | None = Field(None, pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    unified_memory: bool = False
    gpu_memory_fraction: float = Field(1.0, gt=0, le=1)
    gpu_cores: int | None = Field(None, ge=1)
    source: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    @model_validator(mode="after")
    def _check(self) -> GpuFileEntry:
        given = [f for f in ("memory_mib", "memory_gib", "memory_bytes") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of memory_mib, memory_gib, memory_bytes (got {given or 'none'}); "
                "memory_mib is what nvidia-smi prints as memory.total"
            )
        if self.price_per_hour is not None and self.price_date is None:
            raise ValueError("price_per_hour needs price_date (YYYY-MM), so a reader knows how old it is")
        unknown = sorted(set(self.sources) - set(GPU_FIGURES))
        if unknown:
            raise ValueError(f"sources names unknown figures {unknown}; use some of {list(GPU_FIGURES)}")
        return self

    @property
    def memory_reported(self) -> bool:
        """True when memory is what a device reports, False when it is the marketing size."""
        return self.memory_gib is None

    def stated_figures(self) -> list[str]:
        """The figures this entry states, so each can be checked for a source."""
        out = []
        for figure in GPU_FIGURES:
            value = getattr(self, figure)
            if figure == "tflops" or (value is not None and value != 0):
                out.append(figure)
        return out

    def to_spec(self) -> GpuSpec:
        if self.memory_bytes is not None:
            memory = self.memory_bytes
        elif self.memory_mib is not None:
            memory = self.memory_mib * MIB
        else:
            memory = round(float(self.memory_gib or 0) * GIB)
        pcie = self.pcie_gbs * GB_PER_S if self.pcie_gbs else 0.0
        if not pcie and self.pcie_generation is not None:
            pcie = PCIE_LANE_BYTES_PER_S[self.pcie_generation] * (self.pcie_lanes or 16)
        return GpuSpec(
            id=self.id,
            name=self.name,
            vendor=self.vendor,
            memory_bytes=memory,
            memory_marketing=self.memory_marketing,
            memory_bandwidth=self.memory_bandwidth_gbs * GB_PER_S,
            peak_flops=self.tflops.to_peak_flops(),
            nvlink_bandwidth=self.nvlink_gbs * GB_PER_S,
            pcie_bandwidth=pcie,
            tdp_watts=self.tdp_watts,
            price_per_hour=self.price_per_hour,
            unified_memory=self.unified_memory,
            gpu_memory_fraction=self.gpu_memory_fraction,
            driver_reserved_bytes=self.driver_reserved_mib * MIB,
            form_factor=self.form_factor,
            segment=self.segment,
            compute_capability=self.compute_capability,
            nvlink_generation=self.nvlink_generation,
            pcie_generation=self.pcie_generation,
            pcie_lanes=self.pcie_lanes,
            gpu_cores=self.gpu_cores,
        )


class AppleConfig(_Strict):
    gpu_cores: int = Field(ge=1)
    memory_gb: list[int] = Field(min_length=1)
    memory_bandwidth_gbs: float = Field(gt=0)


class AppleChip(_Strict):
    """One ``[[apple_chip]]``: a chip whose (cores, memory) configurations each become an entry."""

    chip: str = Field(min_length=1)
    source: str
    fp32_tflops_per_core: float = Field(gt=0)
    fp32_assumed: bool = False
    fp32_note: str = ""  # what an entry's notes say about an fp32 figure Apple did not publish (default: M2's rate)
    configs: list[AppleConfig] = Field(min_length=1)


class WiredRule(_Strict):
    up_to_gib: float = Field(gt=0)
    fraction: float = Field(gt=0, le=1)


class AppleWiredMemory(_Strict):
    """The share of unified memory Metal lets the GPU wire, by memory size (see apple.toml)."""

    source: str
    rules: list[WiredRule] = Field(min_length=1)

    def fraction_for(self, memory_gib: float) -> float:
        for rule in sorted(self.rules, key=lambda r: r.up_to_gib):
            if memory_gib <= rule.up_to_gib:
                return rule.fraction
        return sorted(self.rules, key=lambda r: r.up_to_gib)[-1].fraction


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def expand_apple_chip(chip: AppleChip, wired: AppleWiredMemory) -> list[GpuFileEntry]:
    """Every (GPU cores, memory) configuration of ``chip`` as its own entry."""
    entries = []
    for config in chip.configs:
        fp32 = round(chip.fp32_tflops_per_core * config.gpu_cores, 2)
        for memory_gb in config.memory_gb:
            assumed = " " + (chip.fp32_note or "fp32/fp16 use M2's per-core rate (assumption; Apple publishes none).") \
                if chip.fp32_assumed else ""
            entries.append(
                GpuFileEntry(
                    id=f"apple-{_slug(chip.chip)}-{config.gpu_cores}c-{memory_gb}gb",
                    name=f"Apple {chip.chip} {config.gpu_cores}-core GPU, {memory_gb} GB",
                    vendor="apple",
                    match_names=[f"Apple {chip.chip}"],
                    form_factor="SoC",
                    segment="consumer",
                    memory_bytes=memory_gb * GIB,
                    memory_marketing=f"{memory_gb} GB unified",
                    memory_bandwidth_gbs=config.memory_bandwidth_gbs,
                    tflops=TflopsTable(fp32=fp32, fp16=fp32),
                    unified_memory=True,
                    gpu_memory_fraction=wired.fraction_for(memory_gb),
                    gpu_cores=config.gpu_cores,
                    source=chip.source,
                    notes="GPU may wire about "
                    f"{wired.fraction_for(memory_gb):.0%} of memory by default (Metal).{assumed}",
                )
            )
    return entries


class NetworkFileEntry(_Strict):
    """One ``[[network]]``: a port's line rate and whether each GPU or each node has one."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    gbit_per_port: float = Field(ge=0)
    ports_per: Literal["gpu", "node"]
    ports: int = Field(1, ge=1, le=1024, description="with ports_per = 'node': how many such ports (NICs) a node has")
    rail_optimized: bool = True
    nodes_per_leaf: int = Field(0, ge=0, description="nodes under one leaf switch / scalable unit; 0: one tier")
    oversubscription: float = Field(1.0, ge=1, le=64)
    latency_us: float | None = Field(None, ge=0)
    source: str | None = None
    notes: str = ""


class FabricFileEntry(_Strict):
    """One ``[[fabric]]``: how GPUs inside a node talk, with a published nccl-tests curve."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    kind: Literal["nvswitch", "nvlink", "xgmi", "pcie"]
    nvls_share: float = Field(0.0, ge=0, le=4)
    nvls_source: str | None = None
    curve_bytes: list[float] = Field(default_factory=list, description="message sizes of the measured curve")
    curve_busbw_gbs: list[float] = Field(default_factory=list, description="busbw GB/s measured at each size")
    curve_source: str | None = None
    notes: str = ""


class NodeFileEntry(_Strict):
    """One ``[[node]]``: a whole machine."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    name: str = Field(min_length=1)
    gpu: str = Field(min_length=1)
    gpus_per_node: int = Field(ge=1, le=1024)
    network: str = "none"
    fabric: str | None = Field(None, description="fabric id ([[fabric]]); None: from the GPU")
    intra_node_gbs: float | None = Field(None, gt=0)
    host_memory_gib: float | None = Field(None, gt=0)
    host_memory_bandwidth_gbs: float | None = Field(
        None, gt=0, description="theoretical host DRAM bandwidth: sockets × channels × MT/s × 8 B, in GB/s"
    )
    host_memory_bandwidth_source: str | None = Field(None, description="source key of the CPU/memory figure")
    host_cpu_vendor: Literal["intel", "amd", "arm"] | None = Field(
        None, description="the host CPU's vendor: NCCL and RCCL pick their LL bandwidth cap and network "
        "overhead by it (AMD hosts get lower caps); None: unknown, NCCL's default row")
    source: str | None = None
    notes: str = ""


class HostFileEntry(_Strict):
    """The ``[host]`` table: the host assumed for plans that name no node preset."""

    name: str = Field(min_length=1)
    host_memory_bandwidth_gbs: float = Field(gt=0, description="theoretical, GB/s per node")
    source: str
    notes: str = ""


class EfficiencyValue(_Strict):
    value: float = Field(gt=0, le=1)
    basis: Literal["measured", "assumption"]
    source: str
    note: str = ""


class ShareValue(EfficiencyValue):
    """``full_clock_share``: 0 is meaningful (a card that is below its full clock under any load)."""

    value: float = Field(ge=0, lt=1)


class EfficiencyClass(_Strict):
    id: str
    gpus: list[str] = Field(min_length=1, description="fnmatch patterns on GPU ids")
    matmul: EfficiencyValue | None = None
    memory_bandwidth: EfficiencyValue | None = None
    intra_node: EfficiencyValue | None = None
    network: EfficiencyValue | None = None
    host_memory_bandwidth: EfficiencyValue | None = None
    pcie: EfficiencyValue | None = None
    sustained_clock: EfficiencyValue | None = None
    full_clock_share: ShareValue | None = None
    elementwise: EfficiencyValue | None = None
    adamw_fp32: EfficiencyValue | None = None
    adamw_16bit: EfficiencyValue | None = None


class EfficiencyDefault(_Strict):
    matmul: EfficiencyValue
    memory_bandwidth: EfficiencyValue
    intra_node: EfficiencyValue
    network: EfficiencyValue
    host_memory_bandwidth: EfficiencyValue | None = None  # None: the engine's default fraction
    pcie: EfficiencyValue | None = None
    sustained_clock: EfficiencyValue | None = None  # None: Efficiency's default (the H100 SXM's)
    full_clock_share: ShareValue | None = None  # None: Efficiency's default (the H100 SXM's)
    elementwise: EfficiencyValue | None = None  # None: Efficiency's default (the H100 SXM's)
    adamw_fp32: EfficiencyValue | None = None  # None: Efficiency's default (the H100 SXM's)
    adamw_16bit: EfficiencyValue | None = None


class HardwareFile(_Strict):
    """A whole catalog file; every section optional so one file may hold GPUs, another nodes."""

    sources: dict[str, SourceRef] = Field(default_factory=dict)
    gpu: list[GpuFileEntry] = Field(default_factory=list)
    apple_wired_memory: AppleWiredMemory | None = None
    apple_chip: list[AppleChip] = Field(default_factory=list)
    network: list[NetworkFileEntry] = Field(default_factory=list)
    fabric: list[FabricFileEntry] = Field(default_factory=list)
    node: list[NodeFileEntry] = Field(default_factory=list)
    default: EfficiencyDefault | None = None
    host: HostFileEntry | None = None
    class_: list[EfficiencyClass] = Field(default_factory=list, alias="class")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _check(self) -> HardwareFile:
        if self.apple_chip and self.apple_wired_memory is None:
            raise ValueError("apple_chip entries need an [apple_wired_memory] table in the same file")
        return self
