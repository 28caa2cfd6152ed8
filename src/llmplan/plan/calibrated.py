"""A saved calibration as a plan's achievable fractions of peak, for the GPU it was measured on.

``llmplan-cli calibrate`` measures what this device really reaches (matmul FLOP/s per dtype,
copy bandwidth). Divided by the catalog GPU's datasheet peaks, those are exactly the
``efficiency.matmul`` and ``efficiency.memory_bandwidth`` a plan on that GPU should use instead
of the catalog's generic defaults. Three rules keep this honest:

1. A calibration applies only to the GPU it was measured on: a CUDA device whose reported name
   matches the plan's catalog GPU (the same matching as detection), or, for an Apple GPU (MPS), a
   plan on an Apple GPU. A CPU calibration never applies to a GPU plan.
2. The matmul fraction is the one for the dtype the plan's matmuls run in (training precision,
   or the inference weight format's compute dtype); a dtype the calibration did not measure
   keeps the catalog default. Fractions are clamped to the 1 % to 100 % a plan accepts.
3. What the plan sets itself wins: a calibration fills only the efficiency fields the plan
   leaves empty.

Every outcome, used or not, comes with one sentence saying what was done and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from llmplan.errors import InputError
from llmplan.hw.match import normalise
from llmplan.hw.measured import Calibration, achieved_fractions, load_calibration

if TYPE_CHECKING:
    from llmplan.core.hardware import GpuSpec
    from llmplan.plan.document import PlanDocument

__all__ = ["CalibratedFractions", "apply_calibration", "fractions_for", "load_calibration_quietly"]

_MIN, _MAX = 0.01, 1.0  # the range EfficiencyOverrides accepts


@dataclass(frozen=True)
class CalibratedFractions:
    """Measured / datasheet peak on one GPU: per matmul dtype, and for memory bandwidth."""

    gpu_name: str  # the catalog GPU the fractions are relative to
    measured_on: str  # the calibration's device name, e.g. "NVIDIA GeForce RTX 4090"
    created_utc: str
    matmul: dict[str, float]
    memory_bandwidth: float | None
    clamped: tuple[str, ...] = ()  # which figures were outside 1 %–100 % of peak and were clamped


def load_calibration_quietly(path: Path | None = None) -> tuple[Calibration | None, str | None]:
    """The saved calibration (or the one at ``path``) and a note; a damaged file is a note, never an error,
    so that a bad calibration.json cannot break an estimate or the app."""
    try:
        return load_calibration(path), None
    except InputError as exc:
        return None, f"calibration not used: {exc}"
    except OSError as exc:
        return None, f"calibration not used: cannot read it ({exc.strerror or exc})"
    except Exception as exc:  # user data never stops an estimate: any other damage is a note too
        return None, f"calibration not used: the file is damaged ({type(exc).__name__}); run `llmplan-cli calibrate` again"


def _clamp(name: str, value: float, clamped: list[str]) -> float:
    if value < _MIN or value > _MAX:
        clamped.append(f"{name} {value:.0%}")
    return min(_MAX, max(_MIN, value))


def fractions_for(cal: Calibration, spec: GpuSpec, catalog_gpu_names: tuple[str, ...] = (),
                  detected_name: str | None = None) -> tuple[CalibratedFractions | None, str]:
    """The calibration's fractions of ``spec``'s peaks when it was measured on that GPU, and a note.

    ``catalog_gpu_names``: the names NVML/nvidia-smi report for ``spec`` (its catalog match names);
    ``detected_name``: the name detection reported for this machine's GPU, when there is one."""
    measured_on = cal.device_name
    if cal.device == "cpu":
        return None, (f"calibration not used: it was measured on the CPU ({measured_on}), "
                      f"not on the plan's {spec.name}")
    if cal.device == "mps":
        same = spec.vendor == "apple"
    else:
        names = {normalise(n) for n in (*catalog_gpu_names, detected_name or "") if n}
        same = normalise(measured_on) in names
    if not same:
        return None, f"calibration not used: it was measured on {measured_on}, not on the plan's {spec.name}"
    achieved = achieved_fractions(cal, spec)
    clamped: list[str] = []
    matmul = {d: _clamp(f"{d} matmul", f, clamped) for d, f in achieved.matmul.items()}
    bw = None if achieved.memory_bandwidth is None else _clamp("bandwidth", achieved.memory_bandwidth, clamped)
    fr = CalibratedFractions(spec.name, measured_on, cal.created_utc, matmul, bw, tuple(clamped))
    return fr, ""


def _matmul_dtype(doc: PlanDocument) -> str:
    if doc.workload == "inference":
        from llmplan.core.quant import parse_weight_format
        from llmplan.errors import LlmplanError

        try:
            return parse_weight_format(doc.inference.weight_format).compute_dtype
        except LlmplanError:  # the estimate itself will say what is wrong with the format
            return doc.inference.weight_format
    return doc.training.precision


def apply_calibration(doc: PlanDocument, fr: CalibratedFractions | None) -> tuple[PlanDocument, str]:
    """``doc`` with the calibrated fractions filling the efficiency fields it leaves empty, and a note."""
    if fr is None:
        return doc, ""
    dtype = _matmul_dtype(doc)
    eff = doc.efficiency
    update: dict[str, float] = {}
    kept: list[str] = []
    if dtype in fr.matmul:
        if eff.matmul is None:
            update["matmul"] = round(fr.matmul[dtype], 4)
        else:
            kept.append(f"efficiency.matmul {eff.matmul:g}")
    if fr.memory_bandwidth is not None:
        if eff.memory_bandwidth is None:
            update["memory_bandwidth"] = round(fr.memory_bandwidth, 4)
        else:
            kept.append(f"efficiency.memory_bandwidth {eff.memory_bandwidth:g}")
    used = ", ".join(f"{'matmul (' + dtype + ')' if k == 'matmul' else 'memory bandwidth'} {v:.0%} of peak"
                     for k, v in update.items())
    note = f"calibrated on {fr.measured_on} ({fr.created_utc[:10]}): " + (used or "nothing applied")
    if dtype not in fr.matmul:
        note += f"; {dtype} matmuls were not measured, so efficiency.matmul keeps its default"
    if kept:
        note += "; the plan's own " + " and ".join(kept) + " kept"
    if fr.clamped:
        note += "; clamped to 1–100 % of peak: " + ", ".join(fr.clamped) + " (check the catalog's peak figures)"
    if not update:
        return doc, note
    return doc.model_copy(update={"efficiency": eff.model_copy(update=update)}), note
