"""The host: CPU model and cores, total and available RAM, free disk for NVMe offload.

Linux reads /proc/cpuinfo and /proc/meminfo (no subprocess); macOS asks sysctl and vm_stat.
Parsers are pure and tested on recorded files; `probe_host` never raises.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from pathlib import Path

from llmplan.hw._run import Budget, run_command
from llmplan.hw.types import HostInfo


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo (values there are KiB)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"(\w+):\s+(\d+)\s*kB", line)
        if m:
            values[m.group(1)] = int(m.group(2)) * 1024
    available = values.get("MemAvailable")
    if available is None and "MemFree" in values:  # kernels before 3.14 lack MemAvailable
        available = values["MemFree"] + values.get("Cached", 0) + values.get("Buffers", 0)
    return values.get("MemTotal"), available


def parse_cpuinfo(text: str) -> tuple[str | None, int | None]:
    """(CPU model name, physical core count) from /proc/cpuinfo.

    Physical cores are the distinct (physical id, core id) pairs; ARM kernels print neither,
    and then the count is unknown (None) rather than guessed.
    """
    model = None
    cores: set[tuple[str, str]] = set()
    phys, core = None, None
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if phys is not None and core is not None:
                cores.add((phys, core))
            phys, core = None, None
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("model name", "Model", "Hardware") and model is None and value:
            model = value
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
    return model, (len(cores) or None)


def parse_vm_stat(text: str) -> int | None:
    """Available bytes on macOS from ``vm_stat``: free + inactive + speculative pages."""
    m = re.search(r"page size of (\d+) bytes", text)
    if not m:
        return None
    page = int(m.group(1))
    pages = 0
    for key in ("Pages free", "Pages inactive", "Pages speculative"):
        km = re.search(rf"{key}:\s+(\d+)", text)
        if km:
            pages += int(km.group(1))
    return pages * page


def disk_free_bytes(path: Path) -> int | None:
    """Free bytes on the file system that holds ``path`` (or its nearest existing parent)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


def _windows_memory() -> tuple[int | None, int | None]:
    """(total, available) bytes from Win32 ``GlobalMemoryStatusEx`` (no subprocess, no WMI)."""
    import ctypes

    class MemoryStatusEx(ctypes.Structure):
        _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                    ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                    ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                    ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                    ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

    status = MemoryStatusEx()
    status.dwLength = ctypes.sizeof(MemoryStatusEx)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):  # type: ignore[attr-defined]
        return None, None
    return int(status.ullTotalPhys), int(status.ullAvailPhys)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def host_memory_total() -> int | None:
    """MemTotal of /proc/meminfo (Linux; None elsewhere), for unified-memory GPUs whose driver reports no
    memory of their own (DGX Spark's GB10, AMD APUs)."""
    return parse_meminfo(_read("/proc/meminfo"))[0]


def _data_dir() -> Path:
    from llmplan.resources_path import user_data_dir

    return user_data_dir()


def probe_host(timeout_s: float = 2.0) -> HostInfo:
    """This machine's CPU, RAM and free disk; unknown fields are None. Never raises."""
    system = platform.system()
    os_name = f"{system} {platform.release()}".strip()
    model = phys = total = avail = None
    try:
        if system == "Linux":
            model, phys = parse_cpuinfo(_read("/proc/cpuinfo"))
            total, avail = parse_meminfo(_read("/proc/meminfo"))
        elif system == "Darwin":
            budget = Budget(timeout_s)
            out = run_command(["sysctl", "-n", "machdep.cpu.brand_string", "hw.physicalcpu", "hw.memsize"],
                              budget.left())
            lines = out.stdout.splitlines() if out.ok else []
            if len(lines) >= 3:
                model = lines[0].strip() or None
                phys = int(lines[1]) if lines[1].strip().isdigit() else None
                total = int(lines[2]) if lines[2].strip().isdigit() else None
            vm = run_command(["vm_stat"], budget.left())
            avail = parse_vm_stat(vm.stdout) if vm.ok else None
        elif system == "Windows":
            total, avail = _windows_memory()
        model = model or platform.processor() or None
    except Exception:
        pass  # partial facts beat none: leave the rest as None
    try:
        disk = disk_free_bytes(_data_dir())
    except Exception:
        disk = None
    return HostInfo(
        cpu_model=model, logical_cores=os.cpu_count(), physical_cores=phys,
        ram_total_bytes=total, ram_available_bytes=avail, os=os_name, disk_free_bytes=disk,
    )
