"""Item models behind the model and GPU pickers: the catalog rows are built once, and typing in a search
box or changing a filter only re-runs a ``QSortFilterProxyModel`` over them (issue 18: lists of more than
a few dozen rows use a model with a proxy instead of rebuilding a ``QTreeWidget`` on every key).

Both keep their cells in ``QStandardItemModel`` items, which Qt reads without calling Python (a Python
``data()`` is asked thousands of times per layout and made a keystroke slower than the old widget); only
the filters' ``filterAcceptsRow`` (once per row and filter change) is Python, reading plain Python rows.

- ``ModelRows`` (one row per catalog model) and ``ModelFilter`` (words, family, licence and
  size class; sorting by a column's ``SORT_ROLE``, so "70 B" sorts after "8 B"). The "Hub: ORG/NAME" row
  is the source's first row while the search text names a Hub repo; the filter always keeps it, and it
  stays on top whichever way the list is sorted.
- ``GpuTree`` (the "This machine" group, then the catalog grouped by vendor) and ``GpuFilter``
  (recursive: a vendor group shows while one of its GPUs matches; detected GPUs always show).
- ``walk``: every row of a model, depth-first, as column-0 indexes (the pickers' lookups and the tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QFont, QStandardItem, QStandardItemModel

from llmplan.gui.tooltips import wrap_tip

ID_ROLE = Qt.ItemDataRole.UserRole  # catalog id of a model or GPU
HUB_ROLE = Qt.ItemDataRole.UserRole + 1  # the search text, on the "Hub: ORG/NAME" row
SPEC_ROLE = Qt.ItemDataRole.UserRole + 2  # a detected GPU's inline spec (no catalog id)
SORT_ROLE = Qt.ItemDataRole.UserRole + 3  # what a column sorts by
HAY_ROLE = Qt.ItemDataRole.UserRole + 4  # lower-case words a GPU row is found by; None: a group header
ALWAYS_ROLE = Qt.ItemDataRole.UserRole + 5  # shown whatever the search (this machine's GPUs)
CARDS_ROLE = Qt.ItemDataRole.UserRole + 6  # every detected card's catalog id, on the "All N cards" row

MODEL_HEADERS = ("Model", "Params", "Context", "Layers")
GPU_HEADERS = ("GPU", "Memory", "BF16")
THIS_MACHINE = "This machine"

Index = QModelIndex | QPersistentModelIndex


def walk(model: QAbstractItemModel, parent: Index | None = None) -> Iterator[QModelIndex]:
    """Every row under ``parent`` (default: the whole model), parents before their children."""
    parent = parent if parent is not None else QModelIndex()
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        yield index
        if model.hasChildren(index):
            yield from walk(model, index)


# ---- models -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelRow:
    """One catalog model as the picker shows it; ``model_id`` "" and ``hub`` set for the Hub row."""

    model_id: str
    cells: tuple[str, str, str, str]
    sort_keys: tuple[Any, Any, Any, Any]
    tips: tuple[str, str]
    hay: str = ""  # lower-case id, name and family: what the search words must all be in
    family: str = ""
    licence: str = ""
    total: int = 0
    hub: str = ""


def hub_row(text: str, label: str, repo: str) -> ModelRow:
    return ModelRow("", (f"Hub: {label}", "", "", ""), ("", 0, 0, 0),
                    (f"Fetch {repo} from the Hugging Face Hub (needs the network; Enter or click)", ""), hub=text)


class ModelRows(QStandardItemModel):
    """The model catalog, one row per entry, and the Hub row on top while there is one. The cells live in
    Qt's own item model (the view asks for them thousands of times per layout: a Python ``data()`` made
    each keystroke slower than the old widget); ``row_at`` keeps the rows for the filter."""

    def __init__(self, parent=None) -> None:
        super().__init__(0, len(MODEL_HEADERS), parent)
        self.setHorizontalHeaderLabels(list(MODEL_HEADERS))
        self._rows: list[ModelRow] = []
        self._hub: ModelRow | None = None

    @staticmethod
    def _items(r: ModelRow) -> list[QStandardItem]:
        items = []
        for col, text in enumerate(r.cells):
            item = _cell(text, r.tips[col] if col < len(r.tips) else "")
            item.setData(r.sort_keys[col], SORT_ROLE)
            items.append(item)
        items[0].setData(r.model_id or None, ID_ROLE)
        if r.hub:
            items[0].setData(r.hub, HUB_ROLE)
            font = items[0].font()
            font.setItalic(True)
            items[0].setFont(font)
        return items

    def set_rows(self, rows: Sequence[ModelRow]) -> None:
        self.removeRows(0, self.rowCount())
        self._rows, self._hub = list(rows), None
        for r in self._rows:
            self.appendRow(self._items(r))

    def set_hub(self, row: ModelRow | None) -> None:
        """Show, change or remove the Hub row (row 0) without touching the catalog rows."""
        if self._hub == row:
            return
        if self._hub is not None:
            self._hub = None
            self.removeRows(0, 1)
        if row is not None:
            self._hub = row
            self.insertRow(0, self._items(row))

    def row_at(self, row: int) -> ModelRow:
        if self._hub is not None:
            return self._hub if row == 0 else self._rows[row - 1]
        return self._rows[row]


class ModelFilter(QSortFilterProxyModel):
    """Keeps the rows whose id, name and family hold every search word and that match the family,
    licence and size-class filters; the Hub row always."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self._words: tuple[str, ...] = ()
        self._family: str | None = None
        self._licence: str | None = None
        self._size = (0.0, float("inf"))

    def set_criteria(self, words: Sequence[str], family: str | None, licence: str | None,
                     size: tuple[float, float]) -> None:
        self.beginFilterChange()
        self._words, self._family, self._licence, self._size = tuple(words), family, licence, size
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        r = self.sourceModel().row_at(source_row)
        if r.hub:
            return True
        lo, hi = self._size
        return (all(w in r.hay for w in self._words) and self._family in (None, r.family)
                and self._licence in (None, r.licence) and lo <= r.total < hi)

    def lessThan(self, left: Index, right: Index) -> bool:
        ascending = self.sortOrder() == Qt.SortOrder.AscendingOrder
        if left.siblingAtColumn(0).data(HUB_ROLE):  # the Hub row stays first in either order
            return ascending
        if right.siblingAtColumn(0).data(HUB_ROLE):
            return not ascending
        return left.data(SORT_ROLE) < right.data(SORT_ROLE)


