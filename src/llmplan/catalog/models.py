"""The model catalog: one JSON file per model, shipped and user-added.

Each file holds a model's hub id, a few facts a person wants to see (name, family,
release, license, context) and its real ``config.json``, from which the exact
architecture (``ModelSpec``) is built. ``reference_params`` records a parameter total
measured elsewhere (the checkpoint's safetensors, a paper), with its source, so tests
can prove our count; it is ``null`` with a ``reference_note`` when none could be found.

Shipped entries live in ``catalogs_dir()/"models"``; a user's own entries in
``user_data_dir()/"models"`` override shipped ones with the same id. A broken file is
skipped and reported in ``ModelCatalog.problems``; loading never crashes on data.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from datetime import date
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from llmplan.catalog.snapshot import within_read
from llmplan.core.model import FusedLinear, ModelSpec
from llmplan.core.present import one_line
from llmplan.core.strict_fields import StrictFields
from llmplan.errors import CatalogError, ConfigError
from llmplan.formats.atomic import atomic_write
from llmplan.formats.bounded import parse_json, read_capped
from llmplan.formats.hf_config import spec_from_config
from llmplan.resources_path import catalogs_dir, user_data_dir

MAX_ENTRY_BYTES = 1024 * 1024  # an entry is a config.json plus a few fields: a few KB
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


class ReferenceParams(StrictFields):
    """A parameter total measured outside llmplan, and where it comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    total: int = Field(gt=0)
    source: str = Field(min_length=3)


