"""Plan files for the window: open, save (atomic), recent files, autosave and crash
recovery.

Reading and writing go through ``llmplan.plan.planfile`` (atomic save, migration,
version checks). Autosave writes the current plan every ``AUTOSAVE_S`` seconds, while
there are unsaved changes, into this window's own slot in ``<user data dir>/autosave/``
(``AutosaveSlot``: ``<id>.llmplan`` with ``<id>.json`` naming the plan's file), and removes
it on save and on a clean exit. Each slot is guarded by a ``QLockFile`` that Qt marks with
the owner's process id: a slot whose lock can be taken belongs to a session that did not
end cleanly (crash, SIGKILL, power cut), and the next start offers to recover it; a slot
whose owner still runs (a second llmplan window) is left alone, so closing one window never
deletes another's unsaved work.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QLockFile

from llmplan.errors import PlanFileError
from llmplan.formats.atomic import atomic_write
from llmplan.plan.document import PlanDocument
from llmplan.plan.planfile import load_plan, save_plan
from llmplan.plan.resolve import inline_specs
from llmplan.resources_path import user_data_dir

AUTOSAVE_S = 60
MAX_RECENT = 10


def load(path: Path) -> PlanDocument:
    return load_plan(path)


def save(doc: PlanDocument, path: Path) -> Path:
    """Save with the model, GPU and network specs written in (``io.resolve.inline_specs``),
    so the file gives the same numbers on a machine with another catalog (DESIGN.md §3)."""
    return Path(save_plan(self_contained(doc), path))


def self_contained(doc: PlanDocument) -> PlanDocument:
    try:
        return inline_specs(doc)
    except Exception:  # an unresolvable plan is still saved as the person wrote it
        return doc


def autosave_folder() -> Path:
    return user_data_dir() / "autosave"


def _lock(plan: Path) -> QLockFile:
    lock = QLockFile(str(plan.with_suffix(".lock")))
    lock.setStaleLockTime(0)  # never judge by age: a live owner keeps its lock however long it runs
    return lock


def _remove(plan: Path) -> None:
    for p in (plan, plan.with_suffix(".json")):
        p.unlink(missing_ok=True)


class AutosaveSlot:
    """This window's recovery copy, created on the first autosave and locked while the window lives."""

    def __init__(self) -> None:
        self.path = autosave_folder() / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.llmplan"
        self._lock: QLockFile | None = None

    def write(self, doc: PlanDocument, origin: Path | None) -> Path:
        """Write the recovery copy (and, beside it, the file it belongs to)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._lock is None:
            lock = _lock(self.path)
            if not lock.tryLock(0):
                raise OSError(f"cannot lock {lock.fileName()} ({lock.error().name})")
            self._lock = lock
        save(doc, self.path)
        meta = {"origin": str(origin) if origin else None}
        atomic_write(self.path.with_suffix(".json"), json.dumps(meta))
        return self.path

    def clear(self) -> None:
        """The plan was saved (or the window closes cleanly): nothing to recover."""
        _remove(self.path)

    def release(self) -> None:
        """Clean exit: remove the copy and the lock."""
        self.clear()
        if self._lock is not None:
            self._lock.unlock()
            self._lock = None


@dataclass
class Recovery:
    """A crashed session's plan, held (its lock taken) until it is recovered or discarded."""

    doc: PlanDocument
    origin: Path | None
    path: Path
    lock: QLockFile | None = field(default=None, repr=False)

    def discard(self) -> None:
        _remove(self.path)
        if self.lock is not None:
            self.lock.unlock()


def recoverable() -> Recovery | None:
    """The newest plan a session that did not end cleanly left behind, with its original file. Slots of
    running windows are skipped; an unreadable copy is renamed ``*.unreadable``. ``<data>/autosave.llmplan``, where
    earlier builds kept their single copy, is looked at too."""
    folder = autosave_folder()
    slots = sorted(folder.glob("*.llmplan"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
    legacy = user_data_dir() / "autosave.llmplan"
    for path in [*slots, *([legacy] if legacy.is_file() else [])]:
        lock = None
        if path != legacy:
            lock = _lock(path)
            if not lock.tryLock(0):  # its window is still open
                continue
        try:
            doc = load(path)
        except (PlanFileError, OSError, ImportError):  # kept aside for a person to look at, never offered again
            os.replace(path, path.with_name(path.name + ".unreadable"))
            if lock is not None:
                lock.unlock()
            continue
        origin = None
        try:
            meta = json.loads(path.with_suffix(".json").read_text("utf-8"))
            origin = Path(meta["origin"]) if meta.get("origin") else None
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return Recovery(doc, origin, path, lock)
    return None


def push_recent(recent: list[str], path: Path) -> list[str]:
    text = str(path.resolve())
    return ([text] + [p for p in recent if p != text])[:MAX_RECENT]


def png_bytes(image) -> bytes:
    """A QImage or QPixmap as PNG bytes, so that pictures too are saved with ``atomic_write``."""
    from PySide6.QtCore import QBuffer, QIODevice

    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(buffer.data())
