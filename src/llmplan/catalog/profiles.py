"""Profile catalogs (serving engines, training frameworks): shipped TOML tables with the user's overrides.

The user's file in the user data dir uses the same layout; an entry there replaces the shipped entry
of the same id field by field. A broken user file, or a user entry that does not validate, is skipped
(the shipped profile stays) and listed as a problem: user data never stops an estimate. Entries that
change a shipped profile are listed as notes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from llmplan.catalog.file_stamp import Stamp, files_stamp
from llmplan.catalog.snapshot import within_read
from llmplan.core.present import one_line
from llmplan.errors import CatalogError
from llmplan.formats.bounded import load_toml
from llmplan.resources_path import catalogs_dir, user_data_dir

MAX_FILE_BYTES = 4 * 1024 * 1024  # profile files are a few KB; never read a huge file whole

P = TypeVar("P", bound=BaseModel)
Loaded = tuple[Mapping[str, P], tuple[str, ...], tuple[str, ...]]  # read-only: the cache hands out this very object


class ProfileCatalog(Generic[P]):
    """``filename`` in catalogs/ and in the user data dir, each table one ``model`` with ``id`` = its key."""

    def __init__(self, filename: str, model: type[P], kind: str) -> None:
        self.filename, self.model, self.kind = filename, model, kind
        self._cached = functools.lru_cache(maxsize=4)(self._build)

    def read(self, path: Path) -> dict[str, dict]:
        data = load_toml(path, MAX_FILE_BYTES, what=f"{self.kind}s file", error=CatalogError)
        for key, entry in data.items():
            if not isinstance(entry, dict):
                raise CatalogError(f"{path}: '{key}' must be a table [{key}] of {self.kind} settings")
        return data

    def profile(self, key: str, entry: dict) -> P:
        try:
            return self.model(id=key, **entry)
        except ValidationError as exc:  # each wrong field (at most three), so one edit fixes them all
            wrong = [f"field '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" if e["loc"] else e["msg"]
                     for e in exc.errors()[:3]]
            raise CatalogError(f"{self.kind} '{key}': {'; '.join(wrong)}") from None
        except TypeError as exc:  # a key that is not a name (TOML allows any)
            raise CatalogError(f"{self.kind} '{key}': {exc}") from None

    def load(self, user_file: Path | None = None) -> Loaded:
        """(profiles by id, problems, notes); cached until a file changes (checked once per
        ``catalog.snapshot.catalog_read``)."""
        return within_read(("profiles", self.filename, user_file), lambda: self._load_checked(user_file))

    def _load_checked(self, user_file: Path | None) -> Loaded:
        user = user_file if user_file is not None else user_data_dir() / self.filename
        shipped = catalogs_dir() / self.filename
        return self._cached(str(shipped), str(user), files_stamp([shipped, user]))

    def _build(self, shipped_path: str, user_path: str, stamp: Stamp) -> Loaded:
        out = {key: self.profile(key, entry) for key, entry in self.read(Path(shipped_path)).items()}
        problems: list[str] = []
        notes: list[str] = []
        user = Path(user_path)
        if user.exists() or user.is_symlink():
            try:
                entries = self.read(user)
            except CatalogError as exc:
                return MappingProxyType(out), (f"{exc}; skipped, the shipped {self.kind}s are in use",), ()
            for key, entry in entries.items():
                base = out.get(key)
                merged = {**(base.model_dump(exclude={"id"}) if base else {}), **entry}
                try:
                    out[key] = self.profile(key, merged)
                except CatalogError as exc:
                    problems.append(one_line(f"{user}: {exc}; skipped" + (", the shipped entry is in use" if base else "")))
                    continue
                if base is not None:
                    notes.append(f"{user}: [{key}] changes the shipped {self.kind} ({', '.join(sorted(entry))})")
        return MappingProxyType(out), tuple(problems), tuple(notes)
