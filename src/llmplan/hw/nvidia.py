"""NVIDIA GPUs: NVML first (``pynvml`` from nvidia-ml-py), ``nvidia-smi`` when the library is missing.

The parsers (`parse_nvidia_smi_csv`, `nvml_error_reason`, `nvidia_smi_failure_reason`) are
pure and tested on recorded outputs; `probe_nvidia` makes the calls, each bounded by a
timeout, and never raises.
"""

from __future__ import annotations

import importlib
import platform
from types import ModuleType

from llmplan.hw._run import Budget, call_in_child, run_command
from llmplan.hw.host import host_memory_total
from llmplan.hw.types import DetectedGpu, MigInstance, ProbeResult

MIB = 2**20

# The query the fallback runs; the CSV parser reads the columns in this order.
NVIDIA_SMI_FIELDS = (
    "index", "uuid", "name", "memory.total", "memory.used", "memory.free", "driver_version",
    "compute_cap", "pcie.link.gen.max", "pcie.link.width.max", "mig.mode.current",
)
NVIDIA_SMI_ARGV = [
    "nvidia-smi", f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}", "--format=csv,noheader,nounits",
]

# NVML return codes (nvml.h, NVML_ERROR_*), mapped to what a person can act on.
_NVML_REASONS = {
    4: "permission denied (NVML_ERROR_NO_PERMISSION): run as a user allowed to open /dev/nvidia*",
    6: "no NVIDIA GPU found (NVML_ERROR_NOT_FOUND)",
    9: "NVIDIA driver not loaded (NVML_ERROR_DRIVER_NOT_LOADED)",
    10: "NVML timed out (NVML_ERROR_TIMEOUT)",
    12: "NVIDIA driver library not found (libnvidia-ml.so.1)",
    13: "NVIDIA driver too old for this NVML call (NVML_ERROR_FUNCTION_NOT_FOUND)",
    15: "a GPU fell off the bus (NVML_ERROR_GPU_IS_LOST): reboot or reset the GPU",
    17: "operating-system error talking to the NVIDIA driver (NVML_ERROR_OPERATING_SYSTEM)",
    18: "driver/library version mismatch: the loaded kernel driver differs from libnvidia-ml (reboot)",
    28: "no NVIDIA GPU found (NVML_ERROR_GPU_NOT_FOUND)",
}


def nvml_error_reason(exc: BaseException) -> str:
    """A person-readable reason for an ``NVMLError`` (by its ``.value``, the NVML return code)."""
    code = getattr(exc, "value", None)
    if code == 12 and platform.system() == "Windows":
        return "NVIDIA driver library not found (nvml.dll)"
    if code in _NVML_REASONS:
        return _NVML_REASONS[code]
    return f"NVML error {code}: {exc}" if code is not None else f"NVML failed: {exc}"


def nvidia_smi_failure_reason(returncode: int, stdout: str, stderr: str) -> str:
    """Why ``nvidia-smi`` failed, read from the messages it prints (it prints them on stdout)."""
    text = f"{stdout}\n{stderr}".strip()
    low = text.lower()
    if "version mismatch" in low:
        return "driver/library version mismatch: the loaded kernel driver differs from nvidia-smi (reboot)"
    if "couldn't communicate with the nvidia driver" in low or "driver not loaded" in low:
        return "nvidia-smi could not communicate with the NVIDIA driver (driver not loaded)"
    if "no devices were found" in low:
        return "nvidia-smi: no devices were found"
    if "insufficient permissions" in low or "permission denied" in low:
        return "nvidia-smi: permission denied"
    first = text.splitlines()[0] if text else "no output"
    return f"nvidia-smi failed (exit {returncode}): {first}"


NVML_NOT_SUPPORTED = 3  # nvml.h NVML_ERROR_NOT_SUPPORTED
MAX_GPUS = 4096  # GPUs in one machine (an NVL72 rack is 72)


def _int_or_none(field: str) -> int | None:
    field = field.strip()
    try:
        value = int(float(field))
    except (ValueError, OverflowError):
        return None  # "[N/A]", "[Not Supported]", "[Unknown Error]", "inf"
    return value if value >= 0 else None  # every field queried is a count or a size


def _str_or_none(field: str) -> str | None:
    field = field.strip()
    return None if not field or field.startswith("[") else field


