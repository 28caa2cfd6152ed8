"""The charts' plot items, made once per chart and moved on every redraw (``setData``, ``setValue``,
``setVisible``), and the number style of their axes. ``charts.ChartsPanel`` owns one of each.

- ``MemoryChart``: memory per GPU against a knob, points over the capacity ringed red (legend says so);
  under partial offload (llama.cpp layers, ZeRO-Offload optimizer states) also host RAM (and NVMe) per node
  and a marker where offload starts: the GPU part alone falls as layers move to the CPU, which reads as if a
  longer context were cheaper (issue 18 item 4). The capacity's and the marker's labels go where no curve
  runs (``LineLabel``).
- ``ThroughputChart``: tokens/s against GPU count; setups that do not fit in GPU memory are hollow red
  circles off the line, named in the legend (issue 18 item 10).
- ``RooflineChart``: the GPU's roofs and the workload's points.
- Each legend is an ``OutsideLegend`` (``chart_legend``): a row under the x axis, never over the data; a
  sentence written in the view box wraps to it (``wrap_in_view``).
- ``NumberAxis``: linear axes with thousands separators ("300,000", issue 18 item 7).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg

from llmplan.core.present import MemoryUnit, axis_ticks
from llmplan.gui import sweeps
from llmplan.gui.chart_labels import LineLabel, place_labels
from llmplan.gui.chart_legend import OutsideLegend
from llmplan.gui.theme import BAD_COLOUR, STAGE_COLOURS, WARN_COLOUR, offload_label

NOTE_COLOUR = "#888888"
NOTE_MARGIN = 8  # px between a wrapped sentence and the view box's edges
DOT_LINE = pg.QtCore.Qt.PenStyle.DotLine
DASH_LINE = pg.QtCore.Qt.PenStyle.DashLine


class NumberAxis(pg.AxisItem):
    """pyqtgraph's axis with the app's number style on linear axes: '300,000', not '300000'
    (log axes keep pyqtgraph's own labels, or the explicit ticks ``_log_ticks`` sets)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # pyqtgraph reserves 30 px for the labels until they are drawn, then narrows only by more than 10 px:
        # a chart whose first drawing already holds data ("150") kept 30 px, one drawn empty first got the
        # labels' own width. Starting from 0, the first labels drawn set the width in either order.
        self.textWidth = 0

    def tickStrings(self, values, scale, spacing):  # pyqtgraph's name for the hook
        if self.logMode:
            return super().tickStrings(values, scale, spacing)
        return axis_ticks([v * scale for v in values], spacing * scale)

    def set_ticks(self, ticks: list | None) -> None:
        """``setTicks`` only when they change: each call redraws the axis."""
        if ticks != getattr(self, "_ticks_set", None):
            self._ticks_set = ticks
            self.setTicks(ticks)


# A knob change redraws the chart on show. Setting a title, an axis label, the legend or empty data again
# re-renders the text and lays the plot out again (about a third of a redraw): each is set only when it changes.
def _title(plot: pg.PlotWidget, text: str) -> None:
    label = plot.getPlotItem().titleLabel
    if label.text != text or not label.isVisible():
        plot.setTitle(text)


def _label(plot: pg.PlotWidget, side: str, text: str) -> None:
    axis = plot.getAxis(side)
    if axis.labelText != text or not axis.label.isVisible():
        plot.setLabel(side, text)


def _set_data(item: pg.PlotDataItem, xs: list, ys: list) -> None:
    if xs or (item.xData is not None and len(item.xData)):
        item.setData(xs, ys)


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
    plot.getAxis("bottom").set_ticks([[(math.log10(x), _short(x)) for x in shown if x > 0], []])


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
    plot.getAxis("left").set_ticks([ticks, []])


def _vline(plot: pg.PlotWidget, colour: str = NOTE_COLOUR, label: str | None = None) -> pg.InfiniteLine:
    line = pg.InfiniteLine(angle=90, pen=pg.mkPen(colour, style=DOT_LINE), label=label,  # label mid-height
                           labelOpts={"position": 0.5, "color": colour} if label else None)
    line.setVisible(False)
    plot.addItem(line, ignoreBounds=True)
    return line


def _set_vline(line: pg.InfiniteLine, x: float | None) -> None:
    """Move a vertical marker on a log-x chart to ``x`` (hidden for None)."""
    line.setVisible(bool(x))
    if x:
        line.setValue(math.log10(x))


def wrap_in_view(plot: pg.PlotWidget, item: pg.TextItem) -> Callable[[], None]:
    """Wrap a sentence centred in the view box at the view box's width, now and on every resize: on a small
    chart (about 230 px wide at 1,024 × 700) "Run Auto… in the layout editor to see the Pareto front" was
    cut at both edges. Returns the refit, to call again after ``setText``."""
    vb = plot.getViewBox()
    item.textItem.document().setDefaultTextOption(pg.QtGui.QTextOption(pg.QtCore.Qt.AlignmentFlag.AlignCenter))

    def refit(*_a) -> None:
        natural = item.textItem.document().idealWidth() if item.textItem.textWidth() < 0 else None
        width = max(vb.width() - 2 * NOTE_MARGIN, 60)
        wanted = -1 if natural is not None and natural <= width else width
        if item.textItem.textWidth() != wanted:
            item.setTextWidth(wanted)
            item.updateTextPos()

    vb.sigResized.connect(refit)
    refit()
    return refit


class _Note:
    """A sentence in the middle of an empty chart, so empty never looks like broken (one item, toggled)."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.item = pg.TextItem("", color=NOTE_COLOUR, anchor=(0.5, 0.5))
        self.item.setVisible(False)
        plot.addItem(self.item, ignoreBounds=True)
        self._refit = wrap_in_view(plot, self.item)

    def show(self, text: str) -> None:
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        self.item.setTextWidth(-1)  # measured on one line first (``wrap_in_view``)
        self.item.setText(text)
        self._refit()
        self.item.setPos((x0 + x1) / 2, (y0 + y1) / 2)
        self.item.setVisible(True)

    def hide(self) -> None:
        self.item.setVisible(False)


class MemoryChart:
    """Memory per GPU against one knob: the part on each GPU against the capacity; where something is
    offloaded also what is kept off the GPUs, host RAM (and NVMe) per node, the same numbers and words as
    the memory bar's legend, the results table and the CLI (``fit.tiers.off_gpu_bytes``), and where offload
    starts; the plan's own value. Items made once, moved on redraw.

    The off-GPU curves are per node, not per GPU: on a llama.cpp layer split over two cards the layers left
    in host RAM are one pool the CPU reads, and a curve of "GPU + host ÷ GPUs" would be no amount anything
    holds. So the chart no longer adds them up; the y axis then reads in the unit alone and the legend says
    which curve is per GPU and which per node. There is no host RAM line: a plan does not state its host RAM."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.legend = OutsideLegend(plot)  # under the x axis: never over a curve or a label
        self.gpu = plot.plot([], [], pen=pg.mkPen(STAGE_COLOURS[0], width=2), symbol="o", symbolSize=6)
        self.host = plot.plot([], [], pen=pg.mkPen(WARN_COLOUR, width=2, style=DASH_LINE), symbol="t",
                              symbolSize=7, symbolBrush=WARN_COLOUR, connect="finite")
        self.nvme = plot.plot([], [], pen=pg.mkPen(WARN_COLOUR, width=2, style=DOT_LINE), symbol="s",
                              symbolSize=6, symbolBrush=WARN_COLOUR, connect="finite")
        self.no_fit = plot.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=None,
                                symbolPen=pg.mkPen(BAD_COLOUR, width=2))  # ringed: over the capacity
        self.capacity = pg.InfiniteLine(0, angle=0, pen=pg.mkPen(BAD_COLOUR, width=1.5, style=DASH_LINE))
        self.capacity.setVisible(False)
        plot.addItem(self.capacity)
        self.current = _vline(plot)
        self.offload = _vline(plot, WARN_COLOUR)
        self.labels = (LineLabel(plot, "GPU capacity", BAD_COLOUR, horizontal=True),
                       LineLabel(plot, "offload starts", WARN_COLOUR, horizontal=False))
        self.capacity_label, self.offload_label = self.labels
        plot.getViewBox().sigTransformChanged.connect(self._place_labels)  # a new range or size
        self.note = _Note(plot)

    def clear(self, note: str = "") -> None:
        for item in (self.gpu, self.host, self.nvme, self.no_fit):
            item.setData([], [])
        for item in (self.capacity, self.current, self.offload):
            item.setVisible(False)
        for label in self.labels:
            label.keep_off(None, [])
        self.legend.set_entries([])
        if note:
            self.note.show(note)
        else:
            self.note.hide()

    def draw(self, series: sweeps.Series | None, unit: MemoryUnit) -> None:
        offloaded = series is not None and any(h > 0 for h in series.host + series.nvme)
        _label(self.plot, "left", unit.name if offloaded else f"{unit.name} per GPU")  # the legend says per what
        if series is None or not series.xs:
            self.clear()
            return
        self.note.hide()
        _title(self.plot, series.name)
        _label(self.plot, "bottom", series.x_label)
        d = unit.divisor
        xs = list(series.xs)
        gpu = [y / d for y in series.ys]
        self.gpu.setData(xs, gpu)
        entries: list[tuple[object, str]] = []
        curves = [gpu]
        for item, key, values in ((self.host, "host_ram", series.host), (self.nvme, "nvme", series.nvme)):
            if offloaded and any(v > 0 for v in values):  # from where the offload starts: before it, no curve
                ys = [v / d if v > 0 else math.nan for v in values]
                item.setData(xs, ys)
                curves.append(ys)
                entries.append((item, offload_label(key)))
            else:
                _set_data(item, [], [])
        if offloaded:
            entries.insert(0, (self.gpu, "on each GPU"))
        bad = [(x, y) for x, y, ok in zip(xs, gpu, series.fits or (True,) * len(xs), strict=True) if not ok]
        _set_data(self.no_fit, [x for x, _ in bad], [y for _, y in bad])
        if bad:
            if not offloaded:
                entries.append((self.gpu, "memory per GPU"))
            entries.append((self.no_fit, "does not fit in GPU memory"))
        self.legend.set_entries(entries)
        self.capacity.setVisible(bool(series.capacity))
        if series.capacity:
            self.capacity.setValue(series.capacity / d)
        _set_vline(self.current, series.current_x)
        start = series.offload_from if offloaded else None
        if start == series.xs[0]:  # offloaded from the first point on: the host curve says it, a marker at the
            start = None  # left edge says nothing and its label took the room the capacity's label needed
        _set_vline(self.offload, start)
        _log_ticks(self.plot, series.xs)
        view = [[(math.log10(x), y) for x, y in zip(xs, c, strict=True)] for c in curves]  # log x, as plotted
        self.capacity_label.keep_off(series.capacity / d if series.capacity else None, view)
        self.offload_label.keep_off(math.log10(start) if start else None, view)
        self._place_labels()

    def _place_labels(self, *_a) -> None:
        place_labels(self.labels)


