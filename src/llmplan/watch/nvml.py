"""NVIDIA GPUs through NVML (``pynvml`` from nvidia-ml-py): the per-GPU metrics of one sample.

Per GPU and sample: utilisation, memory (v2 "used" where the driver has it), compute processes and
their memory, power and its enforced limit, SM clock, temperature, clock-event ("throttle")
reasons, and one ``nvmlDeviceGetFieldValues`` call for the cumulative PCIe and NVLink byte
counters, turned into rates between samples. ``nvmlDeviceGetPcieThroughput`` is only the fallback
for drivers without the PCIe counters: NVML defines it as a byte count over a 20 ms window, so it
costs 20 ms per call (nvml.h).

Errors (``pynvml.NVMLError``, by its ``.value``): NOT_SUPPORTED, NO_PERMISSION and
FUNCTION_NOT_FOUND make that metric "n/a" for the rest of the watch (it is not asked again);
GPU_IS_LOST, RESET_REQUIRED, DRIVER_NOT_LOADED, a version mismatch, an OS error or UNKNOWN stop
that GPU (`DeviceLost`) with the reason from `llmplan.hw.nvidia.nvml_error_reason`.
"""

from __future__ import annotations

import contextlib
import math
from types import ModuleType

import numpy as np

from llmplan.hw.nvidia import memory_info as nvml_memory
from llmplan.hw.nvidia import nvml_error_reason
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.source import DeviceLost, GpuInfo, GpuProcess, empty_row, pcie_link_bytes_per_s

FATAL_CODES = frozenset({1, 9, 15, 16, 17, 18, 999})  # uninitialised, no driver, lost, reset, OS, mismatch, unknown
UNSUPPORTED_CODES = frozenset({3, 4, 13})  # not supported, no permission, function not found
# nvml.h field ids: cumulative NVLink data bytes (KiB, all links with scope 0) and PCIe bytes.
FI_NVLINK_TX_KIB, FI_NVLINK_RX_KIB, FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES = 138, 139, 197, 198
_FIELDS = (FI_NVLINK_TX_KIB, FI_NVLINK_RX_KIB, FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES)
_FIELD_SCALE = {FI_NVLINK_TX_KIB: 1024, FI_NVLINK_RX_KIB: 1024, FI_PCIE_TX_BYTES: 1, FI_PCIE_RX_BYTES: 1}
_FIELD_COLUMN = {FI_NVLINK_TX_KIB: G["nvlink_tx_bps"], FI_NVLINK_RX_KIB: G["nvlink_rx_bps"],
                 FI_PCIE_TX_BYTES: G["pcie_tx_bps"], FI_PCIE_RX_BYTES: G["pcie_rx_bps"]}
_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")  # by nvmlValueType_t


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class _Gpu:
    """One GPU's handle and what the watch learned about it (unsupported calls, counter history)."""

    def __init__(self, handle: object):
        self.handle = handle
        self.unsupported: set[str] = set()
        self.counters: dict[int, tuple[float, float]] = {}  # field id -> (time, bytes)
        self.processes: list[GpuProcess] = []


