"""What every device source gives the sampler: its GPUs, one row of metrics per read, its processes.

A source raises `DeviceLost` from `read` when a GPU stops answering for good (driver reset,
fallen off the bus, tool gone); the sampler then stops that GPU, keeps its data and shows the
reason. Anything else a source cannot measure is NaN in the row ("n/a").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from llmplan.watch.metrics import GPU_METRICS

# PCIe per-lane, per-direction data rate in bytes/s after line coding (PCI-SIG base specs:
# 2.5/5 GT/s with 8b/10b, 8/16/32 GT/s with 128b/130b, 64 GT/s PAM4 with FLIT 242/256).
PCIE_LANE_BYTES_PER_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}


def pcie_link_bytes_per_s(gen: int | None, width: int | None) -> float | None:
    """One direction of a PCIe link (gen 4 x16: 31.5 GB/s); None when either is unknown."""
    if not gen or not width or gen not in PCIE_LANE_BYTES_PER_S:
        return None
    return PCIE_LANE_BYTES_PER_S[gen] * width


class DeviceLost(Exception):
    """A GPU that stopped answering; ``str(exc)`` is the reason shown to people."""


@dataclass(frozen=True)
class GpuInfo:
    """One watched GPU as its source describes it when the watch starts."""

    index: int
    name: str
    vendor: str
    memory_total_bytes: int | None = None
    pcie_link_bytes_per_s: float | None = None  # per direction, the current link


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU (bytes None where the driver hides it, e.g. Windows WDDM)."""

    pid: int
    memory_bytes: int | None


class GpuSource(Protocol):
    vendor: str

    def open(self) -> list[GpuInfo]: ...

    def read(self, slot: int, pid: int | None, now: float) -> np.ndarray: ...

    def processes(self, slot: int) -> list[GpuProcess]: ...

    def close(self) -> None: ...


def empty_row() -> np.ndarray:
    return np.full(len(GPU_METRICS), np.nan)