class ModelEntry(StrictFields):
    """One catalog model. ``spec`` is built from ``config`` on first use and cached."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1, description="hub id, e.g. meta-llama/Meta-Llama-3-8B")
    display_name: str = Field(min_length=1)
    family: str = Field(min_length=1)
    release_date: str | None = None
    license: str | None = None
    context_length: int | None = Field(None, gt=0)
    source: str = Field(min_length=1, description="where the config came from")
    reference_params: ReferenceParams | None = None
    reference_note: str | None = None
    config: dict[str, Any]
    fused_linears: tuple[FusedLinear, ...] | None = Field(
        None, description="projections the checkpoint stores as one Linear module ('qkv', 'gate_up'); null: as the "
        "config's model_type has them (core.model.FUSED_LINEARS). Set it for a checkpoint whose layout differs "
        "from its family's modeling code (LoRA counts one adapter per module)"
    )
    user: bool = False

    @field_validator("release_date")
    @classmethod
    def _date(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not _DATE.match(v):
            raise ValueError(f"release_date must be YYYY-MM or YYYY-MM-DD, got {v!r}")
        y, m, *d = (int(p) for p in v.split("-"))
        date(y, m, d[0] if d else 1)  # raises ValueError on 2024-13 or 2024-02-30
        return v

    @model_validator(mode="after")
    def _reference_explained(self) -> ModelEntry:
        if self.reference_params is None and not self.user and not self.reference_note:
            raise ValueError("reference_params is null: add reference_note saying why no measured total exists")
        return self

    @cached_property
    def spec(self) -> ModelSpec:
        spec = spec_from_config(self.config, name=self.display_name)
        if self.fused_linears is None:
            return spec
        try:
            return ModelSpec.model_validate({**spec.model_dump(), "fused_linears": self.fused_linears})
        except ValidationError as exc:
            raise ConfigError(f"{self.id}: fused_linears: {exc.errors()[0]['msg']}") from None


class ModelCatalog:
    """All models, shipped and user-added, with lookup by id and text search."""

    def __init__(self, entries: Iterable[ModelEntry], problems: Iterable[str] = (), notes: Iterable[str] = ()) -> None:
        self._by_id = {e.id: e for e in entries}
        self._lower = {k.lower(): k for k in self._by_id}
        self.problems: list[str] = list(problems)
        self.notes: list[str] = list(notes)  # user entries that shadow a built-in one

    @property
    def entries(self) -> list[ModelEntry]:
        return sorted(self._by_id.values(), key=lambda e: (e.family, e.id.lower()))

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, model_id: object) -> bool:
        return isinstance(model_id, str) and model_id.lower() in self._lower

    def get(self, model_id: str) -> ModelEntry:
        """The entry with this id (case-insensitive; the part after the org is enough when unique);
        a CatalogError with close matches otherwise."""
        wanted = model_id.strip().lower()
        key = self._lower.get(wanted)
        if key is None and "/" not in wanted:  # "Meta-Llama-3-8B" names meta-llama/Meta-Llama-3-8B if unique
            tails = [k for lower, k in self._lower.items() if lower.split("/")[-1] == wanted]
            key = tails[0] if len(tails) == 1 else None
        if key is not None:
            return self._by_id[key]
        names = list(self._by_id)
        close = difflib.get_close_matches(model_id, names, n=3, cutoff=0.5)
        if not close:  # also try the part after the org, "Meta-Llama-3-8B" -> meta-llama/Meta-Llama-3-8B
            tails = {n.split("/")[-1].lower(): n for n in names}
            close = [tails[t] for t in difflib.get_close_matches(model_id.lower(), list(tails), n=3, cutoff=0.5)]
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise CatalogError(
            f"'{model_id}' is not a model in the catalog.{hint} "
            "List them with `llmplan-cli catalog models`, or pass a path to a config.json."
        )

    def search(self, text: str = "", family: str | None = None) -> list[ModelEntry]:
        """Entries whose id, name or family contain every word of ``text`` (case-insensitive)."""
        words = text.lower().split()
        fam = family.lower() if family else None
        out = []
        for e in self.entries:
            if fam and e.family.lower() != fam:
                continue
            hay = f"{e.id} {e.display_name} {e.family}".lower()
            if all(w in hay for w in words):
                out.append(e)
        return out

    @property
    def families(self) -> list[str]:
        return sorted({e.family for e in self._by_id.values()})


def _read_entry(path: Path, user: bool) -> ModelEntry:
    try:
        data = parse_json(read_capped(path, MAX_ENTRY_BYTES, what="model entry", error=CatalogError), "",
                          what="model entry", error=CatalogError)
    except CatalogError as exc:  # the caller prefixes the file name
        raise CatalogError(str(exc).removeprefix(f"{path}: ").removeprefix(": ")) from None
    if not isinstance(data, dict):
        raise CatalogError("expected a JSON object")
    data["user"] = user
    try:
        entry = ModelEntry.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "entry"
        raise CatalogError(f"{where}: {err['msg']}") from None
    entry.spec  # noqa: B018 - build it now, so a config we cannot size is reported here, not later
    return entry


def _read_dir(folder: Path, user: bool, problems: list[str]) -> list[ModelEntry]:
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            out.append(_read_entry(path, user))
        except (CatalogError, ConfigError, OSError) as exc:
            problems.append(one_line(f"{path.name}: {exc}"))
        except Exception as exc:  # a user entry never stops the app; a shipped one is a bug
            if not user:
                raise
            problems.append(one_line(f"{path.name}: unusable ({type(exc).__name__}: {str(exc)[:200]})"))
    return out


def user_models_dir() -> Path:
    return user_data_dir() / "models"


def load_model_catalog(*, refresh: bool = False, include_user: bool = True) -> ModelCatalog:
    """The shipped catalog merged with the user's entries (user wins on the same id). Cached.

    ``include_user=False`` gives the shipped entries alone (what tests of the shipped data use)."""
    if refresh:
        _load.cache_clear()
        return _load(str(user_models_dir()) if include_user else None)
    return within_read(("models", include_user), lambda: _load(str(user_models_dir()) if include_user else None))


@lru_cache(maxsize=4)
def _load(user_dir: str | None) -> ModelCatalog:
    problems: list[str] = []
    shipped = _read_dir(catalogs_dir() / "models", False, problems)
    user = _read_dir(Path(user_dir), True, problems) if user_dir else []
    merged = {e.id.lower(): e for e in shipped}
    notes = [f"user model '{e.id}' replaces the built-in entry of that id" for e in user if e.id.lower() in merged]
    merged.update({e.id.lower(): e for e in user})
    return ModelCatalog(merged.values(), problems, notes)


def _safe_filename(model_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.replace("/", "__")).strip("._")
    if not name:
        raise CatalogError(f"'{model_id}' cannot be used as a model id; use letters, digits, '/', '-', '_' or '.'")
    return name[:150] + ".json"


def save_user_model(config: dict[str, Any], name: str, *, model_id: str | None = None, family: str | None = None,
                    source: str = "imported by the user", license: str | None = None,
                    release_date: str | None = None) -> ModelEntry:
    """Import a config.json as a user catalog entry; returns it. Writes atomically.

    The config is validated first (it must size as a model), so a bad file never
    lands in the catalog.
    """
    model_id = (model_id or name).strip()
    spec = spec_from_config(config, name=name)  # raises ConfigError naming the bad key
    entry = ModelEntry(
        id=model_id, display_name=name, family=family or spec.model_type, release_date=release_date,
        license=license, context_length=spec.max_position_embeddings, source=source, reference_params=None,
        reference_note="imported by the user; no measured total", config=dict(config), user=True,
    )
    folder = user_models_dir()
    folder.mkdir(parents=True, exist_ok=True)
    payload = entry.model_dump(mode="json", exclude={"user"})
    text = json.dumps(payload, indent=1) + "\n"
    try:  # symmetric limits: refuse now what the next start would skip (it said "added", then it was gone)
        parse_json(text.encode("utf-8"), "the new entry", what="model entry", error=CatalogError)
        if len(text.encode("utf-8")) > MAX_ENTRY_BYTES:
            raise CatalogError(f"{len(text.encode('utf-8')):,} bytes, over the {MAX_ENTRY_BYTES:,}-byte limit of a "
                               "model entry")
    except (CatalogError, UnicodeEncodeError) as exc:
        raise CatalogError(f"'{model_id}' cannot be added to your models: {exc}") from None
    atomic_write(folder / _safe_filename(model_id), text)
    _load.cache_clear()
    return entry
