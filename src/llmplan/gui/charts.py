"""Live charts (pyqtgraph): memory vs sequence length, memory vs batch, throughput vs
GPU count, a roofline with the workload's point, and the auto-planner's Pareto front.

Sweeps call the engine tens of times, so they run in a QThreadPool worker; a newer
request cancels the older one and stale results are dropped (generation counter), so
knobs stay smooth while dragging. A knob change sweeps only the series of the chart on
show; the others are swept when their tab opens (or, for an export, at once). Each chart
keeps its plot items (curves, lines, notes) for its lifetime and a redraw only moves them
(``setData``, ``setValue``, ``setVisible``): re-creating items on every knob change costs
more than the data and makes the legend blink.

What the charts say plainly (issue 18 item 10): throughput points whose setup does not fit
in GPU memory are hollow red circles, left off the line, with a legend entry saying so;
memory charts under partial offload (llama.cpp, ZeRO-Offload) plot host RAM per node beside
the part on each GPU and mark where offload starts, since the GPU part alone *falls* as more
layers move to the CPU. Linear axes print thousands separators ("300,000"; ``NumberAxis``). Export uses
pyqtgraph's PNG ImageExporter (its SVG exporter is broken in 0.14, TOOLCHAIN.md gotcha 5).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRunnable, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QProxyStyle, QStyle, QTabBar, QTabWidget, QWidget

from llmplan.core.present import MemoryUnit
from llmplan.gui import sweeps
from llmplan.gui.backend import Outcome
from llmplan.gui.theme import BAD_COLOUR, STAGE_COLOURS, configure_pyqtgraph, restyle_plot

SWEEP_DEBOUNCE_MS = 60
AXIS_LABEL_OVERHANG = 5  # px below the x axis that its label may take (pyqtgraph's "nudge")
# The tabs, their chart titles and axes: (tab, title, x label, y label, log x, log y).
TABS = (("Length", "Memory vs sequence length", "tokens", "GiB per GPU", True, False),
        ("Batch", "Memory vs batch", "sequences", "GiB per GPU", True, False),
        ("GPUs", "Throughput vs GPU count", "GPUs", "tokens/s", True, True),
        ("Roofline", "Roofline (per GPU)", "arithmetic intensity (FLOP/byte)", "TFLOP/s per GPU", True, True),
        ("Pareto", "Auto-planner: Pareto front", "GPUs", "tokens/s", False, False))
SNUG_TAB_PAD = 10  # px of side padding the chart tabs give up: five titles fit 288 px (1,024 × 700)
_LIBRARIES = ("numpy", "pyqtgraph")  # what the plots import, one at a time (``ChartsPanel._build_step``)
# What ``ChartsPanel._build_plots`` makes: asking for one of them before builds the plots at once.
_PLOT_PARTS = frozenset({"seq_plot", "batch_plot", "gpus_plot", "roof_plot", "pareto_plot", "seq_chart",
                         "batch_chart", "gpus_chart", "roof_chart", "_pareto_hint", "pareto_legend", "pareto_front",
                         "pareto_ranked", "pareto_chosen"})


# The series each tab draws (by tab index); the roofline needs no sweep and the Pareto front comes from Auto….
TAB_SERIES = {0: "memory_vs_seq", 1: "memory_vs_batch", 2: "throughput_vs_gpus"}


class _Signals(QObject):
    done = Signal(int, object, tuple, float)  # generation, Sweeps, the series it holds, seconds


def _sweep(outcome: Outcome, which: tuple[str, ...], cancelled=lambda: False) -> sweeps.Sweeps:
    try:
        return sweeps.compute(outcome.scenario, outcome.estimate, which, cancelled)
    except Exception as exc:  # charts are a view: a failure shows as an empty chart
        return sweeps.Sweeps(errors=(f"{type(exc).__name__}: {exc}",))


class SweepJob(QRunnable):
    def __init__(self, generation: int, outcome: Outcome, which: tuple[str, ...], signals: _Signals,
                 cancel: threading.Event) -> None:
        super().__init__()
        self.generation, self.outcome, self.which, self.signals, self.cancel = generation, outcome, which, signals, cancel

    def run(self) -> None:
        t0 = time.perf_counter()
        result = _sweep(self.outcome, self.which, self.cancel.is_set)
        if not self.cancel.is_set():
            self.signals.done.emit(self.generation, result, self.which, time.perf_counter() - t0)


def _plot(title: str, x: str, y: str, log_x: bool = False, log_y: bool = False) -> Any:
    import pyqtgraph as pg

    from llmplan.gui.chart_items import NumberAxis

    w = pg.PlotWidget(axisItems={"left": NumberAxis("left"), "bottom": NumberAxis("bottom")})
    w.setTitle(title)
    w.setLabel("bottom", x)
    w.setLabel("left", y)
    w.showGrid(x=True, y=True, alpha=0.25)
    w.setLogMode(x=log_x, y=log_y)
    for side in ("left", "bottom"):  # units are in the labels; never "(x1e+15)" or "(x0.001)"
        w.getAxis(side).enableAutoSIPrefix(False)
    w.setAccessibleName(title)
    w.setMinimumHeight(140)
    # pyqtgraph sets the x axis's label 5 px lower than the axis's own height allows (``AxisItem.resizeEvent``:
    # the text item's margin was to take it); with no legend under the axis the label's last pixels fell off the
    # chart's bottom edge ("sequence length (tokens)" lost its descenders at 1,024 × 700). The margin holds them.
    left, top, right, _bottom = w.getPlotItem().layout.getContentsMargins()
    w.getPlotItem().layout.setContentsMargins(left, top, right, AXIS_LABEL_OVERHANG)
    return w


class _SnugTabStyle(QProxyStyle):
    """The application's style with ``SNUG_TAB_PAD`` px less side padding in each tab (both the tab's width and
    its text area follow ``PM_TabBarTabHSpace``, so the title is never clipped)."""

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        value = super().pixelMetric(metric, option, widget)
        return max(4, value - SNUG_TAB_PAD) if metric == QStyle.PixelMetric.PM_TabBarTabHSpace else value


class SnugTabBar(QTabBar):
    """The chart tabs' bar: in a narrow column (1,024 × 700) every tab stays in sight, whole. The tabs have less
    side padding than the style's, so "Pareto" no longer hides behind scroll arrows and no title is elided
    ("Len…"); each tab's tooltip keeps the chart's full name."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        style = _SnugTabStyle()
        style.setParent(self)  # lives as long as the bar
        self.setStyle(style)
        self.setExpanding(False)


