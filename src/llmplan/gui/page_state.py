"""A workload tab's view of the plan: its editors follow the plan while the tab is the one shown.

The window has three workload tabs (Inference, Fine-tune, Pre-train) and shows one. Each tab's editors
(about 60 bound fields, the framework pickers, the switches, the LoRA rows) followed every document change
and every estimate, shown or not: on the default fine-tune plan the hidden Pre-train tab alone took about
2.7 ms of UI-thread CPU of a 12 ms knob change → verdict (``benchmarks/bench_gui.py``; the budget is 10 ms).

``PageState`` stands in for ``PlanState`` when a tab's form is built. It reads and edits the one plan (every
attribute not defined here is the plan state's own: ``doc``, ``outcome``, ``edit``, ``pin``, ``undo_stack``…)
and passes the plan's ``doc_changed`` and ``evaluated`` on to the tab's editors only while the tab is shown.
A hidden tab notes that it missed one; when it is shown again (``set_shown``) it passes on the latest
document, then the latest outcome, before anything is painted. Each editor shows a function of the plan and
its latest outcome, so after that catch-up it shows what it would have shown had it followed every change
(tests/gui/test_page_state.py compares each editor of a tab caught up with one that followed throughout).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from llmplan.gui.state import PlanState


class PageState(QObject):
    """The plan as one workload tab sees it (see the module's docstring)."""

    doc_changed = Signal(object)  # PlanDocument: the plan's, while shown
    evaluated = Signal(object)  # backend.Outcome: the plan's, while shown

    def __init__(self, state: PlanState, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self._followers: list[Callable[[], None]] = []
        self._shown = True
        self._doc_due = self._outcome_due = False
        state.doc_changed.connect(self._doc_changed)
        state.evaluated.connect(self._evaluated)

    def __getattr__(self, name: str) -> Any:  # everything else public is the plan state's own
        if name.startswith("_"):  # never its private parts (and no recursion before ``_state`` is set)
            raise AttributeError(name)
        return getattr(self._state, name)

    @property
    def doc(self) -> Any:
        return self._state.doc

    @property
    def outcome(self) -> Any:
        return self._state.outcome

    @property
    def profile_memo(self) -> Any:  # one framework profile per document for the whole window (ft_switches)
        return self._state.profile_memo

    @profile_memo.setter
    def profile_memo(self, memo: Any) -> None:
        self._state.profile_memo = memo

    @property
    def shown(self) -> bool:
        return self._shown

    def follow(self, refresh: Callable[[], None]) -> None:
        """``PlanState.follow`` for this tab's editors: called on each document change while the tab is shown."""
        self._followers.append(refresh)

    def set_shown(self, shown: bool) -> None:
        """The tab is (no longer) the one shown; shown again, its editors catch up with the plan first."""
        self._shown = shown
        if not shown:
            return
        if self._doc_due:
            self._doc_changed(self._state.doc)
        if self._outcome_due and self._state.outcome is not None:
            self._evaluated(self._state.outcome)

    def _doc_changed(self, doc: Any) -> None:
        if not self._shown:
            self._doc_due = True
            return
        self._doc_due = False
        for refresh in self._followers:
            refresh()
        self.doc_changed.emit(doc)

    def _evaluated(self, outcome: Any) -> None:
        if not self._shown:
            self._outcome_due = True
            return
        self._outcome_due = False
        self.evaluated.emit(outcome)
