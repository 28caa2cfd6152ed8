"""Calibration results and measured runs: saving, loading and comparing, without PyTorch.

A calibration (`llmplan.hw.calibrate`, needs torch) measures what this machine really
reaches; a measured run is what a user recorded from a real job
(``torch.cuda.max_memory_allocated()`` and the step time). Both exist to check an estimate
against reality, so they are plain frozen data saved as JSON in the user data dir.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from llmplan.errors import InputError
from llmplan.formats.atomic import atomic_write
from llmplan.formats.bounded import load_json, parse_json, read_capped

CALIBRATION_FILE = "calibration.json"
CALIBRATION_FORMAT = "llmplan-calibration"
CALIBRATION_SCHEMA_VERSION = 1
MAX_JSON_BYTES = 1024 * 1024  # a calibration or measured-run file is a few hundred bytes


@dataclass(frozen=True)
class MatmulMeasurement:
    """One square matmul size in one dtype: ``2·n³`` FLOP per multiply."""

    dtype: str
    n: int
    flops_per_s: float
    iterations: int
    seconds: float


@dataclass(frozen=True)
class Calibration:
    """What this device reached: the best matmul FLOP/s per dtype and copy bandwidth in bytes/s."""

    device: str
    device_name: str
    torch_version: str
    created_utc: str
    matmul: tuple[MatmulMeasurement, ...]
    memory_bandwidth_bytes_per_s: float | None
    copy_bytes: int
    notes: tuple[str, ...] = ()

    def best_flops_per_s(self) -> dict[str, float]:
        best: dict[str, float] = {}
        for m in self.matmul:
            best[m.dtype] = max(best.get(m.dtype, 0.0), m.flops_per_s)
        return best

    def to_dict(self) -> dict:
        data = asdict(self)
        data["best_flops_per_s"] = self.best_flops_per_s()
        return {"format": CALIBRATION_FORMAT, "schema_version": CALIBRATION_SCHEMA_VERSION, **data}

    @classmethod
    def from_dict(cls, data: object, where: str = "calibration") -> Calibration:
        if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
            raise InputError(f"{where} is not an llmplan calibration file; run `llmplan-cli calibrate` again")
        if type(data.get("schema_version")) is not int or data["schema_version"] != CALIBRATION_SCHEMA_VERSION:
            raise InputError(f"{where} has schema_version {data.get('schema_version')!r}, this llmplan reads "
                             f"{CALIBRATION_SCHEMA_VERSION}; run `llmplan-cli calibrate` again")
        try:
            for m in data["matmul"]:  # values are used in arithmetic later: types checked here, once
                if not isinstance(m, dict) or not isinstance(m.get("dtype"), str) or not all(
                        _is_positive(m.get(k)) for k in ("flops_per_s", "n", "iterations", "seconds")) or not all(
                        isinstance(m.get(k), int) for k in ("n", "iterations")):
                    raise ValueError(f"a matmul entry is not {{dtype, n, flops_per_s, iterations, seconds}} with "
                                     f"positive numbers: {str(m)[:80]}")
            if isinstance(data["copy_bytes"], bool) or not isinstance(data["copy_bytes"], int):
                raise ValueError(f"copy_bytes is {data['copy_bytes']!r:.40}, not a whole number of bytes")
            bw = data["memory_bandwidth_bytes_per_s"]
            if bw is not None and not _is_positive(bw):
                raise ValueError(f"memory_bandwidth_bytes_per_s is {bw!r:.40}")
            return cls(
                device=str(data["device"]), device_name=str(data["device_name"]),
                torch_version=str(data["torch_version"]), created_utc=str(data["created_utc"]),
                matmul=tuple(MatmulMeasurement(**m) for m in data["matmul"]),
                memory_bandwidth_bytes_per_s=data["memory_bandwidth_bytes_per_s"],
                copy_bytes=int(data["copy_bytes"]), notes=tuple(data.get("notes", ())),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"{where} is damaged ({exc!r}); run `llmplan-cli calibrate` again") from exc


def _is_positive(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


class _PeakFlopsLike(Protocol):
    def for_dtype(self, dtype: str) -> float: ...


class GpuSpecLike(Protocol):
    """What `achieved_fractions` needs: ``GpuSpec`` has it."""

    peak_flops: _PeakFlopsLike
    memory_bandwidth: float


@dataclass(frozen=True)
class AchievedFractions:
    """Measured / datasheet peak: what a plan's efficiency overrides can be set to."""

    matmul: dict[str, float]
    memory_bandwidth: float | None


def achieved_fractions(cal: Calibration, spec: GpuSpecLike) -> AchievedFractions:
    """Each dtype's best measured FLOP/s over the spec's dense peak, and copy bandwidth over peak."""
    matmul = {}
    for dtype, flops in cal.best_flops_per_s().items():
        peak = spec.peak_flops.for_dtype(dtype)
        if peak > 0:
            matmul[dtype] = flops / peak
    bw = cal.memory_bandwidth_bytes_per_s
    return AchievedFractions(matmul, bw / spec.memory_bandwidth if bw and spec.memory_bandwidth > 0 else None)


