"""AMD GPUs through ``amd-smi static --json`` (ROCm 6+), else ``rocm-smi ... --json`` (older ROCm).

An APU's GPU (Strix Halo's Radeon 8060S, the 780M/890M) has no memory of its own: amd-smi reports the
BIOS UMA carve-out as its VRAM, and the amdgpu driver lets it allocate system memory as GTT besides
(Linux: ``/sys/class/drm/cardN/device/mem_info_{vram,gtt}_total``; the GTT ceiling is ``ttm.pages_limit``,
about half of RAM by default). ROCm reports the larger of the two as the device's memory (98,304 MiB
with ``ttm.pages_limit=25165824`` and a 512 MB UMA on a 128 GB Strix Halo, noamsto/nix-amd-ai#42), so
`apu_gpu` states the machine's RAM as the unified memory and that larger pool as what the GPU may use.

Both tools change their JSON between releases (``"Card series"`` became ``"Card Series"``;
amd-smi wrapped its list in ``{"gpu_data": [...]}`` and moved sizes into ``{"value", "unit"}``),
so the parsers accept each known spelling. Parsers are pure; `probe_amd` runs the commands.
"""

from __future__ import annotations

import glob
import json
import re
from dataclasses import replace

from llmplan.hw._run import Budget, read_small, run_command
from llmplan.hw.host import host_memory_total
from llmplan.hw.types import DetectedGpu, ProbeResult

AMD_SMI_ARGV = ["amd-smi", "static", "--json"]
ROCM_SMI_ARGV = ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"]

