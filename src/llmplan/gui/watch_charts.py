"""The Watch panel's scrolling charts: one row per GPU (utilisation, memory, PCIe/NVLink, power) and one
for the host (CPU busy and I/O wait, disk, RAM), drawn with pyqtgraph from a sampler `Snapshot`.

The x axis is seconds before now, so the charts scroll. The memory chart carries the plan's
predicted peak (dashed) and the usable capacity as horizontal lines; a watched process's exit is a
vertical line on every chart. "n/a" samples are NaN and drawn as gaps (``connect="finite"``).
`update` only calls ``setData`` on existing items (nothing is created per tick once a GPU's row
exists), which keeps a tick within a few milliseconds with 8 GPUs (benchmarks/bench_watch.py).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from llmplan.gui.theme import BAD_COLOUR, STAGE_COLOURS, WARN_COLOUR, chart_colours
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.metrics import HOST_INDEX as H

GIB = 2**30
ROW_HEIGHT = 150
_BLUE, _ORANGE, _GREEN, _RED, _TEAL = STAGE_COLOURS[:5]


def _key(title: str, *parts: tuple[str, str]) -> str:
    """A chart title with its curves named in their colours (the legend, without covering the data)."""
    return title + ": " + " ".join(f'<span style="color:{c}">{name}</span>' for name, c in parts)


def _pen(colour: str, width: float = 1.5, dashed: bool = False):
    pen = pg.mkPen(colour, width=width)
    if dashed:
        from PySide6.QtCore import Qt

        pen.setStyle(Qt.PenStyle.DashLine)
    return pen


class _Row:
    """The plots of one GPU (or the host) and the curves in them, keyed by metric."""

    def __init__(self, layout: pg.GraphicsLayout, row: int, titles: list[str], y_labels: list[str]):
        fg = chart_colours()[1]
        self.plots = []
        for col, (title, unit) in enumerate(zip(titles, y_labels, strict=True)):
            p = layout.addPlot(row=row, col=col)
            p.setTitle(title, color=fg, size="9pt")
            p.setLabel("left", unit, color=fg)
            p.showGrid(x=True, y=True, alpha=0.25)
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.hideButtons()
            p.setClipToView(True)
            p.setDownsampling(auto=True, mode="peak")
            for side in ("left", "bottom"):
                p.getAxis(side).setTextPen(fg)
                p.getAxis(side).enableAutoSIPrefix(False)  # the unit in the label stays the unit of the ticks
            self.plots.append(p)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.exit_lines: list[pg.InfiniteLine] = []
        self.stopped_shown = False

    def curve(self, col: int, key: str, colour: str, name: str = "", dashed: bool = False) -> pg.PlotDataItem:
        item = self.plots[col].plot(pen=_pen(colour, dashed=dashed), name=name or None, connect="finite",
                                    skipFiniteCheck=True)
        self.curves[key] = item
        return item

    def mark_exit(self, x: float | None) -> None:
        if x is None:
            for line in self.exit_lines:
                line.hide()
            return
        if not self.exit_lines:
            self.exit_lines = [p.addLine(x=x, pen=_pen(BAD_COLOUR, 1, dashed=True)) for p in self.plots]
        for line in self.exit_lines:
            line.setValue(x)
            line.show()


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
            row.plots[0].setYRange(0, 100, padding=0)
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
        host.plots[0].setYRange(0, 100, padding=0)
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
            x, v = g.t - now, g.values
            c = row.curves
            c["util"].setData(x, v[:, G["util_pct"]])
            c["used"].setData(x, v[:, G["mem_used_bytes"]] / GIB)
            c["proc"].setData(x, v[:, G["proc_mem_bytes"]] / GIB)
            c["pcie_rx"].setData(x, v[:, G["pcie_rx_bps"]] / 1e9)
            c["pcie_tx"].setData(x, v[:, G["pcie_tx_bps"]] / 1e9)
            c["nvlink_rx"].setData(x, v[:, G["nvlink_rx_bps"]] / 1e9)
            c["nvlink_tx"].setData(x, v[:, G["nvlink_tx_bps"]] / 1e9)
            c["power"].setData(x, v[:, G["power_w"]])
            c["limit"].setData(x, v[:, G["power_limit_w"]])
            if g.stopped and not row.stopped_shown:  # the row keeps its data; its title says why it ended
                row.plots[0].setTitle(f"GPU {g.info.index} stopped: {g.stopped}", color=BAD_COLOUR, size="9pt")
                row.stopped_shown = True
            row.mark_exit(exit_x)
            self._memory_range(row, v)
        h, x = snap.host, snap.host_t - now
        c = self.host_row.curves
        c["cpu"].setData(x, h[:, H["cpu_busy_pct"]])
        c["iowait"].setData(x, h[:, H["iowait_pct"]])
        c["read"].setData(x, h[:, H["disk_read_bps"]] / 1e6)
        c["write"].setData(x, h[:, H["disk_write_bps"]] / 1e6)
        c["ram"].setData(x, h[:, H["ram_used_bytes"]] / GIB)
        c["swap"].setData(x, h[:, H["swap_used_bytes"]] / GIB)
        self.host_row.mark_exit(exit_x)
        for row in [*self.gpu_rows, self.host_row]:
            for p in row.plots:
                p.setXRange(-window_s, 0, padding=0)

    def _memory_range(self, row: _Row, v: np.ndarray) -> None:
        """Memory from 0 to the largest of capacity, the plan's peak and what was used, so the lines show."""
        total = v[:, G["mem_total_bytes"]]
        top = max(float(np.nanmax(total)) if np.isfinite(total).any() else 0.0, self.predicted_bytes or 0.0,
                  self.capacity_bytes or 0.0)
        if top > 0:
            row.plots[1].setYRange(0, top * 1.05 / GIB, padding=0)
