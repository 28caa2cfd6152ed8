"""Host metrics from /proc on Linux: CPU busy and I/O wait, disk read/write rates, RAM and swap.

/proc rather than psutil: psutil is not a dependency of llmplan, and on Linux it reads these same
three files (/proc/stat, /proc/diskstats, /proc/meminfo); reading them directly costs three small
reads a sample and no extra package. Elsewhere psutil is used when it is installed (it has no I/O
wait outside Linux), else the host metrics are "n/a" with a reason.

Definitions (proc(5), Documentation/admin-guide/iostats.rst):
- the first ``cpu`` line of /proc/stat holds cumulative ticks: user nice system idle iowait irq
  softirq steal (guest time is already inside user/nice); busy = everything but idle and iowait;
- /proc/diskstats counts sectors of 512 bytes whatever the device's block size; only whole
  physical disks are summed (sdX, nvmeXnY, vdX, xvdX, hdX, mmcblkN), so partitions, device-mapper
  and md volumes on top of them are not counted twice, and loop/zram devices not at all;
- RAM used = MemTotal - MemAvailable; swap used = SwapTotal - SwapFree.
Rates and percentages need two readings: the first sample has them "n/a".
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from llmplan.watch.metrics import HOST_INDEX as H
from llmplan.watch.metrics import HOST_METRICS

SECTOR_BYTES = 512
_WHOLE_DISK = re.compile(r"(sd[a-z]+|nvme\d+n\d+|vd[a-z]+|xvd[a-z]+|hd[a-z]+|mmcblk\d+)")


@dataclass(frozen=True)
class CpuTicks:
    busy: int
    iowait: int
    total: int


def parse_proc_stat(text: str) -> CpuTicks:
    """The aggregate ``cpu`` line of /proc/stat. ValueError when it is missing."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            ticks = [int(x) for x in parts[1:9]] + [0] * max(0, 8 - len(parts[1:9]))
            user, nice, system, idle, iowait, irq, softirq, steal = ticks
            total = user + nice + system + idle + iowait + irq + softirq + steal
            return CpuTicks(busy=total - idle - iowait, iowait=iowait, total=total)
    raise ValueError("no cpu line in /proc/stat")


def parse_diskstats(text: str) -> tuple[int, int]:
    """(sectors read, sectors written) summed over whole physical disks in /proc/diskstats."""
    read = written = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 10 and _WHOLE_DISK.fullmatch(parts[2]):
            read += int(parts[5])
            written += int(parts[9])
    return read, written


def parse_meminfo_full(text: str) -> dict[str, int]:
    """Every ``Key: N kB`` line of /proc/meminfo, in bytes."""
    values = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if m:
            values[m.group(1)] = int(m.group(2)) * 1024
    return values


def memory_columns(row: np.ndarray, mem: dict[str, int]) -> None:
    total, avail = mem.get("MemTotal"), mem.get("MemAvailable")
    if total is not None:
        row[H["ram_total_bytes"]] = total
        if avail is not None:
            row[H["ram_used_bytes"]] = total - avail
    swap_total, swap_free = mem.get("SwapTotal"), mem.get("SwapFree")
    if swap_total is not None:
        row[H["swap_total_bytes"]] = swap_total
        if swap_free is not None:
            row[H["swap_used_bytes"]] = swap_total - swap_free


def host_row(prev: tuple[float, CpuTicks, tuple[int, int]] | None, now: float, cpu: CpuTicks,
             disk: tuple[int, int], mem: dict[str, int]) -> np.ndarray:
    """One host row from the current readings and the previous ones (rates need both)."""
    row = np.full(len(HOST_METRICS), math.nan)
    memory_columns(row, mem)
    if prev is not None:
        t0, cpu0, disk0 = prev
        ticks = cpu.total - cpu0.total
        if ticks > 0:
            row[H["cpu_busy_pct"]] = 100.0 * (cpu.busy - cpu0.busy) / ticks
            row[H["iowait_pct"]] = 100.0 * (cpu.iowait - cpu0.iowait) / ticks
        dt = now - t0
        if dt > 0 and disk[0] >= disk0[0] and disk[1] >= disk0[1]:
            row[H["disk_read_bps"]] = (disk[0] - disk0[0]) * SECTOR_BYTES / dt
            row[H["disk_write_bps"]] = (disk[1] - disk0[1]) * SECTOR_BYTES / dt
    return row


class ProcHost:
    """Linux host sampler over /proc (``root`` lets tests point it at recorded snapshots)."""

    def __init__(self, root: str | Path = "/proc"):
        self.root = Path(root)
        self._prev: tuple[float, CpuTicks, tuple[int, int]] | None = None
        self.reason: str | None = None

    def _read(self, name: str) -> str:
        with open(self.root / name, encoding="ascii", errors="replace") as fh:
            return fh.read()

    def read(self, now: float) -> np.ndarray:
        try:
            cpu = parse_proc_stat(self._read("stat"))
            disk = parse_diskstats(self._read("diskstats"))
            mem = parse_meminfo_full(self._read("meminfo"))
        except (OSError, ValueError) as exc:
            self.reason = f"host metrics unavailable: {exc}"
            return np.full(len(HOST_METRICS), math.nan)
        row = host_row(self._prev, now, cpu, disk, mem)
        self._prev = (now, cpu, disk)
        return row


class PsutilHost:
    """macOS/Windows host sampler through psutil (no I/O wait there: "n/a")."""

    def __init__(self, psutil_module):
        self.ps = psutil_module
        self.reason: str | None = None
        self._prev_disk: tuple[float, int, int] | None = None
        self.ps.cpu_percent(None)  # the first call only starts psutil's interval

    def read(self, now: float) -> np.ndarray:
        row = np.full(len(HOST_METRICS), math.nan)
        try:
            row[H["cpu_busy_pct"]] = self.ps.cpu_percent(None)
            vm, sw = self.ps.virtual_memory(), self.ps.swap_memory()
            row[H["ram_total_bytes"]], row[H["ram_used_bytes"]] = vm.total, vm.total - vm.available
            row[H["swap_total_bytes"]], row[H["swap_used_bytes"]] = sw.total, sw.used
            io = self.ps.disk_io_counters()
            if io is not None:
                if self._prev_disk is not None and now > self._prev_disk[0]:
                    dt = now - self._prev_disk[0]
                    row[H["disk_read_bps"]] = (io.read_bytes - self._prev_disk[1]) / dt
                    row[H["disk_write_bps"]] = (io.write_bytes - self._prev_disk[2]) / dt
                self._prev_disk = (now, io.read_bytes, io.write_bytes)
        except Exception as exc:  # psutil raises its own errors on locked-down systems
            self.reason = f"host metrics unavailable: {exc}"
        return row


class NoHost:
    """No way to read the host here: every host metric is "n/a", with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    def read(self, now: float) -> np.ndarray:
        return np.full(len(HOST_METRICS), math.nan)


def open_host():
    """The best host sampler on this OS."""
    if sys.platform.startswith("linux") and Path("/proc/stat").exists():
        return ProcHost()
    try:
        import psutil  # optional: not a dependency
    except ImportError:
        return NoHost("host metrics need /proc (Linux) or psutil (pip install psutil)")
    return PsutilHost(psutil)
