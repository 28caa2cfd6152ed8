"""What the sampler records: one fixed column per metric, in SI units, NaN where a device cannot say.

A metric a device does not support is "n/a", never 0: it is stored as NaN in the ring buffers and
shown as "n/a" (`fmt`), so a chart leaves a gap instead of drawing a flat line at zero and a
diagnosis rule never fires on a number nobody measured. Units: bytes, bytes/s, watts, MHz, °C,
percent (0–100). The descriptions are what docs/watch.md explains, with each metric's source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NA = math.nan


@dataclass(frozen=True)
class Metric:
    key: str
    unit: str  # "%", "B", "B/s", "W", "MHz", "C", "mask", "count"
    label: str


GPU_METRICS: tuple[Metric, ...] = (
    Metric("util_pct", "%", "GPU utilisation (time a kernel ran)"),
    Metric("mem_used_bytes", "B", "memory used"),
    Metric("mem_total_bytes", "B", "memory total"),
    Metric("proc_mem_bytes", "B", "memory of the watched process"),
    Metric("procs", "count", "compute processes on the GPU"),
    Metric("power_w", "W", "power draw"),
    Metric("power_limit_w", "W", "power limit"),
    Metric("sm_clock_mhz", "MHz", "SM clock"),
    Metric("temp_c", "C", "temperature"),
    Metric("pcie_rx_bps", "B/s", "PCIe receive"),
    Metric("pcie_tx_bps", "B/s", "PCIe transmit"),
    Metric("nvlink_rx_bps", "B/s", "NVLink receive"),
    Metric("nvlink_tx_bps", "B/s", "NVLink transmit"),
    Metric("throttle_mask", "mask", "clock throttle reasons (NVML bit mask)"),
)
HOST_METRICS: tuple[Metric, ...] = (
    Metric("cpu_busy_pct", "%", "CPU busy"),
    Metric("iowait_pct", "%", "CPU I/O wait"),
    Metric("disk_read_bps", "B/s", "disk read"),
    Metric("disk_write_bps", "B/s", "disk write"),
    Metric("ram_used_bytes", "B", "RAM used"),
    Metric("ram_total_bytes", "B", "RAM total"),
    Metric("swap_used_bytes", "B", "swap used"),
    Metric("swap_total_bytes", "B", "swap total"),
)
GPU_INDEX = {m.key: i for i, m in enumerate(GPU_METRICS)}
HOST_INDEX = {m.key: i for i, m in enumerate(HOST_METRICS)}

# NVML clock event ("throttle") reason bits (nvml.h, nvmlClocksEventReason*): the ones that mean
# the clocks are held down by a limit, not by idling or a user setting.
THROTTLE_BITS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power brake",
}


def throttle_names(mask: float) -> list[str]:
    """The limit reasons set in an NVML throttle mask (empty for NaN or none)."""
    if not math.isfinite(mask):
        return []
    bits = int(mask)
    return [name for bit, name in THROTTLE_BITS.items() if bits & bit]


def fmt(value: float, unit: str) -> str:
    """A value for people: "n/a" for NaN; GiB for bytes, GB/s for rates (DESIGN.md §2 units)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "B":
        return f"{value / 2**30:.1f} GiB"
    if unit == "B/s":
        return f"{value / 1e9:.2f} GB/s"
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "W":
        return f"{value:.0f} W"
    if unit == "MHz":
        return f"{value:.0f} MHz"
    if unit == "C":
        return f"{value:.0f} °C"
    if unit == "mask":
        return ", ".join(throttle_names(value)) or "none"
    return f"{value:g}"
