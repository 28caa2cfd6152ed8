"""Two-way binding of small editors to plan fields.

``bound_spin(state, "parallelism.tp", ...)`` makes a spin box that shows the field,
pushes an undoable edit when the user changes it, and follows the document when it
changes elsewhere (undo, open, Auto) without echoing an edit back. Every knob in the
workload tabs and the layout editor is one such line.

Keyboard undo: a spin box's line edit claims Ctrl+Z for its own text history, so before
this the window's Undo never ran while a knob had focus (issue 18). ``UndoRouter`` lets
Undo/Redo through to the plan's history whenever the field shows its committed value (the
edit was finished with Enter or Tab); only a number being typed keeps the line edit's own
undo. Every change of one field is pushed with the field as its merge key, so ten clicks on
an arrow, or three numbers typed in a row, are one undo step (``state.EditCommand``).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from operator import attrgetter
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QWidget,
)

from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

_UNSEEN = object()  # no value refreshed to yet


class ElidedCombo(QComboBox):
    """A combo box that shortens its shown entry with "…" when the box is narrower than the
    entry (long preset names: "InfiniBand NDR 400 Gb/s per GPU"); the list shows them whole."""

    def paintEvent(self, event) -> None:
        if self.isEditable():
            super().paintEvent(event)
            return
        painter = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        opt.currentText = painter.fontMetrics().elidedText(opt.currentText, Qt.TextElideMode.ElideRight,
                                                           field.width())
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)


class TidySpin(QDoubleSpinBox):
    """A float spin box without trailing zeros: "1000 B tokens", "0.7", not "1000.000"."""

    def textFromValue(self, value: float) -> str:
        text = f"{value:.{self.decimals()}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text


def compact(combo: QComboBox, chars: int = 10) -> QComboBox:
    """A combo box whose width does not grow with its longest entry (long preset names
    would otherwise force the whole window wider than a 1280-pixel screen)."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(chars)
    return combo


def typing_pending(widget: QWidget) -> bool:
    """True while the field holds text the person is still typing (not yet committed by Enter/Tab)."""
    if isinstance(widget, QAbstractSpinBox):
        return widget.lineEdit().text() != widget.textFromValue(widget.value()) and not (
            widget.specialValueText() and widget.value() == widget.minimum()
            and widget.lineEdit().text() == widget.specialValueText())
    if isinstance(widget, QComboBox) and widget.isEditable():
        return widget.lineEdit().isModified()
    return False


class UndoRouter(QObject):
    """Event filter: Undo/Redo shortcuts pressed in a committed field go to the window's actions
    (the plan's history) instead of the field's line-edit text history."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and (
                event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo)):
            field = obj.parent() if not isinstance(obj, (QAbstractSpinBox, QComboBox)) else obj
            if isinstance(field, QWidget) and not typing_pending(field):
                event.ignore()  # not claimed: the shortcut (Edit ▸ Undo / Redo) runs
                return True
        return False


def route_undo(widget: QAbstractSpinBox | QComboBox) -> None:
    """Let Ctrl+Z / Ctrl+Shift+Z reach the plan's undo stack from this field (see ``UndoRouter``). The
    filter is the widget's child, so it dies with it (a module-level QObject outlived QApplication and
    crashed the interpreter's exit)."""
    router = UndoRouter(widget)
    widget.installEventFilter(router)
    edit = widget.lineEdit()
    if edit is not None:
        edit.installEventFilter(router)


def _follow(state: PlanState, widget: QWidget, path: str, show, showing=None) -> None:
    """Show the field's value now and after every document change. ``showing(value)``: True when the
    widget already shows ``value``; then it is left alone. A knob change refreshes every bound widget,
    about 120, and most of them show a field that did not change: with ``showing``, a field whose value
    is the one it last refreshed to is not even asked (the Qt calls cost more than the comparison)."""
    value_of = attrgetter(path)  # the doc's dotted field, read in C
    last: list[Any] = [_UNSEEN]

    def refresh() -> None:
        value = value_of(state.doc)
        if showing is not None:
            before, last[0] = last[0], value
            if (type(value) is type(before) and value == before) or showing(value):
                return
        widget.blockSignals(True)
        try:
            show(value)
        finally:
            widget.blockSignals(False)

    state.follow(refresh)
    refresh()


def _decorate(widget: QWidget, path: str, label: str, tip: str) -> None:
    widget.setObjectName(path)
    widget.setAccessibleName(label)
    widget.setToolTip(f"{wrap_tip(tip)}\n(plan field: {path})" if tip else f"plan field: {path}")


