"""Intel integrated GPUs (Arc graphics of Core Ultra, Iris Xe, UHD): no memory of their own, a share of RAM.

How much of the RAM a model may take, by the layers that decide it:
- The kernel: on Linux the i915 and xe drivers back GPU buffers with system memory (shmem), and with a 48-bit
  per-process GTT they set no lower ceiling than the RAM; on Windows WDDM gives an integrated GPU "shared GPU
  memory" of half the RAM (Task Manager's "Shared GPU memory" row).
- Intel's compute runtime (Level Zero and OpenCL: what llama.cpp's SYCL back-end and Ollama's oneAPI build
  allocate through) reports an integrated device's global memory as that pool x 0.94, less 450 MiB it keeps for
  its own resources (intel/compute-runtime: ``DrmMemoryManager`` / ``WddmMemoryManager::
  getPercentOfGlobalMemoryAvailable`` return 0.94 without local memory; ``Device::getGlobalMemorySize``
  subtracts ``450 * MemoryConstants::megaByte`` on such devices).
- Mesa's Vulkan driver (ANV, Linux) offers a heap of 3/4 of the RAM above 4 GiB (half at or below:
  ``anv_compute_sys_heap_size``), so llama.cpp's Vulkan back-end sees less than SYCL there; the limit kept here
  is the compute runtime's, the default back-end's (docs/hardware.md says both).

Detection: Linux reads ``/sys/class/drm/card*/device/uevent`` (``DRIVER=i915`` or ``xe`` at PCI slot
``0000:00:02.0``, where Intel puts its integrated graphics); Windows asks WMI's ``Win32_VideoController``
through PowerShell for Intel adapters whose name carries no discrete model number (``Arc(TM) A770``,
``B580``...). Parsers are pure; the probes never raise.
"""

from __future__ import annotations

import glob
import json
import re

from llmplan.hw._run import read_small, run_command
from llmplan.hw.types import DetectedGpu

GIB = 1 << 30
RUNTIME_SHARE = 0.94  # compute-runtime: share of the shared pool an integrated device reports
RUNTIME_RESERVE = 450 << 20  # compute-runtime: internal resources on a device without local memory
IGPU_SLOT = "0000:00:02.0"
DRM = "/sys/class/drm"
WMI_ARGV = ["powershell", "-NoProfile", "-NonInteractive", "-Command",
            "Get-CimInstance Win32_VideoController | Select-Object Name,AdapterCompatibility,PNPDeviceID "
            "| ConvertTo-Json"]
_DISCRETE = re.compile(r"\bArc\(TM\)\s+(Pro\s+)?[AB]\d{2,3}\b|\bData Center GPU\b", re.IGNORECASE)


def igpu_limit_bytes(ram_bytes: int, os_name: str) -> int:
    """What an integrated Intel GPU may allocate out of ``ram_bytes`` of RAM: the driver's pool (all of RAM on
    Linux, half on Windows) x 0.94, less 450 MiB (see the module docstring)."""
    pool = ram_bytes // 2 if os_name.lower().startswith("windows") else ram_bytes
    return max(int(pool * RUNTIME_SHARE) - RUNTIME_RESERVE, 0)


def parse_drm_uevent(text: str) -> dict[str, str]:
    """``KEY=value`` lines of a sysfs ``uevent`` file."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def igpu_from_uevent(text: str, ram_bytes: int | None, index: int = 0) -> DetectedGpu | None:
    """The integrated GPU a DRM card's ``uevent`` describes (Linux), or None when it is not one."""
    ev = parse_drm_uevent(text)
    pci_id = ev.get("PCI_ID", "").upper()
    if ev.get("DRIVER") not in ("i915", "xe") or ev.get("PCI_SLOT_NAME") != IGPU_SLOT or not ram_bytes:
        return None
    if pci_id and not pci_id.startswith("8086:"):
        return None
    return DetectedGpu(vendor="intel", name=f"Intel integrated graphics ({pci_id or 'i915'})", index=index,
                       source="sysfs", memory_total_bytes=ram_bytes, memory_free_bytes=None, unified_memory=True,
                       wired_limit_bytes=igpu_limit_bytes(ram_bytes, "Linux"), driver=ev.get("DRIVER"))


def parse_win32_video_controllers(text: str, ram_bytes: int | None, first_index: int = 0) -> tuple[DetectedGpu, ...]:
    """Intel integrated GPUs in PowerShell's ``Win32_VideoController | ConvertTo-Json`` (one object, or a list)."""
    data = json.loads(text) if text.strip() else []
    rows = data if isinstance(data, list) else [data]
    gpus = []
    for row in rows:
        if not isinstance(row, dict) or not ram_bytes:
            continue
        name = str(row.get("Name") or "")
        intel = "VEN_8086" in str(row.get("PNPDeviceID") or "").upper() or \
            str(row.get("AdapterCompatibility") or "").lower().startswith("intel")
        if intel and name and not _DISCRETE.search(name):
            gpus.append(DetectedGpu(vendor="intel", name=name, index=first_index + len(gpus), source="wmi",
                                    memory_total_bytes=ram_bytes, memory_free_bytes=None, unified_memory=True,
                                    wired_limit_bytes=igpu_limit_bytes(ram_bytes, "Windows")))
    return tuple(gpus)


def probe_igpu(system: str, ram_bytes: int | None, timeout_s: float, first_index: int = 0) -> tuple[DetectedGpu, ...]:
    """The integrated Intel GPU of this machine (Linux sysfs, Windows WMI); () when none or unknown RAM."""
    if not ram_bytes:
        return ()
    if system == "Linux":
        for dev in sorted(glob.glob(f"{DRM}/card[0-9]*/device"))[:16]:
            gpu = igpu_from_uevent(read_small(f"{dev}/uevent"), ram_bytes, first_index)
            if gpu is not None:
                return (gpu,)
        return ()
    if system == "Windows":
        out = run_command(WMI_ARGV, timeout_s)
        if out.ok:
            try:
                return parse_win32_video_controllers(out.stdout, ram_bytes, first_index)
            except ValueError:
                return ()
    return ()
