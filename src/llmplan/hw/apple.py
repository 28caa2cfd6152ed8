"""Apple Silicon: the chip, its unified memory, GPU cores, and how much of it the GPU may wire.

On a Mac the GPU shares RAM with the CPU; Metal lets the GPU wire only part of it
(``recommendedMaxWorkingSetSize``). A user can raise that with ``sysctl iogpu.wired_limit_mb``;
when it is unset (0) we use the default share observed on Apple Silicon (see
`default_wired_limit_bytes`). Parsers are pure; `probe_apple` runs the commands.
"""

from __future__ import annotations

import json
import platform

from llmplan.hw._run import Budget, run_command
from llmplan.hw.types import DetectedGpu, ProbeResult

MIB = 2**20
GIB = 2**30


def parse_system_profiler_gpu_cores(text: str) -> tuple[str | None, int | None]:
    """(GPU model, GPU core count) of the built-in Apple GPU in ``system_profiler SPDisplaysDataType -json``.

    Raises ValueError when the text is not that JSON.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from exc
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    rows = data.get("SPDisplaysDataType") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError("no SPDisplaysDataType list")
    for row in rows:
        if not isinstance(row, dict):
            continue
        model = row.get("sppci_model") or row.get("_name")
        if "apple" not in str(row.get("spdisplays_vendor", "")).lower() and not str(model).startswith("Apple"):
            continue  # an eGPU or an Intel Mac's discrete card
        cores = row.get("sppci_cores")
        try:
            n = int(str(cores).strip()) if cores is not None else None
        except ValueError:
            n = None
        return (str(model) if model else None), n
    return None, None


def parse_int(text: str) -> int | None:
    """A sysctl number (memory size, wired limit): None unless a non-negative integer."""
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def default_wired_limit_bytes(memsize: int) -> int:
    """The GPU's default working-set limit on Apple Silicon when ``iogpu.wired_limit_mb`` is 0.

    Apple does not document the rule; Metal's ``recommendedMaxWorkingSetSize`` as printed by
    llama.cpp's Metal backend is exactly two thirds of RAM on 16 and 32 GiB Macs and three quarters
    on 36 and 64 GiB ones (the logs cited in catalogs/gpus/apple.toml, whose ``[apple_wired_memory]``
    rule gives the catalog entries the same share; a test keeps the two in step). This is that
    observation, not a guarantee; the user can override it with ``iogpu.wired_limit_mb``.
    """
    share = 2 / 3 if memsize <= 32 * GIB else 3 / 4
    return int(memsize * share)


def build_apple_gpu(
    chip: str | None, memsize: int, gpu_model: str | None, gpu_cores: int | None, wired_limit_mb: int | None
) -> DetectedGpu:
    """One DetectedGpu for the Mac's GPU; a wired limit of 0 or None means the default share."""
    wired = wired_limit_mb * MIB if wired_limit_mb else default_wired_limit_bytes(memsize)
    return DetectedGpu(
        vendor="apple", name=(gpu_model or chip or "Apple GPU").strip(), index=0, source="macos",
        memory_total_bytes=memsize, memory_free_bytes=None, unified_memory=True,
        gpu_cores=gpu_cores, wired_limit_bytes=min(wired, memsize),
    )


def probe_apple(timeout_s: float = 3.0) -> ProbeResult:
    """The Mac's GPU, or a reason. Does nothing (no reason either) on other systems."""
    if platform.system() != "Darwin":
        return ProbeResult()
    try:
        if platform.machine() != "arm64":
            return ProbeResult(reasons=("Intel Mac: no Apple Silicon GPU (discrete GPUs are not probed)",))
        budget = Budget(timeout_s)
        chip_out = run_command(["sysctl", "-n", "machdep.cpu.brand_string"], budget.left())
        mem_out = run_command(["sysctl", "-n", "hw.memsize"], budget.left())
        memsize = parse_int(mem_out.stdout) if mem_out.ok else None
        if not memsize:
            return ProbeResult(reasons=(mem_out.reason or "sysctl hw.memsize gave no memory size",))
        reasons: list[str] = []
        gpu_model, cores = None, None
        prof = run_command(["system_profiler", "SPDisplaysDataType", "-json"], budget.left())
        if prof.ok:
            try:
                gpu_model, cores = parse_system_profiler_gpu_cores(prof.stdout)
            except ValueError as exc:
                reasons.append(f"system_profiler output unreadable ({exc}); GPU core count unknown")
        else:
            reasons.append(prof.reason or f"system_profiler failed (exit {prof.returncode}); GPU core count unknown")
        wired_out = run_command(["sysctl", "-n", "iogpu.wired_limit_mb"], budget.left())
        wired = parse_int(wired_out.stdout) if wired_out.ok else None
        chip = chip_out.stdout.strip() if chip_out.ok else None
        gpu = build_apple_gpu(chip, memsize, gpu_model, cores, wired)
        return ProbeResult(gpus=(gpu,), reasons=tuple(reasons))
    except Exception as exc:
        return ProbeResult(reasons=(f"Apple probe failed unexpectedly: {exc!r}",))
