"""Rows of the figures table that wrap instead of eliding.

A figure's label ("Intra-node bandwidth to hide it", "Goodput (useful share of wall time)") or value ("host
memory bandwidth") wider than its column was elided on a small window ("Intra-n…bandwidth …" at 1,024 × 700), its
full text only in the tooltip. Qt's item views already wrap a cell's text when word wrap is on, but only inside the
row's height, and QTreeView makes a row one line high: the row has to ask for the height of its wrapped text
(``row_height``, set as the item's size hint by ``FiguresTable.fit_rows``).

The labels are indented under their section title with leading spaces. ``HangingIndent`` draws that indent as a
margin of the whole cell, so a label's second line starts under its first word, not under the section title.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QTextLayout, QTextOption
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget


def text_margin(view: QWidget) -> int:
    """px Qt's item views keep free on each side of a cell's text (QCommonStyle: the focus frame's margin + 1)."""
    return view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1


def split_indent(text: str) -> tuple[str, str]:
    """(the leading spaces, the rest): a table line's indent under its section title, and what it says."""
    body = text.lstrip(" ")
    return text[:len(text) - len(body)], body


def laid_out_height(font: QFont, text: str, width: int) -> int:
    """The height of ``text`` wrapped to ``width`` px as Qt's item views wrap a cell (QCommonStyle's
    viewItemTextLayout: QTextLayout, breaking at a word boundary or, for a word wider than the line, anywhere;
    each line below the font's leading). A row at least this high shows the text whole: Qt elides only a last
    line whose next line would fall below the row."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    leading = QFontMetrics(font).leading()
    height = 0.0
    layout.beginLayout()
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(max(width, 1))
        height += leading
        line.setPosition(QPointF(0, height))
        height += line.height()
    layout.endLayout()
    return math.ceil(height)


class HangingIndent(QStyledItemDelegate):
    """The first column's delegate: a line's leading spaces become a left margin of the whole cell, so every
    line of a wrapped label (or sentence) starts where its first line does. The text itself keeps its spaces:
    tests, exports and accessibility tools read the same item texts as before."""

    def __init__(self, view: QWidget) -> None:
        super().__init__(view)
        self.view = view
        self._indents: dict[str, int] = {}  # leading spaces → their advance in px, in the view's font

    def indent(self, spaces: str) -> int:
        """The advance of ``spaces`` in the view's font (remembered: the table's rows share three or four indents;
        ``forget`` when the font changes)."""
        known = self._indents.get(spaces)
        if known is None:
            known = self._indents[spaces] = self.view.fontMetrics().horizontalAdvance(spaces)
        return known

    def forget(self) -> None:
        self._indents.clear()

    def paint(self, painter, option, index) -> None:
        spaces, body = split_indent(str(index.data(Qt.ItemDataRole.DisplayRole) or ""))
        if not spaces:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, opt, painter, widget)  # the whole cell
        opt.rect = opt.rect.adjusted(self.indent(spaces), 0, 0, 0)
        opt.text = body
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)


def row_padding(view: QWidget) -> int:
    """px a one-line row of ``view`` is taller than its line of text (0 in Fusion; other styles pad items)."""
    opt = QStyleOptionViewItem()
    opt.initFrom(view)
    opt.font = view.font()
    opt.text = "Xg"
    opt.features |= QStyleOptionViewItem.ViewItemFeature.HasDisplay
    one_line = view.style().sizeFromContents(QStyle.ContentsType.CT_ItemViewItem, opt, QSize(), view).height()
    return max(0, one_line - laid_out_height(view.font(), "Xg", 10_000))