class NvmlSource:
    """Every NVIDIA GPU NVML lists. `open` raises the module's NVMLError when NVML cannot start."""

    vendor = "nvidia"

    def __init__(self, nvml: ModuleType):
        self.nvml = nvml
        self._gpus: list[_Gpu] = []

    # ---- lifecycle ------------------------------------------------------------------------
    def open(self) -> list[GpuInfo]:
        n = self.nvml
        n.nvmlInit()
        infos = []
        for i in range(n.nvmlDeviceGetCount()):
            h = n.nvmlDeviceGetHandleByIndex(i)
            gpu = _Gpu(h)
            self._gpus.append(gpu)
            total = self._optional(gpu, "memory", lambda h=h: nvml_memory(n, h)[0])
            gen = self._optional(gpu, "pcie_gen", lambda h=h: n.nvmlDeviceGetCurrPcieLinkGeneration(h))
            width = self._optional(gpu, "pcie_width", lambda h=h: n.nvmlDeviceGetCurrPcieLinkWidth(h))
            infos.append(GpuInfo(index=i, name=_text(n.nvmlDeviceGetName(h)), vendor="nvidia",
                                 memory_total_bytes=None if total is None else int(total),
                                 pcie_link_bytes_per_s=pcie_link_bytes_per_s(gen, width)))
        return infos

    def close(self) -> None:
        with contextlib.suppress(Exception):  # shutting down after a lost GPU may fail too
            self.nvml.nvmlShutdown()

    # ---- one sample -----------------------------------------------------------------------
    def _code(self, exc: BaseException) -> int | None:
        return getattr(exc, "value", None) if isinstance(exc, self.nvml.NVMLError) else None

    def _optional(self, gpu: _Gpu, name: str, call):
        """One NVML query: None when unsupported (and never asked again); DeviceLost when the GPU is gone."""
        if name in gpu.unsupported:
            return None
        try:
            return call()
        except Exception as exc:
            code = self._code(exc)
            if code in FATAL_CODES:
                raise DeviceLost(nvml_error_reason(exc)) from exc
            if code in UNSUPPORTED_CODES:
                gpu.unsupported.add(name)
            return None  # a transient failure (timeout, no data yet): n/a for this sample only

    def read(self, slot: int, pid: int | None, now: float) -> np.ndarray:
        n, gpu = self.nvml, self._gpus[slot]
        h, row = gpu.handle, empty_row()
        util = self._optional(gpu, "util", lambda: n.nvmlDeviceGetUtilizationRates(h))
        if util is not None:
            row[G["util_pct"]] = util.gpu
        mem = self._optional(gpu, "memory", lambda: nvml_memory(n, h))
        if mem is not None:
            row[G["mem_total_bytes"]], row[G["mem_used_bytes"]] = mem[0], mem[1]
        procs = self._optional(gpu, "processes", lambda: n.nvmlDeviceGetComputeRunningProcesses(h))
        if procs is not None:
            gpu.processes = [GpuProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
                             for p in procs]
            row[G["procs"]] = len(gpu.processes)
            if pid is not None:
                mine = [p.memory_bytes for p in gpu.processes if p.pid == pid]
                row[G["proc_mem_bytes"]] = math.nan if None in mine else float(sum(mine))
        power = self._optional(gpu, "power", lambda: n.nvmlDeviceGetPowerUsage(h))
        if power is not None:
            row[G["power_w"]] = power / 1000.0  # milliwatts
        limit = self._optional(gpu, "power_limit", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h))
        if limit is not None:
            row[G["power_limit_w"]] = limit / 1000.0
        clock = self._optional(gpu, "sm_clock", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))
        if clock is not None:
            row[G["sm_clock_mhz"]] = clock
        temp = self._optional(gpu, "temp", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))
        if temp is not None:
            row[G["temp_c"]] = temp
        reasons = self._optional(gpu, "throttle", lambda: self._throttle(h))
        if reasons is not None:
            row[G["throttle_mask"]] = reasons
        self._counters(gpu, row, now)
        return row

    def _throttle(self, h: object) -> int:
        call = getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if call is None:  # nvidia-ml-py before 12.535 names it "throttle reasons"
            call = self.nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(call(h))

    def _counters(self, gpu: _Gpu, row: np.ndarray, now: float) -> None:
        values = self._optional(gpu, "fields", lambda: self.nvml.nvmlDeviceGetFieldValues(gpu.handle, list(_FIELDS)))
        seen: set[int] = set()
        for v in values or ():
            fid = int(v.fieldId)
            if int(v.nvmlReturn) != 0 or fid not in _FIELD_COLUMN:
                continue  # this counter is not supported on this GPU or driver: n/a
            raw = getattr(v.value, _VALUE_MEMBERS[int(v.valueType)] if 0 <= int(v.valueType) < 7 else "ullVal")
            total = float(raw) * _FIELD_SCALE[fid]
            seen.add(fid)
            prev = gpu.counters.get(fid)
            gpu.counters[fid] = (now, total)
            if prev is not None and now > prev[0] and total >= prev[1]:  # a counter that went back was reset
                row[_FIELD_COLUMN[fid]] = (total - prev[1]) / (now - prev[0])
        if FI_PCIE_RX_BYTES not in seen:
            self._pcie_fallback(gpu, row)

    def _pcie_fallback(self, gpu: _Gpu, row: np.ndarray) -> None:
        n, h = self.nvml, gpu.handle
        for name, counter, key in (("pcie_rx", "NVML_PCIE_UTIL_RX_BYTES", "pcie_rx_bps"),
                                   ("pcie_tx", "NVML_PCIE_UTIL_TX_BYTES", "pcie_tx_bps")):
            kib_s = self._optional(gpu, name, lambda c=counter: n.nvmlDeviceGetPcieThroughput(h, getattr(n, c)))
            if kib_s is not None:
                row[G[key]] = kib_s * 1024.0  # NVML reports KB/s (1024 bytes) over a 20 ms window

    def processes(self, slot: int) -> list[GpuProcess]:
        return list(self._gpus[slot].processes)
