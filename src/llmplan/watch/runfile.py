"""What a watch leaves behind: the run file ``estimate --compare-run`` reads, and the samples as CSV.

The run file extends the measured-run format of `llmplan.hw.measured` compatibly: it never
writes ``peak_memory_bytes`` (that key means ``torch.cuda.max_memory_allocated()``, which NVML
cannot see) but ``peak_device_memory_bytes``: the largest per-GPU memory NVML reported for the
watched process (or for the whole GPU when no process was attached), CUDA context and allocator
cache included, which `--compare-run` sets against the estimate's total *with* overhead.
``step_time_s`` is written when the user gives the step count or rate. The rest (per-GPU peaks,
mean utilisation, events, diagnosis) is for people and other tools.
"""

from __future__ import annotations

import csv
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from llmplan.formats.atomic import atomic_write
from llmplan.watch.diagnose import PlanLink, diagnose, peak_memory, plan_comparison
from llmplan.watch.metrics import GPU_METRICS, HOST_METRICS
from llmplan.watch.sampler import Snapshot

RUN_FORMAT, RUN_SCHEMA_VERSION = "llmplan-run", 1


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def step_time(duration_s: float, steps: int | None = None, steps_per_s: float | None = None) -> float | None:
    if steps_per_s:
        return 1.0 / steps_per_s
    if steps and duration_s > 0:
        return duration_s / steps
    return None


def run_record(snap: Snapshot, *, interval_s: float, plan: PlanLink | None = None, steps: int | None = None,
               steps_per_s: float | None = None) -> dict:
    end = snap.process_exited_at or snap.now
    duration = max((end - snap.started) if math.isfinite(end) else 0.0, 0.0)
    peak, whose = peak_memory(snap)
    record: dict = {"format": RUN_FORMAT, "schema_version": RUN_SCHEMA_VERSION, "source": "llmplan-cli watch",
                    "started_utc": datetime.fromtimestamp(snap.started, UTC).isoformat(timespec="seconds"),
                    "duration_s": round(duration, 3), "interval_s": interval_s, "samples": snap.samples,
                    "pid": snap.pid, "process_exited": snap.process_exited_at is not None}
    if math.isfinite(peak) and peak > 0:
        record["peak_device_memory_bytes"] = int(peak)
        record["peak_device_memory_of"] = whose
    st = step_time(duration, steps, steps_per_s)
    if st is not None:
        record["step_time_s"] = st
        record["steps"] = steps
    record["gpus"] = [{"index": g.info.index, "name": g.info.name, "vendor": g.info.vendor,
                       "memory_total_bytes": g.info.memory_total_bytes,
                       "peak_memory_used_bytes": _num(g.peak_used_bytes),
                       "peak_process_memory_bytes": _num(g.peak_proc_bytes),
                       "mean_utilization_pct": _num(g.mean_util_pct), "stopped": g.stopped} for g in snap.gpus]
    record["no_gpu_reasons"] = list(snap.reasons)
    record["events"] = [{"t_s": round(e.t - snap.started, 3), "kind": e.kind, "text": e.text, "gpu": e.gpu}
                        for e in snap.events]
    record["diagnosis"] = [f.to_dict() for f in diagnose(snap, plan)]
    if plan is not None:
        record["plan"] = {"label": plan.label, "predicted_peak_bytes": plan.predicted_peak_bytes,
                          "capacity_bytes": plan.capacity_bytes, "comparison": plan_comparison(snap, plan)}
    return record


def write_run_file(path: str | Path, record: dict) -> Path:
    p = Path(path)
    atomic_write(p, json.dumps(record, indent=2) + "\n", make_folder=True)
    return p


def csv_columns(snap: Snapshot) -> list[str]:
    cols = ["time_s"]
    for g in snap.gpus:
        cols += [f"gpu{g.info.index}_{m.key}" for m in GPU_METRICS]
    return cols + [f"host_{m.key}" for m in HOST_METRICS]


def write_csv(snap: Snapshot, path: str | Path) -> Path:
    """One row per sample: seconds since the start, every GPU's metrics, the host's; "n/a" where unmeasured."""
    p = Path(path)
    t = snap.host_t
    blocks = []
    for g in snap.gpus:  # align each GPU on the sample times (a stopped GPU has no later rows)
        block = np.full((len(t), len(GPU_METRICS)), math.nan)
        if len(g.t):
            pos = np.clip(np.searchsorted(g.t, t), 0, len(g.t) - 1)
            hit = g.t[pos] == t
            block[hit] = g.values[pos[hit]]
        blocks.append(block)
    table = np.hstack([(t - snap.started)[:, None], *blocks, snap.host]) if len(t) else np.empty((0, 1))
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(csv_columns(snap))
        for row in table:
            w.writerow([f"{x:.6g}" if math.isfinite(x) else "n/a" for x in row])
    return p
