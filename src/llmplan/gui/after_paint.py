"""Work that can wait until the window is on screen: run it right after the window's first paint.

A new window's first paint is what a person waits for (issue 18: start to first paint ≤ 1.5 s). Some start-up
work shows nothing in that first picture, or nothing that cannot come a moment later: the first pass of
the GUI thread's garbage collector (``main_thread_gc``), the notice of skipped user catalog files, the
Fine-tune tab's "What fits on one GPU" searches. ``after_first_paint`` runs such work once the widget has
painted, from the event loop (so the paint reaches the screen first), or after ``fallback_ms`` when the
widget is never painted (a window made but never shown, as tests and benchmarks do).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QWidget

FALLBACK_MS = 3000  # a window that is never painted still gets the work done


class _FirstPaint(QObject):
    """Watches one widget's events until its first paint, then runs the queued work once."""

    def __init__(self, widget: QWidget, fallback_ms: int) -> None:
        super().__init__(widget)
        self.widget = widget
        self.work: list[Callable[[], object]] = []
        self.done = False
        widget.installEventFilter(self)
        self.fallback = QTimer(self)
        self.fallback.setSingleShot(True)
        self.fallback.timeout.connect(self.run)
        self.fallback.start(fallback_ms)

    def eventFilter(self, watched, event) -> bool:  # Qt's override name
        if event.type() == QEvent.Type.Paint and not self.done:
            self.widget.removeEventFilter(self)
            QTimer.singleShot(0, self, self.run)  # after this paint has finished
        return False

    def run(self) -> None:
        if self.done:
            return
        self.done = True
        self.fallback.stop()
        self.widget.removeEventFilter(self)
        work, self.work = self.work, []
        for job in work:
            job()


def after_first_paint(widget: QWidget, job: Callable[[], object], fallback_ms: int = FALLBACK_MS) -> None:
    """Run ``job`` once, right after ``widget`` first paints (at once if it already has)."""
    watch = widget.findChild(_FirstPaint, "", Qt.FindChildOption.FindDirectChildrenOnly)
    if watch is None:
        watch = _FirstPaint(widget, fallback_ms)
    if watch.done:
        job()
    else:
        watch.work.append(job)
