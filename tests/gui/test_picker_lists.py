"""Issue 18: the model and GPU pickers are views over item models filtered by a ``QSortFilterProxyModel``
(``llmplan.gui.picker_models``). Driven like a person: keys typed with QTest into the search boxes,
arrow keys and clicks on the lists and their headers. What they check:

- typing filters the rows without rebuilding them (the source model keeps its rows and its identity);
- a click or an arrow key on a row picks it for the plan; a filter that hides the plan's row never
  picks another one (a proxy moves the current row to a neighbour when it hides it);
- the "Hub: ORG/NAME" row appears for a repo id and stays first whichever way a column is sorted;
- sorting by a column sorts numbers as numbers (7 B before 70 B);
- the GPU tree keeps its vendor groups (only those with a match, open), never picks a group header, and
  shows this machine's GPUs whatever the search.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from test_this_machine import rtx4090_report

from llmplan.gui.picker_models import ALWAYS_ROLE, HUB_ROLE, ID_ROLE, SORT_ROLE, walk


def _type(search, text: str) -> None:
    search.setFocus()
    QTest.keyClick(search, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if text:
        QTest.keyClicks(search, text)
    else:
        QTest.keyClick(search, Qt.Key.Key_Delete)


def _click(view, index) -> None:
    view.scrollTo(index)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     view.visualRect(index).center())


def _shown(view) -> list:
    return list(walk(view.model()))


def test_typing_filters_the_model_rows_without_rebuilding_them(window):
    models = window.models
    source, total = models.rows, models.rows.rowCount()
    assert total == len(models._entries) > 50  # a list of more than a few dozen rows
    _type(models.search, "qwen3 8b")
    shown = _shown(models.list)
    assert [i.data(ID_ROLE) for i in shown] == ["Qwen/Qwen3-8B"]
    assert models.proxy.sourceModel() is source and source.rowCount() == total  # filtered, not rebuilt
    _type(models.search, "qwen3")
    assert {i.data(ID_ROLE) for i in _shown(models.list)} >= {"Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B"}
    assert all("qwen3" in i.data(ID_ROLE).lower() for i in _shown(models.list))
    _type(models.search, "")
    assert models.proxy.rowCount() == total


def test_click_and_arrow_keys_pick_a_model_and_a_hidden_plan_model_stays(window):
    models = window.models
    before = window.state.doc.model.id
    _type(models.search, "qwen3")  # the plan's Llama model is hidden now
    assert not models.index_of(before).isValid()
    assert window.state.doc.model.id == before and not models.list.currentIndex().isValid()
    first = models.proxy.index(0, 0)
    _click(models.list, first)
    assert window.state.doc.model.id == first.data(ID_ROLE)
    QTest.keyClick(models.list, Qt.Key.Key_Down)  # the keyboard moves the pick to the next row
    second = models.proxy.index(1, 0).data(ID_ROLE)
    assert models.list.currentIndex().row() == 1 and window.state.doc.model.id == second
    assert window.state.undo_stack.canUndo()
    _type(models.search, "")  # every row back: the current row is still the plan's model
    assert models.list.currentIndex().data(ID_ROLE) == second == window.state.doc.model.id


def test_family_filter_and_enter_on_a_single_row(window):
    models = window.models
    models.family.setFocus()
    QTest.keyClicks(models.family, "mixtral")  # a combo box picks by typed prefix
    assert models.family.currentText() == "mixtral"
    ids = [i.data(ID_ROLE) for i in _shown(models.list)]
    assert len(ids) == 2 and all("mixtral" in i.lower() for i in ids)
    _type(models.search, "8x22")
    QTest.keyClick(models.search, Qt.Key.Key_Return)  # one row left: Enter picks it
    assert window.state.doc.model.id == _shown(models.list)[0].data(ID_ROLE) and "8x22" in window.state.doc.model.id


def test_a_click_on_a_column_header_sorts_numbers_and_the_hub_row_stays_first(window):
    models = window.models
    header = models.list.header()
    x = header.sectionViewportPosition(1) + header.sectionSize(1) // 2
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(x, header.height() // 2))
    sizes = [models.proxy.index(r, 1).data(SORT_ROLE) for r in range(models.proxy.rowCount())]
    assert sizes == sorted(sizes) and sizes[0] < 1e9 < 1e11 < sizes[-1]  # "70 B" after "7 B", not before "8 B"
    _type(models.search, "Qwen/Qwen3")  # a repo-shaped text: the Hub row joins the catalog's Qwen3 rows
    top = models.proxy.index(0, 0)
    assert top.data() == "Hub: Qwen/Qwen3" and top.data(HUB_ROLE) == "Qwen/Qwen3"
    assert top.data(Qt.ItemDataRole.FontRole).italic() and "Hugging Face Hub" in top.data(Qt.ItemDataRole.ToolTipRole)
    assert models.proxy.rowCount() > 1
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(x, header.height() // 2))  # again: descending
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
    assert models.proxy.index(0, 0).data(HUB_ROLE) == "Qwen/Qwen3"
    sizes = [models.proxy.index(r, 1).data(SORT_ROLE) for r in range(1, models.proxy.rowCount())]
    assert sizes == sorted(sizes, reverse=True)
    _type(models.search, "")
    assert not any(i.data(HUB_ROLE) for i in _shown(models.list))


def test_gpu_search_keeps_vendor_groups_open_and_a_click_picks(window):
    hw = window.hardware
    _type(hw.search, "mi3")
    tops = [hw.proxy.index(r, 0) for r in range(hw.proxy.rowCount())]
    assert [t.data() for t in tops] == ["AMD"] and hw.tree.isExpanded(tops[0])
    rows = [hw.proxy.index(r, 0, tops[0]) for r in range(hw.proxy.rowCount(tops[0]))]
    assert {r.data(ID_ROLE) for r in rows} >= {"amd-mi300x-192gb", "amd-mi325x-256gb"}
    before = window.state.doc.hardware.gpu
    _click(hw.tree, tops[0])  # a group header is not a GPU
    assert window.state.doc.hardware.gpu == before
    mi300x = hw.index_of("amd-mi300x-192gb")
    _click(hw.tree, mi300x)
    assert window.state.doc.hardware.gpu == "amd-mi300x-192gb"
    assert mi300x.data(Qt.ItemDataRole.ToolTipRole).startswith("AMD Instinct MI300X")
    QTest.keyClick(hw.tree, Qt.Key.Key_Down)
    below = hw.tree.currentIndex().data(ID_ROLE)
    assert below and window.state.doc.hardware.gpu == below != "amd-mi300x-192gb"
    _type(hw.search, "no such gpu")
    assert hw.proxy.rowCount() == 0
    assert window.state.doc.hardware.gpu == below  # hiding it picked nothing else


@pytest.mark.parametrize("words", ["", "h100", "nothing matches this"])
def test_this_machine_is_listed_whatever_the_search(window, words):
    hw = window.hardware
    hw.detector.finished.emit(rtx4090_report(), "")
    window.this_machine.wait_idle()
    _type(hw.search, words)
    top = hw.proxy.index(0, 0)
    assert top.data() == "This machine" and top.data(ALWAYS_ROLE) and hw.tree.isExpanded(top)
    detected = hw.proxy.index(0, 0, top)
    assert "RTX 4090" in detected.data() and detected.data(Qt.ItemDataRole.ToolTipRole) == "Detected on this machine"
    if words == "h100":
        assert all("h100" in i.data(ID_ROLE) for i in _shown(hw.tree) if i.data(ID_ROLE) and not i.data(ALWAYS_ROLE))
    _click(hw.tree, detected)
    assert window.state.doc.hardware.gpu == "nvidia-rtx-4090-24gb"
