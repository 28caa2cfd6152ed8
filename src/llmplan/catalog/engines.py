"""Serving-engine profiles from ``catalogs/engines.toml``, with the user's overrides.

The user's ``<user data dir>/engines.toml`` uses the same layout; an entry there
replaces the shipped entry of the same id field by field.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import ValidationError

from llmplan.catalog.file_stamp import Stamp, files_stamp
from llmplan.core.engine_profile import EngineProfile
from llmplan.errors import CatalogError
from llmplan.formats.bounded import load_toml
from llmplan.resources_path import catalogs_dir, user_data_dir

ALIASES = {"llama.cpp": "llama-cpp", "llamacpp": "llama-cpp", "trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm",
           "hf": "transformers", "mlx-lm": "mlx"}


MAX_FILE_BYTES = 4 * 1024 * 1024  # engines.toml is a few KB; never read a huge file whole


def _read(path: Path) -> dict[str, dict]:
    data = load_toml(path, MAX_FILE_BYTES, what="engines file", error=CatalogError)
    for key, entry in data.items():
        if not isinstance(entry, dict):
            raise CatalogError(f"{path}: '{key}' must be a table [{key}] of engine settings")
    return data


def _profile(key: str, entry: dict) -> EngineProfile:
    try:
        return EngineProfile(id=key, **entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"engine '{key}': field '{field}': {first['msg']}") from None
    except TypeError as exc:  # a key that is not a name (TOML allows any)
        raise CatalogError(f"engine '{key}': {exc}") from None


def load_engine_profiles(user_file: Path | None = None) -> dict[str, EngineProfile]:
    """Every engine profile by id: shipped entries, then the user's overrides; cached until a file changes.

    A broken user file, or a user entry that does not validate, is skipped (the shipped profile stays)
    and listed in ``engine_problems()``: user data never stops an estimate."""
    return dict(_load(user_file)[0])


def engine_problems(user_file: Path | None = None) -> list[str]:
    """What was skipped in the user's engines.toml, one line each."""
    return list(_load(user_file)[1])


def engine_notes(user_file: Path | None = None) -> list[str]:
    """Which shipped engines the user's engines.toml changes (not a problem, but worth saying)."""
    return list(_load(user_file)[2])


_Loaded = tuple[dict[str, EngineProfile], tuple[str, ...], tuple[str, ...]]


def _load(user_file: Path | None) -> _Loaded:
    user = user_file if user_file is not None else user_data_dir() / "engines.toml"
    shipped = catalogs_dir() / "engines.toml"
    return _cached_profiles(str(shipped), str(user), files_stamp([shipped, user]))


@functools.lru_cache(maxsize=4)
def _cached_profiles(shipped_path: str, user_path: str, stamp: Stamp) -> _Loaded:
    out = {key: _profile(key, entry) for key, entry in _read(Path(shipped_path)).items()}  # shipped: must be valid
    problems: list[str] = []
    notes: list[str] = []
    user = Path(user_path)
    if user.exists() or user.is_symlink():
        try:
            entries = _read(user)
        except CatalogError as exc:
            return out, (f"{exc}; skipped, the shipped engines are in use",), ()
        for key, entry in entries.items():
            base = out.get(key)
            merged = {**(base.model_dump(exclude={"id"}) if base else {}), **entry}
            try:
                out[key] = _profile(key, merged)
            except CatalogError as exc:
                problems.append(f"{user}: {exc}; skipped" + (", the shipped entry is in use" if base else ""))
                continue
            if base is not None:
                notes.append(f"{user}: [{key}] changes the shipped engine ({', '.join(sorted(entry))})")
    return out, tuple(problems), tuple(notes)


def engine_profile(engine_id: str) -> EngineProfile:
    """The profile for ``engine_id`` (aliases such as 'llama.cpp' accepted)."""
    profiles = load_engine_profiles()
    key = ALIASES.get(engine_id.strip().lower(), engine_id.strip().lower())
    if key not in profiles:
        raise CatalogError(f"unknown engine '{engine_id}'; known engines: {', '.join(sorted(profiles))}")
    return profiles[key]
