"""Helpers for the hw tests: a fake ``pynvml`` that replays recorded NVML values (tests/data/hw/nvml_*.json).

It mirrors nvidia-ml-py's call signatures and error behaviour (``NVMLError`` with ``.value``,
``NVMLError_LibraryNotFound`` with value 12), so `llmplan.hw.nvidia.read_nvml` runs unchanged.
"""

from __future__ import annotations

import time
import types
from pathlib import Path
from types import SimpleNamespace

DATA = Path(__file__).resolve().parents[1] / "data" / "hw"


def data_text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(f"NVML error {value}")
        self.value = value


class NVMLError_LibraryNotFound(NVMLError):
    def __init__(self, value: int = 12):
        super().__init__(value)

    def __str__(self) -> str:
        return "NVML Shared Library Not Found"


def build_fake_pynvml(recording: dict | None, init_error: NVMLError | None = None, hang_s: float = 0.0):
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    m.NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    m.nvmlMemory_v2 = 0x02000028
    m.NVML_NVLINK_MAX_LINKS = 18
    m.NVML_NVLINK_DEVICE_TYPE_SWITCH = 2
    m.NVML_DEVICE_MIG_ENABLE = 1
    m.calls = []
    rec = recording or {"devices": []}
    devices = rec["devices"]

    def init():
        m.calls.append("init")
        if hang_s:
            time.sleep(hang_s)
        if init_error is not None:
            raise init_error

    def memory(h, version=None):
        if h.get("memory_not_supported"):
            raise NVMLError(3)  # NVML_ERROR_NOT_SUPPORTED: unified memory (DGX Spark)
        if version:
            if rec.get("no_memory_v2") or "memory_v2" not in h:
                raise NVMLError(13)  # NVML_ERROR_FUNCTION_NOT_FOUND on drivers before v2
            return SimpleNamespace(**h["memory_v2"], version=version)
        return SimpleNamespace(**h["memory_v1"])

    def nvlink_state(h, link):
        links = h.get("nvlink") or []
        if link >= len(links):
            raise NVMLError(3)  # NOT_SUPPORTED beyond the GPU's links
        return links[link]["active"]

    def mig_mode(h):
        if h.get("mig") is None:
            raise NVMLError(3)
        return [h["mig"]["current"], h["mig"]["pending"]]

    def mig_handle(h, i):
        for inst in h["mig"]["instances"]:
            if inst["slot"] == i:
                return inst
        raise NVMLError(6)  # NOT_FOUND: empty slot

    m.nvmlInit = init
    m.nvmlShutdown = lambda: m.calls.append("shutdown")
    m.nvmlSystemGetDriverVersion = lambda: rec["driver"]
    m.nvmlSystemGetCudaDriverVersion = lambda: rec["cuda_driver_version"]
    m.nvmlSystemGetCudaDriverVersion_v2 = lambda: rec["cuda_driver_version"]
    m.nvmlDeviceGetCount = lambda: len(devices)
    m.nvmlDeviceGetHandleByIndex = lambda i: devices[i]
    m.nvmlDeviceGetName = lambda h: h["name"]
    m.nvmlDeviceGetUUID = lambda h: h["uuid"]
    m.nvmlDeviceGetPciInfo = lambda h: SimpleNamespace(busId=h["bus_id"].encode())
    m.nvmlDeviceGetMemoryInfo = memory
    m.nvmlDeviceGetCudaComputeCapability = lambda h: tuple(h["compute_capability"])
    m.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: h["pcie"]["curr_gen"]
    m.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: h["pcie"]["max_gen"]
    m.nvmlDeviceGetCurrPcieLinkWidth = lambda h: h["pcie"]["curr_width"]
    m.nvmlDeviceGetMaxPcieLinkWidth = lambda h: h["pcie"]["max_width"]
    m.nvmlDeviceGetNvLinkState = nvlink_state
    m.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: SimpleNamespace(
        busId=h["nvlink"][link]["remote_bus_id"].encode())
    m.nvmlDeviceGetNvLinkRemoteDeviceType = lambda h, link: h["nvlink"][link]["remote_type"]
    m.nvmlDeviceGetMigMode = mig_mode
    m.nvmlDeviceGetMaxMigDeviceCount = lambda h: h["mig"]["max_devices"]
    m.nvmlDeviceGetMigDeviceHandleByIndex = mig_handle
    return m
