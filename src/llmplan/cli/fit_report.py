"""``estimate --this-machine``: a ``LocalFit`` as the ``this_machine`` JSON object and as text.

The keys are a contract (docs/fit.md): add keys, never rename them. Sizes are bytes.
A recorded detection (``DetectionReport.to_dict()`` JSON, e.g. ``llmplan-cli detect --json``)
can stand in for live detection: ``--detection-fixture FILE`` or ``LLMPLAN_DETECTION_FIXTURE``,
which is how the tests and the docs' examples run without the hardware.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from llmplan.errors import InputError
from llmplan.fit.local import FitSummary, LocalFit
from llmplan.formats.bounded import load_json
from llmplan.hw.types import DetectedGpu, DetectionReport, HostInfo, MigInstance

FIXTURE_ENV = "LLMPLAN_DETECTION_FIXTURE"


def detection_report_from_dict(data: Any) -> DetectionReport:
    """The inverse of ``DetectionReport.to_dict`` (extra keys such as ``catalog`` are ignored)."""
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), list):
        raise InputError("detection fixture: expected the object `llmplan-cli detect --json` prints, with a 'gpus' list")
    gpu_fields = set(DetectedGpu.__dataclass_fields__)
    gpus = []
    try:
        for i, g in enumerate(data["gpus"]):
            kw = {k: v for k, v in g.items() if k in gpu_fields}
            kw["mig_instances"] = tuple(MigInstance(**mi) for mi in g.get("mig_instances") or ())
            kw["nvlink_peers"] = tuple(g.get("nvlink_peers") or ())
            kw.setdefault("index", i)
            gpus.append(DetectedGpu(**kw))
        host_data = data.get("host")
        host = HostInfo(**{k: v for k, v in host_data.items() if k in HostInfo.__dataclass_fields__}) \
            if isinstance(host_data, dict) else None
    except TypeError as exc:
        raise InputError(f"detection fixture: a GPU or host entry is incomplete ({exc})") from None
    return DetectionReport(gpus=tuple(gpus), host=host, reasons=tuple(data.get("reasons") or ()),
                           elapsed_s=float(data.get("elapsed_s") or 0.0))


def load_detection(fixture: str | None, timeout_s: float = 5.0) -> DetectionReport:
    """A recorded report (flag, else env var), else live detection."""
    path = fixture or os.environ.get(FIXTURE_ENV)
    if not path:
        from llmplan.hw.detect import detect_all

        return detect_all(timeout_s=timeout_s)
    data = load_json(Path(path), 16 * 1024 * 1024, what="detection fixture")
    return detection_report_from_dict(data)


def _summary_json(s: FitSummary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"fits": s.fits, "mode": s.mode, "tp": s.tp, "pp": s.pp, "needed_bytes": s.needed_bytes,
            "capacity_bytes": s.capacity_bytes, "headroom_bytes": s.headroom_bytes,
            "host_needed_bytes": s.host_needed_bytes, "host_available_bytes": s.host_available_bytes,
            "gpu_layers": s.gpu_layers, "total_layers": s.total_layers, "tokens_per_s": s.tokens_per_s}


def fit_json(fit: LocalFit) -> dict[str, Any]:
    """The documented ``this_machine`` object."""
    m = fit.machine
    return {
        "status": fit.status,
        "fits": fit.fits,
        "verdict": fit.verdict,
        "machine": {
            "label": m.label, "gpu_count": m.gpu_count, "catalog_id": m.catalog_id,
            "gpu_name": m.gpu.name if m.gpu else None,
            "gpu_memory_bytes": m.gpu.usable_memory_bytes if m.gpu else None,
            "speed_known": m.speed_known, "host_ram_bytes": m.host_ram_bytes,
            "host_ram_total_bytes": m.host_ram_total_bytes, "no_gpu_reason": m.no_gpu_reason,
            "calibration": None if m.calibration is None else {
                "measured_on": m.calibration.measured_on, "created_utc": m.calibration.created_utc,
                "matmul": dict(m.calibration.matmul), "memory_bandwidth": m.calibration.memory_bandwidth},
        },
        "current": _summary_json(fit.current),
        "one_gpu": _summary_json(fit.one_gpu),
        "split": _summary_json(fit.split),
        "changes": [{"kind": c.kind, "sentence": c.sentence, "overrides": list(c.overrides),
                     "distance": c.distance, "result": _summary_json(c.summary)} for c in fit.changes],
        "limits": [{"name": lim.name, "path": lim.path, "current": lim.current, "maximum": lim.maximum,
                    "capped": lim.capped, "sentence": lim.sentence} for lim in fit.limits],
        "notes": list(fit.notes),
        "elapsed_s": fit.elapsed_s,
    }


def _set_line(overrides: tuple[str, ...]) -> str:
    return " ".join(f"--set {o}" for o in overrides)


def fit_text(fit: LocalFit) -> str:
    lines = [fit.verdict]
    if fit.changes:
        head = ("To fit entirely on the GPU" if fit.fits else "Nearest changes that make it fit") + \
            " (add to this command):"
        lines.append(head)
        for i, c in enumerate(fit.changes, 1):
            lines.append(f"  {i}. {c.sentence}")
            lines.append(f"     {_set_line(c.overrides)}")
    elif not fit.fits and fit.status in ("does_not_fit", "no_gpu"):
        lines.append("No single change or pair of changes found that makes it fit.")
    for lim in fit.limits:
        lines.append(f"  {lim.sentence}")
    for note in fit.notes:
        lines.append(f"  Note: {note}")
    return "\n".join(lines)
