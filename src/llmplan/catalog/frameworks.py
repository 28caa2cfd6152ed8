"""Training-framework profiles from ``catalogs/frameworks.toml``, with the user's overrides.

The user's ``<user data dir>/frameworks.toml`` uses the same layout; an entry there replaces
the shipped entry of the same id field by field. ``framework_for`` is the one rule that picks
a profile when a plan leaves ``training.framework`` on "auto".
"""

from __future__ import annotations

from pathlib import Path

from llmplan.catalog.profiles import ProfileCatalog
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.errors import CatalogError

ALIASES = {"hf": "hf-trainer", "transformers": "hf-trainer", "huggingface": "hf-trainer", "peft": "hf-trainer",
           "megatron-lm": "megatron",
           "llamafactory": "llama-factory", "llama_factory": "llama-factory", "tune": "torchtune", "megatron-core": "megatron", "torchtitan": "fsdp2", "fsdp": "fsdp2"}


_CATALOG = ProfileCatalog("frameworks.toml", FrameworkProfile, "framework")


def load_framework_profiles(user_file: Path | None = None) -> dict[str, FrameworkProfile]:
    """Every framework profile by id: shipped entries, then the user's overrides (a broken user file or
    entry is skipped and listed in ``framework_problems()``); cached until a file changes."""
    return dict(_CATALOG.load(user_file)[0])


def framework_problems(user_file: Path | None = None) -> list[str]:
    """What was skipped in the user's frameworks.toml, one line each."""
    return list(_CATALOG.load(user_file)[1])


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
    """Ids of the profiles that support ``switch`` (a ``SWITCH_NAMES`` entry), for "grad_clip:off" that can run
    without gradient clipping, or, for "quant_base:<kind>", that train LoRA on that quantised base: what a
    refused plan is told to pick instead."""
    profiles = load_framework_profiles()
    if switch == "grad_clip:off":
        return sorted(k for k, p in profiles.items() if not p.grad_clip_always)
    if switch.startswith("quant_base:"):
        kind = switch.split(":", 1)[1]
        return sorted(k for k, p in profiles.items() if kind in p.quant_bases)
    return sorted(k for k, p in profiles.items() if switch in p.switches)
