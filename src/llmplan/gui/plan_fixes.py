"""The nearest fixes under the verdict, for any plan: buttons that apply one change as one undo step.

When the plan does not fit its GPUs (or fits only by leaving part of it in CPU RAM),
``llmplan.fit.tiers.plan_fixes`` searches the change ladder of ``llmplan.fit.changes`` on the
plan's own hardware: a smaller weight format, a shorter context, more GPUs, LoRA… It takes tens
of engine calls (~50–200 ms), so it runs in a worker thread after the plan settles, and an
answer for an older plan is dropped. A fix is a push button (Tab reaches it, Space applies it);
``chosen`` carries the new plan and the undo text, and the window pushes it as one edit.

When the plan's hardware *is* this machine (``covered_by``, the window's "This machine" line), a plan
that does not fit gets one list, not two: the "This machine" line's changes, which know the machine
(its GPU count, its host RAM) and keep their Alt+1…3 keys. This list then stays hidden and searches
nothing, unless that line has no changes to show for the plan (``uncover``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from llmplan.gui.this_machine import change_title, wait_for_worker
from llmplan.gui.tooltips import wrap_tip

DEBOUNCE_MS = 150
MAX_FIXES = 3


class _Signals(QObject):
    done = Signal(int, object, object)  # generation, doc, tuple[FitChange, ...]


class _FixJob(QRunnable):
    def __init__(self, generation: int, doc: Any, signals: _Signals) -> None:
        super().__init__()
        self.generation, self.doc, self.signals = generation, doc, signals

    def run(self) -> None:
        try:
            from llmplan.fit.tiers import plan_fixes

            fixes = plan_fixes(self.doc)
        except Exception:  # the fixes are a hint beside the verdict: a failure shows none
            fixes = ()
        self.signals.done.emit(self.generation, self.doc, fixes)


class PlanFixes(QWidget):
    """A title line and up to three fix buttons; hidden while the plan fits on its GPUs."""

    chosen = Signal(object, str)  # the plan with the fix applied, the undo text

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Nearest fixes")
        self.title = QLabel(self)
        self.title.setWordWrap(True)
        self.buttons: list[QPushButton] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 0, 4, 0)
        lay.setSpacing(2)
        lay.addWidget(self.title)
        for i in range(MAX_FIXES):
            b = QPushButton(self)
            b.setFlat(True)
            b.setAccessibleName(f"Fix {i + 1}")
            b.setStyleSheet("QPushButton { text-align: left; text-decoration: underline; padding: 1px 4px; }")
            b.clicked.connect(lambda _c=False, i=i: self.apply(i))
            # a long fix never widens the results pane (no sideways scrolling at 1,024 px): it wraps at word
            # boundaries to the pane's width, so the whole change shows ("…, and use FP8 weights" was elided
            # to "and use FP8 weig…" at 1,280 px), the sentence with what it sets in its tooltip
            b.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
            b.setProperty("full_text", "")
            b.hide()
            lay.addWidget(b)
            self.buttons.append(b)
        self.fixes: tuple = ()
        self._doc: Any = None
        self._pending: Any = None
        self._job: _FixJob | None = None
        self._heading = ""
        self._generation = 0
        self.covered_by: Callable[[Any], bool] = lambda _doc: False  # set by the window (ThisMachine.is_plan)
        self._covered: tuple | None = None  # (doc, tier, gpu_label) of a request left to "This machine"
        self.busy = False
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals()  # no Qt parent: a running job keeps it alive if this widget goes first
        self._signals.done.connect(self._done)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._start)
        self.hide()

    def request(self, doc: Any, tier: str, gpu_label: str) -> None:
        """Look for fixes of ``doc`` (tier "does_not_fit" or "offload"); any other tier hides them, and so
        does a plan on this machine that does not fit (its "This machine" line lists the changes)."""
        self._generation += 1  # an answer for the previous plan is now stale
        self._covered = (doc, tier, gpu_label) if tier == "does_not_fit" and self.covered_by(doc) else None
        if tier not in ("does_not_fit", "offload") or self._covered is not None:
            self._pending, self.busy = None, False
            self._timer.stop()
            self.fixes = ()
            self.hide()
            return
        self._heading = (f"To fit on {gpu_label}:" if tier == "does_not_fit"
                         else f"To keep it all on the GPU ({gpu_label}):")
        self._pending, self.busy = doc, True
        self.title.setText(f"{self._heading} looking for the nearest fixes…")
        for b in self.buttons:
            b.hide()
        self.show()
        self._timer.start()

    def uncover(self, doc: Any) -> None:
        """The "This machine" line has no changes for ``doc`` (it fits there, or it has no verdict): if this
        list was left to it, look for the plan's own fixes after all."""
        covered = self._covered
        if covered is not None and (covered[0] is doc or covered[0] == doc):
            covering, self.covered_by = self.covered_by, lambda _doc: False
            try:
                self.request(*covered)
            finally:
                self.covered_by = covering

    def _start(self) -> None:
        if self._pending is None:
            return
        self._job = _FixJob(self._generation, self._pending, self._signals)  # kept: no early GC
        self._pool.start(self._job)
        self._pending = None

    def _done(self, generation: int, doc: Any, fixes: tuple) -> None:
        if generation != self._generation:
            return
        self.busy = False
        self._doc, self.fixes = doc, tuple(fixes)[:MAX_FIXES]
        if not self.fixes:
            self.title.setText(f"{self._heading} no single change found (try a GPU with more memory)")
            return
        self.title.setText(f"{self._heading} click a fix to apply it (Undo takes it back)")
        for i, b in enumerate(self.buttons):
            if i < len(self.fixes):
                c = self.fixes[i]
                b.setProperty("full_text", f"{i + 1}. {change_title(c.sentence)}")
                self._wrap(b)
                b.setToolTip(wrap_tip(f"{c.sentence}\n\nsets: {', '.join(c.overrides)}"))
                b.setAccessibleName(change_title(c.sentence))
                b.show()
            else:
                b.hide()

    def _wrap(self, b: QPushButton) -> None:
        """The fix's text in lines that fit the pane (a push button does not wrap by itself): each line takes
        the words that fit; a word longer than the room has a line of its own, elided."""
        room = max(self.width() - 24, 40)  # the layout's margins and the button's padding
        fm = b.fontMetrics()
        lines: list[str] = []
        for word in str(b.property("full_text") or "").split():
            if lines and fm.horizontalAdvance(f"{lines[-1]} {word}") <= room:
                lines[-1] += f" {word}"
            else:
                lines.append(word if fm.horizontalAdvance(word) <= room else
                             fm.elidedText(word, Qt.TextElideMode.ElideRight, room))
        text = "\n".join(lines)
        if b.text() != text:
            b.setText(text)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        for b in self.buttons:
            self._wrap(b)

    def apply(self, index: int) -> bool:
        """Emit the plan with fix ``index`` applied."""
        if not 0 <= index < len(self.fixes) or self._doc is None:
            return False
        from llmplan.errors import LlmplanError
        from llmplan.plan.overrides import apply_overrides

        change = self.fixes[index]
        try:
            doc = apply_overrides(self._doc, change.overrides)
        except LlmplanError:
            return False
        self.chosen.emit(doc, f"Fix: {change_title(change.sentence)}")
        return True

    def wait_idle(self, timeout_ms: int = 20_000) -> None:
        """For tests and screenshots: until the background answer is shown."""
        wait_for_worker(lambda: self.busy or self._timer.isActive(), self._pool, timeout_ms)
