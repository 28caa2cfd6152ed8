"""Serving-engine profiles from ``catalogs/engines.toml``, with the user's overrides.

The user's ``<user data dir>/engines.toml`` uses the same layout; an entry there
replaces the shipped entry of the same id field by field.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from pydantic import ValidationError

from llmplan.catalog.file_stamp import Stamp, files_stamp
from llmplan.core.engine_profile import EngineProfile
from llmplan.errors import CatalogError
from llmplan.resources_path import catalogs_dir, user_data_dir

ALIASES = {"llama.cpp": "llama-cpp", "llamacpp": "llama-cpp", "trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm",
           "hf": "transformers", "mlx-lm": "mlx"}


def read_profile_file(path: Path, kind: str = "engine") -> dict[str, dict]:
    """A profiles TOML file (engines, frameworks) as {id: table}, size-capped, with one clear error."""
    try:
        if path.stat().st_size > 4 * 1024 * 1024:  # engines.toml is a few KB; never read a huge file whole
            raise CatalogError(f"{path}: too large for an {kind}s file (limit 4 MiB); fix or remove the file")
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise CatalogError(f"{path}: not valid TOML ({exc}); fix or remove the file") from None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    for key, entry in data.items():
        if not isinstance(entry, dict):
            raise CatalogError(f"{path}: '{key}' must be a table [{key}] of {kind} settings")
    return data


def load_engine_profiles(user_file: Path | None = None) -> dict[str, EngineProfile]:
    """Every engine profile by id: shipped entries, then the user's overrides; cached until a file changes."""
    user = user_file if user_file is not None else user_data_dir() / "engines.toml"
    shipped = catalogs_dir() / "engines.toml"
    return dict(_cached_profiles(str(shipped), str(user), files_stamp([shipped, user])))


@functools.lru_cache(maxsize=4)
def _cached_profiles(shipped_path: str, user_path: str, stamp: Stamp) -> dict[str, EngineProfile]:
    raw = read_profile_file(Path(shipped_path))
    user = Path(user_path)
    if user.is_file():
        for key, entry in read_profile_file(user).items():
            raw[key] = {**raw.get(key, {}), **entry}
    out: dict[str, EngineProfile] = {}
    for key, entry in raw.items():
        try:
            out[key] = EngineProfile(id=key, **entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise CatalogError(f"engine '{key}': field '{field}': {first['msg']}") from None
    return out


def engine_profile(engine_id: str) -> EngineProfile:
    """The profile for ``engine_id`` (aliases such as 'llama.cpp' accepted)."""
    profiles = load_engine_profiles()
    key = ALIASES.get(engine_id.strip().lower(), engine_id.strip().lower())
    if key not in profiles:
        raise CatalogError(f"unknown engine '{engine_id}'; known engines: {', '.join(sorted(profiles))}")
    return profiles[key]