class ChartsPanel(QTabWidget):
    """The chart tabs. pyqtgraph and the plots are made only after the window's first paint
    (``_build_plots``: importing pyqtgraph and making the plots took about 0.7 s of CPU before the first
    paint on the 2-core dev VM; issue 18 asks for start to first paint ≤ 1.5 s);
    until then each tab is an empty page. Anything that needs a plot builds them first, and so does
    reading one of the plot attributes (``__getattr__``)."""

    redrawn = Signal(float)  # seconds from request to redraw
    built = Signal()  # the plots exist now: their titles and axes may need a wider column

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit = MemoryUnit()
        self.setAccessibleName("Charts")
        self._built = False
        self._build_queued = False
        self.setTabBar(SnugTabBar(self))
        for name, title, *_rest in TABS:
            i = self.addTab(QWidget(), name)
            self.setTabToolTip(i, title)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()  # no Qt parent: the worker keeps it alive if this widget goes first
        self._signals.done.connect(self._done)
        self._generation = 0
        self._cancel = threading.Event()
        self._pending: Outcome | None = None
        self._outcome: Outcome | None = None  # the outcome of the latest sweep started
        self._swept: set[str] = set()  # its series swept or being swept (``TAB_SERIES``)
        self._job: SweepJob | None = None
        self._requested_at = 0.0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SWEEP_DEBOUNCE_MS)
        self._timer.timeout.connect(self._start)
        self.last = None
        self._last_generation = 0  # the generation ``last`` was swept for
        self.busy = False
        self._stale: set = set()
        self._pareto_for: tuple | None = None
        self._cleared = ""  # the note of the last ``clear`` of every chart, for plots built after it
        self.currentChanged.connect(self._draw_current)

    def __getattr__(self, name: str) -> Any:
        """A plot part asked for before the plots exist: build them now (tests, exports)."""
        if name in _PLOT_PARTS and not self.__dict__.get("_built", True):
            self._build_plots()
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if not self._built and not self._build_queued:  # the window is on screen: build right after
            self._build_queued = True
            QTimer.singleShot(0, self, lambda: self._build_step(0))

    def _build_step(self, step: int) -> None:
        """Import NumPy, then pyqtgraph, then make the plots, one step per pass of the event loop: what
        the person does meanwhile (a key, a click, a Hub answer) waits for one step (0.2-0.3 s on the
        2-core dev VM), not for all three."""
        if self._built:
            return
        if step < len(_LIBRARIES):
            if step == 0:
                import numpy  # noqa: F401  (each import named by a constant: plan files never name code)
            else:
                import pyqtgraph  # noqa: F401
            QTimer.singleShot(0, self, lambda: self._build_step(step + 1))
            return
        self._build_plots()

    def _build_plots(self) -> None:
        if self._built:
            return
        self._built = True
        import pyqtgraph as pg

        from llmplan.gui.chart_items import MemoryChart, RooflineChart, ThroughputChart, wrap_in_view
        from llmplan.gui.chart_legend import OutsideLegend

        configure_pyqtgraph(pg)
        plots = [_plot(title, x, y, log_x, log_y) for _name, title, x, y, log_x, log_y in TABS]
        self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot, self.pareto_plot = plots
        self.seq_chart = MemoryChart(self.seq_plot)
        self.batch_chart = MemoryChart(self.batch_plot)
        self.gpus_chart = ThroughputChart(self.gpus_plot)
        self.roof_chart = RooflineChart(self.roof_plot)
        self._pareto_hint = pg.TextItem("Run Auto… in the layout editor to see the Pareto front", anchor=(0.5, 0.5))
        self._pareto_hint.setPos(0.5, 0.5)
        self.pareto_plot.addItem(self._pareto_hint)
        wrap_in_view(self.pareto_plot, self._pareto_hint)
        self.pareto_legend = OutsideLegend(self.pareto_plot)
        self.pareto_front = self.pareto_plot.plot([], [], pen=pg.mkPen(STAGE_COLOURS[3], width=2), symbol="s",
                                                  symbolSize=7, symbolBrush=STAGE_COLOURS[3])
        self.pareto_ranked = self.pareto_plot.plot([], [], pen=None, symbol="o", symbolSize=8,
                                                   symbolBrush=STAGE_COLOURS[0])
        self.pareto_chosen = self.pareto_plot.plot([], [], pen=None, symbol="star", symbolSize=18,
                                                   symbolBrush=BAD_COLOUR)
        current = self.currentIndex()
        self.blockSignals(True)  # swapping the pages is not the user changing tabs
        try:
            for i, ((name, title, *_rest), plot) in enumerate(zip(TABS, plots, strict=True)):
                empty = self.widget(i)
                self.removeTab(i)
                self.insertTab(i, plot, name)
                self.setTabToolTip(i, title)
                empty.deleteLater()
            self.setCurrentIndex(max(current, 0))
        finally:
            self.blockSignals(False)
        if self._cleared:
            for chart in (self.seq_chart, self.batch_chart, self.gpus_chart, self.roof_chart):
                chart.clear(self._cleared)
        if self.last is not None:
            self._stale = {self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot}
            self._draw_current()
        self.built.emit()

    def restyle(self) -> None:
        """Recolour every chart for the current theme (Preferences → Theme, or the OS switching)."""
        if not self._built:  # they take the theme's colours when they are made
            return
        for plot in (self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot, self.pareto_plot):
            restyle_plot(plot)

    # ---- requests ---------------------------------------------------------------------
    @staticmethod
    def _pareto_key(doc) -> tuple:
        return (doc.model, doc.hardware, doc.workload)

    def request(self, outcome: Outcome) -> None:
        if self._pareto_for is not None and self._pareto_key(outcome.doc) != self._pareto_for:
            self._pareto_for = None  # the search was for another model, cluster or workload
            self.show_pareto([], [])
        if outcome.estimate is None or outcome.scenario is None:
            self._cancel.set()
            self._pending = None
            self._generation += 1  # a sweep still running for the old plan is now stale
            self.last, self._outcome, self.busy = None, None, False
            self._cleared = "No estimate: the verdict above says what to fix"
            if self._built:
                for chart in (self.seq_chart, self.batch_chart, self.gpus_chart, self.roof_chart):
                    chart.clear(self._cleared)  # no stale curves
            return
        self._cleared = ""
        self._pending = outcome
        self._requested_at = time.perf_counter()
        self._cancel.set()  # the running sweep is now stale
        self.busy = True
        self._timer.start()

    def _showing(self) -> tuple[str, ...]:
        """The series of the chart on show (none for the roofline and the Pareto front)."""
        name = TAB_SERIES.get(self.currentIndex())
        return (name,) if name else ()

    def _start(self) -> None:
        if self._pending is None:
            return
        self._generation += 1
        self._cancel = threading.Event()
        self._outcome, self._pending = self._pending, None
        self._swept = set(self._showing())
        self._run(self._showing())

    def _run(self, which: tuple[str, ...]) -> None:
        self._job = SweepJob(self._generation, self._outcome, which, self._signals, self._cancel)  # kept: no early GC
        self.busy = True
        self._pool.start(self._job)

    def _done(self, generation: int, result: sweeps.Sweeps, which: tuple[str, ...], _seconds: float) -> None:
        if generation != self._generation:
            return
        first = self.last is None or self._last_generation != generation
        if first:  # a new plan: every chart is out of date, the one on show is redrawn now
            self.last, self._last_generation = result, generation
        else:  # a series swept when its tab opened joins the plan's others
            self.last = dataclasses.replace(self.last, errors=self.last.errors + result.errors,
                                            **{name: getattr(result, name) for name in which})
        self._build_plots()
        if first:
            self.draw(self.last)
        else:
            self._draw_current()
        self.busy = self._timer.isActive() or self._pending is not None
        self.redrawn.emit(time.perf_counter() - self._requested_at)

    def cancel_background_work(self) -> None:
        """At quit: no sweep starts later, and the running one stops at its next check (``gui.app._run``)."""
        self._timer.stop()
        self._pending = None
        self._cancel.set()

    def wait_idle(self, timeout_ms: int = 10_000) -> None:
        """For tests and benchmarks: start a sweep still waiting on the debounce timer now, then block
        until the pool is idle (so no sweep starts later, on a window that is being torn down)."""
        if self._timer.isActive():
            self._timer.stop()
            self._start()
        self._pool.waitForDone(timeout_ms)

    def sweep_rest(self) -> None:
        """Sweep now, on this thread, the series no tab has asked for yet (an export draws every chart)."""
        self.wait_idle()
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)  # a finished sweep's result (``_done``) first
        rest = tuple(name for name in sweeps.SERIES if name not in self._swept)
        if self._outcome is None or self.last is None or self._last_generation != self._generation or not rest:
            return
        self._swept.update(rest)
        self._done(self._generation, _sweep(self._outcome, rest), rest, 0.0)

    # ---- drawing ------------------------------------------------------------------------
    def draw(self, s: sweeps.Sweeps) -> None:
        """Draw only the chart that is showing (the others are drawn when their tab is
        opened): a quarter of the drawing work per knob change."""
        self._build_plots()
        self._stale = {self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot}
        self._draw_current()

    def _draw_current(self, *_a) -> None:
        s, plot = self.last, self.currentWidget()
        if s is None or not self._built or plot not in self._stale:
            return
        missing = tuple(name for name in self._showing() if name not in self._swept)
        if missing and self._outcome is not None and self._last_generation == self._generation:
            self._swept.update(missing)  # swept now that its tab is open; drawn when the sweep is back
            self._requested_at = time.perf_counter()
            self._run(missing)
            return
        self._stale.discard(plot)
        if plot is self.seq_plot:
            self.seq_chart.draw(s.memory_vs_seq, self.unit)
        elif plot is self.batch_plot:
            self.batch_chart.draw(s.memory_vs_batch, self.unit)
        elif plot is self.gpus_plot:
            self.gpus_chart.draw(s.throughput_vs_gpus)
        elif plot is self.roof_plot:
            self.roof_chart.draw(s.roofline)
        # pyqtgraph fits the axes to the new data lazily, when the view is painted; the axes it changes then
        # ask for a second paint of the whole chart. Fitting them now, before the first paint, paints once.
        plot.getPlotItem().vb.prepareForPaint()

    def draw_all(self) -> None:
        """Every chart now (before exporting them all)."""
        self._build_plots()
        self.sweep_rest()
        current = self.currentIndex()
        for i in range(self.count()):
            self.setCurrentIndex(i)
        self.setCurrentIndex(current)

    def show_pareto(self, candidates: list[tuple[float, float, str]], front: list[tuple[float, float, str]],
                    chosen: int | None = None, doc=None, front_source: str = "quick model") -> None:
        """The auto-planner's ranked layouts (GPUs, tokens/s, label) as dots and its Pareto
        front (fastest layout for each GPU count) as a line; the chosen layout starred."""
        if doc is not None:
            self._pareto_for = self._pareto_key(doc)
        plot = self.pareto_plot
        empty = not candidates and not front
        self._pareto_hint.setVisible(empty)
        if empty:
            plot.setXRange(0, 1)
            plot.setYRange(0, 1)
        else:
            plot.enableAutoRange()
        pts = sorted(front)
        self.pareto_front.setData([p[0] for p in pts], [p[1] for p in pts])
        self.pareto_ranked.setData([p[0] for p in candidates], [p[1] for p in candidates])
        star = [candidates[chosen]] if chosen is not None and 0 <= chosen < len(candidates) else []
        self.pareto_chosen.setData([p[0] for p in star], [p[1] for p in star])
        self.pareto_legend.set_entries([(self.pareto_front, f"fastest per GPU count ({front_source})")] * bool(front)
                                       + [(self.pareto_ranked, "ranked layouts (full engine)")] * bool(candidates))

    def export_png(self, folder: Path) -> list[Path]:
        """One PNG per chart (``gui.export.chart_pngs``), each written atomically. Raises OSError."""
        from llmplan.formats.atomic import atomic_write
        from llmplan.gui.export import chart_pngs

        out = []
        for i, (tab, _title, png) in enumerate(chart_pngs(self)):
            path = folder / f"chart-{i + 1}-{tab.lower().replace(' ', '-')}.png"
            atomic_write(path, png)
            out.append(path)
        return out
