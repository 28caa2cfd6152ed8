"""Apple Silicon without root: the GPU's IOKit accelerator statistics, as ``ioreg`` prints them.

``ioreg -r -d 1 -w 0 -c IOAccelerator`` lists the GPU's ``PerformanceStatistics`` dictionary,
readable by any user (asitop and macmon read the same keys; ``powermetrics``, which has power and
clocks, needs root). From it: "Device Utilization %" (the GPU's busy share) and "In use system
memory" (bytes the GPU holds in unified memory). The capacity is the share of RAM the GPU may
wire (`llmplan.hw.apple`). Power, clock, temperature, PCIe and per-process memory are "n/a".
Each sample runs ``ioreg`` once (tens of ms), in the sampler's thread.
"""

from __future__ import annotations

import re

import numpy as np

from llmplan.hw import run_command
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.source import DeviceLost, GpuInfo, GpuProcess, empty_row

IOREG_ARGV = ["ioreg", "-r", "-d", "1", "-w", "0", "-c", "IOAccelerator"]
_STATS = re.compile(r'"PerformanceStatistics"\s*=\s*\{([^}]*)\}')
_PAIR = re.compile(r'"([^"]+)"\s*=\s*(-?\d+)')


def parse_ioreg_accelerator(text: str) -> dict[str, int]:
    """The first accelerator's PerformanceStatistics as {key: integer}. ValueError when absent."""
    m = _STATS.search(text)
    if not m:
        raise ValueError("no PerformanceStatistics in the ioreg output")
    return {k: int(v) for k, v in _PAIR.findall(m.group(1))}


def apple_row(stats: dict[str, int], usable_bytes: int | None) -> np.ndarray:
    row = empty_row()
    if "Device Utilization %" in stats:
        row[G["util_pct"]] = stats["Device Utilization %"]
    if "In use system memory" in stats:
        row[G["mem_used_bytes"]] = stats["In use system memory"]
    if usable_bytes:
        row[G["mem_total_bytes"]] = usable_bytes
    return row


class AppleSource:
    """The Mac's one GPU. `open` raises LookupError with the reason when ioreg has no statistics."""

    vendor = "apple"

    def __init__(self, name: str = "Apple GPU", usable_bytes: int | None = None, timeout_s: float = 2.0):
        self.name, self.usable_bytes, self.timeout_s = name, usable_bytes, timeout_s

    def _stats(self) -> dict[str, int] | str:
        out = run_command(IOREG_ARGV, self.timeout_s)
        if not out.ok:
            return out.reason or f"ioreg failed (exit {out.returncode})"
        try:
            return parse_ioreg_accelerator(out.stdout)
        except ValueError as exc:
            return str(exc)

    def open(self) -> list[GpuInfo]:
        stats = self._stats()
        if isinstance(stats, str):
            raise LookupError(stats)
        return [GpuInfo(index=0, name=self.name, vendor="apple", memory_total_bytes=self.usable_bytes)]

    def read(self, slot: int, pid: int | None, now: float) -> np.ndarray:
        stats = self._stats()
        if isinstance(stats, str):
            raise DeviceLost(stats)
        return apple_row(stats, self.usable_bytes)

    def processes(self, slot: int) -> list[GpuProcess]:
        return []

    def close(self) -> None:
        pass
