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

import contextlib
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QLockFile

from llmplan.errors import InputError, PlanFileError
from llmplan.formats.atomic import atomic_write
from llmplan.formats.bounded import parse_json, read_capped
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
    """Remove a slot and its note; one that cannot go (a folder or a read-only file put in its place) stays,
    never raising into a save or a recovery (a folder named ``<slot>.json`` raised IsADirectoryError)."""
    for p in (plan, plan.with_suffix(".json")):
        with contextlib.suppress(OSError):
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
        # The metadata first, atomically: a kill at any point leaves a complete old or new link to the
        # original file beside a complete old or new copy (a half-written .json lost the link before).
        meta = {"origin": str(origin) if origin else None}
        atomic_write(self.path.with_suffix(".json"), json.dumps(meta))
        save(doc, self.path)
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

    def describe(self, now: datetime | None = None) -> str:
        """'the unsaved plan “70B on 4090” (mine.llmplan), autosaved today at 14:05': which plan, and when."""
        name = f"“{self.doc.name}”" if self.doc.name else "an untitled plan"
        where = f" ({self.origin.name})" if self.origin else ", never saved to a file"
        return f"the unsaved plan {name}{where}, {when_saved(_mtime(self.path), now)}"

    def discard(self) -> None:
        _remove(self.path)
        if self.lock is not None:
            self.lock.unlock()


def when_saved(mtime: float, now: datetime | None = None) -> str:
    """'autosaved today at 14:05', 'autosaved yesterday at 09:30' or 'autosaved on 2026-11-20 at 18:02'."""
    if mtime <= 0:
        return "autosaved at an unknown time"
    at = datetime.fromtimestamp(mtime)
    now = now or datetime.now()
    days = (now.date() - at.date()).days
    day = "today" if days == 0 else "yesterday" if days == 1 else f"on {at:%Y-%m-%d}"
    return f"autosaved {day} at {at:%H:%M}"


def start_folder(last: object) -> Path:
    """The folder a file dialog opens in: ``last`` when it is still a folder, else Documents (platformdirs),
    else the home folder."""
    if isinstance(last, str) and last:
        p = Path(last)
        if p.is_absolute() and p.is_dir():
            return p
    try:
        import platformdirs

        docs = Path(platformdirs.user_documents_dir())
        if docs.is_dir():
            return docs
    except Exception:  # no Documents folder known on this system
        pass
    return Path.home()


def safe_stem(name: str | None) -> str:
    """A plan name as a file name: no separators or control characters, at most 100 characters."""
    stem = re.sub(r'[\\/:*?"<>|\x00-\x1f]+', "-", (name or "").strip()).strip(" .-")[:100]
    return stem or "plan"


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _slot_of_temp(name: str) -> str | None:
    """``.<pid>-<hex>.llmplan.XXXX.tmp`` or ``.<pid>-<hex>.json.XXXX.tmp`` -> ``<pid>-<hex>``."""
    m = re.fullmatch(r"\.(\d+-[0-9a-f]+)\.(?:llmplan|json)\.[^/]*\.tmp", name)
    return m.group(1) if m else None


def remove_stale_temps(folder: Path) -> int:
    """Temp files a killed save left behind: removed when their slot's owner is gone (its lock can be
    taken), so a save in progress in another window is never disturbed. Returns how many went."""
    removed = 0
    if not folder.is_dir():
        return 0
    for tmp in folder.glob(".*.tmp"):
        slot = _slot_of_temp(tmp.name)
        if slot is None:
            continue
        lock = _lock(folder / f"{slot}.llmplan")
        if lock.tryLock(0):
            try:
                tmp.unlink(missing_ok=True)
                removed += 1
            except OSError:
                pass
            finally:
                lock.unlock()
    return removed


def trusted_origin(text: object) -> Path | None:
    """The original file named in a slot's metadata, only if it is a plan the user could open:
    an absolute ``.llmplan`` path that is an ordinary plan file (or a new name in an existing folder).
    The metadata is a file on disk like any other; Save must never overwrite what it merely names."""
    if not isinstance(text, str) or not text or "\x00" in text:
        return None
    p = Path(text)
    if not p.is_absolute() or p.suffix.lower() != ".llmplan":
        return None
    try:
        if not p.exists():
            return p if p.parent.is_dir() else None
        load_plan(p)
    except (PlanFileError, OSError, ValueError):
        return None
    return p


def _read_origin(meta_path: Path) -> Path | None:
    try:
        meta = parse_json(read_capped(meta_path, 64 * 1024, what="autosave note"), str(meta_path),
                          what="autosave note")
    except InputError:
        return None
    return trusted_origin(meta.get("origin")) if isinstance(meta, dict) else None


def _set_aside(path: Path, problems: list[str], reason: str) -> None:
    try:
        os.replace(path, path.with_name(path.name + ".unreadable"))
        problems.append(f"{path.name}: {reason}; kept as {path.name}.unreadable")
    except OSError as exc:
        problems.append(f"{path.name}: {reason}; could not set it aside ({exc.strerror or exc})")


def recoverable(problems: list[str] | None = None) -> Recovery | None:
    """The newest plan a session that did not end cleanly left behind, with its original file. Slots of
    running windows are skipped; an unreadable copy is renamed ``*.unreadable`` and said in ``problems``
    (a dangling link or an unreadable slot never hides the real crash copy behind it). Stale temp files
    of dead sessions are removed first. ``<data>/autosave.llmplan``, where earlier builds kept their
    single copy, is looked at too."""
    problems = [] if problems is None else problems
    folder = autosave_folder()
    try:
        remove_stale_temps(folder)
        slots = sorted(folder.glob("*.llmplan"), key=_mtime, reverse=True) if folder.is_dir() else []
    except OSError as exc:
        problems.append(f"{folder}: cannot list the autosave folder ({exc.strerror or exc})")
        slots = []
    legacy = user_data_dir() / "autosave.llmplan"
    for path in [*slots, *([legacy] if legacy.is_file() else [])]:
        lock = None
        if path != legacy:
            lock = _lock(path)
            if not lock.tryLock(0):  # its window is still open
                continue
        try:
            doc = load(path)
        except Exception as exc:  # kept aside for a person to look at, never offered again
            _set_aside(path, problems, str(exc).replace(str(path), "").strip(": ") or type(exc).__name__)
            if lock is not None:
                lock.unlock()
            continue
        return Recovery(doc, _read_origin(path.with_suffix(".json")), path, lock)
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
