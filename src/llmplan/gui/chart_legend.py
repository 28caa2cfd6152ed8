"""A chart legend laid out under the plot, never on it.

pyqtgraph's ``PlotItem.addLegend`` anchors a ``LegendItem`` inside the view box. On a small chart (the
window at 1,024 × 700 leaves the charts about 280 × 230 px) it covered curves, ringed points and the
"capacity" and "offload starts" labels; moving it to another corner or shading its background only
hid other points. ``OutsideLegend`` is a row of the PlotItem's own grid layout, under the x axis: the
view box gives up that height, so nothing drawn in the view box can lie under the legend at any size.

Entries go side by side when the row is wide enough, else one per line; a label wider than the chart
wraps at the chart's width. The legend asks for no minimum width, so it never widens the charts'
column (``MainWindow.column_needs`` reads the plot's minimum width); it refits whenever the plot is
resized or its entries change. Entries, colours and samples are pyqtgraph's own (``LegendItem``).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSizeF, Qt
from PySide6.QtWidgets import QSizePolicy

# pyqtgraph's PlotItem grid: row 0 title, 1 top axis, 2 view box, 3 bottom axis, over columns 0-2
# (left axis, view box, right axis). The legend takes a row of its own below them, across all three.
LEGEND_ROW = 4
SAMPLE_WIDTH, SAMPLE_HEIGHT = 20, 16  # pyqtgraph's ItemSample is 20 × 20 px: 16 px high is a line of 9 pt text
SPACING = 5  # between a sample and its label
ENTRY_GAP = 15  # between entries side by side
TEXT_MARGIN = 1  # around a label's text (Qt's default of 4 px made each row 22 px high for 9 pt text)
MIN_WRAP = 60  # a label never wraps narrower than this (a column of single words reads worse than clipping)


class _Sample(pg.ItemSample):
    """pyqtgraph's line-and-symbol sample, 16 px high instead of 20, so a row of the legend is as high as
    its text: every pixel the legend takes is taken from the view box."""

    def __init__(self, item) -> None:
        super().__init__(item)
        self.setFixedHeight(SAMPLE_HEIGHT)

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, SAMPLE_WIDTH, SAMPLE_HEIGHT)

    def paint(self, p, *args) -> None:
        p.translate(0, (SAMPLE_HEIGHT - 20) / 2)  # pyqtgraph draws the sample about y = 10 of a 20 px box
        super().paint(p, *args)


class OutsideLegend(pg.LegendItem):
    """A ``LegendItem`` placed in ``plot``'s layout below the x axis; hidden while it has no entries."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        super().__init__(horSpacing=SPACING, sampleType=_Sample)
        self.layout.setContentsMargins(0, 2, 0, 0)  # Qt's default 9 px all round would add 18 px of height
        # pyqtgraph's legend keeps its size when the scene is scaled (it floated over a zoomable view); in a
        # row of the layout it must scale with the axes, or an exported chart (drawn 900 px wide,
        # ``gui.export``) shows it small and off centre
        self.setFlag(self.GraphicsItemFlag.ItemIgnoresTransformations, False)
        self._fitting = False
        self._natural: dict[pg.LabelItem, float] = {}  # each entry's label -> its width on one line
        self._plot_item = plot.getPlotItem()
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)  # as wide as its entries
        self._plot_item.layout.addItem(self, LEGEND_ROW, 0, 1, 3, Qt.AlignmentFlag.AlignHCenter)
        self._plot_item.legend = self  # what ``addLegend`` would have set: items plotted with a name join it
        self._plot_item.geometryChanged.connect(self._resized)
        self.setVisible(False)

    # ---- pyqtgraph's hooks ----------------------------------------------------------------
    def addItem(self, item, name: str) -> None:
        self._fitting = True  # one fit below, once the label's margin is set
        try:
            super().addItem(item, name)
        finally:
            self._fitting = False
        label = self.items[-1][1]
        label.item.document().setDocumentMargin(TEXT_MARGIN)
        label.updateMin()
        self.fit()

    def updateSize(self) -> None:
        """pyqtgraph calls this after each entry added or removed: refit the row (pyqtgraph's own
        version moves the legend to (0, 0) of its parent, for a legend floating over the plot)."""
        if not self._fitting:
            self.fit()

    def sizeHint(self, which, constraint=None) -> QSizeF:  # Qt's name for the hook
        hint = super().sizeHint(which, QSizeF() if constraint is None else constraint)
        if which == Qt.SizeHint.MinimumSize:
            hint.setWidth(0)  # any width will do: ``fit`` wraps the entries to it
        return hint

    def mouseDragEvent(self, ev) -> None:  # pyqtgraph lets a legend be dragged; this one stays in its row
        ev.ignore()

    def hoverEvent(self, ev) -> None:  # pyqtgraph's accepts drags here; nothing to drag
        pass

    # ---- layout ----------------------------------------------------------------------------
    def room(self) -> float:
        """The width the entries may use: the plot's, less the plot's and the legend's margins."""
        left, _t, right, _b = self._plot_item.layout.getContentsMargins()
        own_left, _t, own_right, _b = self.layout.getContentsMargins()
        return self._plot_item.size().width() - left - right - own_left - own_right

    def fit(self) -> bool:
        """Lay the entries out for the plot's present width: all on one row if they fit, else one per
        line, wrapping a label that is still too wide. True if that changed the layout."""
        if self._fitting:
            return False
        self._fitting = True
        try:
            self.setVisible(bool(self.items))
            self._natural = {label: self._natural.get(label) or _one_line_width(label) for _s, label in self.items}
            changed = self._arrange(self.room()) if self.items else False
        finally:
            self._fitting = False
        self.updateGeometry()
        return changed

    def set_entries(self, entries: list[tuple[object, str]]) -> None:
        """Show these (plot item, name) entries. Unchanged entries cost nothing: rebuilding them re-renders
        each label and resizes the view box. Changed entries are laid out with the plot now, before the
        next paint: Qt would post that relayout and paint the chart twice, once with the old legend row's
        height and once with the new (nearly twice the CPU of such a redraw; docs/gui.md has the figures)."""
        if [(sample.item, label.text) for sample, label in self.items] == entries:
            return
        self.clear()
        for item, name in entries:
            self.addItem(item, name)
        self._settle()

    def _resized(self) -> None:
        """The plot was resized: refit, and lay the plot out again now if the legend changed. Qt posts that
        relayout only if the plot's layout was settled when the legend asked; during a resize it may not
        be, and the legend kept the previous size (a label unwrapped in a box still one line too narrow)."""
        if self.fit():
            self._settle()

    def _settle(self) -> None:
        """Lay the legend and the plot out now, not when Qt's posted layout request arrives."""
        self.layout.invalidate()
        self._plot_item.layout.invalidate()
        self._plot_item.layout.activate()

    def _arrange(self, room: float) -> bool:
        labels = [label for _sample, label in self.items]
        entries = [SAMPLE_WIDTH + SPACING + self._natural[label] for label in labels]
        columns = 1
        for n in range(len(entries), 1, -1):  # the most entries per row that fit the room
            widths = [max(entries[j::n]) for j in range(n)]
            if sum(widths) + ENTRY_GAP * (n - 1) <= room:
                columns = n
                break
        wrap = max(room - SAMPLE_WIDTH - SPACING, MIN_WRAP)
        changed = False
        for label in labels:
            too_wide = columns == 1 and self._natural[label] > wrap
            width = wrap if too_wide else -1
            if label.item.textWidth() != width:
                label.item.setTextWidth(width)
                label.updateMin()
                changed = True
        if columns != self.columnCount:
            self.setColumnCount(columns)
            for j in range(columns - 1):  # after each label but the last of a row
                self.layout.setColumnSpacing(2 * j + 1, ENTRY_GAP)
            changed = True
        return changed


def _one_line_width(label: pg.LabelItem) -> float:
    """The label's width with its text on one line (its text item wraps at ``textWidth`` once set)."""
    width = label.item.textWidth()
    label.item.setTextWidth(-1)
    natural = label.item.boundingRect().width()
    label.item.setTextWidth(width)
    return natural
