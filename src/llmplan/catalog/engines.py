"""Serving-engine profiles from ``catalogs/engines.toml``, with the user's overrides.

The user's ``<user data dir>/engines.toml`` uses the same layout; an entry there
replaces the shipped entry of the same id field by field.
"""

from __future__ import annotations

from pathlib import Path

from llmplan.catalog.profiles import ProfileCatalog
from llmplan.core.engine_profile import EngineProfile
from llmplan.errors import CatalogError

ALIASES = {"llama.cpp": "llama-cpp", "llamacpp": "llama-cpp", "llama.cpp-2026": "llama-cpp-2026",
           "trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm", "hf": "transformers", "mlx-lm": "mlx"}


_CATALOG = ProfileCatalog("engines.toml", EngineProfile, "engine")


def load_engine_profiles(user_file: Path | None = None) -> dict[str, EngineProfile]:
    """Every engine profile by id: shipped entries, then the user's overrides; cached until a file changes.

    A broken user file, or a user entry that does not validate, is skipped (the shipped profile stays)
    and listed in ``engine_problems()``: user data never stops an estimate."""
    return dict(_CATALOG.load(user_file)[0])


def engine_problems(user_file: Path | None = None) -> list[str]:
    """What was skipped in the user's engines.toml, one line each."""
    return list(_CATALOG.load(user_file)[1])


def engine_notes(user_file: Path | None = None) -> list[str]:
    """Which shipped engines the user's engines.toml changes (not a problem, but worth saying)."""
    return list(_CATALOG.load(user_file)[2])


def splitting_engines() -> list[str]:
    """Ids of the engines that split a model's layers across unequal cards (``splits_unequal_cards``),
    the default engine first: what a mixed-card machine can run, user engines included."""
    ids = [pid for pid, p in load_engine_profiles().items() if p.splits_unequal_cards]
    return sorted(ids, key=lambda pid: pid != "llama-cpp")


def engine_profile(engine_id: str) -> EngineProfile:
    """The profile for ``engine_id`` (aliases such as 'llama.cpp' accepted)."""
    profiles = load_engine_profiles()
    key = ALIASES.get(engine_id.strip().lower(), engine_id.strip().lower())
    if key not in profiles:
        raise CatalogError(f"unknown engine '{engine_id}'; known engines: {', '.join(sorted(profiles))}")
    return profiles[key]
