"""Python's cyclic garbage collector runs on the GUI thread only.

Left automatic, the collector runs in whichever thread happens to allocate when a generation's
threshold is crossed — often a worker computing sweeps or nearest fixes. If the garbage then holds
the last reference to a Qt widget (a closed window's widgets sit in reference cycles with their
Python wrappers), the widget is destroyed on that worker thread. Qt forbids that: destroying a
QObject locks its connection list while PySide waits for the GIL held by the GUI thread, which in
turn waits for that lock — the app freezes (seen as a hang and a crash in the GUI tests, with the
worker's stack inside ``gc_collect_main`` → ``QObject::~QObject``).

So automatic collection is switched off and a timer on the GUI thread runs the same generational
collections when the counts pass the interpreter's own thresholds (the recipe the PyQt/PySide
communities use for this problem). Reference counting still frees everything not in a cycle at once.

The timer starts after the first window's first paint (``after_paint``): its first pass walks every
object the imports and the window made (15-75 ms of CPU on the 2-core dev VM), which the person should
not wait for before the window shows.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from PySide6.QtWidgets import QWidget

from llmplan.gui.after_paint import FALLBACK_MS, after_first_paint

_INTERVAL_MS = 500  # a few collections a second at most; each young-generation pass takes well under 1 ms


class _Collector(QObject):
    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)

    def start(self) -> None:
        if not self.timer.isActive():
            self.timer.start(_INTERVAL_MS)

    def check(self) -> None:
        collect_due(self.thresholds)


def collect_due(thresholds: tuple[int, ...] | None = None) -> None:
    """The collection the interpreter would have run by now (the oldest generation due), on this thread."""
    limits = thresholds or gc.get_threshold()
    counts = gc.get_count()
    for generation in (2, 1, 0):
        if counts[generation] > limits[generation]:
            gc.collect(generation)
            return


def install(first_after: QWidget | None = None) -> None:
    """Once per application (idempotent): automatic collection off, the GUI thread's timer on (from the
    first paint of ``first_after`` when given)."""
    app = QCoreApplication.instance()
    if app is None or app.findChild(_Collector) is not None:
        return
    gc.disable()
    collector = _Collector(app)
    if first_after is None:
        collector.start()
    else:
        after_first_paint(first_after, collector.start)
        # also if that window goes before it is ever painted (its watcher goes with it): the app owns this one
        QTimer.singleShot(FALLBACK_MS, collector, collector.start)
