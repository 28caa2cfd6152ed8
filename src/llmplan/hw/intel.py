"""Intel GPUs (Arc B-series, Arc Pro, Data Center GPU Max) through ``xpu-smi discovery``, and the integrated
GPU (``hw.intel_igpu``: Linux sysfs, Windows WMI), which XPU Manager does not list.

``xpu-smi discovery -j`` lists the devices (``{"device_list": [{"device_id", "device_name", ...}]}``)
without their memory; ``xpu-smi discovery -d N -j`` gives one device's properties, among them
``memory_physical_size_byte`` (a string of bytes; XPU Manager's XPUM_DEVICE_PROPERTY_MEMORY_PHYSICAL_SIZE_BYTE).
Parsers are pure; `probe_intel` runs the commands, each bounded, and never raises.
"""

from __future__ import annotations

import platform

from llmplan.hw._run import Budget, run_command
from llmplan.hw.amd import load_tool_json
from llmplan.hw.intel_igpu import probe_igpu
from llmplan.hw.types import DetectedGpu, ProbeResult

XPU_SMI_LIST_ARGV = ["xpu-smi", "discovery", "-j"]
MAX_DEVICES = 64  # xpu-smi calls per probe: one per device


def _nonneg_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def parse_xpu_smi_list(text: str) -> tuple[int, ...]:
    """Device ids in ``xpu-smi discovery -j`` (a ``device_list``, or a bare list in some builds)."""
    data = load_tool_json(text)
    rows = data.get("device_list") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError("no device_list")
    ids = []
    for pos, row in enumerate(rows):
        if isinstance(row, dict) and str(row.get("device_type", "GPU")).upper() == "GPU":
            n = _nonneg_int(row.get("device_id"))
            ids.append(pos if n is None else n)
    return tuple(ids[:MAX_DEVICES])


def parse_xpu_smi_device(text: str, default_index: int = 0) -> DetectedGpu | None:
    """One GPU from ``xpu-smi discovery -d N -j``; None when it reports no memory size."""
    data = load_tool_json(text)
    if not isinstance(data, dict):
        raise ValueError("expected one device object")
    total = _nonneg_int(data.get("memory_physical_size_byte"))
    if not total:
        return None
    free = _nonneg_int(data.get("memory_free_size_byte"))
    index = _nonneg_int(data.get("device_id"))
    return DetectedGpu(
        vendor="intel", name=str(data.get("device_name") or "Intel GPU"),
        index=default_index if index is None else index, source="xpu-smi",
        memory_total_bytes=total, memory_free_bytes=free,
        uuid=str(data["uuid"]) if data.get("uuid") else None,
        driver=str(data["driver_version"]) if data.get("driver_version") else None,
        pcie_gen_max=_nonneg_int(data.get("pcie_generation")),
        pcie_width_max=_nonneg_int(data.get("pcie_max_link_width")),
    )


def probe_intel(timeout_s: float = 3.0) -> ProbeResult:
    """Every Intel GPU xpu-smi lists and the integrated one, or the reason there is none. Never raises."""
    try:
        budget = Budget(timeout_s)
        found = _probe_xpu_smi(budget)
        igpu = probe_igpu(platform.system(), _ram_total(), max(budget.left(), 0.1), len(found.gpus))
        if igpu:
            return ProbeResult(gpus=(*found.gpus, *igpu), reasons=found.reasons if found.gpus else ())
        return found
    except Exception as exc:
        return ProbeResult(reasons=(f"Intel probe failed unexpectedly: {exc!r}",))


def _ram_total() -> int | None:
    from llmplan.hw.host import _windows_memory, host_memory_total

    if platform.system() == "Windows":
        return _windows_memory()[0]
    return host_memory_total()


def _probe_xpu_smi(budget: Budget) -> ProbeResult:
    """The discrete GPUs XPU Manager lists."""
    try:
        listing = run_command(XPU_SMI_LIST_ARGV, budget.left())
        if listing.reason:
            return ProbeResult(reasons=(listing.reason,))
        if listing.returncode != 0:
            first = (listing.stderr or listing.stdout).strip().splitlines()
            return ProbeResult(reasons=(f"xpu-smi failed (exit {listing.returncode}): "
                                        f"{first[0] if first else 'no output'}",))
        try:
            ids = parse_xpu_smi_list(listing.stdout)
        except ValueError as exc:
            return ProbeResult(reasons=(f"xpu-smi printed output llmplan cannot read ({exc})",))
        gpus, reasons = [], []
        for n in ids:
            out = run_command(["xpu-smi", "discovery", "-d", str(n), "-j"], budget.left())
            try:
                gpu = parse_xpu_smi_device(out.stdout, n) if out.ok else None
            except ValueError as exc:
                reasons.append(f"xpu-smi device {n}: unreadable output ({exc})")
                continue
            if gpu is None:
                reasons.append(out.reason or f"xpu-smi device {n}: no memory size reported")
            else:
                gpus.append(gpu)
        if not gpus and not reasons:
            reasons.append("xpu-smi listed no GPU")
        return ProbeResult(gpus=tuple(gpus), reasons=tuple(reasons))
    except Exception as exc:
        return ProbeResult(reasons=(f"xpu-smi probe failed unexpectedly: {exc!r}",))