# amd-smi prints "MB" for MiB (its C library reports vram size in MiB).
_UNIT_BYTES = {"b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def load_tool_json(text: str) -> object:
    # rocm-smi may print a WARNING line before the JSON; start at the first brace.
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON in the output")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from exc
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _get_ci(row: dict, *names: str) -> object:
    lowered = {str(k).lower(): v for k, v in row.items()}
    for n in names:
        if n.lower() in lowered:
            return lowered[n.lower()]
    return None


def parse_rocm_smi_json(text: str) -> tuple[DetectedGpu, ...]:
    """GPUs in ``rocm-smi --showproductname --showmeminfo vram --json`` (keys "card0", "card1", ...)."""
    data = load_tool_json(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object keyed by card")
    gpus = []
    for key, row in data.items():
        m = re.fullmatch(r"card(\d+)", str(key))
        if not m or not isinstance(row, dict):
            continue  # the "system" block, and anything else that is not a card
        total = _get_ci(row, "VRAM Total Memory (B)")
        used = _get_ci(row, "VRAM Total Used Memory (B)")
        try:
            total_b = int(str(total))
        except ValueError:
            continue
        if total_b < 0:
            continue
        used_b = int(str(used)) if used is not None and str(used).isdigit() else None
        name = _get_ci(row, "Card Series", "Card SKU", "Card Model") or f"AMD GPU {m.group(1)}"
        gpus.append(DetectedGpu(
            vendor="amd", name=str(name), index=int(m.group(1)), source="rocm-smi",
            memory_total_bytes=total_b, memory_used_bytes=used_b,
            memory_free_bytes=None if used_b is None else total_b - used_b,
        ))
    return tuple(gpus)


def _size_bytes(value: object) -> int | None:
    """amd-smi sizes: {"value": 196592, "unit": "MB"}, "196592 MB", or a bare number of MiB."""
    if isinstance(value, dict):
        number, unit = value.get("value"), str(value.get("unit", "MB"))
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", value)
        if not m:
            return None
        number, unit = m.group(1), m.group(2) or "MB"
    elif isinstance(value, int | float):
        number, unit = value, "MB"
    else:
        return None
    try:
        size = int(float(number) * _UNIT_BYTES.get(unit.lower(), 2**20))
    except (TypeError, ValueError, OverflowError):
        return None
    return size if size >= 0 else None


def _pcie_gen(text: object) -> int | None:
    m = re.search(r"(\d+)", str(text or ""))
    return int(m.group(1)) if m else None


def _section(row: dict, key: str) -> dict:
    """A sub-object of an amd-smi GPU row, or {} when it is missing or not an object."""
    value = row.get(key)
    return value if isinstance(value, dict) else {}


def _index(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def parse_amd_smi_static_json(text: str) -> tuple[DetectedGpu, ...]:
    """GPUs in ``amd-smi static --json`` (a list, or ``{"gpu_data": [...]}`` since ROCm 6.3)."""
    data = load_tool_json(text)
    rows = data.get("gpu_data") if isinstance(data, dict) else data
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list):
        raise ValueError("expected a list of GPUs")
    gpus = []
    for pos, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        asic, vram, bus, driver = (_section(row, k) for k in ("asic", "vram", "bus", "driver"))
        total = _size_bytes(vram.get("size") if "size" in vram else vram.get("vram_size"))
        if not total:
            continue
        width = bus.get("max_pcie_width")
        gpus.append(DetectedGpu(
            vendor="amd", name=str(asic.get("market_name") or "AMD GPU"),
            index=_index(row.get("gpu"), pos), source="amd-smi",
            memory_total_bytes=total, memory_free_bytes=None,
            driver=str(driver["version"]) if driver.get("version") else None,
            pcie_gen_max=_pcie_gen(bus.get("pcie_interface_version")),
            pcie_width_max=int(width) if str(width).isdigit() else None,
        ))
    return tuple(gpus)


APU_NAME = re.compile(r"radeon\s+(?:\d{3,4}[ms]|graphics)\b", re.IGNORECASE)  # "Radeon 8060S", "Radeon 780M"
DRM = "/sys/class/drm"


def is_apu_name(name: str) -> bool:
    """An AMD integrated GPU's market name (Radeon 8060S/8050S, 890M/880M/780M, "AMD Radeon Graphics")."""
    return bool(APU_NAME.search(name)) and " rx " not in f" {name.lower()} " and "pro" not in name.lower()


def parse_sysfs_bytes(text: str) -> int | None:
    """One number of bytes from an amdgpu sysfs file (mem_info_vram_total, mem_info_gtt_total)."""
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


def apu_gpu(gpu: DetectedGpu, vram_total: int | None, gtt_total: int | None, host_total: int | None) -> DetectedGpu:
    """The APU's GPU as unified memory: the machine's RAM (the OS's MemTotal plus the carve-out it never
    sees) and, as the share the GPU may use, the larger of the carve-out and the GTT pool."""
    vram = vram_total or gpu.memory_total_bytes
    pool = max(vram, gtt_total or 0)
    total = (host_total + vram) if host_total else max(pool, gpu.memory_total_bytes)
    return replace(gpu, memory_total_bytes=total, unified_memory=True, wired_limit_bytes=min(pool, total),
                   memory_free_bytes=None, memory_used_bytes=None)


def _apu_pools(vram_reported: int) -> tuple[int | None, int | None]:
    """(VRAM carve-out, GTT size) of the DRM card whose carve-out is the one amd-smi reported, else the first."""
    found = []
    for dev in sorted(glob.glob(f"{DRM}/card[0-9]*/device"))[:16]:
        vram = parse_sysfs_bytes(read_small(f"{dev}/mem_info_vram_total", 256))
        gtt = parse_sysfs_bytes(read_small(f"{dev}/mem_info_gtt_total", 256))
        if vram or gtt:
            found.append((vram, gtt))
    same = [f for f in found if f[0] == vram_reported]
    return (same or found or [(None, None)])[0]


def _with_apu_memory(result: ProbeResult) -> ProbeResult:
    apus = [g for g in result.gpus if is_apu_name(g.name)]
    if not apus:
        return result
    host = host_memory_total()
    gpus = tuple(apu_gpu(g, *_apu_pools(g.memory_total_bytes), host) if g in apus else g for g in result.gpus)
    return ProbeResult(gpus=gpus, reasons=result.reasons)


def _try_tool(argv: list[str], parser, timeout_s: float) -> ProbeResult:
    out = run_command(argv, timeout_s)
    if out.reason:
        return ProbeResult(reasons=(out.reason,))
    if out.returncode != 0:
        first = (out.stderr or out.stdout).strip().splitlines()
        low = (out.stderr + out.stdout).lower()
        why = "permission denied" if "permission" in low else (first[0] if first else "no output")
        return ProbeResult(reasons=(f"{argv[0]} failed (exit {out.returncode}): {why}",))
    try:
        gpus = parser(out.stdout)
    except ValueError as exc:
        return ProbeResult(reasons=(f"{argv[0]} printed output llmplan cannot read ({exc})",))
    return ProbeResult(gpus=gpus, reasons=() if gpus else (f"{argv[0]} listed no GPU",))


def probe_amd(timeout_s: float = 3.0) -> ProbeResult:
    """amd-smi, then rocm-smi. Never raises."""
    try:
        budget = Budget(timeout_s)
        first = _try_tool(AMD_SMI_ARGV, parse_amd_smi_static_json, timeout_s / 2)
        if first.gpus:
            return _with_apu_memory(first)
        second = _try_tool(ROCM_SMI_ARGV, parse_rocm_smi_json, budget.left())
        if second.gpus:
            return _with_apu_memory(second)
        return ProbeResult(reasons=(*first.reasons, *second.reasons))
    except Exception as exc:
        return ProbeResult(reasons=(f"AMD probe failed unexpectedly: {exc!r}",))
