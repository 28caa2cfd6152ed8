"""Drive the main window the way a person does: keys typed into search boxes and fields, clicks on
list rows and tabs (QTest events on the widgets, never the slots). Used by the issue-18 user flows."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QTreeView

from llmplan.gui.picker_models import walk


def click_row(tree: QTreeView, text: str) -> None:
    """Scroll to the shown row whose first column reads ``text`` and click it."""
    index = next((i for i in walk(tree.model()) if i.data().strip() == text), None)
    assert index is not None, f"no row {text!r} in {tree.accessibleName()}"
    tree.scrollTo(index)
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     tree.visualRect(index).center())


def search_and_click(search, tree: QTreeView, words: str, row: str) -> None:
    """Type ``words`` into a picker's search box (replacing what is there), then click ``row``."""
    search.setFocus()
    QTest.keyClick(search, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(search, words)
    click_row(tree, row)


def pick_model(window, words: str, row: str) -> None:
    search_and_click(window.models.search, window.models.list, words, row)


def pick_gpu(window, words: str, row: str) -> None:
    search_and_click(window.hardware.search, window.hardware.tree, words, row)


def click_tab(window, index: int) -> None:
    bar = window.workload.tabBar()
    QTest.mouseClick(bar, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, bar.tabRect(index).center())


def field(window, path: str):
    """The editor bound to a plan field (its object name is the field's path)."""
    from PySide6.QtWidgets import QWidget

    found = [w for w in window.findChildren(QWidget, path) if w.isVisible()] or window.findChildren(QWidget, path)
    assert found, f"no editor for {path}"
    return found[0]


def type_into(window, path: str, text: str) -> None:
    """Select the field's text, type ``text`` and press Enter (a spin box or an editable combo)."""
    w = field(window, path)
    target = w.lineEdit() if isinstance(w, QComboBox) else w
    w.setFocus()
    QTest.keyClick(target, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(target, text)
    QTest.keyClick(target, Qt.Key.Key_Return)
    if isinstance(w, QAbstractSpinBox | QComboBox):
        QTest.keyClick(target, Qt.Key.Key_Tab)  # focus out: the edit is committed in either case


def choose(window, path: str, shown: str) -> None:
    """Pick an entry of a (non-editable) combo box by typing the start of its text, as with the keyboard."""
    w = field(window, path)
    w.setFocus()
    QTest.keyClicks(w, shown)
    assert w.currentText().lower().startswith(shown.lower()), (path, w.currentText())


def run_auto(window, qtbot):
    """Click the layout editor's Auto… button and wait for the search that opening runs; the dialog."""
    window.layout_editor.auto_button.click()
    dlg = window.auto_dialog
    with qtbot.waitSignal(dlg.finished_search, timeout=120_000):
        pass
    return dlg
