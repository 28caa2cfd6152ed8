"""The knob path does less work, and what it shows is unchanged (issue 18: knob change → verdict ≤ 10 ms).

Three cuts made to that path (2026-11-28) are checked here against a fresh evaluation of the same plan, exactly
(texts compared as strings; nothing is estimated by hand):

- a workload tab's editors follow the plan only while their tab is shown (``gui/page_state.py``); a tab shown
  again catches up first, and then shows what a window opened on that plan shows;
- the results table works a tooltip out when it is hovered (``FiguresTable.tooltip``), not on every change;
- editors leave their widgets alone when what they would show has not changed (the framework switches, the
  Recompute modules boxes, the "auto (…)" pickers).

Each test fails on the code before its cut only where it checks the cut's mechanism (a hidden tab not refreshed,
the tooltip shown on hover); the equality checks guard the numbers shown.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QToolTip,
    QWidget,
)

from llmplan.gui import backend
from llmplan.gui.main_window import MainWindow
from llmplan.gui.results_panel import ResultsPanel
from llmplan.gui.tooltips import wrap_tip

EDITS = [("training.seq_len", 2048), ("training.lora_rank", 64), ("training.seq_len", 8192),
         ("training.framework", "megatron"), ("training.micro_batch", 2), ("training.seq_len", 3072)]


def _table(panel: ResultsPanel) -> list[tuple[str, str, str, str]]:
    """Every line of the results table: both texts and both tooltips (as a hover shows them)."""
    t = panel.table
    return [(t.topLevelItem(i).text(0), t.topLevelItem(i).text(1), t.tooltip(i, 0), t.tooltip(i, 1))
            for i in range(t.topLevelItemCount())]


def _fresh_panel(doc) -> ResultsPanel:
    panel = ResultsPanel()
    panel.show_outcome(backend.evaluate(doc))
    return panel


def test_results_after_edits_equal_a_fresh_evaluation_of_the_plan(window):
    """Edit after edit (each evaluated, the table updated in place), the table, banner and bottleneck read as a
    panel that shows one fresh evaluation of the final plan."""
    state = window.state
    state.evaluate_now()
    for path, value in EDITS:
        assert state.edit(path, value), path
        state.evaluate_now()
    fresh = _fresh_panel(state.doc)
    assert _table(window.results) == _table(fresh)
    assert window.results.banner.text() == fresh.banner.text()
    assert window.results.banner.toolTip() == fresh.banner.toolTip()
    assert window.results.detail.text() == fresh.detail.text()
    est = state.outcome.estimate
    tips = {window.results.table.topLevelItem(i).text(0).strip(): window.results.table.tooltip(i, 1)
            for i in range(window.results.table.topLevelItemCount())}
    assert tips["Total"] == wrap_tip(est.memory.total.describe())  # the formula, its inputs and source, worked out on hover


def test_a_hovered_figure_shows_its_formula(window, qtbot):
    """The tooltip is made when the pointer rests on a value, and it is the figure's explanation."""
    est = window.state.evaluate_now().estimate
    table = window.results.table
    line = next(i for i in range(table.topLevelItemCount()) if table.topLevelItem(i).text(0).strip() == "Total")
    table.scrollToItem(table.topLevelItem(line))
    rect = table.visualItemRect(table.topLevelItem(line))
    pos = QPoint(table.columnWidth(0) + 5, rect.center().y())  # the value column
    QApplication.sendEvent(table.viewport(), QHelpEvent(QEvent.Type.ToolTip, pos, table.viewport().mapToGlobal(pos)))
    qtbot.waitUntil(QToolTip.isVisible, timeout=5_000)
    assert QToolTip.text() == wrap_tip(est.memory.total.describe())
    QToolTip.hideText()


def _shown_state(page: QWidget) -> list[tuple]:
    """What each widget of a tab shows: texts, entries, checks, enabled, visible, tooltips."""
    out = []
    for w in page.findChildren(QWidget):
        row: tuple = (type(w).__name__, w.objectName(), w.isVisibleTo(page), w.isEnabled(), w.toolTip())
        if isinstance(w, QComboBox):
            row += (w.currentText(), tuple(w.itemText(i) for i in range(w.count())))
        elif isinstance(w, QAbstractSpinBox):
            row += (w.text(),)
        elif isinstance(w, QAbstractButton):
            row += (w.text(), w.isChecked())
        elif isinstance(w, QLabel):
            row += (w.text(),)
        out.append(row)
    return out


def test_a_tab_shown_again_shows_what_a_fresh_window_shows(window, qtbot, settings, monkeypatch):
    """Edits made while the Pre-train tab is hidden do not refresh it; switching to it catches it up, and it then
    reads, widget by widget, as in a window opened on the same plan."""
    state = window.state
    pretrain = window.workload.pages[2]
    spin = next(w for w in window.workload.widget(2).findChildren(QAbstractSpinBox, "training.seq_len"))
    before = spin.text()
    for path, value in EDITS:
        assert state.edit(path, value), path
        state.evaluate_now()
    assert not pretrain.shown and spin.text() == before  # hidden: not refreshed (the work cut)
    assert state.edit_many({"workload": "pretrain", "training.method": "full"}, "Pre-train")
    state.evaluate_now()
    assert pretrain.shown and spin.text() != before
    doc = state.doc
    monkeypatch.setattr(MainWindow, "default_doc", lambda self, *_a, **_k: doc)  # opened on the plan: its tab built on it
    other = MainWindow(settings=settings, detect=False)
    qtbot.addWidget(other)
    other.show()
    assert other.state.doc is doc and other.workload.pages[2].shown
    try:
        assert window.workload.currentIndex() == other.workload.currentIndex() == 2
        assert _shown_state(window.workload.widget(2)) == _shown_state(other.workload.widget(2))
        assert _table(window.results) == _table(other.results)
    finally:
        other.state.undo_stack.setClean()
        if other.charts is not None:
            other.charts.wait_idle()
        other.close()


def test_a_knob_change_evaluates_with_one_look_at_the_catalogs(window, monkeypatch):
    """The estimate of a knob change checks each catalog file on disk once (``catalog.snapshot``), and the
    framework profile the Fine-tune tab worked out for the new plan is not worked out again by resolve. Before
    (2026-11-28): the user's hardware folder was checked 4 times, the frameworks files twice, and the profile was
    worked out twice. The numbers shown are guarded by the equality test above."""
    import os
    import threading
    from collections import Counter

    from llmplan.plan import resolve as resolve_module

    state = window.state
    state.evaluate_now()
    assert state.edit("training.seq_len", 2048)  # the tabs follow the new plan: its profile is worked out here
    worked_out = []
    real_profile = resolve_module.framework_profile
    monkeypatch.setattr(resolve_module, "framework_profile", lambda *a, **k: worked_out.append(a) or real_profile(*a, **k))
    seen: Counter = Counter()
    real_stat = os.stat

    def counting(path, *args, **kwargs):  # this thread's: a chart sweep may run in another meanwhile
        if kwargs.get("follow_symlinks", True) and threading.get_ident() == ui_thread:
            seen[os.fspath(path)] += 1
        return real_stat(path, *args, **kwargs)

    ui_thread = threading.get_ident()
    monkeypatch.setattr(os, "stat", counting)
    out = backend.evaluate(state.doc)
    monkeypatch.setattr(os, "stat", real_stat)
    assert out.ok and worked_out == []
    assert seen and max(seen.values()) == 1, {p: n for p, n in seen.items() if n > 1}
