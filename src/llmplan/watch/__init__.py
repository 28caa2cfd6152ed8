"""Watch a running job: live GPU and host telemetry beside the plan, and the bottleneck named.

Qt-free (the GUI's Watch panel and ``llmplan-cli watch`` are its two front ends; nothing else
imports it). It sits above ``hw`` and reads devices through NVML (`nvml`), amd-smi/rocm-smi
(`amd`), Apple's IOKit statistics (`apple`) and /proc (`host`) into preallocated ring buffers
(`ring`, `sampler`); `diagnose` turns the samples into sentences, `runfile` writes what
``estimate --compare-run`` reads. docs/watch.md explains every metric and rule.
"""

from llmplan.watch.diagnose import RULES, Finding, PlanLink, diagnose, summary_lines
from llmplan.watch.metrics import GPU_METRICS, HOST_METRICS, fmt
from llmplan.watch.sampler import (
    DEFAULT_INTERVAL_S,
    Sampler,
    Snapshot,
    Watcher,
    check_interval,
    open_sampler,
)

__all__ = [
    "DEFAULT_INTERVAL_S", "GPU_METRICS", "HOST_METRICS", "RULES", "Finding", "PlanLink", "Sampler", "Snapshot",
    "Watcher", "check_interval", "diagnose", "fmt", "open_sampler", "summary_lines",
]
