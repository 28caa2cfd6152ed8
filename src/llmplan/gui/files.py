"""Plan files for the window: open, save (atomic), recent files, autosave and crash
recovery.

Reading and writing go through ``llmplan.io.planfile`` (atomic save, migration,
version checks). Autosave writes the current plan every ``AUTOSAVE_S`` seconds to
``<user data dir>/autosave.llmplan`` while there are unsaved changes, and removes it
on a clean exit; a leftover autosave at start-up means the last session did not end
cleanly, and the window offers to recover it.
"""

from __future__ import annotations

import json
from pathlib import Path

from llmplan.errors import PlanFileError
from llmplan.io.plan_document import PlanDocument
from llmplan.resources_path import user_data_dir

AUTOSAVE_S = 60
MAX_RECENT = 10


def load(path: Path) -> PlanDocument:
    try:
        from llmplan.io.planfile import load_plan
    except ImportError:  # a build without llmplan.io.planfile: plain JSON, validated
        return _load_plain(path)
    return load_plan(path)


def save(doc: PlanDocument, path: Path) -> Path:
    """Save with the model, GPU and network specs written in (``io.resolve.inline_specs``),
    so the file gives the same numbers on a machine with another catalog (DESIGN.md §3)."""
    doc = self_contained(doc)
    try:
        from llmplan.io.planfile import save_plan
    except ImportError:
        return _save_plain(doc, path)
    return Path(save_plan(doc, path))


def self_contained(doc: PlanDocument) -> PlanDocument:
    try:
        from llmplan.io.resolve import inline_specs
    except ImportError:
        return doc
    try:
        return inline_specs(doc)
    except Exception:  # an unresolvable plan is still saved as the person wrote it
        return doc


def _load_plain(path: Path) -> PlanDocument:
    from pydantic import ValidationError

    try:
        return PlanDocument.model_validate_json(Path(path).read_bytes())
    except OSError as exc:
        raise PlanFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise PlanFileError(f"{path}: not a valid llmplan plan ({where}: {first['msg']})") from None


def _save_plain(doc: PlanDocument, path: Path) -> Path:
    import os
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(doc.model_dump_json(indent=2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def autosave_path() -> Path:
    return user_data_dir() / "autosave.llmplan"


def autosave(doc: PlanDocument, origin: Path | None) -> Path:
    """Write the recovery copy (and where it came from, beside it)."""
    folder = user_data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    save(doc, autosave_path())
    (folder / "autosave.json").write_text(json.dumps({"origin": str(origin) if origin else None}), "utf-8")
    return autosave_path()


def clear_autosave() -> None:
    for name in ("autosave.llmplan", "autosave.json"):
        (user_data_dir() / name).unlink(missing_ok=True)


def recoverable() -> tuple[PlanDocument, Path | None] | None:
    """The plan a crashed session left behind, with its original file, if any."""
    path = autosave_path()
    if not path.is_file():
        return None
    try:
        doc = load(path)
    except (PlanFileError, OSError, ImportError):
        return None
    origin = None
    try:
        meta = json.loads((user_data_dir() / "autosave.json").read_text("utf-8"))
        origin = Path(meta["origin"]) if meta.get("origin") else None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return doc, origin


def push_recent(recent: list[str], path: Path) -> list[str]:
    text = str(path.resolve())
    return ([text] + [p for p in recent if p != text])[:MAX_RECENT]
