"""llmplan.hw: what this machine has (GPUs, CPU, RAM, disk) and how fast it really is.

Public surface (everything else is an implementation module):

- ``detect_all(timeout_s)`` -> ``DetectionReport`` (``.gpus``, ``.host``, ``.reasons``, ``.summary()``);
  never raises, never blocks past its timeout; safe to call from a GUI worker thread.
- ``match_gpu(name, memory_bytes, candidates, gpu_cores=None)`` -> ``GpuMatch``: the catalog entry.
- ``run_command(argv, timeout_s)`` -> ``CommandOutput``: a device tool run under a time limit, never
  raising (``llmplan.watch`` samples amd-smi and ioreg with it).
- ``llmplan.hw.calibrate.calibrate`` (needs PyTorch) and ``llmplan.hw.measured`` (save/load,
  measured runs, comparisons) for checking estimates against this machine.

No Qt here (import-linter contract); the GUI wraps these calls.
"""

from llmplan.hw._run import CommandOutput, run_command
from llmplan.hw.detect import detect_all
from llmplan.hw.match import GpuMatch, match_gpu
from llmplan.hw.types import DetectedGpu, DetectionReport, HostInfo, MigInstance, ProbeResult

__all__ = [
    "CommandOutput",
    "DetectedGpu",
    "DetectionReport",
    "GpuMatch",
    "HostInfo",
    "MigInstance",
    "ProbeResult",
    "detect_all",
    "match_gpu",
    "run_command",
]
