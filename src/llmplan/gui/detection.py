"""Local hardware detection off the UI thread.

``llmplan.hw.detect.detect_all()`` may take seconds (NVML, subprocesses); it runs in a
QThreadPool worker and reports back through a signal, so the window never blocks. The
report's GPUs are turned into catalog ids (or inline specs) by ``match_gpu``.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from llmplan.core.hardware import GpuSpec


class _Signals(QObject):
    done = Signal(object, str)  # report | None, message


class _DetectJob(QRunnable):
    def __init__(self, signals: _Signals) -> None:
        super().__init__()
        self.signals = signals

    def run(self) -> None:
        from llmplan.hw.detect import detect_all

        try:
            report = detect_all()
        except Exception as exc:  # detection must never take the app down
            self.signals.done.emit(None, f"detection failed: {exc}")
            return
        self.signals.done.emit(report, "")


class Detector(QObject):
    finished = Signal(object, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._signals = _Signals()  # no Qt parent: the worker keeps it alive if this widget goes first
        self._signals.done.connect(self.finished)
        self.running = False
        self.finished.connect(self._stop)

    def start(self) -> None:
        if self.running:
            return
        self.running = True
        QThreadPool.globalInstance().start(_DetectJob(self._signals))

    def _stop(self, *_a) -> None:
        self.running = False


def gpus_of(report: Any) -> list[Any]:
    return list(getattr(report, "gpus", None) or [])


def describe_gpu(gpu: Any) -> str:
    name = getattr(gpu, "name", None) or getattr(getattr(gpu, "spec", None), "name", None) or str(gpu)
    mem = (getattr(gpu, "memory_total_bytes", None) or getattr(gpu, "memory_bytes", None)
           or getattr(getattr(gpu, "spec", None), "memory_bytes", None))
    return f"{name} ({mem / 1024**3:.0f} GiB)" if mem else str(name)


def match_gpu(gpu: Any) -> tuple[str | None, GpuSpec | None]:
    """(catalog id, inline spec) for a detected GPU: the hardware catalog's match for the
    name the driver reported (and its memory/cores), else whatever the report offers."""
    from llmplan.gui import backend

    cat = backend.hardware_catalog()
    if cat is not None and hasattr(cat, "match") and getattr(gpu, "name", None):
        try:
            entry = cat.match(gpu.name, getattr(gpu, "memory_total_bytes", None), getattr(gpu, "gpu_cores", None))
        except Exception:
            entry = None
        if entry is not None:
            return entry.id, None
    for attr in ("catalog_id", "matched_id", "gpu_id"):
        value = getattr(gpu, attr, None)
        if isinstance(value, str) and value:
            return value, None
    spec = getattr(gpu, "spec", None)
    if isinstance(spec, GpuSpec):
        return spec.id, spec
    return None, None
