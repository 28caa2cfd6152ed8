"""Wait until the window has settled: its estimate made, its charts and checks drawn, its layout still.

A picture of the window (``llmplan --screenshot``, ``scripts/screenshots.py``) taken at a fixed moment caught
it mid-way: 300 ms after start the chart pane was still empty, and a chart drawn for the first time re-lays out
its axes once its tick labels are known, so a grab between the two drew the y-axis title over the tick labels.
Settled means: no debounced estimate pending, no chart sweep or this-machine check running, and no widget
(or chart item) asked for a new layout, changed size or was shown for ``QUIET_MS`` *and* for ``QUIET_PASSES``
passes of the event loop. An event filter on the application sees those requests (``QEvent.LayoutRequest``,
``Resize``, ``GraphicsSceneResize``, ``Show``) from every widget and every chart item; a blinking text cursor
only repaints, so it does not hold the window "busy". The passes matter: the charts are built after the first
paint in queued steps (importing NumPy, then pyqtgraph: 0.2-0.3 s each on the 2-core dev VM, the event loop
blocked meanwhile), so time alone read "quiet" while the plots did not exist yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QElapsedTimer, QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget

QUIET_MS = 250  # no layout change for this long: the last one has been drawn (a frame is 17 ms)
TIMEOUT_MS = 20_000  # a chart sweep on a slow machine; past this the picture is taken as it is
QUIET_PASSES = 10  # passes of the event loop without a layout change (a blocked pass counts once)
POLL_MS = 20

_LAYOUT_EVENTS = frozenset({QEvent.Type.LayoutRequest, QEvent.Type.Resize, QEvent.Type.GraphicsSceneResize,
                            QEvent.Type.Show})


class _LayoutWatch(QObject):
    """Milliseconds and passes of the event loop (``passed``) since any object in the application last asked
    for a layout, changed size or was shown."""

    def __init__(self, app: QApplication) -> None:
        super().__init__()
        self.app = app
        self.clock = QElapsedTimer()
        self.clock.start()
        self.passes = 0
        app.installEventFilter(self)

    def eventFilter(self, _watched, event) -> bool:  # Qt's override name
        if event.type() in _LAYOUT_EVENTS:
            self.clock.restart()
            self.passes = 0
        return False

    def passed(self, busy: bool = False) -> None:
        """One pass of the event loop; ``busy``: the window had work due when the pass began (a timer that
        fires in the pass runs its work there, and the layout requests that work posts are only delivered in the
        next pass), so quiet starts again after it."""
        if busy:
            self.clock.restart()
            self.passes = 0
        else:
            self.passes += 1

    def quiet(self, quiet_ms: int) -> bool:
        return self.clock.elapsed() >= quiet_ms and self.passes >= QUIET_PASSES

    def stop(self) -> None:
        self.app.removeEventFilter(self)


def background_work(window: QWidget) -> bool:
    """The window still has work whose result it will draw: a chart sweep or a fit check running, or any work
    due on a single-shot timer of one of its widgets (the debounced estimate, the sweep and the fit checks
    waiting to start, the Fine-tune tab's "What fits on one GPU" searches after the first paint)."""
    charts = getattr(window, "charts", None)
    machine = getattr(window, "this_machine", None)
    if (charts is not None and charts.busy) or (machine is not None and getattr(machine, "busy", False)):
        return True
    return any(t.isActive() and t.isSingleShot() for t in window.findChildren(QTimer))


def wait_settled(app: QApplication, window: QWidget, quiet_ms: int = QUIET_MS, timeout_ms: int = TIMEOUT_MS,
                 at_least_ms: int = 0) -> bool:
    """Run the event loop here until ``window`` has settled (module doc), at least ``at_least_ms``; False when
    ``timeout_ms`` passed first. For scripts and tests that drive the window without ``app.exec()``."""
    watch = _LayoutWatch(app)
    start = time.perf_counter()
    try:
        while True:
            busy = background_work(window)
            app.processEvents()
            watch.passed(busy)
            waited = (time.perf_counter() - start) * 1000
            if waited >= at_least_ms and not background_work(window) and watch.quiet(quiet_ms):
                return True
            if waited >= timeout_ms:
                return False
            time.sleep(POLL_MS / 1000)
    finally:
        watch.stop()


def after_settled(app: QApplication, window: QWidget, then: Callable[[bool], object], quiet_ms: int = QUIET_MS,
                  timeout_ms: int = TIMEOUT_MS) -> QTimer:
    """Call ``then(settled)`` from the running event loop once ``window`` has settled (``settled`` True), or
    after ``timeout_ms`` (False). The returned timer polls; it stops itself."""
    watch = _LayoutWatch(app)
    clock = QElapsedTimer()
    clock.start()
    timer = QTimer(window)
    timer.setInterval(POLL_MS)

    was_busy = [True]  # work due at the last poll has run in the passes since (``_LayoutWatch.passed``)

    def poll() -> None:
        watch.passed(was_busy[0])
        was_busy[0] = background_work(window)
        settled = not was_busy[0] and watch.quiet(quiet_ms)
        if settled or clock.elapsed() >= timeout_ms:
            timer.stop()
            watch.stop()
            then(settled)

    timer.timeout.connect(poll)
    timer.start()
    return timer
