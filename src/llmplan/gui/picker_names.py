"""Names in the pickers' lists, readable in a narrow column (the left column is about 350 px at 1,024 × 700).

The model list's name column had about 90 px there, beside Params, Context and Layers sized to their contents and
headers, and Qt elided names at the right end: "Mistral Nemo 12B Instruct" and "Mistral Small 3.2 24B Instruct"
both read "Mistral Sm…"/"Mistral Ne…", "Llama 3.1 40…"; in the GPU list "H100 SXM 96GB HBM2e (500 W, Grand T…" at
1,280 px. ``fit_names`` does two things:

- a column that can give way (the model list's Layers: the architecture line under the list gives the chosen
  model's layers) is hidden while the name column would be narrower than the catalog's longest name, and shown
  again when the list is wide enough for both (a resize decides, a search never does);
- a name still wider than its column is elided in the middle, so its start (family) and its end (size, variant,
  "Instruct", "(…, Grand Teton)") stay: the part that tells two rows apart is at either end, never in the
  middle alone. Each row's tooltip keeps the full name.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QStyle, QTreeView

from llmplan.gui.picker_models import HUB_ROLE, walk


def text_margin(view: QTreeView) -> int:
    """px Qt's item views leave on each side of a cell's text (qcommonstyle.cpp, ``viewItemDrawText``)."""
    return view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1


class NameColumn(QObject):
    """Keeps ``view``'s column 0 wide enough for its names by hiding ``optional`` columns while it is not."""

    def __init__(self, view: QTreeView, optional: tuple[int, ...] = ()) -> None:
        super().__init__(view)
        self.view, self.optional = view, optional
        view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        view.viewport().installEventFilter(self)
        self._longest: int | None = None  # px of the longest name in the catalog
        source = getattr(view.model(), "sourceModel", lambda: None)() or view.model()
        source.modelReset.connect(self._reloaded)  # the catalog; a search that filters moves no column

    def eventFilter(self, watched, event) -> bool:  # Qt's name for the hook
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

    def _reloaded(self) -> None:
        self._longest = None
        self.fit()

    def longest(self) -> int:
        """The widest catalog name, filtered out or not, so typing a search never hides or shows a column
        under the pointer; the "Hub: ORG/NAME" row, which comes and goes with the search text, does not count."""
        if self._longest is None:
            model = self.view.model()
            source = getattr(model, "sourceModel", lambda: None)() or model
            fm = self.view.fontMetrics()
            self._longest = max((fm.horizontalAdvance(index.data() or "") for index in walk(source)
                                 if not index.data(HUB_ROLE)), default=0)
        return self._longest

    def fit(self, *_a) -> None:
        if not self.optional:
            return
        header = self.view.header()
        others = sum(max(header.sectionSizeHint(c), self.view.sizeHintForColumn(c))
                     for c in range(1, header.count()))
        room = self.view.viewport().width() - others  # the name column's width with every column shown
        hide = room < self.longest() + 2 * text_margin(self.view)
        for column in self.optional:
            if header.isSectionHidden(column) != hide:
                header.setSectionHidden(column, hide)
