"""The plan being edited, its undo history and its latest estimate.

``PlanState`` holds one frozen ``PlanDocument``. Widgets call ``edit(path, value)``;
that becomes a ``commands.Edit`` pushed on a ``QUndoStack`` through the tiny
``EditCommand`` adapter, so Undo/Redo covers every edit. After each change a 30 ms
debounce timer re-evaluates the plan (``backend.evaluate``; measured at a few ms, so
it runs on the UI thread and the verdict is never stale) and ``evaluated`` is emitted
with the new ``Outcome``. Slow work (chart sweeps, the auto-planner) runs elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from llmplan.gui import backend
from llmplan.gui.commands import Edit, Replace, Unstate, get_path, is_stated, set_path
from llmplan.plan.document import PlanDocument
from llmplan.plan.released import FOLLOWED_FIELDS, follow_release

DEBOUNCE_MS = 30


_MERGE_IDS: dict[str, int] = {}


def merge_id(key: str | None) -> int:
    """A stable positive id per merge key (a plan field): ``QUndoStack`` merges a pushed command into
    the one on top only when both report the same ``id()``; -1 never merges."""
    if not key:
        return -1
    return _MERGE_IDS.setdefault(key, len(_MERGE_IDS) + 1)


class EditCommand(QUndoCommand):
    """Adapter: a Qt undo command around a Qt-free edit record. Commands with the same ``merge``
    key (the field an editor is bound to) merge when pushed one after another, so a burst of
    changes to one knob (spin-arrow clicks, typed numbers) is one undo step; another field, a
    model pick or a save in between starts a new one (Qt never merges across the clean state)."""

    def __init__(self, state: PlanState, record: Edit | Replace | Unstate, merge: str | None = None,
                 checked: tuple[PlanDocument, PlanDocument] | None = None) -> None:
        super().__init__(record.text)
        self._state = state
        self._record = record
        self._merge = merge
        self._checked = checked  # (document, the record applied to it) when the caller has validated it

    def id(self) -> int:
        return merge_id(self._merge)

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, EditCommand) or other._merge != self._merge or self._merge is None:
            return False
        joined = self._record.merged(other._record)
        if joined is None:
            return False
        self._record = joined
        if joined.is_noop and isinstance(joined, Edit) and not joined.old_stated:
            # back at the value of a field the plan did not state (up then down from "auto (1)"): unstated again,
            # as before the first edit, so an automatic knob stays automatic (gui/auto_knobs.py)
            self._state._set_doc(set_path(self._state.doc, joined.path, None, stated=False))
        self.setObsolete(joined.is_noop)  # back where it started: the step leaves the history
        return True

    def redo(self) -> None:
        checked, self._checked = self._checked, None
        if checked is not None and checked[0] is self._state.doc:  # the first redo, right after validation
            self._state._set_doc(checked[1])
            return
        self._state._set_doc(self._record.apply(self._state.doc))

    def undo(self) -> None:
        self._state._set_doc(self._record.inverse().apply(self._state.doc))


class PlanState(QObject):
    """One plan, its file, its history and its latest outcome."""

    doc_changed = Signal(object)  # PlanDocument
    evaluated = Signal(object)  # backend.Outcome
    file_changed = Signal(object)  # Path | None
    edit_refused = Signal(str)  # why an edit was refused (bad value)

    def __init__(self, doc: PlanDocument | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc = doc or backend.default_plan()
        self.outcome: backend.Outcome | None = None
        self.profile_memo: tuple[PlanDocument, object] | None = None  # ft_switches.plan_profile's, per document
        self.path: Path | None = None
        self.undo_stack = QUndoStack(self)
        self._followers: list[Callable[[], None]] = []
        self.doc_changed.connect(self._refresh_followers)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.evaluate_now)

    # ---- reading ------------------------------------------------------------------
    def follow(self, refresh: Callable[[], None]) -> None:
        """Call ``refresh()`` after every document change, before the other ``doc_changed`` slots. The bound
        editors (about 120) follow the plan this way, through one Qt slot: a Qt slot call each cost more
        than most refreshes, which only find that their field did not change."""
        self._followers.append(refresh)

    def _refresh_followers(self, _doc: PlanDocument) -> None:
        for refresh in self._followers:
            refresh()

    def get(self, path: str) -> Any:
        return get_path(self.doc, path)

    @property
    def dirty(self) -> bool:
        return not self.undo_stack.isClean()

    # ---- editing ------------------------------------------------------------------
    def edit(self, path: str, value: Any, text: str = "", merge: str | None = None) -> bool:
        """Set one field as an undoable edit; False (and ``edit_refused``) when invalid. Edits with the
        same ``merge`` key in a row are one undo step (the bound editors pass their field)."""
        if self.get(path) == value:
            return True
        record = Edit.of(self.doc, path, value, text)
        try:
            new = record.apply(self.doc)  # validate before it enters the history
            followed = self._follow_release(new, (path,))
        except Exception as exc:
            self.edit_refused.emit(str(exc))
            return False
        if followed is not new:  # the weight format follows the model's release: one step with the edit
            self.undo_stack.push(EditCommand(self, Replace(self.doc, followed, record.text), merge))
            return True
        self.undo_stack.push(EditCommand(self, record, merge, (self.doc, new)))  # redo reuses the checked doc
        return True

    def pin(self, path: str, value: Any, text: str = "", merge: str | None = None) -> bool:
        """``edit``, but an automatic (unstated) field becomes stated even at the value it has: a user's explicit
        pick of a knob the default policy may move (``core.search.policy``) holds it there. Undo leaves it
        unstated again (``commands.Unstate``): automatic."""
        if is_stated(self.doc, path) or self.get(path) != value:
            return self.edit(path, value, text, merge)
        record = Edit.of(self.doc, path, value, text)  # a step of its own (no merge key): the next pick of this
        self.undo_stack.push(EditCommand(self, record, None, (self.doc, record.apply(self.doc))))  # knob keeps it
        return True

    def unstate(self, path: str, text: str = "") -> None:
        """Leave ``path`` unstated again (automatic: the default policy chooses it), as one undoable step."""
        if not is_stated(self.doc, path):
            return
        default = get_path(set_path(self.doc, path, None, stated=False), path)
        self.undo_stack.push(EditCommand(self, Unstate(path, self.get(path), default, text or f"Automatic {path}")))

    def edit_many(self, changes: dict[str, Any], text: str, merge: str | None = None) -> bool:
        """Several fields as one undo step (apply an Auto result, pick a model...)."""
        new = self.doc
        try:
            for path, value in changes.items():
                new = Edit.of(new, path, value).apply(new)
            new = self._follow_release(new, tuple(changes))
        except Exception as exc:
            self.edit_refused.emit(str(exc))
            return False
        if new == self.doc:
            return True
        self.undo_stack.push(EditCommand(self, Replace(self.doc, new, text), merge))
        return True

    def _follow_release(self, new: PlanDocument, paths: tuple[str, ...]) -> PlanDocument:
        """``new`` with the weight format following the model's release (``plan.released.follow_release``: the
        CLI's rule for ``--model``) when the edit changes the model, the workload or the engine and does not
        set the format itself; ``new`` itself (the same object) otherwise."""
        if "inference.weight_format" in paths or not any(p in FOLLOWED_FIELDS for p in paths):
            return new
        followed = follow_release(self.doc, new)
        return new if followed == new else followed

    def replace(self, doc: PlanDocument, text: str = "Replace plan") -> None:
        self.undo_stack.push(EditCommand(self, Replace(self.doc, doc, text)))

    def load(self, doc: PlanDocument, path: Path | None) -> None:
        """A freshly opened or new plan: history starts over, the file is clean."""
        self.undo_stack.clear()
        self.path = path
        self._set_doc(doc)
        self.undo_stack.setClean()
        self.file_changed.emit(path)

    def mark_saved(self, path: Path) -> None:
        self.path = path
        self.undo_stack.setClean()
        self.file_changed.emit(path)

    # ---- evaluation ---------------------------------------------------------------
    def _set_doc(self, doc: PlanDocument) -> None:
        self.doc = doc
        self.doc_changed.emit(doc)
        self._timer.start()

    def evaluate_now(self) -> backend.Outcome:
        self._timer.stop()
        self.outcome = backend.evaluate(self.doc)
        self.evaluated.emit(self.outcome)
        return self.outcome

    @property
    def pending(self) -> bool:
        return self._timer.isActive()
