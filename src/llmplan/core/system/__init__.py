"""Beyond the GPU: checkpoints, failures and goodput, data pipeline, host, power, cold start.

Pure functions over the Scenario, the engine's Estimate and a ``SystemSettings`` built
from ``catalogs/system`` (``llmplan.catalog.system_presets.default_system_settings``).
"""

from llmplan.core.system.bottleneck import Finding, Ranking, rank_bottlenecks
from llmplan.core.system.checkpoint import CheckpointIO, CheckpointSize, checkpoint_io, checkpoint_size
from llmplan.core.system.cold_start import ColdStart, cold_start
from llmplan.core.system.export import system_json
from llmplan.core.system.goodput import (
    Goodput,
    first_order_waste,
    goodput_fraction,
    goodput_report,
    job_mtbf_s,
    young_daly_interval_s,
)
from llmplan.core.system.pipeline import DataPipeline, data_pipeline, token_id_bytes
from llmplan.core.system.power import PowerReport, gpu_power_watts, power_report
from llmplan.core.system.report import Evaluation, SystemReport, evaluation, system_report
from llmplan.core.system.settings import (
    CheckpointOptions,
    FailureRate,
    GridProfile,
    HostProfile,
    PipelineProfile,
    PowerProfile,
    StoragePreset,
    SystemSettings,
)

__all__ = [
    "CheckpointIO", "CheckpointOptions", "CheckpointSize", "ColdStart", "DataPipeline", "Evaluation", "FailureRate", "Finding",
    "Goodput", "GridProfile", "HostProfile", "PipelineProfile", "PowerProfile", "PowerReport", "Ranking",
    "StoragePreset", "SystemReport", "SystemSettings", "checkpoint_io", "checkpoint_size", "cold_start",
    "data_pipeline", "evaluation", "first_order_waste", "goodput_fraction", "goodput_report", "gpu_power_watts", "job_mtbf_s",
    "power_report", "rank_bottlenecks", "system_json", "system_report", "token_id_bytes", "young_daly_interval_s",
]
