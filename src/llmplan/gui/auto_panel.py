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
    QDoubleSpinBox,
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
from llmplan.gui.tooltips import wrap_tip


class _Signals(QObject):
    progress = Signal(float, str)
    done = Signal(object, str)  # SearchResult | None, error message


class SearchJob(QRunnable):
    def __init__(self, scenario: Scenario, objective: str, signals: _Signals, cancel: threading.Event,
                 keep: tuple[str, ...] = (), formats: tuple[str, ...] = (), within_node: Scenario | None = None
                 ) -> None:
        super().__init__()
        self.scenario, self.objective, self.signals, self.cancel = scenario, objective, signals, cancel
        self.keep, self.formats = keep, formats  # the knobs the plan states, as the CLI holds them
        self.within_node = within_node  # the plan on one node, as ``llmplan-cli search`` passes it

    def run(self) -> None:
        from llmplan.core.engine import estimate
        from llmplan.core.search import search

        try:
            result = search(self.scenario, top=10, objective=self.objective, refine=estimate,
                            progress=lambda f, m: self.signals.progress.emit(float(f), str(m)),
                            cancel=self.cancel.is_set, keep=self.keep, weight_formats=self.formats,
                            within_node=self.within_node)
        except Exception as exc:  # a failed search is a message in the dialog, not a crash
            self.signals.done.emit(None, str(exc))
            return
        self.signals.done.emit(result, "")


