"""The Watch panel's scrolling charts: one row per GPU (utilisation, memory, PCIe/NVLink, power) and one
for the host (CPU busy and I/O wait, disk, RAM), drawn with pyqtgraph from a sampler `Snapshot`.

The x axis is seconds before now, so the charts scroll. The memory chart carries the plan's
predicted peak (dashed) and the usable capacity as horizontal lines; a watched process's exit is a
vertical line on every chart. "n/a" samples are NaN and drawn as gaps in the line.
Each curve is a plain ``QGraphicsPathItem`` in the plot's view box (`_Curve`), drawn from one reused
point buffer per row, and the axes' ranges are set only when they change (with hysteresis, and
fixed-width axes, so new tick labels never re-flow the grid). Not ``PlotDataItem.setData``: it
costs ~0.4 ms per 300-point curve (78 curves: 30 ms a tick) against ~10 µs here.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPainterPath, QPolygonF
from PySide6.QtWidgets import QGraphicsPathItem

from llmplan.gui.theme import BAD_COLOUR, STAGE_COLOURS, WARN_COLOUR, chart_colours
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.metrics import HOST_INDEX as H

GIB = 2**30
ROW_HEIGHT = 150
AXIS_WIDTH = 52
MAX_RUNS = 16  # pieces of a line drawn one by one before switching to pg.arrayToQPath
_BLUE, _ORANGE, _GREEN, _RED, _TEAL = STAGE_COLOURS[:5]


def _key(title: str, *parts: tuple[str, str]) -> str:
    """A chart title with its curves named in their colours (the legend, without covering the data)."""
    return title + ": " + " ".join(f'<span style="color:{c}">{name}</span>' for name, c in parts)


def _pen(colour: str, width: float = 1.0, dashed: bool = False):
    pen = pg.mkPen(colour, width=width)
    if dashed:
        from PySide6.QtCore import Qt

        pen.setStyle(Qt.PenStyle.DashLine)
    return pen


def nice_top(value: float) -> float:
    """The axis top for ``value``: the next of 1, 1.5, 2, 3, 4, 5, 6, 8 x 10^k above it (1 for nothing to show)."""
    if not math.isfinite(value) or value <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(value))
    return next(m * base for m in (1, 1.5, 2, 3, 4, 5, 6, 8, 10) if m * base >= value)


class _Curve:
    """One line of a chart: a path item, redrawn from the row's shared point buffer (`_Row.draw`)."""

    def __init__(self, plot, colour: str, dashed: bool):
        self.item = QGraphicsPathItem()
        self.item.setPen(_pen(colour, dashed=dashed))
        plot.vb.addItem(self.item, ignoreBounds=True)
        self.x = self.y = np.empty(0)
        self.top = 0.0  # the largest value drawn (0 when none)

    def draw(self, poly: QPolygonF, points: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """``points`` views ``poly``'s buffer with x already in column 0; NaN ("n/a") splits the line."""
        self.x, self.y = x, y
        path = QPainterPath()
        ok = np.isfinite(y)
        if ok.all():
            if len(y):
                points[:, 1] = y
                path.addPolygon(poly)
                self.top = float(y.max())
        elif ok.any():
            edges = np.flatnonzero(np.diff(np.concatenate(([0], ok.view(np.int8), [0]))))
            if len(edges) > 2 * MAX_RUNS:  # many gaps: pyqtgraph's one-pass path is quicker than many pieces
                path = pg.arrayToQPath(x, y, connect="finite")
            else:
                points[:, 1] = np.where(ok, y, 0.0)
                for start, end in zip(edges[::2], edges[1::2], strict=True):
                    path.addPolygon(poly.mid(int(start), int(end - start)))
            self.top = float(np.max(y[ok]))
        else:
            self.top = 0.0
        self.item.setPath(path)

    def getData(self) -> tuple[np.ndarray, np.ndarray]:  # pyqtgraph's name, which the tests read
        return self.x, self.y


class _Row:
    """The plots of one GPU (or the host) and the curves in them, keyed by metric."""

    def __init__(self, layout: pg.GraphicsLayout, row: int, titles: list[str], y_labels: list[str]):
        fg = chart_colours()[1]
        self.plots = []
        for col, (title, unit) in enumerate(zip(titles, y_labels, strict=True)):
            p = layout.addPlot(row=row, col=col)
            p.setTitle(title, color=fg, size="9pt")
            p.setLabel("left", unit, color=fg)
            p.showGrid(x=False, y=False)
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.hideButtons()
            p.vb.disableAutoRange()
            p.getAxis("left").setWidth(AXIS_WIDTH)  # a fixed width: new tick labels never re-flow the grid
            for side in ("left", "bottom"):
                p.getAxis(side).setTextPen(fg)
                p.getAxis(side).enableAutoSIPrefix(False)  # the unit in the label stays the unit of the ticks
            self.plots.append(p)
        self.curves: dict[str, _Curve] = {}
        self.cols: list[list[_Curve]] = [[] for _ in self.plots]
        self.tops = [math.nan] * len(self.plots)  # the y range each plot shows (set only when it changes)
        self.fixed: set[int] = set()  # plots whose y range is set by the caller (utilisation 0-100, memory)
        self.exit_lines: list[_Curve] = []
        self.stopped_shown = False
        self._poly = QPolygonF()  # one point buffer per row: each curve's path copies it (~10 µs a curve)
        self._points = np.empty((0, 2))

    def draw(self, x: np.ndarray, ys: dict[str, np.ndarray]) -> None:
        """Redraw the named curves over the same x (seconds before now)."""
        n = len(x)
        if n != len(self._points):
            self._poly.resize(n)  # the buffer may move: take a new view of it
            self._points = np.frombuffer(pg.Qt.compat.voidptr(self._poly.data(), n * 16, True),
                                         dtype=np.float64).reshape(-1, 2) if n else np.empty((0, 2))
        if n:
            self._points[:, 0] = x
        for key, y in ys.items():
            self.curves[key].draw(self._poly, self._points, x, y)

    def curve(self, col: int, key: str, colour: str, name: str = "", dashed: bool = False) -> _Curve:
        c = _Curve(self.plots[col], colour, dashed)
        self.curves[key] = c
        self.cols[col].append(c)
        return c

    def set_top(self, col: int, top: float) -> None:
        if top != self.tops[col]:
            self.tops[col] = top
            self.plots[col].setYRange(0, top, padding=0)

    def autoscale(self) -> None:
        """Grow a chart's top at once; shrink it only when the data fell below 40% of it (no flapping)."""
        for col, curves in enumerate(self.cols):
            if col in self.fixed:
                continue
            high = max((c.top for c in curves), default=0.0) * 1.05
            current = self.tops[col]
            if not math.isfinite(current) or high > current or high < 0.4 * current:
                self.set_top(col, nice_top(high))

    def mark_exit(self, x: float | None) -> None:
        if x is None:
            for line in self.exit_lines:
                line.item.hide()
            return
        if not self.exit_lines:
            self.exit_lines = [_Curve(p, BAD_COLOUR, True) for p in self.plots]
        for line, top in zip(self.exit_lines, self.tops, strict=True):
            path = QPainterPath()
            path.moveTo(x, 0.0)
            path.lineTo(x, top if math.isfinite(top) else 1.0)
            line.item.setPath(path)
            line.item.show()


class WatchCharts(pg.GraphicsLayoutWidget):
    """Rows of live charts; `update(snapshot, window_s)` redraws them."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setBackground(chart_colours()[0])
        self.gpu_rows: list[_Row] = []
        self.host_row: _Row | None = None
        self.predicted_bytes: float | None = None
        self.capacity_bytes: float | None = None
        self._plan_lines: list[tuple[pg.InfiniteLine, pg.InfiniteLine]] = []
        self._titles: list[str] = []
        self._window = math.nan

    # ---- structure --------------------------------------------------------------------------
    def _build(self, snap) -> None:
        self.clear()
        self.gpu_rows, self._plan_lines, self._titles = [], [], []
        for r, g in enumerate(snap.gpus):
            label = f"GPU {g.info.index}"
            row = _Row(self.ci, r, [
                _key(f"{label} utilisation", ("busy", _BLUE)),
                _key(f"{label} memory", ("used", _BLUE), ("process", _GREEN), ("plan peak", WARN_COLOUR),
                     ("capacity", BAD_COLOUR)),
                _key(f"{label} PCIe", ("rx", _BLUE), ("tx", _ORANGE)) + " NVLink (dashed): "
                + " ".join(f'<span style="color:{c}">{n}</span>' for n, c in (("rx", _GREEN), ("tx", _RED))),
                _key(f"{label} power", ("draw", _ORANGE), ("limit", _RED))], ["%", "GiB", "GB/s", "W"])
            row.set_top(0, 100.0)
            row.fixed |= {0, 1}
            row.curve(0, "util", _BLUE)
            row.curve(1, "used", _BLUE, "used")
            row.curve(1, "proc", _GREEN, "watched process")
            row.curve(2, "pcie_rx", _BLUE, "PCIe rx")
            row.curve(2, "pcie_tx", _ORANGE, "PCIe tx")
            row.curve(2, "nvlink_rx", _GREEN, "NVLink rx", dashed=True)
            row.curve(2, "nvlink_tx", _RED, "NVLink tx", dashed=True)
            row.curve(3, "power", _ORANGE, "power")
            row.curve(3, "limit", _RED, "limit", dashed=True)
            peak = row.plots[1].addLine(y=0, pen=_pen(WARN_COLOUR, 1.5, dashed=True))
            cap = row.plots[1].addLine(y=0, pen=_pen(BAD_COLOUR, 1.5))
            peak.setToolTip("the plan's predicted peak per GPU")
            cap.setToolTip("usable capacity per GPU")
            self._plan_lines.append((peak, cap))
            self.gpu_rows.append(row)
            self._titles.append(label)
        host = _Row(self.ci, len(snap.gpus), [
            _key("host CPU", ("busy", _BLUE), ("I/O wait", _RED)), _key("host disk", ("read", _BLUE), ("write", _ORANGE)),
            _key("host", ("RAM used", _BLUE), ("swap used", _RED))], ["%", "MB/s", "GiB"])
        host.set_top(0, 100.0)
        host.fixed.add(0)
        host.curve(0, "cpu", _BLUE, "CPU busy")
        host.curve(0, "iowait", _RED, "I/O wait")
        host.curve(1, "read", _BLUE, "read")
        host.curve(1, "write", _ORANGE, "write")
        host.curve(2, "ram", _BLUE, "RAM used")
        host.curve(2, "swap", _RED, "swap used")
        host.plots[1].setLabel("bottom", "seconds before now", color=chart_colours()[1])
        for col in range(4):  # equal widths, so the rows' time axes line up
            self.ci.layout.setColumnStretchFactor(col, 1)
        self.host_row = host
        self.setMinimumHeight(ROW_HEIGHT * (len(snap.gpus) + 1))
        self._window = math.nan
        self._apply_plan_lines()

    def set_plan(self, predicted_bytes: float | None, capacity_bytes: float | None) -> None:
        self.predicted_bytes, self.capacity_bytes = predicted_bytes, capacity_bytes
        self._apply_plan_lines()

    def _apply_plan_lines(self) -> None:
        for peak, cap in self._plan_lines:
            for line, value in ((peak, self.predicted_bytes), (cap, self.capacity_bytes)):
                line.setVisible(bool(value))
                if value:
                    line.setValue(value / GIB)

    # ---- per tick ---------------------------------------------------------------------------
    def update_from(self, snap, window_s: float) -> None:
        if self.host_row is None or len(self.gpu_rows) != len(snap.gpus):
            self._build(snap)
        now = snap.now if math.isfinite(snap.now) else 0.0
        exit_x = snap.process_exited_at - now if snap.process_exited_at is not None else None
        for row, g in zip(self.gpu_rows, snap.gpus, strict=True):
            v = g.values
            row.draw(g.t - now, {
                "util": v[:, G["util_pct"]], "used": v[:, G["mem_used_bytes"]] / GIB,
                "proc": v[:, G["proc_mem_bytes"]] / GIB, "pcie_rx": v[:, G["pcie_rx_bps"]] / 1e9,
                "pcie_tx": v[:, G["pcie_tx_bps"]] / 1e9, "nvlink_rx": v[:, G["nvlink_rx_bps"]] / 1e9,
                "nvlink_tx": v[:, G["nvlink_tx_bps"]] / 1e9, "power": v[:, G["power_w"]],
                "limit": v[:, G["power_limit_w"]]})
            if g.stopped and not row.stopped_shown:  # the row keeps its data; its title says why it ended
                row.plots[0].setTitle(f"GPU {g.info.index} stopped: {g.stopped}", color=BAD_COLOUR, size="9pt")
                row.stopped_shown = True
            self._memory_range(row, v)
        h = snap.host
        self.host_row.draw(snap.host_t - now, {
            "cpu": h[:, H["cpu_busy_pct"]], "iowait": h[:, H["iowait_pct"]], "read": h[:, H["disk_read_bps"]] / 1e6,
            "write": h[:, H["disk_write_bps"]] / 1e6, "ram": h[:, H["ram_used_bytes"]] / GIB,
            "swap": h[:, H["swap_used_bytes"]] / GIB})
        for row in [*self.gpu_rows, self.host_row]:
            row.autoscale()
            row.mark_exit(exit_x)
        if window_s != self._window:  # the x range only moves when the window control does
            self._window = window_s
            for row in [*self.gpu_rows, self.host_row]:
                for p in row.plots:
                    p.setXRange(-window_s, 0, padding=0)

    def _memory_range(self, row: _Row, v: np.ndarray) -> None:
        """Memory from 0 to the largest of capacity, the plan's peak and what was used, so the lines show."""
        total = v[:, G["mem_total_bytes"]]
        top = max(float(np.nanmax(total)) if np.isfinite(total).any() else 0.0, self.predicted_bytes or 0.0,
                  self.capacity_bytes or 0.0)
        if top > 0:
            row.set_top(1, round(top * 1.05 / GIB, 1))
