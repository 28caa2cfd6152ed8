"""``estimate --calibration [FILE]`` and ``estimate --compare-run RUN.json``: measurements meet the estimate.

``--calibration`` fills the plan's empty efficiency fields with what ``llmplan-cli calibrate``
measured, when the calibration was taken on the plan's GPU (rules: ``llmplan.plan.calibrated``).
``--compare-run`` reads what a real job recorded and prints the estimate's error against it:

- peak memory: ``torch.cuda.max_memory_allocated()`` counts the bytes PyTorch's allocator handed
  to tensors, so it is compared with the estimate's per-GPU total *less* the CUDA context and
  fragmentation overhead (which that counter never sees); ``peak_device_memory_bytes`` (what
  ``llmplan-cli watch`` measured through NVML, context included) is compared with the total;
- step time: a training step, or for inference one decode step (the time per output token).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from llmplan.core.result import Estimate
from llmplan.errors import InputError
from llmplan.plan.document import PlanDocument


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", nargs="?", const="", metavar="FILE",
                   help="use a calibration (llmplan-cli calibrate; default: the saved one) as the efficiencies "
                   "of the plan's GPU, where the plan sets none; with --this-machine the saved one is used "
                   "unless --no-calibration")
    p.add_argument("--no-calibration", action="store_true",
                   help="with --this-machine: ignore the saved calibration")
    p.add_argument("--compare-run", metavar="RUN.json",
                   help='compare the estimate with a measured run: {"peak_memory_bytes": ..., "step_time_s": ...}, '
                   "or the run file llmplan-cli watch writes")


def calibrated_document(doc: PlanDocument, file_arg: str) -> tuple[PlanDocument, str]:
    """``doc`` with the calibration at ``file_arg`` ('' = the saved one) applied, and what was done.
    Asked for explicitly, so a missing or damaged calibration is an error, not a note."""
    from llmplan.hw.measured import calibration_path, load_calibration
    from llmplan.plan.calibrated import apply_calibration, fractions_for
    from llmplan.plan.resolve import resolve

    path = Path(file_arg) if file_arg else None
    cal = load_calibration(path)
    if cal is None:
        raise InputError(f"--calibration: no calibration at {path or calibration_path()}; "
                         "run `llmplan-cli calibrate` on the machine first")
    gpu = resolve(doc).cluster.gpu
    fractions, why = fractions_for(cal, gpu, (*_catalog_names(gpu.id), gpu.name))
    if fractions is None:
        return doc, why
    return apply_calibration(doc, fractions)


def _catalog_names(gpu_id: str) -> tuple[str, ...]:
    from llmplan.catalog.hardware import load_hardware_catalog

    return next((g.match_names for g in load_hardware_catalog().gpus if g.id == gpu_id), ())


def run_comparisons(est: Estimate, run_path: str) -> list[dict[str, Any]]:
    """The estimate against the measured run at ``run_path``, one row per quantity both have."""
    from llmplan.hw.measured import compare_run, import_measured_run

    run = import_measured_run(run_path)
    mem = est.memory
    allocated = mem.total.value - mem.overhead.value
    step = (est.compute.step_time_s.value if est.compute is not None
            else est.inference.tpot_s.value if est.inference is not None else None)
    rows = compare_run(run, peak_memory=allocated, step_time=step, device_memory=mem.total.value)
    if not rows:
        raise InputError(f"{run_path}: nothing to compare: the run and the estimate share no quantity")
    return [{"quantity": c.quantity, "measured": c.measured, "estimated": c.estimated,
             "relative_error": c.relative_error, "sentence": c.describe()} for c in rows]


def comparison_text(rows: list[dict[str, Any]]) -> str:
    return "\n".join(["measured run (estimated peak memory excludes the CUDA context and fragmentation; "
                      "device memory includes them)",
                      *(f"  {r['sentence']}" for r in rows)])
