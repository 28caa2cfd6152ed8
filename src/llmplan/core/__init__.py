"""The Qt-free, I/O-free estimation engine: pure functions over frozen specs.

The public API is ``__all__`` below; everything else in ``llmplan.core`` is an implementation
module other packages should not need. ``estimate(scenario)`` (in ``llmplan.core.engine``) is the
one entry point; ``llmplan.core.search`` (the auto-planner), ``llmplan.core.system`` (storage,
failures, power) and ``llmplan.core.present`` (numbers as people read them) state their own
``__all__``.
"""

from llmplan.core.engine import estimate
from llmplan.core.explain import Figure
from llmplan.core.hardware import ClusterSpec, Efficiency, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.model import MLASpec, ModelSpec, MoESpec
from llmplan.core.params import ParamBreakdown, count_params
from llmplan.core.quant import known_formats, parse_weight_format
from llmplan.core.result import Bottleneck, Estimate, MemoryBreakdown
from llmplan.core.system.report import Evaluation
from llmplan.core.workload import (
    EfficiencyOverrides,
    InferenceSettings,
    ParallelLayout,
    Scenario,
    TrainingSettings,
)

__all__ = [
    "Bottleneck",
    "ClusterSpec",
    "Efficiency",
    "EfficiencyOverrides",
    "Estimate",
    "Evaluation",
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
