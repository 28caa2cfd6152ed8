"""Quitting while a chart sweep still runs: after the event loop's end, ``gui.app._run`` cancels the sweep and waits for its thread
before Python finalises. Without that the process crashed at exit (a segfault in the sweep worker, seen about
once in fifteen quits within two seconds of start on the 2-core dev VM, 2026-11-27)."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QRunnable, QThreadPool

from llmplan.gui import app as app_module


class _WaitsForCancel(QRunnable):
    """Stands for a long sweep: runs until the panel's cancel event is set (at most 20 s)."""

    def __init__(self, cancel: threading.Event, started: threading.Event) -> None:
        super().__init__()
        self.cancel, self.started = cancel, started

    def run(self) -> None:
        self.started.set()
        self.cancel.wait(20)


def test_quit_cancels_and_joins_the_running_sweep(window):
    from llmplan.gui.charts import ChartsPanel

    charts = window.findChildren(ChartsPanel)[0]
    started = threading.Event()
    charts._cancel = threading.Event()
    charts._pool.start(_WaitsForCancel(charts._cancel, started))
    assert started.wait(5)
    t0 = time.perf_counter()
    app_module.join_workers([window])  # what ``_run`` does once the event loop has ended
    assert charts._cancel.is_set()
    assert charts._pool.activeThreadCount() == 0, "a sweep thread outlived the event loop"
    assert time.perf_counter() - t0 < 10, "the sweep was waited for, not cancelled"
    assert QThreadPool.globalInstance().activeThreadCount() == 0
