"""The Qt-free, I/O-free estimation engine: pure functions over frozen specs.

The public API is ``__all__`` below; everything else in ``llmplan.core`` is an implementation
module other packages should not need. ``estimate(scenario)`` (in ``llmplan.core.engine``) is the
one entry point; ``llmplan.core.search`` (the auto-planner), ``llmplan.core.system`` (storage,
failures, power) and ``llmplan.core.present`` (numbers as people read them) state their own
``__all__``. Names load on first use (PEP 562), so importing one spec module stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "estimate": "engine",
    "Figure": "explain",
    "ClusterSpec": "hardware", "Efficiency": "hardware", "GpuSpec": "hardware", "NetworkSpec": "hardware",
    "PeakFlops": "hardware",
    "MLASpec": "model", "ModelSpec": "model", "MoESpec": "model",
    "ParamBreakdown": "params", "count_params": "params",
    "known_formats": "quant", "parse_weight_format": "quant",
    "Bottleneck": "result", "Estimate": "result", "MemoryBreakdown": "result",
    "EfficiencyOverrides": "workload", "InferenceSettings": "workload", "ParallelLayout": "workload",
    "Scenario": "workload", "TrainingSettings": "workload",
}

__all__ = [
    "Bottleneck",
    "ClusterSpec",
    "Efficiency",
    "EfficiencyOverrides",
    "Estimate",
    "Figure",
    "GpuSpec",
    "InferenceSettings",
    "MLASpec",
    "MemoryBreakdown",
    "MoESpec",
    "ModelSpec",
    "NetworkSpec",
    "ParallelLayout",
    "ParamBreakdown",
    "PeakFlops",
    "Scenario",
    "TrainingSettings",
    "count_params",
    "estimate",
    "known_formats",
    "parse_weight_format",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'llmplan.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"llmplan.core.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
