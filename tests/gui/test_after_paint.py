"""Start-up work that waits for the window's first paint (``gui/after_paint.py``), and the verdict's imports.

What is checked is the order (the work runs after the paint, or after the fallback when nothing is ever
painted) and which modules load, not a speed: the first-paint time is measured in benchmarks/bench_gui.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

from PySide6.QtWidgets import QLabel

from llmplan.gui.after_paint import after_first_paint


def test_work_waits_for_the_first_paint_and_runs_once(qtbot):
    label = QLabel("first paint")
    qtbot.addWidget(label)
    ran: list[str] = []
    after_first_paint(label, lambda: ran.append("a"))
    after_first_paint(label, lambda: ran.append("b"))
    qtbot.wait(20)
    assert ran == []  # not shown, not painted: nothing yet (the fallback is 3 s away)
    label.show()
    qtbot.waitUntil(lambda: ran == ["a", "b"], timeout=5_000)
    label.repaint()
    qtbot.wait(20)
    after_first_paint(label, lambda: ran.append("c"))  # already painted: at once
    assert ran == ["a", "b", "c"]


def test_a_widget_never_painted_still_gets_the_work(qtbot):
    label = QLabel("never shown")
    qtbot.addWidget(label)
    ran: list[str] = []
    after_first_paint(label, lambda: ran.append("late"), fallback_ms=50)
    qtbot.waitUntil(lambda: ran == ["late"], timeout=5_000)


def _printed(code: str) -> tuple[str, str]:
    """(stdout, stderr) of ``code`` in a fresh interpreter (offscreen Qt): which modules an import loads."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    return done.stdout.strip(), done.stderr[-2000:]


def test_the_verdict_does_not_load_the_change_ladder():
    """The results panel (the verdict on every estimate) imports ``fit.tiers`` for ``plan_verdict``; the change
    ladder and the detection modules it needs load with the first fixes search, after the first paint."""
    code = ("import sys; import llmplan.gui.results_panel; "
            "print(sorted(m for m in ('llmplan.fit.changes', 'llmplan.fit.local', 'llmplan.fit.trial', "
            "'llmplan.hw.detect') if m in sys.modules))")
    out, err = _printed(code)
    assert out == "[]", err


def test_the_window_and_its_first_estimate_load_neither_numpy_nor_httpx():
    """NumPy (the charts' and the search's arrays) and httpx (the Hub's transport) took a tenth of the start-up
    (``python -X importtime``, 2-core VM, 2026-11-28): the window, with the default plan estimated, needs
    neither. The training memory terms ask ``ndim`` without NumPy (``allocator_reserve.is_scalar``); the
    Inference tab's released-format line reads ``plan.hub_plan``, whose ``formats.hub`` loads its transport
    with a fetch."""
    code = ("import sys, tempfile; from PySide6.QtCore import QSettings; "
            "from PySide6.QtWidgets import QApplication; app = QApplication([]); "
            "from llmplan.gui.main_window import MainWindow; "
            "w = MainWindow(settings=QSettings(tempfile.mkdtemp() + '/s.ini', QSettings.Format.IniFormat), "
            "detect=False); ok = w.state.evaluate_now().ok; w.state.undo_stack.setClean(); "
            "print(ok, sorted(m for m in ('numpy', 'httpx2', 'pyqtgraph') if m in sys.modules))")
    out, err = _printed(code)
    assert out == "True []", err


def test_the_modules_imported_ahead_of_qt_are_qt_free():
    """``llmplan.gui`` imports ``QT_FREE_MODULES`` before PySide6, which from its import on reads the source of
    every module imported after it (``llmplan/gui/__init__.py`` says why). One that imported Qt itself would
    undo that, and would break the advice the app prints where PySide6 cannot be imported."""
    from llmplan.gui import QT_FREE_MODULES

    code = (f"import importlib, sys; [importlib.import_module(m) for m in {QT_FREE_MODULES!r}]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6') "
            "or m.startswith('llmplan.gui')))")
    out, err = _printed(code)
    assert out == "[]", err
    assert len(QT_FREE_MODULES) >= 10