# ---- GPUs -------------------------------------------------------------------------------------------
def _cell(text: str, tip: str = "") -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    if tip:
        item.setToolTip(wrap_tip(tip))
    return item


def _group(name: str, bold: QFont) -> QStandardItem:
    """A header row ("This machine", "NVIDIA"): bold, not selectable, found by no search word."""
    item = _cell(name)
    item.setFont(bold)
    item.setSelectable(False)
    return item


@dataclass(frozen=True, slots=True)
class GpuRow:
    group: str  # the vendor group it is listed under
    gpu_id: str
    cells: tuple[str, str, str]
    tip: str
    hay: str


class GpuTree(QStandardItemModel):
    """The picker's tree: "This machine" with each detected GPU, then one group per vendor in catalog
    order. ``fill`` replaces the rows and keeps the columns, so the view's column sizing stays.
    ``match`` says, per (group row, row), what the filter needs without asking Qt for item data: True
    (always shown), False (a vendor header: shown through its GPUs) or the words a GPU is found by."""

    def __init__(self, parent=None) -> None:
        super().__init__(0, len(GPU_HEADERS), parent)
        self.setHorizontalHeaderLabels(list(GPU_HEADERS))
        self.match: dict[tuple[int, int], str | bool] = {}

    def fill(self, detected: Sequence[tuple[str, str | None, Any]], rows: Sequence[GpuRow], bold: QFont,
             cards: Sequence[str] = ()) -> None:
        """``detected``: (label, catalog id, inline spec) of each GPU found on this machine. ``cards``: their
        catalog ids when they differ: an "All N cards" row then plans on every one (llama.cpp's layer split)."""
        self.removeRows(0, self.rowCount())
        self.match = {}
        tops: list[tuple[QStandardItem, bool]] = []  # each group built whole, then added: one insert each
        if detected:
            top = _group(THIS_MACHINE, bold)
            top.setData(True, ALWAYS_ROLE)
            for i, (label, gpu_id, spec) in enumerate(detected):
                item = _cell(label, "Detected on this machine")
                item.setData(gpu_id, ID_ROLE)
                item.setData(spec, SPEC_ROLE)
                item.setData(True, ALWAYS_ROLE)
                top.appendRow([item, _cell(""), _cell("")])
                self.match[(0, i)] = True
            if cards:
                item = _cell(f"All {len(cards)} cards (layer split)",
                             "Every detected card in one plan: inference with llama.cpp or Ollama splits the layers "
                             "across them (Inference tab, Cards in this machine)")
                item.setData(list(cards), CARDS_ROLE)
                item.setData(True, ALWAYS_ROLE)
                self.match[(0, top.rowCount())] = True
                top.appendRow([item, _cell(""), _cell("")])
            tops.append((top, True))
        groups: dict[str, int] = {}  # vendor label -> its row among the top-level rows
        for r in rows:
            if r.group not in groups:
                groups[r.group] = len(tops)
                tops.append((_group(r.group, bold), False))
            group = tops[groups[r.group]][0]
            first = _cell(r.cells[0], r.tip)
            first.setData(r.gpu_id, ID_ROLE)
            first.setData(r.hay, HAY_ROLE)
            self.match[(groups[r.group], group.rowCount())] = r.hay
            group.appendRow([first, _cell(r.cells[1]), _cell(r.cells[2])])
        for row, (top, always) in enumerate(tops):
            self.match[(-1, row)] = always
            self.appendRow([top, _cell(""), _cell("")])


class GpuFilter(QSortFilterProxyModel):
    """Keeps the GPUs whose id, name and vendor hold every search word, the groups that still hold one,
    and this machine's GPUs whatever the search."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)  # a group is shown while one of its rows is
        self._words: tuple[str, ...] = ()

    def set_words(self, words: Sequence[str]) -> None:
        self.beginFilterChange()
        self._words = tuple(words)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        how = self.sourceModel().match.get((source_parent.row() if source_parent.isValid() else -1, source_row))
        if isinstance(how, bool) or how is None:
            return bool(how)
        return all(w in how for w in self._words)
