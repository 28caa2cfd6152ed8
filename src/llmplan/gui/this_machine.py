"""The "This machine" line under the verdict: does the plan fit the GPUs detection found,
and the nearest changes that make it fit, each one click (one undoable edit) away.

``llmplan.fit.local`` does the work: ``local_hardware(report)`` turns the background
detection's report into a ``LocalMachine``; ``fit_this_machine(doc, machine)`` gives a
``LocalFit`` (its ``verdict`` sentence, its ``changes`` with dotted overrides, its
``limits``). It takes up to ~150 ms (it searches for the nearest changes), so it runs in a
worker thread after the plan settles; a newer plan makes an older answer stale and it is
dropped. Applying a change replaces the plan with ``apply_change(fit, change)``: the plan
re-pointed at this machine with the change made, as one undo step.

When the plan already runs on this machine's GPUs (``is_plan``), these changes are the window's only
fix list: the results' own list (``PlanFixes``) would repeat them, less aware of the machine.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from llmplan.core.present import one_line
from llmplan.gui.state import PlanState
from llmplan.gui.theme import BAD_COLOUR, OK_COLOUR, WARN_COLOUR
from llmplan.gui.tooltips import wrap_tip
from llmplan.gui.wording import for_app

DEBOUNCE_MS = 120
MAX_CHANGES = 3
_COLOURS = {"fits": OK_COLOUR, "fits_split": OK_COLOUR, "fits_offload": WARN_COLOUR, "fits_cpu": WARN_COLOUR,
            "does_not_fit": BAD_COLOUR}


class _Signals(QObject):
    done = Signal(int, object, object, str)  # generation, doc, LocalFit | None, problem


class _FitJob(QRunnable):
    def __init__(self, generation: int, doc: Any, machine: Any, signals: _Signals) -> None:
        super().__init__()
        self.generation, self.doc, self.machine, self.signals = generation, doc, machine, signals

    def run(self) -> None:
        try:
            from llmplan.fit.local import fit_this_machine

            fit, problem = fit_this_machine(self.doc, self.machine), ""
        except Exception as exc:  # the verdict for this machine is extra: a failure is a sentence
            fit, problem = None, f"{type(exc).__name__}: {exc}"
        self.signals.done.emit(self.generation, self.doc, fit, problem)


def wait_for_worker(busy, pool: QThreadPool, timeout_ms: int) -> None:
    """Run the event loop until ``busy()`` is false (a debounced worker has answered and its answer is
    shown) or ``timeout_ms`` passes. For tests, benchmarks and screenshots."""
    from PySide6.QtCore import QCoreApplication, QElapsedTimer

    clock = QElapsedTimer()
    clock.start()
    while busy() and clock.elapsed() < timeout_ms:
        pool.waitForDone(50)
        QCoreApplication.processEvents()


def change_title(sentence: str) -> str:
    """'Recompute activations in full (from selective): fits with 2.8 GiB free…' ->
    'Recompute activations in full (from selective)': what to do; the result is in the tooltip."""
    return sentence.split(": ", 1)[0].strip() or sentence


def show_changes(label: QLabel, changes, head: str, scheme: str, also_sets: str = "") -> None:
    """Nearest changes as numbered links (``scheme:i``) under ``head`` in ``label``, each change's whole
    sentence and ``--set`` paths in the tooltip; hidden when there are none."""
    if not changes:
        label.clear()
        label.hide()
        return
    links = [f'{i + 1}. <a href="{scheme}:{i}">{html.escape(change_title(c.sentence))}</a>'
             for i, c in enumerate(changes)]
    label.setText(f"{head}<br>" + "<br>".join(links))
    label.setToolTip(wrap_tip("\n\n".join(f"{i + 1}. {c.sentence}\n   sets: {', '.join(c.overrides)}{also_sets}"
                                  for i, c in enumerate(changes))))
    label.show()


class ThisMachine(QWidget):
    """Hidden until detection found a usable machine; then one verdict line and links."""

    fitted = Signal(object)  # LocalFit | None, after each background answer
    message = Signal(str)
    watch_requested = Signal()  # the "Watch a running job" link: the Watch panel (gui/watch_dock.py)

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.machine: Any = None
        self.fit: Any = None
        self._fit_doc: Any = None
        self.verdict = QLabel(self)
        self.verdict.setTextFormat(Qt.TextFormat.PlainText)  # names in it come from drivers and files
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict.setAccessibleName("This machine verdict")
        self.changes = QLabel(self)
        self.changes.setWordWrap(True)
        self.changes.setTextFormat(Qt.TextFormat.RichText)
        self.changes.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)  # Tab + Enter
        self.changes.setAccessibleName("Changes that make the plan fit this machine")
        self.changes.linkActivated.connect(self._link)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 0, 4, 0)
        lay.setSpacing(2)
        self.watch_link = QLabel('<a href="watch">Watch a running job on this machine…</a>', self)
        self.watch_link.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.watch_link.setAccessibleName("Watch a running job")
        self.watch_link.linkActivated.connect(lambda _href: self.watch_requested.emit())
        lay.addWidget(self.verdict)
        lay.addWidget(self.changes)
        lay.addWidget(self.watch_link)
        self.apply_actions: list[QAction] = []
        for i in range(MAX_CHANGES):  # Alt+1…3 apply the first three changes
            act = QAction(f"Apply change {i + 1} for this machine", self)
            act.setShortcut(QKeySequence(f"Alt+{i + 1}"))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(lambda _c=False, i=i: self.apply(i))
            self.addAction(act)
            self.apply_actions.append(act)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()  # no Qt parent: a running job keeps it alive if this widget goes first
        self._signals.done.connect(self._done)
        self._generation = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._start)
        self._cancelled = threading.Event()
        self.busy = False
        self.hide()

    # ---- inputs ---------------------------------------------------------------------------
    def set_report(self, report: Any) -> None:
        """The background detection's ``DetectionReport`` (None: none ran or it failed)."""
        self.machine = None
        if report is not None:
            try:
                from llmplan.fit.local import local_hardware
                from llmplan.plan.calibrated import load_calibration_quietly

                calibration, note = load_calibration_quietly()  # a small JSON file; a damaged one is a note
                self.machine = local_hardware(report, calibration)
                if note:
                    self.message.emit(f"This machine: {note}")
            except Exception as exc:
                self.message.emit(f"This machine: {exc}")
        if self.machine is None:
            self.hide()
            return
        self.show()
        self.verdict.setText(one_line(f"This machine ({self.machine.label}): checking…"))
        self.request()

    def request(self, *_a) -> None:
        if self.machine is None:
            return
        self.busy = True
        self._timer.start()

    def _start(self) -> None:
        self._generation += 1
        self._pool.start(_FitJob(self._generation, self.state.doc, self.machine, self._signals))

    def _done(self, generation: int, doc: Any, fit: Any, problem: str) -> None:
        if generation != self._generation:
            return  # an answer for an older plan
        self.busy = self._timer.isActive()
        self.fit, self._fit_doc = fit, doc
        self._render(problem)
        self.fitted.emit(fit)

    def wait_idle(self, timeout_ms: int = 20_000) -> None:
        """For tests, benchmarks and screenshots: until the background answer is shown."""
        wait_for_worker(lambda: self.busy or self._timer.isActive(), self._pool, timeout_ms)

    def is_plan(self, doc: Any) -> bool:
        """True when ``doc`` runs on this machine's GPUs (the same GPU, no more of them than this machine
        has, one node) and this line lists its changes or is still checking it: then it is the one list of
        fixes. False once its answer for ``doc`` has no changes to show (it fits here, or no verdict)."""
        m = self.machine
        if m is None or m.gpu is None or m.cards or doc.hardware.cards or doc.hardware.nodes != 1:
            return False
        if doc.hardware.gpu != (m.catalog_id or m.gpu.id) or doc.hardware.gpus_per_node > m.gpu_count:
            return False
        out = self.state.outcome  # a MIG instance has half the memory or less of the catalog GPU of its name;
        if out is not None and out.doc is doc and out.scenario is not None:  # drivers report a few % less
            catalog = out.scenario.cluster.gpu.memory_bytes
            if abs(catalog - m.gpu.memory_bytes) > 0.05 * catalog:
                return False
        answered = self.fit_doc is doc or self.fit_doc == doc
        return not answered or self.lists_changes()

    @property
    def fit_doc(self) -> Any:
        """The plan the last answer is about."""
        return self._fit_doc

    def lists_changes(self) -> bool:
        """Whether the last answer shows changes (the plan does not fit here and some change makes it)."""
        return self.fit is not None and not self.fit.fits and bool(self.fit.changes)

    # ---- output ---------------------------------------------------------------------------
    def _render(self, problem: str) -> None:
        fit = self.fit
        if fit is None:
            self.verdict.setText(one_line(f"This machine ({self.machine.label}): no verdict ({problem})"))
            self.verdict.setStyleSheet("")
            self.changes.clear()
            return
        colour = _COLOURS.get(fit.status, "")
        self.verdict.setText(one_line(fit.verdict))
        self.verdict.setStyleSheet(f"QLabel {{ color: {colour}; font-weight: bold; }}" if colour else "")
        tips = list(dict.fromkeys([*(lim.sentence for lim in fit.limits), *fit.notes, *fit.machine.notes]))
        self.verdict.setToolTip(for_app("\n".join(tips)) if tips else fit.verdict)  # no command-line hints
        self.verdict.setAccessibleDescription(one_line(fit.verdict))
        shown = fit.changes[:MAX_CHANGES] if not fit.fits else ()
        show_changes(self.changes, shown, "To fit on this machine (click one, or press Alt+its number):", "change",
                     " (and this machine's GPUs)")

    def _link(self, href: str) -> None:
        if href.startswith("change:"):
            self.apply(int(href.split(":", 1)[1]))

    def apply(self, index: int) -> bool:
        """Re-point the plan at this machine with change ``index`` made: one undoable edit."""
        fit = self.fit
        if fit is None or fit.fits or not 0 <= index < min(len(fit.changes), MAX_CHANGES):
            return False
        if self._fit_doc != self.state.doc:
            self.message.emit("The plan changed since this machine was checked; checking again.")
            self.request()
            return False
        from llmplan.fit.local import apply_change

        change = fit.changes[index]
        try:
            doc = apply_change(fit, change)
        except Exception as exc:
            self.message.emit(f"Could not apply '{change_title(change.sentence)}': {exc}")
            return False
        self.state.replace(doc, f"This machine: {change_title(change.sentence)}")
        return True
