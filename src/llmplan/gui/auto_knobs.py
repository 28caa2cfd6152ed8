"""Knobs the engine chooses, shown as chosen: "auto (ZeRO 3)", not the plan's unset default.

A training plan that leaves recompute, micro-batch, ZeRO stage or offload unstated lets the default policy move
them until the plan fits (``core.search.policy``; the banner says "auto: full recompute, ZeRO-3"). The 2026-11-28
user trial found the layout editor showing "ZeRO 1" and "selective recompute" (the unset defaults) beside that
banner: two contradicting answers. So each of the four editors has an "auto (…)" entry that is selected while the
plan leaves the knob open and names, in the editor's own words, the value the result used (the evaluated
scenario's). Picking a value states it (``PlanState.pin``: held even at the value the policy had left it on);
Undo, or picking "auto" again, leaves it unstated (``PlanState.unstate``): automatic once more.

One mechanism for the combos (``ProfileChoices`` with ``automatic=True``: ZeRO, offload, recompute) and one spin
box (``AutoSpin``: micro-batch, whose minimum 0 reads "auto (N)").
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QSpinBox

from llmplan.gui.bind import route_undo
from llmplan.gui.commands import get_path, is_stated
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

AUTO = "__automatic__"  # the item data of the "auto (…)" entry (no plan value is spelt so)
AUTO_TIP = ("Automatic: the plan leaves this open and the engine's default policy chooses it, moving one step at a "
            "time (full recompute, micro-batch 1, ZeRO-3, CPU offload) only until the plan fits; in brackets, the "
            "value the result used. Pick a value to hold it there; Undo returns to automatic")


def automatic(doc: Any, path: str) -> bool:
    """Whether the training knob at ``path`` is left to the default policy (a training plan that does not state it)."""
    return doc.workload != "inference" and not is_stated(doc, path)


def used_value(state: PlanState, path: str) -> Any:
    """The value of ``path`` in the scenario the latest result estimated (None when there is none)."""
    out = state.outcome
    if out is None or out.scenario is None or out.estimate is None:
        return None
    return get_path(out.scenario, path)


def auto_text(used: str | None) -> str:
    """'auto (ZeRO 3)', or 'auto' when no result says what it used."""
    return f"auto ({used})" if used else "auto"


class AutoSpin(QSpinBox):
    """A spin box for an automatic whole-number knob: its minimum, 0, is "auto (N)", N the value the result used;
    1 and up state the knob. From "auto" the arrows step from N (N+1, N−1), not from 0; up then down in one run
    is "auto (N)" again (``state.EditCommand`` unstates a merged edit that ends where it began)."""

    def __init__(self, state: PlanState, path: str, label: str, tip: str, hi: int) -> None:
        super().__init__()
        self._state, self._path, self._label = state, path, label
        self._seen: tuple[Any, Any] | None = None  # (document, value the result used) last refreshed to
        self.setRange(0, hi)
        self.setKeyboardTracking(False)
        self.setObjectName(path)
        self.setAccessibleName(label)
        self.setToolTip(wrap_tip(f"{tip}\n{AUTO_TIP}\n(plan field: {path})"))
        self.valueChanged.connect(self._changed)
        state.doc_changed.connect(self.refresh)
        state.evaluated.connect(self.refresh)
        route_undo(self)
        self.refresh()

    def _used(self) -> int | None:
        v = used_value(self._state, self._path)
        return int(v) if v is not None else None

    def refresh(self, _x: Any = None) -> None:
        used = self._used()
        doc = self._state.doc
        if self._seen is not None and self._seen[0] is doc and self._seen[1] == used:
            return  # the same document and result value as last time (the estimate after an edit, often)
        self._seen = (doc, used)
        self.setSpecialValueText(auto_text(None if used is None else f"{used:,}"))
        self.blockSignals(True)
        try:
            self.setValue(0 if automatic(doc, self._path) else int(get_path(doc, self._path)))
        finally:
            self.blockSignals(False)

    def stepBy(self, steps: int) -> None:
        if self.value() == 0:  # from the value used (the plan's default while there is no result)
            used = self._used()
            base = used if used is not None else int(get_path(self._state.doc, self._path))
            self.setValue(max(1, base + steps))
            return
        super().stepBy(steps)

    def _changed(self, v: int) -> None:
        if v == 0:
            self._state.unstate(self._path, f"Automatic {self._label}")
        elif not self._state.pin(self._path, v, f"Set {self._label}", merge=self._path):
            self._seen = None  # the box shows the refused value: show the plan's again
            self.refresh()