def parse_nvidia_smi_csv(text: str, host_memory_bytes: int | None = None) -> tuple[DetectedGpu, ...]:
    """Parse the output of ``NVIDIA_SMI_ARGV`` (one GPU a line, memory in MiB, ``[N/A]`` where unsupported).

    A unified-memory GPU (DGX Spark's GB10) prints ``[N/A]`` for memory.total: NVIDIA's DGX Spark known
    issues say to read system memory instead, so with ``host_memory_bytes`` (/proc/meminfo MemTotal) such a
    row becomes a unified-memory GPU of that size. Raises ValueError on output that is not that CSV, so the
    probe can say "garbage output".
    """
    gpus: list[DetectedGpu] = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(gpus) >= MAX_GPUS:  # 200,000 rows took 17 s; no machine has this many GPUs
            raise ValueError(f"more than {MAX_GPUS:,} GPUs listed; not a real machine's output")
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(NVIDIA_SMI_FIELDS):
            raise ValueError(f"line {line_no}: expected {len(NVIDIA_SMI_FIELDS)} columns, got {len(cols)}")
        row = dict(zip(NVIDIA_SMI_FIELDS, cols, strict=True))
        index, total = _int_or_none(row["index"]), _int_or_none(row["memory.total"])
        unified = total is None and host_memory_bytes is not None
        if index is None or (total is None and not unified):
            raise ValueError(f"line {line_no}: no index or memory.total in {line!r}")
        used, free = _int_or_none(row["memory.used"]), _int_or_none(row["memory.free"])
        total_bytes = host_memory_bytes if unified else total * MIB
        mig = _str_or_none(row["mig.mode.current"])
        gpus.append(DetectedGpu(
            vendor="nvidia", name=row["name"], index=index, source="nvidia-smi",
            uuid=_str_or_none(row["uuid"]),
            memory_total_bytes=total_bytes, unified_memory=unified,
            memory_used_bytes=None if used is None else used * MIB,
            memory_free_bytes=None if free is None else free * MIB,
            driver=_str_or_none(row["driver_version"]),
            compute_capability=_str_or_none(row["compute_cap"]),
            pcie_gen_max=_int_or_none(row["pcie.link.gen.max"]),
            pcie_width_max=_int_or_none(row["pcie.link.width.max"]),
            mig_enabled=None if mig is None else mig.lower() == "enabled",
        ))
    return tuple(gpus)


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _cuda_version_string(encoded: int) -> str:
    """NVML encodes CUDA 12.4 as 12040 (1000*major + 10*minor)."""
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def _try(fn, *args):
    """One optional NVML query: None when this GPU or driver does not support it."""
    try:
        return fn(*args)
    except Exception:
        return None


def memory_info(nvml: ModuleType, handle) -> tuple[int, int, int]:
    """(total, used, free) bytes; the v2 call excludes driver-reserved memory from "used"."""
    version = getattr(nvml, "nvmlMemory_v2", None)
    if version is not None:
        try:
            info = nvml.nvmlDeviceGetMemoryInfo(handle, version=version)
            return int(info.total), int(info.used), int(info.free)
        except Exception:
            pass  # older driver without nvmlDeviceGetMemoryInfo_v2: the v1 call below
    info = nvml.nvmlDeviceGetMemoryInfo(handle)
    return int(info.total), int(info.used), int(info.free)


