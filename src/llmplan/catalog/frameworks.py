"""Training-framework profiles from ``catalogs/frameworks.toml``, with the user's overrides.

The user's ``<user data dir>/frameworks.toml`` uses the same layout; an entry there replaces
the shipped entry of the same id field by field. ``framework_for`` is the one rule that picks
a profile when a plan leaves ``training.framework`` on "auto".
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import ValidationError

from llmplan.catalog.engines import read_profile_file
from llmplan.catalog.file_stamp import Stamp, files_stamp
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.errors import CatalogError
from llmplan.resources_path import catalogs_dir, user_data_dir

ALIASES = {"hf": "hf-trainer", "transformers": "hf-trainer", "huggingface": "hf-trainer", "peft": "hf-trainer",
           "megatron-lm": "megatron",
           "llamafactory": "llama-factory", "llama_factory": "llama-factory", "tune": "torchtune", "megatron-core": "megatron", "torchtitan": "fsdp2", "fsdp": "fsdp2"}


def load_framework_profiles(user_file: Path | None = None) -> dict[str, FrameworkProfile]:
    """Every framework profile by id: shipped entries, then the user's overrides; cached until a file changes."""
    user = user_file if user_file is not None else user_data_dir() / "frameworks.toml"
    shipped = catalogs_dir() / "frameworks.toml"
    return dict(_cached_profiles(str(shipped), str(user), files_stamp([shipped, user])))


@functools.lru_cache(maxsize=4)
def _cached_profiles(shipped_path: str, user_path: str, stamp: Stamp) -> dict[str, FrameworkProfile]:
    raw = read_profile_file(Path(shipped_path), "framework")
    user = Path(user_path)
    if user.is_file():
        for key, entry in read_profile_file(user, "framework").items():
            raw[key] = {**raw.get(key, {}), **entry}
    out: dict[str, FrameworkProfile] = {}
    for key, entry in raw.items():
        try:
            out[key] = FrameworkProfile(id=key, **entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise CatalogError(f"framework '{key}': field '{field}': {first['msg']}") from None
    return out


def framework_id(name: str) -> str:
    key = name.strip().lower()
    return ALIASES.get(key, key)


def framework_for(requested: str, workload: str, gpus: int) -> str:
    """The profile id a plan uses. "auto": fine-tuning on one GPU is a Hugging Face Trainer + PEFT run
    (what most people who fine-tune on one card use); everything else Megatron-Core, the framework the
    published pre-training runs and the paper formulas describe."""
    if requested.strip().lower() != "auto":
        return framework_id(requested)
    return "hf-trainer" if workload == "finetune" and gpus == 1 else "megatron"


def framework_profile(requested: str, workload: str = "pretrain", gpus: int = 1) -> FrameworkProfile:
    """The profile for ``requested`` (an id, an alias, or "auto"); unknown ids list the known ones."""
    profiles = load_framework_profiles()
    key = framework_for(requested, workload, gpus)
    if key not in profiles:
        raise CatalogError(f"unknown training framework '{requested}'; known: auto, {', '.join(sorted(profiles))}")
    return profiles[key]


def profiles_supporting(switch: str) -> list[str]:
    """Ids of the profiles that support ``switch`` (a ``SWITCH_NAMES`` entry) or, for "quant_base:<kind>",
    that train LoRA on that quantised base: what a refused plan is told to pick instead."""
    profiles = load_framework_profiles()
    if switch.startswith("quant_base:"):
        kind = switch.split(":", 1)[1]
        return sorted(k for k, p in profiles.items() if kind in p.quant_bases)
    return sorted(k for k, p in profiles.items() if switch in p.switches)