def bound_spin(state: PlanState, path: str, label: str, tip: str, lo: int, hi: int, step: int = 1,
               suffix: str = "", special_zero: str = "", none_below: bool = False,
               also=None) -> QSpinBox:
    """With ``none_below`` the minimum (shown as ``special_zero``) stands for None.
    ``also(value) -> {path: value}`` adds dependent changes to the same undo step."""
    w = QSpinBox()
    w.setRange(lo, hi)
    w.setSingleStep(step)
    w.setAccelerated(True)
    w.setKeyboardTracking(False)  # one edit per finished number, not per digit typed
    if suffix:
        w.setSuffix(f" {suffix}")
    if special_zero:
        w.setSpecialValueText(special_zero)
    _decorate(w, path, label, tip)

    def show(v: Any) -> None:
        w.setValue(lo if v is None else int(v))

    def showing(v: Any) -> bool:
        return w.value() == (lo if v is None else int(v))

    def changed(v: int) -> None:
        value = None if (none_below and v <= lo) else int(v)
        changes = {path: value, **(also(value) if also else {})}
        ok = (state.edit_many(changes, f"Set {label}", merge=path) if also else
              state.edit(path, value, f"Set {label}", merge=path))
        if not ok:  # refused: show the document's value again
            w.blockSignals(True)
            show(state.get(path))
            w.blockSignals(False)

    _follow(state, w, path, show, showing)
    w.valueChanged.connect(changed)
    route_undo(w)
    return w


def bound_float(state: PlanState, path: str, label: str, tip: str, lo: float, hi: float, decimals: int = 2,
                step: float = 0.05, suffix: str = "", none_text: str = "", scale: float = 1.0) -> QDoubleSpinBox:
    """A float field; with ``none_text`` the minimum stands for None ("catalog default").
    ``scale`` shows value·scale (e.g. tokens in billions)."""
    w = TidySpin()
    w.setDecimals(decimals)
    w.setRange(lo, hi)
    w.setSingleStep(step)
    w.setKeyboardTracking(False)
    if suffix:
        w.setSuffix(f" {suffix}")
    if none_text:
        w.setSpecialValueText(none_text)
    _decorate(w, path, label, tip)

    def show(v: Any) -> None:
        w.setValue(lo if v is None else float(v) * scale)

    def showing(v: Any) -> bool:  # exactly: a value the box would round is set again
        return w.value() == (lo if v is None else float(v) * scale)

    def changed(v: float) -> None:
        # decimal division: 512 GB/s is 512e9 bytes/s in the plan file, not 511999999999.99994
        value = None if (none_text and v <= lo) else float(Decimal(repr(v)) / Decimal(repr(scale)))
        if not state.edit(path, value, f"Set {label}", merge=path):
            w.blockSignals(True)
            show(state.get(path))
            w.blockSignals(False)

    _follow(state, w, path, show, showing)
    w.valueChanged.connect(changed)
    route_undo(w)
    return w


def bound_check(state: PlanState, path: str, label: str, tip: str) -> QCheckBox:
    w = QCheckBox(label)
    _decorate(w, path, label, tip)
    _follow(state, w, path, lambda v: w.setChecked(bool(v)), lambda v: w.isChecked() == bool(v))
    w.toggled.connect(lambda on: state.edit(path, bool(on), f"{'Enable' if on else 'Disable'} {label}"))
    return w


def bound_combo(state: PlanState, path: str, label: str, tip: str, options: Sequence[tuple[Any, str]],
                editable: bool = False, chars: int = 10, aliases: dict[Any, Any] | None = None,
                item_tips: dict[Any, str] | None = None) -> QComboBox:
    """``options`` are (value, text) pairs; an editable combo also accepts typed values.
    ``aliases`` maps other spellings a plan may hold (``llama.cpp``) to an option's value, so
    the entry shows selected instead of a duplicate; ``item_tips`` gives entries a tooltip."""
    w = compact(ElidedCombo(), chars)
    w.setEditable(editable)
    # Enter must not add the typed text as an entry of its own: that entry carries no value (None), so a typo
    # ("abc", "-1") was taken as the first option's None ("automatic") before ``typed`` refused the text
    w.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    for value, text in options:
        w.addItem(text, value)
        if item_tips and value in item_tips:
            w.setItemData(w.count() - 1, wrap_tip(item_tips[value]), Qt.ItemDataRole.ToolTipRole)
    _decorate(w, path, label, tip)

    def show(v: Any) -> None:
        i = w.findData(v)
        if i < 0 and aliases and v in aliases:
            i = w.findData(aliases[v])
        if i < 0:
            w.addItem(str(v), v)
            i = w.count() - 1
        w.setCurrentIndex(i)

    def showing(v: Any) -> bool:
        return w.currentIndex() >= 0 and w.currentData() == v

    def changed(i: int) -> None:
        if i < 0:
            return
        value = w.itemData(i)
        if not state.edit(path, value, f"Set {label}", merge=path):
            w.blockSignals(True)
            show(state.get(path))
            w.blockSignals(False)

    _follow(state, w, path, show, showing)
    w.currentIndexChanged.connect(changed)
    if editable:
        def typed() -> None:
            text = w.currentText().strip().lower()
            if text and text != str(state.get(path)) and not state.edit(path, text, f"Set {label}", merge=path):
                show(state.get(path))
            w.lineEdit().setModified(False)
        w.lineEdit().editingFinished.connect(typed)
    route_undo(w)
    return w