class TargetJob(QRunnable):
    """"Finish in D days" / "within $B": ``plan.target.target_table`` on the plan's own GPU — the same function
    as ``llmplan-cli search --days/--budget`` — in the background."""

    def __init__(self, doc, days: float | None, budget: float | None, signals: _Signals,
                 keep: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.doc, self.days, self.budget, self.signals = doc, days, budget, signals
        self.keep = keep  # the training knobs the plan states, held as ``search --days`` holds them

    def run(self) -> None:
        from llmplan.core.engine import estimate
        from llmplan.plan.target import target_table

        try:
            self.signals.progress.emit(0.1, "searching the smallest cluster of this GPU that meets the target…")
            rows = target_table(self.doc, [self.doc.hardware.gpu], self.days, self.budget, refine=estimate,
                                keep=self.keep)
        except Exception as exc:  # a failed search is a message in the dialog, not a crash
            self.signals.done.emit(None, str(exc))
            return
        self.signals.done.emit(rows, "")


TARGET_HEADERS = ["#", "Layout", "GPUs", "Nodes", "Days", "GPU-hours", "Cost", "Energy", "Batch"]
SEARCH_HEADERS = ["#", "Layout", "GPUs", "tokens/s", "Step", "Memory/GPU", "Why not #1"]


def fix_first(outcome) -> str:
    """Why Auto cannot start: the plan has no estimate, and the banner's reason says what to change (a
    missing network between nodes, an unknown model), not a generic "needs a model and a GPU"."""
    reason = outcome.message if outcome is not None and outcome.message else "the search needs a model and a GPU."
    return f"Fix the plan first: {reason}"


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
        self.objective.addItem("finish in D days (fewest nodes)", "days")
        self.objective.addItem("within a budget of $B (fastest)", "budget")
        self.objective.setAccessibleName("Search objective")
        self.target = QDoubleSpinBox()
        self.target.setAccessibleName("Target")
        self.target.setRange(0.01, 1e12)
        self.target.setDecimals(1)
        self.target.setKeyboardTracking(False)
        self.target.setToolTip(wrap_tip("Days to finish the plan's training tokens, or US dollars of GPU-hours: the "
                               "smallest number of nodes of this GPU that meets it, and its layout (the global "
                               "batch stays fixed)"))
        self.target.setVisible(False)
        self.objective.currentIndexChanged.connect(self._objective_changed)
        self.target_nodes = self.target_gpn = 0  # a target answer's cluster (0: a search row)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName("Search progress")
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.list = QTreeWidget()
        self.list.setAccessibleName("Ranked layouts")
        self.list.setHeaderLabels(SEARCH_HEADERS)
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
        top.addWidget(self.target)
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

    def _objective_changed(self, _i: int) -> None:
        kind = self.objective.currentData()
        self.target.setVisible(kind in ("days", "budget"))
        if kind == "days":
            self.target.setPrefix("")
            self.target.setSuffix(" days")
            self.target.setValue(30.0)
        elif kind == "budget":
            self.target.setPrefix("$")
            self.target.setSuffix("")
            self.target.setValue(10_000_000.0)

    def start(self) -> None:
        outcome = self.state.outcome
        if self.running or outcome is None or outcome.scenario is None:
            if outcome is None or outcome.scenario is None:
                self.status.setText(fix_first(outcome))
            return
        self.running = True
        self._searched_doc = self.state.doc
        self._cancel = threading.Event()
        self.list.clear()
        self.bar.setValue(0)
        self.status.setText("Searching…")
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        from llmplan.core.search.policy import formats_to_try, held_knobs

        doc = self.state.doc
        kind = self.objective.currentData()
        keep = held_knobs(doc.training.model_fields_set) if outcome.scenario.workload != "inference" else ()
        if kind in ("days", "budget"):
            self.list.setHeaderLabels(TARGET_HEADERS)
            value = float(self.target.value())
            QThreadPool.globalInstance().start(TargetJob(doc, value if kind == "days" else None,
                                                         value if kind == "budget" else None, self._signals, keep))
            return
        self.list.setHeaderLabels(SEARCH_HEADERS)
        from llmplan.plan.resolve import resolve_within_node

        formats = formats_to_try(doc.inference.model_fields_set, outcome.scenario.engine_profile)
        QThreadPool.globalInstance().start(SearchJob(outcome.scenario, self.objective.currentData(), self._signals,
                                                     self._cancel, keep, formats, resolve_within_node(doc)))

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
        self.target_nodes = self.target_gpn = 0
        if result is None:
            self.status.setText(f"Search failed: {error}")
            self.finished_search.emit(None)
            return
        if isinstance(result, tuple):  # a target's answer (TargetJob)
            self._show_target(result)
            return
        summary = (f"{result.evaluated:,} layouts evaluated, {result.fitting:,} fit, {result.refined} re-estimated "
                   f"with the full engine" + (" (cancelled)" if result.cancelled else ""))
        self.status.setText(summary + (f". {result.note}" if result.note else "")
                            + (f". {sum(n for _r, n, _e in result.excluded):,} layouts left out that the training "
                               "framework cannot run (hover for why)" if result.excluded else ""))
        self.status.setToolTip(wrap_tip("\n".join(f"{n:,} × {reason}; e.g. {example}"
                                          for reason, n, example in result.excluded)))
        for r in result.best:
            item = QTreeWidgetItem(self.list, [str(r.rank), r.label(), str(r.gpus), f"{r.tokens_per_s:,.0f}",
                                               duration(r.step_time_s), self.unit.fmt(r.memory_bytes), r.why])
            item.setToolTip(1, "figures from the full engine" if r.refined else "figures from the quick model")
            item.setToolTip(6, wrap_tip(r.why))
        if self.list.topLevelItemCount():
            self.list.setCurrentItem(self.list.topLevelItem(0))
        if self.charts is not None:
            self.charts.show_pareto([(r.gpus, r.tokens_per_s, r.label()) for r in result.best],
                                    [(p.gpus, p.tokens_per_s, p.label) for p in result.pareto_gpus], 0,
                                    self._searched_doc,
                                    front_source="full engine" if all(p.refined for p in result.pareto_gpus)
                                    else "quick model")
        self.finished_search.emit(result)

    def _show_target(self, answers) -> None:
        from llmplan.core.present import energy, gpu_hours, money
        from llmplan.core.search.results import SearchResult

        a = answers[0]
        r = a.row
        if not r.meets:
            self.result = None
            self.status.setText(r.why)
            self.finished_search.emit(None)
            return
        layout = r.layout
        t, p = layout.training, layout.parallelism
        accum = t.global_batch // (t.micro_batch * p.dp) if t.global_batch else 1
        self.result = SearchResult((layout,), (), (), 0, 1, int(layout.refined), False, "time")
        self.target_nodes = r.nodes
        self.target_gpn = r.scenario.cluster.gpus_per_node if r.scenario is not None else 0
        item = QTreeWidgetItem(self.list, ["1", layout.label(), f"{r.gpus:,}", f"{r.nodes:,}", f"{r.days:,.1f}",
                                           gpu_hours(r.gpu_hours), money(r.cost_usd) if r.cost_usd is not None
                                           else "no price", energy(a.energy_kwh) if a.energy_kwh else "—",
                                           f"{t.global_batch:,} seq = mb {t.micro_batch} × DP {p.dp} × {accum}"])
        item.setToolTip(8, f"global batch {t.global_batch:,} sequences ({t.global_batch * t.seq_len:,} tokens), "
                           f"{accum} accumulation steps; it stays fixed whatever the layout")
        self.list.setCurrentItem(item)
        under = f" under {r.scenario.framework.name}" if r.scenario is not None else ""
        self.status.setText(f"The smallest cluster of {r.gpu_name} that meets the target: {r.nodes:,} nodes, "
                            f"{r.days:,.1f} days at {layout.tokens_per_s:,.0f} tokens/s{under}.")
        self.finished_search.emit(self.result)

    def apply_selected(self) -> bool:
        """Apply the chosen row's layout, training knobs and cluster as one undoable edit (``plan.layout_row``)."""
        item = self.list.currentItem()
        if item is None or self.result is None:
            return False
        r = self.result.best[self.list.indexOfTopLevelItem(item)]
        from llmplan.plan.layout_row import row_edits

        changes = row_edits(self.state.doc, r, self.target_nodes, self.target_gpn)  # the row's cluster too
        ok = self.state.edit_many(changes, f"Apply layout {r.label()}")
        if ok:
            self.status.setText(f"Applied #{r.rank}: {r.label()}")
        return ok

    def closeEvent(self, event) -> None:
        self._cancel.set()
        super().closeEvent(event)
