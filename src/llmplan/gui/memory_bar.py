"""The per-GPU memory of the worst-loaded GPU, stacked against its capacity.

Custom-painted (one widget, no chart library): each part of
``MemoryBreakdown.parts()`` is a coloured segment, the capacity a vertical line; a
bar that runs past the line is the shortfall, drawn hatched. Hover shows the part's
``Figure.describe()``. Under partial offload the legend ends with what is kept off the GPUs, as
what it is: host RAM (and NVMe) per node, the same figure and words as the results table's row and
the CLI's line ("Host RAM per node (offload, not on a GPU) 24.22 GiB", amber): the bar alone would
show a plan that "fits". It is not split per GPU: on llama.cpp's layer split over two cards the
layers left in host RAM are one pool the CPU reads, not two halves that belong to a card.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from llmplan.core.present import MemoryUnit
from llmplan.core.result import MemoryBreakdown
from llmplan.gui.theme import (
    BAD_COLOUR,
    OFF_GPU_LABELS,
    PART_COLOURS,
    PART_LABELS,
    WARN_COLOUR,
    off_gpu_entry,
)
from llmplan.gui.tooltips import wrap_tip

BAR_H = 26
LEGEND_ROW_H = 18


def paint_legend(widget: QWidget, p: QPainter, items: list[tuple[str, str]], top: int) -> None:
    """Coloured squares with their labels, wrapped to the widget's width; grows its minimum height to fit.
    Shared by the memory and step-time bars."""
    font = QFont(widget.font())
    font.setPointSizeF(max(font.pointSizeF() - 1, 7))
    p.setFont(font)
    fm = p.fontMetrics()
    x, y = 2, top
    for text, colour in items:
        item_w = 14 + fm.horizontalAdvance(text) + 12
        if x + item_w > widget.width() and x > 2:
            x, y = 2, y + LEGEND_ROW_H
        p.fillRect(QRectF(x, y + 4, 10, 10), QColor(colour))
        p.setPen(widget.palette().windowText().color())
        p.drawText(x + 14, y + fm.ascent() + 2, text)
        x += item_w
    needed = y + LEGEND_ROW_H + 2
    if needed != widget.minimumHeight():
        widget.setMinimumHeight(needed)


class MemoryBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.memory: MemoryBreakdown | None = None
        self.unit = MemoryUnit()
        self.setMouseTracking(True)
        self.setMinimumHeight(BAR_H + 2 * LEGEND_ROW_H + 12)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Memory per GPU")
        self._segments: list[tuple[QRectF, str]] = []
        self.off_gpu: tuple[tuple[str, float], ...] = ()  # (label, bytes per node) kept in host RAM / on NVMe

    def set_memory(self, memory: MemoryBreakdown | None, unit: MemoryUnit | None = None,
                   off_gpu: tuple[tuple[str, float], ...] = ()) -> None:
        """``off_gpu``: what the plan keeps off its GPUs, per node (``llmplan.fit.tiers.off_gpu_bytes``, the
        numbers the memory charts plot); the legend ends with them. llama.cpp's input embedding alone in host RAM
        is no offload and is left to the table."""
        self.memory = memory
        self.off_gpu = tuple((OFF_GPU_LABELS[key], value) for key, value in off_gpu) if memory is not None else ()
        if unit is not None:
            self.unit = unit
        self.setAccessibleDescription(self.summary())
        self.update()

    def summary(self) -> str:
        m = self.memory
        if m is None:
            return "no estimate"
        text = f"{self.unit.fmt(m.total.value)} of {self.unit.fmt(m.capacity.value)} per GPU"
        return "; ".join([text, *(f"{label} (offload, not on a GPU): {self.unit.fmt_any(value)}"
                                  for label, value in self.off_gpu)])

    def _visible_parts(self) -> list[tuple[str, float]]:
        if self.memory is None:
            return []
        return [(k, f.value) for k, f in self.memory.parts().items() if f.value > 0]

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        w = self.width() - 2
        self._segments = []
        if self.memory is None:
            p.setPen(pal.placeholderText().color())
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no estimate")
            return
        m = self.memory
        scale_max = max(m.total.value, m.capacity.value) or 1.0
        x = 1.0
        for key, value in self._visible_parts():
            width = w * value / scale_max
            rect = QRectF(x, 2, width, BAR_H)
            p.fillRect(rect, QColor(PART_COLOURS.get(key, "#888888")))
            self._segments.append((rect, key))
            x += width
        cap_x = 1 + w * m.capacity.value / scale_max
        if m.total.value > m.capacity.value:  # the shortfall, hatched
            over = QRectF(cap_x, 2, x - cap_x, BAR_H)
            p.fillRect(over, QBrush(QColor(BAD_COLOUR), Qt.BrushStyle.BDiagPattern))
        p.setPen(QPen(pal.windowText().color(), 1))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(1, 2, w * m.capacity.value / scale_max - 1, BAR_H))
        p.setPen(QPen(QColor(BAD_COLOUR) if not m.fits else pal.windowText().color(), 2))
        p.drawLine(int(cap_x), 0, int(cap_x), BAR_H + 4)
        self._paint_legend(p, BAR_H + 8)

    def legend(self) -> list[tuple[str, str]]:
        """(text, colour) of each legend entry: the bar's parts, then what is kept off the GPUs (not in the bar)."""
        items = [(f"{PART_LABELS.get(key, key)} {self.unit.fmt_any(value)}", PART_COLOURS.get(key, "#888888"))
                 for key, value in self._visible_parts()]
        return items + [(off_gpu_entry(label, value, self.unit), WARN_COLOUR) for label, value in self.off_gpu]

    def _paint_legend(self, p: QPainter, top: int) -> None:
        paint_legend(self, p, self.legend(), top)

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        for rect, key in self._segments:
            if rect.contains(pos) and self.memory is not None:
                fig = self.memory.parts()[key]
                QToolTip.showText(event.globalPosition().toPoint(),
                                  wrap_tip(f"{PART_LABELS.get(key, key)}: {self.unit.fmt(fig.value, 2)}\n{fig.describe()}"), self)
                return
        QToolTip.hideText()