def _mig_instances(nvml: ModuleType, handle) -> tuple[bool | None, tuple[MigInstance, ...]]:
    modes = _try(nvml.nvmlDeviceGetMigMode, handle)
    if modes is None:
        return None, ()
    enabled = modes[0] == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)
    if not enabled:
        return False, ()
    instances = []
    count = _try(nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    for i in range(count):
        mig = _try(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, i)
        if mig is None:
            continue  # a slot with no MIG device configured (NVML_ERROR_NOT_FOUND)
        mem = _try(memory_info, nvml, mig)
        if mem is None:
            continue
        instances.append(MigInstance(
            index=i, name=_text(_try(nvml.nvmlDeviceGetName, mig) or f"MIG {i}"),
            memory_total_bytes=mem[0], memory_free_bytes=mem[2],
            uuid=_text(u) if (u := _try(nvml.nvmlDeviceGetUUID, mig)) else None,
        ))
    return True, tuple(instances)


def _nvlink(nvml: ModuleType, handle, bus_to_index: dict[str, int]) -> tuple[int, tuple[int, ...], bool]:
    """Active NVLink links, the GPU indices directly at their far ends, and whether any end is an NVSwitch."""
    up, peers, to_switch = 0, set(), False
    for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            active = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except Exception:
            break  # NOT_SUPPORTED / INVALID_ARGUMENT: no more links on this GPU
        if not active:
            continue
        up += 1
        remote = _try(nvml.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
        bus = _text(remote.busId).lower() if remote is not None else ""
        if bus in bus_to_index:
            peers.add(bus_to_index[bus])
        elif remote is not None:
            kind = _try(getattr(nvml, "nvmlDeviceGetNvLinkRemoteDeviceType", lambda *_: None), handle, link)
            to_switch = to_switch or kind == getattr(nvml, "NVML_NVLINK_DEVICE_TYPE_SWITCH", 2)
    return up, tuple(sorted(peers)), to_switch


def read_nvml(nvml: ModuleType, host_memory_bytes: int | None = None) -> tuple[DetectedGpu, ...]:
    """Every GPU through NVML. Raises the module's NVMLError; the caller turns it into a reason.

    A GPU whose memory query is not supported (NVML_ERROR_NOT_SUPPORTED on DGX Spark's unified memory)
    gets the host's RAM (``host_memory_bytes``) and ``unified_memory``; without it the error is raised."""
    nvml.nvmlInit()
    try:
        driver = _text(_try(nvml.nvmlSystemGetDriverVersion) or "") or None
        cuda = _try(getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", nvml.nvmlSystemGetCudaDriverVersion))
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        bus_ids = [_text(getattr(_try(nvml.nvmlDeviceGetPciInfo, h), "busId", "")).lower() for h in handles]
        bus_to_index = {b: i for i, b in enumerate(bus_ids) if b}
        gpus = []
        for i, h in enumerate(handles):
            unified = False
            try:
                total, used, free = memory_info(nvml, h)
            except Exception as exc:
                if getattr(exc, "value", None) != NVML_NOT_SUPPORTED or not host_memory_bytes:
                    raise
                total, used, free, unified = host_memory_bytes, None, None, True
            cc = _try(nvml.nvmlDeviceGetCudaComputeCapability, h)
            links_up, peers, to_switch = _nvlink(nvml, h, bus_to_index)
            mig_enabled, migs = _mig_instances(nvml, h)
            uuid = _try(nvml.nvmlDeviceGetUUID, h)
            gpus.append(DetectedGpu(
                vendor="nvidia", name=_text(nvml.nvmlDeviceGetName(h)), index=i, source="nvml",
                uuid=_text(uuid) if uuid else None,
                memory_total_bytes=total, memory_used_bytes=used, memory_free_bytes=free, unified_memory=unified,
                compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
                driver=driver, cuda_version=_cuda_version_string(cuda) if cuda else None,
                pcie_gen=_try(nvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
                pcie_width=_try(nvml.nvmlDeviceGetCurrPcieLinkWidth, h),
                pcie_gen_max=_try(nvml.nvmlDeviceGetMaxPcieLinkGeneration, h),
                pcie_width_max=_try(nvml.nvmlDeviceGetMaxPcieLinkWidth, h),
                nvlink_links_up=links_up, nvlink_peers=peers, nvlink_to_switch=to_switch,
                mig_enabled=mig_enabled, mig_instances=migs,
            ))
        return tuple(gpus)
    finally:
        _try(nvml.nvmlShutdown)


def _nvml_or_reason(nvml: ModuleType) -> tuple[DetectedGpu, ...] | str:
    """In the probe process: the GPUs, or the reason NVML gave (its exception classes need not pickle)."""
    try:
        return read_nvml(nvml, host_memory_total())
    except Exception as exc:
        return nvml_error_reason(exc)


def _probe_nvml(timeout_s: float) -> ProbeResult:
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        return ProbeResult(reasons=("NVML Python bindings not installed (pip install nvidia-ml-py)",))
    # In a child process: an NVML call that never returns is killed with it, never left running in the app.
    outcome = call_in_child(lambda: _nvml_or_reason(nvml), timeout_s)
    if outcome.timed_out:
        return ProbeResult(reasons=(f"NVML timed out after {timeout_s:g} s",))
    if outcome.error is not None:
        return ProbeResult(reasons=(f"NVML failed: {outcome.error}",))
    if isinstance(outcome.value, str):
        return ProbeResult(reasons=(outcome.value,))
    gpus = tuple(g for g in (outcome.value or ()) if isinstance(g, DetectedGpu))
    return ProbeResult(gpus=gpus, reasons=() if gpus else ("NVML reports no NVIDIA GPU",))


def _probe_nvidia_smi(timeout_s: float) -> ProbeResult:
    out = run_command(NVIDIA_SMI_ARGV, timeout_s)
    if out.reason:
        return ProbeResult(reasons=(out.reason,))
    if out.returncode != 0:
        return ProbeResult(reasons=(nvidia_smi_failure_reason(out.returncode, out.stdout, out.stderr),))
    try:
        gpus = parse_nvidia_smi_csv(out.stdout, host_memory_total())
    except ValueError as exc:
        return ProbeResult(reasons=(f"nvidia-smi printed output llmplan cannot read ({exc})",))
    return ProbeResult(gpus=gpus, reasons=() if gpus else ("nvidia-smi listed no GPU",))


def probe_nvidia(timeout_s: float = 3.0) -> ProbeResult:
    """NVML, then nvidia-smi when NVML found nothing. Never raises; reasons say what each tried."""
    try:
        budget = Budget(timeout_s)
        first = _probe_nvml(timeout_s / 2)  # half for NVML, the rest for the nvidia-smi fallback
        if first.gpus:
            return first
        second = _probe_nvidia_smi(budget.left())
        if second.gpus:
            return ProbeResult(gpus=second.gpus, reasons=tuple(f"NVML: {r}" for r in first.reasons))
        return ProbeResult(reasons=(*first.reasons, *second.reasons))
    except Exception as exc:  # a bug in a parser must not take the app down
        return ProbeResult(reasons=(f"NVIDIA probe failed unexpectedly: {exc!r}",))
