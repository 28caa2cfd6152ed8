""""Auto": the auto-planner (``llmplan.core.search.search``) in a background thread, with
progress and cancel, a ranked list whose rows can be applied, and the Pareto front.

The search calls ``progress(fraction, message)`` and checks ``cancel()`` between
batches; both cross threads through a ``threading.Event`` and a Qt signal, so the
window stays responsive and Cancel returns promptly with what was found so far.
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import MemoryUnit, duration
from llmplan.core.workload import Scenario
from llmplan.gui.state import PlanState


class _Signals(QObject):
    progress = Signal(float, str)
    done = Signal(object, str)  # SearchResult | None, error message


class SearchJob(QRunnable):
    def __init__(self, scenario: Scenario, objective: str, signals: _Signals, cancel: threading.Event) -> None:
        super().__init__()
        self.scenario, self.objective, self.signals, self.cancel = scenario, objective, signals, cancel

    def run(self) -> None:
        from llmplan.core.engine import estimate
        from llmplan.core.search import search

        try:
            result = search(self.scenario, top=10, objective=self.objective, refine=estimate,
                            progress=lambda f, m: self.signals.progress.emit(float(f), str(m)),
                            cancel=self.cancel.is_set)
        except Exception as exc:  # a failed search is a message in the dialog, not a crash
            self.signals.done.emit(None, str(exc))
            return
        self.signals.done.emit(result, "")


class AutoDialog(QDialog):
    """Non-modal: opened with ``open()``, so tests and the window keep running."""

    finished_search = Signal(object)

    def __init__(self, state: PlanState, charts: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Auto layout search")
        self.resize(760, 420)
        self.state, self.charts = state, charts
        self.unit = getattr(parent, "unit", MemoryUnit())
        self.result = None
        self._cancel = threading.Event()
        self._signals = _Signals()  # no Qt parent: the worker keeps it alive if this widget goes first
        self._signals.progress.connect(self._progress)
        self._signals.done.connect(self._done)
        self.objective = QComboBox()
        self.objective.addItem("fastest (tokens/s)", "time")
        self.objective.addItem("cheapest (USD per token)", "cost")
        self.objective.setAccessibleName("Search objective")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName("Search progress")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.list = QTreeWidget()
        self.list.setAccessibleName("Ranked layouts")
        self.list.setHeaderLabels(["#", "Layout", "GPUs", "tokens/s", "Step", "Memory/GPU", "Why not #1"])
        self.list.setRootIsDecorated(False)
        self.list.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.list.itemDoubleClicked.connect(lambda *_: self.apply_selected())
        self.run_button = QPushButton("&Search")
        self.cancel_button = QPushButton("&Cancel search")
        self.apply_button = QPushButton("&Apply layout")
        self.apply_button.setEnabled(False)
        self.close_button = QPushButton("Close")
        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.apply_button.clicked.connect(self.apply_selected)
        self.close_button.clicked.connect(self.close)
        self.list.currentItemChanged.connect(lambda cur, _p: self.apply_button.setEnabled(cur is not None))
        top = QHBoxLayout()
        top.addWidget(QLabel("Objective"))
        top.addWidget(self.objective)
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        top.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.apply_button)
        bottom.addWidget(self.close_button)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.bar)
        lay.addWidget(self.status)
        lay.addWidget(self.list, 1)
        lay.addLayout(bottom)
        self.running = False

    def start(self) -> None:
        outcome = self.state.outcome
        if self.running or outcome is None or outcome.scenario is None:
            if outcome is None or outcome.scenario is None:
                self.status.setText("Fix the plan first: the search needs a model and a GPU.")
            return
        self.running = True
        self._searched_doc = self.state.doc
        self._cancel = threading.Event()
        self.list.clear()
        self.bar.setValue(0)
        self.status.setText("Searching…")
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        QThreadPool.globalInstance().start(SearchJob(outcome.scenario, self.objective.currentData(), self._signals,
                                                     self._cancel))

    def cancel(self) -> None:
        self._cancel.set()
        self.status.setText("Cancelling…")

    def _progress(self, fraction: float, message: str) -> None:
        self.bar.setValue(int(1000 * max(0.0, min(fraction, 1.0))))
        self.status.setText(message)

    def _done(self, result, error: str) -> None:
        self.running = False
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.bar.setValue(1000)
        self.result = result
        if result is None:
            self.status.setText(f"Search failed: {error}")
            self.finished_search.emit(None)
            return
        summary = (f"{result.evaluated:,} layouts evaluated, {result.fitting:,} fit, {result.refined} re-estimated "
                   f"with the full engine" + (" (cancelled)" if result.cancelled else ""))
        self.status.setText(summary + (f". {result.note}" if result.note else ""))
        for r in result.best:
            item = QTreeWidgetItem(self.list, [str(r.rank), r.label(), str(r.gpus), f"{r.tokens_per_s:,.0f}",
                                               duration(r.step_time_s), self.unit.fmt(r.memory_bytes), r.why])
            item.setToolTip(1, "figures from the full engine" if r.refined else "figures from the quick model")
            item.setToolTip(6, r.why)
        if self.list.topLevelItemCount():
            self.list.setCurrentItem(self.list.topLevelItem(0))
        if self.charts is not None:
            self.charts.show_pareto([(r.gpus, r.tokens_per_s, r.label()) for r in result.best],
                                    [(p.gpus, p.tokens_per_s, p.label) for p in result.pareto_gpus], 0,
                                    self._searched_doc,
                                    front_source="full engine" if all(p.refined for p in result.pareto_gpus)
                                    else "quick model")
        self.finished_search.emit(result)

    def apply_selected(self) -> bool:
        """Apply the chosen row's layout and training knobs as one undoable edit."""
        item = self.list.currentItem()
        if item is None or self.result is None:
            return False
        r = self.result.best[self.list.indexOfTopLevelItem(item)]
        changes: dict[str, Any] = {"parallelism": r.parallelism}
        if self.state.doc.workload != "inference":
            changes["training"] = r.training
        hw = self.state.doc.hardware
        if r.gpus > hw.gpus_per_node * hw.nodes:
            changes["hardware.nodes"] = -(-r.gpus // hw.gpus_per_node)
        ok = self.state.edit_many(changes, f"Apply layout {r.label()}")
        if ok:
            self.status.setText(f"Applied #{r.rank}: {r.label()}")
        return ok

    def closeEvent(self, event) -> None:
        self._cancel.set()
        super().closeEvent(event)
