"""Live charts (pyqtgraph): memory vs sequence length, memory vs batch, throughput vs
GPU count, a roofline with the workload's point, and the auto-planner's Pareto front.

Sweeps call the engine tens of times, so they run in a QThreadPool worker; a newer
request cancels the older one and stale results are dropped (generation counter), so
knobs stay smooth while dragging. Export uses pyqtgraph's PNG ImageExporter (its SVG
exporter is broken in 0.14, TOOLCHAIN.md gotcha 5).
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QTabWidget, QWidget

from llmplan.core.present import MemoryUnit
from llmplan.gui import sweeps
from llmplan.gui.backend import Outcome
from llmplan.gui.theme import BAD_COLOUR, STAGE_COLOURS, restyle_plot

SWEEP_DEBOUNCE_MS = 60


class _Signals(QObject):
    done = Signal(int, object, float)  # generation, Sweeps, seconds


class SweepJob(QRunnable):
    def __init__(self, generation: int, outcome: Outcome, signals: _Signals, cancel: threading.Event) -> None:
        super().__init__()
        self.generation, self.outcome, self.signals, self.cancel = generation, outcome, signals, cancel

    def run(self) -> None:
        t0 = time.perf_counter()
        try:
            result = sweeps.compute_all(self.outcome.scenario, self.outcome.estimate, self.cancel.is_set)
        except Exception as exc:  # charts are a view: a failure shows as an empty chart
            result = sweeps.Sweeps(errors=(f"{type(exc).__name__}: {exc}",))
        if not self.cancel.is_set():
            self.signals.done.emit(self.generation, result, time.perf_counter() - t0)


def _plot(title: str, x: str, y: str, log_x: bool = False, log_y: bool = False) -> pg.PlotWidget:
    w = pg.PlotWidget()
    w.setTitle(title)
    w.setLabel("bottom", x)
    w.setLabel("left", y)
    w.showGrid(x=True, y=True, alpha=0.25)
    w.setLogMode(x=log_x, y=log_y)
    for side in ("left", "bottom"):  # units are in the labels; never "(x1e+15)" or "(x0.001)"
        w.getAxis(side).enableAutoSIPrefix(False)
    w.setAccessibleName(title)
    w.setMinimumHeight(140)
    return w


def _short(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:g}M"
    if x >= 1024 and x % 1024 == 0:
        return f"{x / 1024:g}k"
    return f"{x:g}"


def _log_ticks(plot: pg.PlotWidget, xs: tuple[float, ...]) -> None:
    """Label a log-x axis at the swept points (1k, 2k, 4k …): pyqtgraph's own log ticks
    crowd into unreadable minor labels over one or two decades."""
    shown = list(xs)
    while len(shown) > 8:
        shown = shown[::2]
    plot.getAxis("bottom").setTicks([[(math.log10(x), _short(x)) for x in shown if x > 0], []])


def _empty_note(plot: pg.PlotWidget, text: str) -> None:
    """A sentence in the middle of an empty chart, so empty never looks like broken."""
    vb = plot.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    note = pg.TextItem(text, color="#888888", anchor=(0.5, 0.5))
    note.setPos((x0 + x1) / 2, (y0 + y1) / 2)
    plot.addItem(note)


def _log_ticks_y(plot: pg.PlotWidget, ys: tuple[float, ...]) -> None:
    """Label a log-y axis at 1-2-5 steps written out ("20,000"), not pyqtgraph's "2·10⁴"
    minor labels that crowd each other."""
    lo, hi = min(ys), max(ys)
    if lo <= 0:
        return
    ticks = []
    for exp in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**exp
            if lo / 1.5 <= v <= hi * 1.5:
                ticks.append((math.log10(v), f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    plot.getAxis("left").setTicks([ticks, []])


class ChartsPanel(QTabWidget):
    redrawn = Signal(float)  # seconds from request to redraw

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit = MemoryUnit()
        self.setAccessibleName("Charts")
        self.seq_plot = _plot("Memory vs sequence length", "tokens", "GiB per GPU", log_x=True)
        self.batch_plot = _plot("Memory vs batch", "sequences", "GiB per GPU", log_x=True)
        self.gpus_plot = _plot("Throughput vs GPU count", "GPUs", "tokens/s", log_x=True, log_y=True)
        self.roof_plot = _plot("Roofline (per GPU)", "arithmetic intensity (FLOP/byte)", "TFLOP/s per GPU",
                               log_x=True, log_y=True)
        self.pareto_plot = _plot("Auto-planner: Pareto front", "GPUs", "tokens/s")
        self._pareto_hint = pg.TextItem("Run Auto… in the layout editor to see the Pareto front", anchor=(0.5, 0.5))
        self._pareto_hint.setPos(0.5, 0.5)
        self.pareto_plot.addItem(self._pareto_hint)
        for w, name in ((self.seq_plot, "Length"), (self.batch_plot, "Batch"), (self.gpus_plot, "GPUs"),
                        (self.roof_plot, "Roofline"), (self.pareto_plot, "Pareto")):
            i = self.addTab(w, name)
            self.setTabToolTip(i, w.plotItem.titleLabel.text)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()  # no Qt parent: the worker keeps it alive if this widget goes first
        self._signals.done.connect(self._done)
        self._generation = 0
        self._cancel = threading.Event()
        self._pending: Outcome | None = None
        self._requested_at = 0.0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SWEEP_DEBOUNCE_MS)
        self._timer.timeout.connect(self._start)
        self.last = None
        self.busy = False
        self._stale: set = set()
        self._pareto_for: tuple | None = None
        self.currentChanged.connect(self._draw_current)

    def restyle(self) -> None:
        """Recolour every chart for the current theme (Preferences → Theme, or the OS switching)."""
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
            self.last = None
            for plot in (self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot):
                plot.clear()  # no stale curves beside a plan that has no estimate
                _empty_note(plot, "No estimate: the verdict above says what to fix")
            return
        self._pending = outcome
        self._requested_at = time.perf_counter()
        self._cancel.set()  # the running sweep is now stale
        self.busy = True
        self._timer.start()

    def _start(self) -> None:
        if self._pending is None:
            return
        self._generation += 1
        self._cancel = threading.Event()
        self._pool.start(SweepJob(self._generation, self._pending, self._signals, self._cancel))
        self._pending = None

    def _done(self, generation: int, result: sweeps.Sweeps, _seconds: float) -> None:
        if generation != self._generation:
            return
        self.last = result
        self.draw(result)
        self.busy = self._timer.isActive() or self._pending is not None
        self.redrawn.emit(time.perf_counter() - self._requested_at)

    def wait_idle(self, timeout_ms: int = 10_000) -> None:
        """For tests and benchmarks: block until the pool is idle."""
        self._pool.waitForDone(timeout_ms)

    # ---- drawing ------------------------------------------------------------------------
    def draw(self, s: sweeps.Sweeps) -> None:
        """Draw only the chart that is showing (the others are drawn when their tab is
        opened): a quarter of the drawing work per knob change."""
        self._stale = {self.seq_plot, self.batch_plot, self.gpus_plot, self.roof_plot}
        self._draw_current()

    def _draw_current(self, *_a) -> None:
        s, plot = self.last, self.currentWidget()
        if s is None or plot not in self._stale:
            return
        self._stale.discard(plot)
        if plot is self.seq_plot:
            self._draw_memory(plot, s.memory_vs_seq)
        elif plot is self.batch_plot:
            self._draw_memory(plot, s.memory_vs_batch)
        elif plot is self.gpus_plot:
            self._draw_series(plot, s.throughput_vs_gpus)
        elif plot is self.roof_plot:
            self._draw_roofline(s.roofline)

    def draw_all(self) -> None:
        """Every chart now (before exporting them all)."""
        current = self.currentIndex()
        for i in range(self.count()):
            self.setCurrentIndex(i)
        self.setCurrentIndex(current)

    def _draw_memory(self, plot: pg.PlotWidget, series: sweeps.Series | None) -> None:
        plot.clear()
        plot.setLabel("left", f"{self.unit.name} per GPU")
        if series is None or not series.xs:
            return
        plot.setTitle(series.name)
        d = self.unit.divisor
        plot.plot(list(series.xs), [y / d for y in series.ys], pen=pg.mkPen(STAGE_COLOURS[0], width=2),
                  symbol="o", symbolSize=6, name="memory per GPU")
        if series.capacity:
            plot.addItem(pg.InfiniteLine(series.capacity / d, angle=0, pen=pg.mkPen(BAD_COLOUR, width=1.5,
                                                                                       style=pg.QtCore.Qt.PenStyle.DashLine),
                                         label="capacity", labelOpts={"position": 0.1, "color": BAD_COLOUR}))
        if series.current_x:
            plot.addItem(pg.InfiniteLine(math.log10(series.current_x), angle=90,
                                         pen=pg.mkPen("#888888", style=pg.QtCore.Qt.PenStyle.DotLine)))
        plot.setLabel("bottom", series.x_label)
        _log_ticks(plot, series.xs)

    def _draw_series(self, plot: pg.PlotWidget, series: sweeps.Series | None) -> None:
        plot.clear()
        if series is None or not series.xs:
            return
        plot.plot(list(series.xs), list(series.ys), pen=pg.mkPen(STAGE_COLOURS[2], width=2), symbol="o",
                  symbolSize=6)
        _log_ticks(plot, series.xs)
        _log_ticks_y(plot, series.ys)
        if series.current_x:
            plot.addItem(pg.InfiniteLine(math.log10(series.current_x), angle=90,
                                         pen=pg.mkPen("#888888", style=pg.QtCore.Qt.PenStyle.DotLine)))

    def _draw_roofline(self, roof: sweeps.Roofline | None) -> None:
        plot = self.roof_plot
        plot.clear()
        if roof is None or roof.peak_flops <= 0:
            return
        ridge = roof.peak_flops / roof.bandwidth
        xs = [ridge / 1000, ridge, ridge * 1000]
        tera = 1e12  # FLOP/s shown in TFLOP/s, the unit GPU datasheets use
        plot.plot(xs, [min(x * roof.bandwidth, roof.peak_flops) / tera for x in xs], pen=pg.mkPen("#888888", width=2))
        colours = (STAGE_COLOURS[1], STAGE_COLOURS[3], STAGE_COLOURS[2])
        for (label, x, y), colour in zip(roof.points, colours, strict=False):
            y /= tera
            if x > 0 and y > 0:
                plot.plot([x], [y], pen=None, symbol="o", symbolSize=10, symbolBrush=colour)
                text = pg.TextItem(label, color=colour, anchor=(0, 1))
                text.setPos(math.log10(x), math.log10(y))
                plot.addItem(text)

    def show_pareto(self, candidates: list[tuple[float, float, str]], front: list[tuple[float, float, str]],
                    chosen: int | None = None, doc=None, front_source: str = "quick model") -> None:
        """The auto-planner's ranked layouts (GPUs, tokens/s, label) as dots and its Pareto
        front (fastest layout for each GPU count) as a line; the chosen layout starred."""
        if doc is not None:
            self._pareto_for = self._pareto_key(doc)
        plot = self.pareto_plot
        plot.clear()
        if plot.plotItem.legend is None:
            plot.addLegend(offset=(-10, -10))  # bottom right: the best layouts sit top right
        plot.plotItem.legend.clear()
        empty = not candidates and not front
        self._pareto_hint.setVisible(empty)
        plot.addItem(self._pareto_hint)
        if empty:
            plot.setXRange(0, 1)
            plot.setYRange(0, 1)
        else:
            plot.enableAutoRange()
        if front:
            pts = sorted(front)
            plot.plot([p[0] for p in pts], [p[1] for p in pts], pen=pg.mkPen(STAGE_COLOURS[3], width=2),
                      symbol="s", symbolSize=7, symbolBrush=STAGE_COLOURS[3],
                      name=f"fastest per GPU count ({front_source})")
        if candidates:
            plot.plot([p[0] for p in candidates], [p[1] for p in candidates], pen=None, symbol="o", symbolSize=8,
                      symbolBrush=STAGE_COLOURS[0], name="ranked layouts (full engine)")
        if chosen is not None and 0 <= chosen < len(candidates):
            p = candidates[chosen]
            plot.plot([p[0]], [p[1]], pen=None, symbol="star", symbolSize=18, symbolBrush=BAD_COLOUR)

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
