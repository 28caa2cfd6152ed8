"""Edits of a plan as small records (Qt-free): ``Edit(path, old, new)``.

The GUI never mutates a ``PlanDocument`` (it is frozen); every user action becomes an
``Edit`` whose ``apply`` returns the new document and whose ``inverse`` undoes it. The
Qt undo stack only wraps these records (``state.EditCommand``), so undo/redo logic is
testable without Qt, in the spirit of Orange3's and glue's command objects.

``merged`` joins two consecutive records of one field into one (ten clicks on a spin
box's arrow are one undo step, as in Qt's ``QUndoCommand.mergeWith`` contract); a merge
that ends where it began is a no-op and leaves the history.

Paths are the plan file's dotted field names (``parallelism.tp``, ``training.seq_len``,
``hardware.gpu``): the same contract the CLI's ``--set`` uses (DESIGN.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from llmplan.errors import InputError
from llmplan.plan.document import PlanDocument
from llmplan.plan.validation import describe_validation_error


def get_path(doc: PlanDocument, path: str) -> Any:
    """The value at a dotted path, e.g. ``get_path(doc, "parallelism.tp") -> 1``."""
    node: Any = doc
    for part in path.split("."):
        node = getattr(node, part)
    return node


def is_stated(doc: PlanDocument, path: str) -> bool:
    """Whether the plan states the field at ``path`` (set in the file, with ``--set`` or by an edit) rather than
    leaving it on its default, which the default policy may move (``core.search.policy``)."""
    parent, _, name = path.rpartition(".")
    node: Any = get_path(doc, parent) if parent else doc
    return name in getattr(node, "model_fields_set", {name})


def set_path(doc: PlanDocument, path: str, value: Any, stated: bool = True) -> PlanDocument:
    """A new document with ``path`` set to ``value``, fully re-validated; ``stated`` False: the field left unstated
    again, at its default (undoing an edit of a field the plan did not state).

    Re-validating the whole document (not ``model_copy(update=...)``, which skips
    validation) means an out-of-range knob is refused here with pydantic's message,
    before the engine ever sees it.
    """
    data = doc.model_dump(exclude_unset=True)  # what the plan does not state stays automatic (policy)
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {} if node.get(part) is None else node[part]
        node = node[part]
    if not stated:
        node.pop(parts[-1], None)
        return PlanDocument.model_validate(data)
    node[parts[-1]] = value.model_dump() if hasattr(value, "model_dump") else value
    try:
        return PlanDocument.model_validate(data)
    except ValidationError as exc:  # in the CLI's words: pydantic's "Value error, " prefix read in the status bar
        first = exc.errors()[0]
        if first["loc"]:
            raise InputError(describe_validation_error(exc)) from None
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise InputError(f"{path}: {msg} (got {value!r})") from None


@dataclass(frozen=True, slots=True)
class Edit:
    """Set ``path`` from ``old`` to ``new``. ``text`` is what Undo/Redo menus show."""

    path: str
    old: Any
    new: Any
    text: str = ""
    old_stated: bool = True  # False: the plan left the field unstated before the edit, and undo leaves it so

    def apply(self, doc: PlanDocument) -> PlanDocument:
        return set_path(doc, self.path, self.new)

    def inverse(self) -> Edit | Unstate:
        if not self.old_stated:
            return Unstate(self.path, self.new, self.old, self.text)
        return Edit(self.path, self.new, self.old, self.text)

    @classmethod
    def of(cls, doc: PlanDocument, path: str, new: Any, text: str = "") -> Edit:
        return cls(path, get_path(doc, path), new, text or f"Set {path}", is_stated(doc, path))

    def merged(self, later: Edit | Replace | Unstate) -> Edit | None:
        """This edit followed by ``later`` as one edit (the first old value, the last new one), or None
        when they cannot be one step (another field, or a whole-document change)."""
        if not isinstance(later, Edit) or later.path != self.path:
            return None
        return Edit(self.path, self.old, later.new, self.text, self.old_stated)

    @property
    def is_noop(self) -> bool:
        return self.old == self.new


@dataclass(frozen=True, slots=True)
class Unstate:
    """Undo of an edit of a field the plan did not state: the field unstated again (its default, ``old``), so the
    default policy may move it as before the edit, and a default that a framework reads in its own way (selective
    recompute under the Hugging Face Trainer runs as none) is read so again. Its inverse is the edit."""

    path: str
    old: Any
    new: Any
    text: str = ""

    def apply(self, doc: PlanDocument) -> PlanDocument:
        return set_path(doc, self.path, self.new, stated=False)

    def inverse(self) -> Edit:
        return Edit(self.path, self.new, self.old, self.text, False)

    def merged(self, later: Edit | Replace | Unstate) -> None:
        return None

    @property
    def is_noop(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Replace:
    """Swap the whole document (New, Open, apply an Auto result): undoable like any edit."""

    old: PlanDocument
    new: PlanDocument
    text: str = "Replace plan"

    def apply(self, doc: PlanDocument) -> PlanDocument:
        return self.new

    def inverse(self) -> Replace:
        return Replace(self.new, self.old, self.text)

    def merged(self, later: Edit | Replace) -> Replace | None:
        """Two whole-document steps as one: from the first old document to the last new one."""
        if not isinstance(later, Replace):
            return None
        return Replace(self.old, later.new, self.text)

    @property
    def is_noop(self) -> bool:
        return self.old == self.new
