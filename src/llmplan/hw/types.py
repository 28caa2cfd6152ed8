"""What a hardware probe found: frozen results the CLI and the GUI read, never mutate.

Sizes are bytes (what the device or OS reports, never a marketing figure). A probe that
finds nothing does not raise: it returns no devices and a human reason ("nvidia-smi not
installed"), so "no GPU found" can always say why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from llmplan.core.present import MemoryUnit, one_line

GpuSource = Literal["nvml", "nvidia-smi", "rocm-smi", "amd-smi", "macos", "xpu-smi", "sysfs", "wmi"]
INTEGRATED_SOURCES = ("sysfs", "wmi")  # Intel integrated graphics (hw/intel_igpu.py)
GpuVendor = Literal["nvidia", "amd", "apple", "intel"]


MIN_GPU_MEMORY = 1 << 20  # 1 MiB .. 1 PiB: the bounds core/hardware.py puts on a GPU's memory
MAX_GPU_MEMORY = 1 << 50
MAX_NAME_CHARS = 200


def printable_name(text: object) -> str:
    """A device name as a driver or tool reported it, safe for a terminal and a one-line label: control
    characters (ANSI escape codes, newlines) escaped, length capped."""
    return one_line(str(text)[:MAX_NAME_CHARS])


def _plausible(value: int | None) -> int | None:
    """A reported free/used size inside the physical bounds, else unknown (None)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_GPU_MEMORY else None


def _check_total(name: str, total: object) -> None:
    if isinstance(total, bool) or not isinstance(total, int) or not MIN_GPU_MEMORY <= total <= MAX_GPU_MEMORY:
        raise ValueError(f"{name} reports {total!r:.30} bytes of memory, outside 1 MiB to 1 PiB: the driver's "
                         "answer is not plausible")


@dataclass(frozen=True)
class MigInstance:
    """One MIG slice of an NVIDIA GPU: a job placed on it sees only this memory."""

    index: int
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None = None
    uuid: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", printable_name(self.name))
        _check_total(self.name, self.memory_total_bytes)
        object.__setattr__(self, "memory_free_bytes", _plausible(self.memory_free_bytes))


@dataclass(frozen=True)
class DetectedGpu:
    """One accelerator as this machine reports it.

    Fields a source cannot report are None (nvidia-smi has no CUDA version field; Apple has
    no PCIe link). ``memory_total_bytes`` is the device's own figure (an H100 80GB HBM3
    reports 81,559 MiB); for Apple Silicon it is the unified memory, and
    ``wired_limit_bytes`` is the share the GPU may actually wire.
    """

    vendor: GpuVendor
    name: str
    memory_total_bytes: int
    memory_free_bytes: int | None
    index: int
    source: GpuSource
    uuid: str | None = None
    memory_used_bytes: int | None = None
    compute_capability: str | None = None
    driver: str | None = None
    cuda_version: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    nvlink_links_up: int = 0
    nvlink_peers: tuple[int, ...] = ()
    nvlink_to_switch: bool = False
    mig_enabled: bool | None = None
    mig_instances: tuple[MigInstance, ...] = ()
    unified_memory: bool = False
    gpu_cores: int | None = None
    wired_limit_bytes: int | None = None

    def __post_init__(self) -> None:
        """Names escaped; a total outside 1 MiB..1 PiB (NVML once gave 2^64) is refused with ValueError,
        which every probe turns into a reason; free/used outside the bounds become unknown."""
        object.__setattr__(self, "name", printable_name(self.name))
        _check_total(self.name, self.memory_total_bytes)
        for f in ("memory_free_bytes", "memory_used_bytes", "wired_limit_bytes"):
            object.__setattr__(self, f, _plausible(getattr(self, f)))

    @property
    def usable_memory_bytes(self) -> int:
        """What a model can be placed in: the wired limit on Apple, else the total."""
        return self.wired_limit_bytes or self.memory_total_bytes

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HostInfo:
    """The CPU, RAM and disk of this machine (RAM matters for CPU offload, disk for NVMe offload)."""

    cpu_model: str | None
    logical_cores: int | None
    physical_cores: int | None
    ram_total_bytes: int | None
    ram_available_bytes: int | None
    os: str
    disk_free_bytes: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ProbeResult:
    """One probe's answer: the GPUs it saw and, when it saw none or lost detail, why."""

    gpus: tuple[DetectedGpu, ...] = ()
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class DetectionReport:
    """Everything ``detect_all`` learned, with the reasons behind every gap."""

    gpus: tuple[DetectedGpu, ...]
    host: HostInfo | None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    elapsed_s: float = 0.0

    def summary(self) -> str:
        """One line for people: the GPUs, or "no GPU found: <why>"."""
        if not self.gpus:
            why = "; ".join(self.reasons) if self.reasons else "no probe reported a device"
            return f"no GPU found: {why}"
        names: dict[str, int] = {}
        for g in self.gpus:
            label = f"{g.name} ({MemoryUnit('GiB').fmt(g.usable_memory_bytes)})"
            names[label] = names.get(label, 0) + 1
        return ", ".join(f"{n}× {label}" if n > 1 else label for label, n in names.items())

    def to_dict(self) -> dict:
        return {
            "gpus": [g.to_dict() for g in self.gpus],
            "host": self.host.to_dict() if self.host else None,
            "reasons": list(self.reasons),
            "elapsed_s": self.elapsed_s,
            "summary": self.summary(),
        }
