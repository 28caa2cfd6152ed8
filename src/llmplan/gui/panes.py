"""Window panes that stay usable on a small screen (1,024 × 700).

Each pane of the main window's splitters sits in a ``PaneScroll``: at its natural size it looks
like the bare widget (no frame, no scroll bars), and when the window is smaller than what the pane
holds it scrolls instead of forcing the whole window wider or taller than the screen, or clipping
its right edge. Its minimum size is small on purpose: the splitter, not the longest label inside,
decides how much room each pane gets.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import QScrollArea, QSplitter, QWidget

PANE_MIN = QSize(160, 110)  # still shows a few rows of a list or table, a chart's axes, a short form


class PaneScroll(QScrollArea):
    """A scroll area around one pane; the pane fills it whenever it fits."""

    def __init__(self, inner: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QScrollArea.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setWidget(inner)
        name = inner.accessibleName()
        self.setAccessibleName(f"{name} pane" if name else "Pane")

    def minimumSizeHint(self) -> QSize:
        return PANE_MIN

    def sizeHint(self) -> QSize:
        """The pane's own preferred size (QScrollArea caps it at 36 × 24 lines of text)."""
        inner = self.widget()
        return inner.sizeHint() if inner is not None else super().sizeHint()



class FittingSplitter(QSplitter):
    """The window's row of columns (or a column's panes, top to bottom). When the window is resized and a
    column has become narrower than its content needs (``needs()``, one length per pane), the columns are re-shared: each gets what
    it needs and the rest goes by ``weights``; when even that does not fit, the middle column (or
    ``gives_way``) gives way and scrolls. Sizes the user dragged that leave every column its need are kept."""

    def __init__(self, needs: Callable[[], list[int]], weights: tuple[int, ...],
                 orientation: Qt.Orientation = Qt.Orientation.Horizontal, gives_way: int | None = None) -> None:
        super().__init__(orientation)
        self._needs, self._weights = needs, weights
        self._gives_way = gives_way  # the pane that shrinks below its need when all cannot fit (default: middle)
        self.share_on_show = True  # no sizes saved from an earlier session: share them out when first shown
        self._shared = False  # the sizes are still that first share (not restored, not dragged since)
        self.splitterMoved.connect(self._dragged)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.share_on_show:  # once the panes are polished and laid out: their needs are final then
            QTimer.singleShot(0, self, lambda: self.fit(force=True))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    def _dragged(self, *_a) -> None:
        self._shared = False

    def reshare(self) -> None:
        """Share the sizes out again as the first show did, if they are still that share: a pane whose
        needs change after the first paint (the charts are made then) gets the same sizes as if it had been
        there from the start. Sizes restored from an earlier session or dragged by the user are kept."""
        if self._shared:
            self.fit(force=True)

    def fit(self, force: bool = False) -> None:
        sizes, need = self.sizes(), self._needs()
        if len(sizes) != len(need):
            return
        if force:
            self.share_on_show = False
            self._shared = True
        elif all(s >= n for s, n in zip(sizes, need, strict=True)):
            return
        length = self.width() if self.orientation() == Qt.Orientation.Horizontal else self.height()
        avail = length - self.handleWidth() * (self.count() - 1)
        weights = (*self._weights, *(1,) * len(need))[:len(need)]  # a window without charts has fewer panes
        extra, total = avail - sum(need), sum(weights)
        if extra >= 0:
            sizes = [n + extra * w // total for n, w in zip(need, weights, strict=True)]
        else:  # the centre column gives way: its forms wrap, and only the layout editor's last pixels scroll
            sizes = list(need)
            mid = len(sizes) // 2 if self._gives_way is None else self._gives_way
            sizes[mid] = avail - sum(need) + need[mid]
            floor = PANE_MIN.width() if self.orientation() == Qt.Orientation.Horizontal else PANE_MIN.height()
            if sizes[mid] < floor:  # a tiny window: every pane gives way in proportion, and scrolls
                sizes = [max(1, n * avail // sum(need)) for n in need]
        self.setSizes(sizes)


class EditorSplitter(QSplitter):
    """The centre column: the workload tabs above, the layout editor below. The editor gets the height it needs
    (``need()``: knobs and drawing whole; at 1,024 × 700 it scrolled by 22 px) and at least half the column, the
    tabs the rest, but never less than ``kept`` px (their forms scroll inside each tab): below that the editor
    scrolls. So a tall editor (a pre-train over nodes) takes room from the tabs and gives it back when the plan
    no longer needs it. A divider the person dragged (or a saved one, ``dragged``) stays where it is while the
    editor still gets its need."""

    def __init__(self, need: Callable[[], int], kept: int) -> None:
        super().__init__(Qt.Orientation.Vertical)
        self._need, self._kept = need, kept
        self.dragged = False
        self.splitterMoved.connect(self._moved)

    def _moved(self, *_a) -> None:
        self.dragged = True

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()

    def fit(self) -> None:
        if self.count() != 2:
            return
        avail = self.height() - self.handleWidth()
        need = min(self._need(), max(avail - self._kept, avail // 2))  # the tabs keep their floor
        bottom = self.sizes()[1]
        if self.dragged and bottom >= need:
            return
        target = need if self.dragged else max(need, avail - avail // 2)  # else the even split, when it is enough
        if target != bottom:
            self.setSizes([avail - target, target])