def calibration_path() -> Path:
    from llmplan.resources_path import user_data_dir

    return user_data_dir() / CALIBRATION_FILE


def save_calibration(cal: Calibration, path: Path | None = None) -> Path:
    target = path or calibration_path()
    atomic_write(target, json.dumps(cal.to_dict(), indent=2) + "\n", make_folder=True)
    return target


def load_calibration(path: Path | None = None) -> Calibration | None:
    """The saved calibration, or None when there is none. A damaged file raises InputError."""
    source = path or calibration_path()
    try:
        raw = read_capped(source, MAX_JSON_BYTES, what="calibration file")
    except InputError:
        if not source.exists() and not source.is_symlink():
            return None
        raise
    data = parse_json(raw, str(source), what="calibration file (delete it or run `llmplan-cli calibrate` again)")
    return Calibration.from_dict(data, where=str(source))


@dataclass(frozen=True)
class MeasuredRun:
    """What a real run used: peak allocated bytes (``torch.cuda.max_memory_allocated()``) and seconds per step.

    ``peak_device_memory_bytes`` is what the device reported for the process (``llmplan-cli watch``,
    from NVML): the allocator's bytes plus its cache and the CUDA context.
    """

    peak_memory_bytes: int | None
    step_time_s: float | None
    source: str = ""
    peak_device_memory_bytes: int | None = None


def _positive(data: dict, key: str, path: str, integer: bool) -> float | int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{path}: {key} must be a positive number"
                         f"{' of bytes' if integer else ' of seconds'}, got {value!r}")
    if integer and not float(value).is_integer():
        raise InputError(f"{path}: {key} must be a whole number of bytes, got {value!r}")
    return int(value) if integer else float(value)


def import_measured_run(path: str | Path) -> MeasuredRun:
    """Read ``{"peak_memory_bytes": ..., "peak_device_memory_bytes": ..., "step_time_s": ...}`` (any may be
    absent, not all; ``llmplan-cli watch`` writes the last two)."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise InputError(f"measured-run file {p} does not exist; check the path")
    data = load_json(p, MAX_JSON_BYTES, what='measured-run file ({"peak_memory_bytes": 123, "step_time_s": 0.5})')
    if not isinstance(data, dict):
        raise InputError(f"measured-run file {p} must hold a JSON object with peak_memory_bytes and/or step_time_s")
    run = MeasuredRun(
        peak_memory_bytes=_positive(data, "peak_memory_bytes", str(p), integer=True),
        step_time_s=_positive(data, "step_time_s", str(p), integer=False),
        source=str(p),
        peak_device_memory_bytes=_positive(data, "peak_device_memory_bytes", str(p), integer=True),
    )
    if run.peak_memory_bytes is None and run.step_time_s is None and run.peak_device_memory_bytes is None:
        raise InputError(f"{p}: give at least one of peak_memory_bytes (from torch.cuda.max_memory_allocated()), "
                         "peak_device_memory_bytes (llmplan-cli watch) or step_time_s")
    return run


@dataclass(frozen=True)
class Comparison:
    """An estimate against a measurement: ``relative_error = (estimated - measured) / measured``."""

    quantity: str
    measured: float
    estimated: float
    relative_error: float

    def describe(self) -> str:
        direction = "over" if self.relative_error > 0 else "under"
        return (f"{self.quantity}: estimated {self.estimated:.6g}, measured {self.measured:.6g} "
                f"({abs(self.relative_error) * 100:.1f} % {direction}-estimate)")


def compare(quantity: str, measured: float, estimate: object) -> Comparison:
    """Compare a measured value with an estimate (a number, or a core ``Figure`` with ``.value``)."""
    estimated = float(getattr(estimate, "value", estimate))
    if not measured or measured <= 0:
        raise InputError(f"cannot compare {quantity}: the measured value must be positive, got {measured!r}")
    return Comparison(quantity, float(measured), estimated, (estimated - measured) / measured)


def compare_run(run: MeasuredRun, *, peak_memory: object = None, step_time: object = None,
                device_memory: object = None) -> tuple[Comparison, ...]:
    """Every quantity both the run and the estimate have (memory per GPU in bytes, step time in s).

    ``device_memory`` is the estimate's per-GPU total with the context and allocator overhead,
    set against ``peak_device_memory_bytes``."""
    out = []
    if run.peak_memory_bytes is not None and peak_memory is not None:
        out.append(compare("peak memory per GPU (bytes)", run.peak_memory_bytes, peak_memory))
    if run.peak_device_memory_bytes is not None and device_memory is not None:
        out.append(compare("peak device memory per GPU, context included (bytes)", run.peak_device_memory_bytes,
                           device_memory))
    if run.step_time_s is not None and step_time is not None:
        out.append(compare("step time (s)", run.step_time_s, step_time))
    return tuple(out)
