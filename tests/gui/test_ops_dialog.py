"""The "Operations…" dialog (``gui/ops_dialog``): the step's operation list of the plan shown, sortable, copied as
CSV; training only.

Source: the shipped ZeRO-3 fine-tune example; the dialog's rows come from ``core.training.step_ops``, whose sum is
checked against the estimate in tests/core/training/test_step_ops.py (1e-9 relative). Here: the wiring — the
button opens it with the plan's name in the title, every row is listed, sorting by time puts the longest first,
the CSV holds every row with its seconds adding to the step time (1e-9 relative).
"""

from __future__ import annotations

import csv
import io
import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from llmplan.plan.planfile import load_plan
from llmplan.resources_path import resources_dir

EXAMPLES = resources_dir() / "examples"


def _open(window, qtbot, name: str):
    path = EXAMPLES / name
    window.state.load(load_plan(path), path)
    window.state.evaluate_now()
    qtbot.wait(50)
    return window.results


def test_button_opens_the_plans_operations(window, qtbot):
    results = _open(window, qtbot, "finetune-llama-3.1-70b-zero3-8xh100.llmplan")
    assert results.ops_button.isVisible()
    results.ops_button.click()
    dlg = results.ops_dialog
    ops = dlg.ops
    assert ops is not None and dlg.table.rowCount() == len(ops.rows)
    doc = window.state.doc
    assert dlg.windowTitle() == f"Operations of one step — {doc.name or results.outcome.scenario.model.name}"
    dlg.table.sortItems(7, Qt.SortOrder.DescendingOrder)  # by time
    assert dlg.table.item(0, 7).key == max(r.seconds for r in ops.rows)
    dlg.copy_button.click()
    rows = list(csv.DictReader(io.StringIO(QGuiApplication.clipboard().text())))
    assert len(rows) == len(ops.rows)
    assert sum(float(r["seconds"]) for r in rows) == pytest.approx(window.results.outcome.estimate.compute
                                                                   .step_time_s.value, rel=1e-9)
    dlg.table.setCurrentCell(0, 0)
    assert "priced by" in dlg.detail.text() and "source:" in dlg.detail.text()
    dlg.resize(1024, 700)
    dlg.show()
    qtbot.wait(50)
    shot = os.environ.get("LLMPLAN_SHOT_DIR")
    if shot:  # a PNG to look at (docs/gui.md)
        dlg.grab().save(os.path.join(shot, "operations-dialog.png"))


def test_inference_plan_says_training_only(window, qtbot):
    results = _open(window, qtbot, "serve-llama-3.1-70b-tp4-h100.llmplan")
    assert not results.ops_button.isVisible()
    from llmplan.gui.ops_dialog import operations_dialog

    dlg = operations_dialog(results.outcome, window)
    assert dlg.ops is None and "training-only" in dlg.summary.text()
