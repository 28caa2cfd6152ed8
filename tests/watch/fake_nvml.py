"""A fake ``pynvml`` replaying recorded per-sample NVML values (tests/data/watch/nvml_*.json).

It keeps nvidia-ml-py's call signatures, units and error behaviour (``NVMLError`` with ``.value``),
so `llmplan.watch.nvml.NvmlSource` runs unchanged. ``step`` picks the sample row every call
returns (the last row repeats); ``fail`` injects an error code into a named call from a step on.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from types import SimpleNamespace

DATA = Path(__file__).resolve().parents[1] / "data" / "watch"

NOT_SUPPORTED, GPU_IS_LOST, UNKNOWN, LIBRARY_NOT_FOUND = 3, 15, 999, 12


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(f"NVML error {value}")
        self.value = value


def load_recording(name: str = "nvml_h100_rtx3090_samples.json") -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def build(recording: dict | None = None, init_error: int | None = None):
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    m.nvmlMemory_v2 = 0x02000028
    m.NVML_CLOCK_SM, m.NVML_TEMPERATURE_GPU = 1, 0
    m.NVML_PCIE_UTIL_TX_BYTES, m.NVML_PCIE_UTIL_RX_BYTES = 0, 1
    m.step = 0
    m.fail = {}  # call name -> (from step, code)
    m.calls = []
    rec = recording if recording is not None else load_recording()
    devs = rec["devices"]

    def row(h):
        samples = devs[h]["samples"]
        return samples[min(m.step, len(samples) - 1)]

    def call(name, h, key=None, fn=lambda v: v):
        m.calls.append(name)
        if name in m.fail and m.step >= m.fail[name][0] and (len(m.fail[name]) < 3 or m.fail[name][2] == h):
            raise NVMLError(m.fail[name][1])
        value = row(h).get(key or name)
        if value is None:
            raise NVMLError(NOT_SUPPORTED)
        return fn(value)

    def init():
        m.calls.append("init")
        if init_error is not None:
            raise NVMLError(init_error)

    def memory(h, version=None):
        total = devs[h]["memory_total"]
        return call("memory", h, "mem_used", lambda used: SimpleNamespace(total=total, used=used, free=total - used))

    def fields(h, ids):
        m.calls.append("fields")
        if not devs[h].get("fields_supported", True):
            raise NVMLError(NOT_SUPPORTED)
        if "fields" in m.fail and m.step >= m.fail["fields"][0]:
            raise NVMLError(m.fail["fields"][1])
        r = row(h)
        keys = {138: "nvlink_tx_kib", 139: "nvlink_rx_kib", 197: "pcie_tx_bytes", 198: "pcie_rx_bytes"}
        out = []
        for fid in ids:
            v = r.get(keys[fid])
            out.append(SimpleNamespace(fieldId=fid, nvmlReturn=0 if v is not None else NOT_SUPPORTED, valueType=3,
                                       value=SimpleNamespace(ullVal=v or 0)))
        return out

    def pcie(h, counter):
        return call("pcie", h, "pcie_rx_kbs" if counter == 1 else "pcie_tx_kbs")

    m.nvmlInit = init
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlDeviceGetCount = lambda: len(devs)
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetName = lambda h: devs[h]["name"]
    m.nvmlDeviceGetMemoryInfo = memory
    m.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: devs[h]["pcie_gen"]
    m.nvmlDeviceGetCurrPcieLinkWidth = lambda h: devs[h]["pcie_width"]
    m.nvmlDeviceGetUtilizationRates = lambda h: call("util", h, fn=lambda v: SimpleNamespace(gpu=v, memory=0))
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: call(
        "procs", h, fn=lambda ps: [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in ps])
    m.nvmlDeviceGetPowerUsage = lambda h: call("power_mw", h)
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: call("limit_mw", h)
    m.nvmlDeviceGetClockInfo = lambda h, clock: call("sm_mhz", h)
    m.nvmlDeviceGetTemperature = lambda h, sensor: call("temp_c", h)
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: call("throttle", h)
    m.nvmlDeviceGetFieldValues = fields
    m.nvmlDeviceGetPcieThroughput = pcie
    return m
