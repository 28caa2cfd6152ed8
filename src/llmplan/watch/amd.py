"""AMD GPUs through ``amd-smi metric --json`` (ROCm 6+), else ``rocm-smi ... --json`` (older ROCm).

One command per sample reads every GPU (amd-smi is a Python tool and takes a few hundred ms to
start, so AMD sampling is slower than NVML; it runs in the sampler's thread, never the GUI's).
Values come as ``{"value": 42, "unit": "%"}`` or ``"N/A"``; the parsers accept both and the
rocm-smi string spellings, like the detection parsers in `llmplan.hw.amd`. amd-smi's metric
output has no per-direction PCIe rates, power limit or per-process memory in one call, so those
are "n/a" for AMD.
"""

from __future__ import annotations

import math
import re

import numpy as np

from llmplan.hw import run_command
from llmplan.hw.amd import load_tool_json as _load  # the same tolerant reader as detection
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.source import DeviceLost, GpuInfo, GpuProcess, empty_row

AMD_SMI_METRIC_ARGV = ["amd-smi", "metric", "--json"]
ROCM_SMI_METRIC_ARGV = ["rocm-smi", "--showuse", "--showpower", "--showtemp", "--showmeminfo", "vram",
                        "--showclocks", "--json"]
_UNIT = {"b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30, "kib": 2**10, "mib": 2**20, "gib": 2**30,  # amd-smi: MB = MiB
         "%": 1, "w": 1, "mw": 1e-3, "mhz": 1, "ghz": 1e3, "c": 1, "°c": 1}


def _number(value: object) -> float:
    """``{"value": 42, "unit": "%"}``, ``42``, ``"42 %"`` -> 42 in the base unit; NaN for "N/A"."""
    unit = ""
    if isinstance(value, dict):
        value, unit = value.get("value"), str(value.get("unit", ""))
    if isinstance(value, str):
        m = re.fullmatch(r"\s*\(?([-\d.]+)\s*([A-Za-z°%]*)\)?\s*", value)
        if not m:
            return math.nan
        value, unit = m.group(1), unit or m.group(2)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return math.nan
    try:
        x = float(value) * _UNIT.get(unit.lower(), 1)
    except ValueError:
        return math.nan
    return x if math.isfinite(x) else math.nan


def _section(row: dict, key: str) -> dict:
    value = row.get(key)
    return value if isinstance(value, dict) else {}


def parse_amd_smi_metric(text: str) -> dict[int, np.ndarray]:
    """{gpu index: metric row} from ``amd-smi metric --json`` (a list, or ``{"gpu_data": [...]}``)."""
    data = _load(text)
    rows = data.get("gpu_data") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ValueError("expected a list of GPUs")
    out: dict[int, np.ndarray] = {}
    for pos, r in enumerate(rows):
        if not isinstance(r, dict):
            continue
        row = empty_row()
        usage, power, temp, mem = (_section(r, k) for k in ("usage", "power", "temperature", "mem_usage"))
        row[G["util_pct"]] = _number(usage.get("gfx_activity"))
        row[G["power_w"]] = _number(power.get("socket_power"))
        row[G["temp_c"]] = _number(temp.get("hotspot", temp.get("edge")))
        row[G["mem_total_bytes"]] = _number(mem.get("total_vram"))
        row[G["mem_used_bytes"]] = _number(mem.get("used_vram"))
        gfx0 = _section(_section(r, "clock"), "gfx_0")
        row[G["sm_clock_mhz"]] = _number(gfx0.get("clk"))
        index = r.get("gpu")
        out[index if isinstance(index, int) and not isinstance(index, bool) else pos] = row
    return out


def parse_rocm_smi_metric(text: str) -> dict[int, np.ndarray]:
    """{gpu index: metric row} from ``rocm-smi --showuse --showpower --showtemp --showmeminfo vram --json``."""
    data = _load(text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object keyed by card")
    out: dict[int, np.ndarray] = {}
    for key, r in data.items():
        m = re.fullmatch(r"card(\d+)", str(key))
        if not m or not isinstance(r, dict):
            continue
        low = {str(k).lower(): v for k, v in r.items()}

        def first(*names: str, low=low) -> float:
            return next((_number(low[n]) for n in names if n in low), math.nan)

        row = empty_row()
        row[G["util_pct"]] = first("gpu use (%)")
        row[G["power_w"]] = first("current socket graphics package power (w)", "average graphics package power (w)")
        row[G["temp_c"]] = first("temperature (sensor junction) (c)", "temperature (sensor edge) (c)")
        row[G["mem_total_bytes"]] = first("vram total memory (b)")
        row[G["mem_used_bytes"]] = first("vram total used memory (b)")
        row[G["sm_clock_mhz"]] = first("sclk clock speed:")
        out[int(m.group(1))] = row
    return out


class AmdSource:
    """Every AMD GPU amd-smi (or rocm-smi) reports; one command per sample serves all of them."""

    vendor = "amd"

    def __init__(self, timeout_s: float = 5.0):
        self.timeout_s = timeout_s
        self._argv: list[str] = []
        self._parser = parse_amd_smi_metric
        self._indices: list[int] = []
        self._cache: tuple[float, dict[int, np.ndarray] | str] | None = None

    def _run(self, argv: list[str], parser) -> dict[int, np.ndarray] | str:
        out = run_command(argv, self.timeout_s)
        if out.reason:
            return out.reason
        if out.returncode != 0:
            first = (out.stderr or out.stdout).strip().splitlines()
            return f"{argv[0]} failed (exit {out.returncode}): {first[0] if first else 'no output'}"
        try:
            rows = parser(out.stdout)
        except ValueError as exc:
            return f"{argv[0]} printed output llmplan cannot read ({exc})"
        return rows or f"{argv[0]} listed no GPU"

    def open(self) -> list[GpuInfo]:
        """Raises LookupError with the reasons when neither tool lists a GPU."""
        reasons = []
        for argv, parser in ((AMD_SMI_METRIC_ARGV, parse_amd_smi_metric), (ROCM_SMI_METRIC_ARGV, parse_rocm_smi_metric)):
            rows = self._run(argv, parser)
            if isinstance(rows, str):
                reasons.append(rows)
                continue
            self._argv, self._parser, self._indices = argv, parser, sorted(rows)
            return [GpuInfo(index=i, name=f"AMD GPU {i}", vendor="amd",
                            memory_total_bytes=int(t) if math.isfinite(t := rows[i][G["mem_total_bytes"]]) else None)
                    for i in self._indices]
        raise LookupError("; ".join(reasons))

    def read(self, slot: int, pid: int | None, now: float) -> np.ndarray:
        if self._cache is None or self._cache[0] != now:
            self._cache = (now, self._run(self._argv, self._parser))
        rows = self._cache[1]
        if isinstance(rows, str):
            raise DeviceLost(rows)
        index = self._indices[slot]
        if index not in rows:
            raise DeviceLost(f"{self._argv[0]} no longer lists GPU {index}")
        return rows[index].copy()

    def processes(self, slot: int) -> list[GpuProcess]:
        return []

    def close(self) -> None:
        pass
