"""Issue 18 item 5: undo follows the keyboard. Real key and mouse events (QTest), not slot calls."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractSpinBox, QStyle, QStyleOptionSpinBox

from llmplan.gui.commands import Edit, Replace


def _pretrain(window):
    """The Pre-train tab, where Sequence length is a training knob."""
    from llmplan.gui.backend import default_plan

    doc = default_plan()
    window.state.load(doc.model_copy(update={"workload": "pretrain"}), None)
    window.state.evaluate_now()


def _spin(window, path) -> QAbstractSpinBox:
    spins = [w for w in window.findChildren(QAbstractSpinBox, path) if w.isVisibleTo(window)]
    assert spins, f"no visible editor for {path}"
    return spins[0]


def _type(qtbot, spin, text: str, finish=Qt.Key.Key_Return) -> None:
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=2000)
    QTest.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)  # select all
    QTest.keyClicks(spin, text)
    QTest.keyClick(spin, finish)


def _undo_key(widget) -> None:
    QTest.keyClick(widget, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)


def test_typed_value_then_enter_is_undone_by_ctrl_z(window, qtbot):
    _pretrain(window)
    spin = _spin(window, "training.seq_len")
    before = window.state.get("training.seq_len")
    assert before != 8192
    _type(qtbot, spin, "8192")
    assert window.state.get("training.seq_len") == 8192
    assert window.undo_action.isEnabled()
    _undo_key(spin)  # the focus is still in the field
    assert window.state.get("training.seq_len") == before
    assert spin.value() == before
    QTest.keyClick(spin, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert window.state.get("training.seq_len") == 8192  # redo from the keyboard too


def test_tab_commits_and_ctrl_z_in_the_next_field_undoes_it(window, qtbot):
    _pretrain(window)
    spin = _spin(window, "training.seq_len")
    before = window.state.get("training.seq_len")
    _type(qtbot, spin, "8192", finish=Qt.Key.Key_Tab)
    assert window.state.get("training.seq_len") == 8192  # focus-out commits
    focused = window.focusWidget()
    assert focused is not spin
    _undo_key(focused)
    assert window.state.get("training.seq_len") == before


def test_typing_not_yet_committed_keeps_the_line_edit_undo(window, qtbot):
    _pretrain(window)
    spin = _spin(window, "training.seq_len")
    before = window.state.get("training.seq_len")
    count = window.state.undo_stack.count()
    spin.setFocus()
    QTest.keyClick(spin, Qt.Key.Key_End)
    QTest.keyClicks(spin, "7")  # not committed: Ctrl+Z takes the digit back, the plan is untouched
    _undo_key(spin)
    assert window.state.undo_stack.count() == count
    assert window.state.get("training.seq_len") == before
    assert spin.lineEdit().text() == spin.textFromValue(before)


def _up_arrow(spin) -> QPoint:
    opt = QStyleOptionSpinBox()
    spin.initStyleOption(opt)
    rect = spin.style().subControlRect(QStyle.ComplexControl.CC_SpinBox, opt, QStyle.SubControl.SC_SpinBoxUp, spin)
    return rect.center()


def test_ten_arrow_clicks_are_one_undo_step_and_another_field_starts_a_new_one(window, qtbot):
    _pretrain(window)
    assert window.state.pin("training.micro_batch", 1)  # stated (from "auto" the arrows start at what it used)
    spin = _spin(window, "training.micro_batch")
    before = window.state.get("training.micro_batch")
    count = window.state.undo_stack.count()
    for _ in range(10):
        QTest.mouseClick(spin, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, _up_arrow(spin))
    assert window.state.get("training.micro_batch") == before + 10 * spin.singleStep()
    assert window.state.undo_stack.count() == count + 1
    seq = _spin(window, "training.seq_len")
    seq.setFocus()
    QTest.keyClick(seq, Qt.Key.Key_Up)  # QAbstractSpinBox.stepUp from the keyboard
    assert window.state.undo_stack.count() == count + 2
    window.undo_action.trigger()
    window.undo_action.trigger()
    assert window.state.get("training.micro_batch") == before


def test_up_then_down_in_one_field_leaves_no_undo_step(window, qtbot):
    _pretrain(window)
    spin = _spin(window, "training.micro_batch")  # "auto (1)": up then down is "auto (1)" again (auto_knobs.py)
    count = window.state.undo_stack.count()
    spin.setFocus()
    QTest.keyClick(spin, Qt.Key.Key_Up)
    QTest.keyClick(spin, Qt.Key.Key_Down)
    assert window.state.undo_stack.count() == count
    assert "micro_batch" not in window.state.doc.training.model_fields_set


def test_saving_ends_a_merge_run(window, qtbot, isolated):
    _pretrain(window)
    spin = _spin(window, "training.micro_batch")
    spin.setFocus()
    QTest.keyClick(spin, Qt.Key.Key_Up)  # from "auto (N)": the knob stated at N + 1
    before = window.state.get("training.micro_batch")
    QTest.keyClick(spin, Qt.Key.Key_Up)
    window._write(isolated / "p.llmplan")
    QTest.keyClick(spin, Qt.Key.Key_Up)
    window.undo_action.trigger()
    assert window.state.get("training.micro_batch") == before + 1  # back to the saved value, not further


@pytest.mark.parametrize("first,later,expected", [
    (Edit("a.b", 1, 2), Edit("a.b", 2, 3), Edit("a.b", 1, 3)),
    (Edit("a.b", 1, 2), Edit("a.c", 2, 3), None),
    (Edit("a.b", 1, 2), Replace(None, None), None),
])
def test_edit_records_merge_only_within_one_field(first, later, expected):
    assert first.merged(later) == expected


def test_replace_records_merge_end_to_end():
    a, b, c = object(), object(), object()
    joined = Replace(a, b, "Set x").merged(Replace(b, c))
    assert (joined.old, joined.new, joined.text) == (a, c, "Set x")
    assert Replace(a, b).merged(Replace(b, a)).is_noop