class ThroughputChart:
    """Tokens/s against GPU count: setups that fit on a line of filled dots; setups that do not fit in
    GPU memory as hollow red circles off the line (their speed is not reachable), named in the legend."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.legend = OutsideLegend(plot)
        self.fit = plot.plot([], [], pen=pg.mkPen(STAGE_COLOURS[2], width=2), symbol="o", symbolSize=7,
                             symbolBrush=STAGE_COLOURS[2], connect="finite")
        self.no_fit = plot.plot([], [], pen=None, symbol="o", symbolSize=9, symbolBrush=None,
                                symbolPen=pg.mkPen(BAD_COLOUR, width=2))
        self.current = _vline(plot)
        self.note = _Note(plot)

    def clear(self, note: str = "") -> None:
        self.fit.setData([], [])
        self.no_fit.setData([], [])
        self.current.setVisible(False)
        self.legend.set_entries([])
        if note:
            self.note.show(note)
        else:
            self.note.hide()

    def draw(self, series: sweeps.Series | None) -> None:
        if series is None or not series.xs:
            self.clear()
            return
        self.note.hide()
        fits = series.fits or (True,) * len(series.xs)
        xs = list(series.xs)
        good = any(fits)
        self.fit.setData(xs if good else [], [y if ok else math.nan for y, ok in zip(series.ys, fits, strict=True)]
                         if good else [])  # NaN: a gap in the line where a setup does not fit
        bad = [(x, y) for x, y, ok in zip(xs, series.ys, fits, strict=True) if not ok]
        _set_data(self.no_fit, [x for x, _ in bad], [y for _, y in bad])
        entries: list[tuple[object, str]] = []
        if bad:
            if good:
                entries.append((self.fit, "fits in GPU memory"))
            entries.append((self.no_fit, "does not fit in GPU memory (not reachable)"))
        self.legend.set_entries(entries)
        _log_ticks(self.plot, series.xs)
        _log_ticks_y(self.plot, series.ys)
        _set_vline(self.current, series.current_x)


class RooflineChart:
    """The GPU's roofs (bandwidth slope, compute ceiling) and up to three workload points with labels."""

    COLOURS = (STAGE_COLOURS[1], STAGE_COLOURS[3], STAGE_COLOURS[2])

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.roof = plot.plot([], [], pen=pg.mkPen(NOTE_COLOUR, width=2))
        self.points = [plot.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=c) for c in self.COLOURS]
        self.labels = [pg.TextItem("", color=c, anchor=(0, 1)) for c in self.COLOURS]
        for label in self.labels:
            label.setVisible(False)
            plot.addItem(label)
        self.note = _Note(plot)

    def clear(self, note: str = "") -> None:
        self.roof.setData([], [])
        for point, label in zip(self.points, self.labels, strict=True):
            point.setData([], [])
            label.setVisible(False)
        if note:
            self.note.show(note)
        else:
            self.note.hide()

    def draw(self, roof: sweeps.Roofline | None) -> None:
        if roof is None or roof.peak_flops <= 0:
            self.clear()
            return
        self.note.hide()
        ridge = roof.peak_flops / roof.bandwidth
        xs = [ridge / 1000, ridge, ridge * 1000]
        tera = 1e12  # FLOP/s shown in TFLOP/s, the unit GPU datasheets use
        self.roof.setData(xs, [min(x * roof.bandwidth, roof.peak_flops) / tera for x in xs])
        shown = [(label, x, y / tera) for label, x, y in roof.points if x > 0 and y > 0]
        for i, (point, text) in enumerate(zip(self.points, self.labels, strict=True)):
            if i < len(shown):
                label, x, y = shown[i]
                point.setData([x], [y])
                text.setText(label)
                text.setPos(math.log10(x), math.log10(y))
                # Above the point and right of it, but left of it in the right half of the roof's span
                # (``xs``: three decades each side of the ridge) and below it near the roof: there a label
                # ran past the chart's right or top edge on a small chart (a line of text is about 0.6 of
                # the ~3.5 decades shown at 1,024 × 700)
                text.setAnchor((1 if x > ridge else 0, 0 if y > roof.peak_flops / tera / 4 else 1))
                text.setVisible(True)
            else:
                point.setData([], [])
                text.setVisible(False)
