"""Training-framework profiles from ``catalogs/frameworks.toml``, with the user's overrides.

The user's ``<user data dir>/frameworks.toml`` uses the same layout; an entry there replaces
the shipped entry of the same id field by field. ``framework_for`` is the one rule that picks
a profile when a plan leaves ``training.framework`` on "auto".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def framework_catalog() -> Mapping[str, FrameworkProfile]:
    """The profiles by id as loaded, read-only: the same object until a file changes, so that a result worked out
    from it can be kept while it is (``plan.resolve.plan_framework_profile``)."""
    return _CATALOG.load()[0]


def framework_problems(user_file: Path | None = None) -> list[str]:
    """What was skipped in the user's frameworks.toml, one line each."""
    return list(_CATALOG.load(user_file)[1])


def framework_id(name: str) -> str:
    key = name.strip().lower()
    return ALIASES.get(key, key)


# The auto policy (docs/fine-tuning-frameworks.md, "Which framework auto picks"). Pre-training and full fine-tunes
# over several nodes: Megatron-Core, the framework the published pre-training runs and the paper formulas describe.
# LoRA and QLoRA at any scale, and full fine-tunes within one node: the Hugging Face Trainer + PEFT, sharded by
# DeepSpeed ZeRO or FSDP when there are several GPUs: Megatron-Core has no bitsandbytes QLoRA, and adapters on a
# few GPUs are trained with the Hugging Face stack (LLaMA-Factory, axolotl and TRL all run on it; Answer.AI's
# FSDP + QLoRA trains 70B on 2 x 24 GB this way).
AUTO_REASONS = {
    "pretrain": "for pre-training, as the published pre-training runs",
    "adapters": "for LoRA/QLoRA, sharded with ZeRO/FSDP on several GPUs (Megatron-Core has no bitsandbytes QLoRA)",
    "full_node": "for a full fine-tune within one node (ZeRO/FSDP on several GPUs)",
    "full_nodes": "for a full fine-tune over several nodes (tensor and pipeline parallelism)",
}


def auto_choice(workload: str, method: str = "full", nodes: int = 1) -> tuple[str, str]:
    """The profile id "auto" prefers for a plan, and why (one of ``AUTO_REASONS``): see the policy above."""
    if workload != "finetune":
        return "megatron", AUTO_REASONS["pretrain"]
    if method in ("lora", "qlora"):
        return "hf-trainer", AUTO_REASONS["adapters"]
    if nodes <= 1:
        return "hf-trainer", AUTO_REASONS["full_node"]
    return "megatron", AUTO_REASONS["full_nodes"]


def framework_for(requested: str, workload: str, gpus: int = 1, method: str = "full", nodes: int = 1,
                  refusal: Callable[[FrameworkProfile], str] | None = None) -> str:
    """The profile id a plan uses: ``requested`` (an id or alias), or for "auto" the policy's choice
    (``auto_choice``). ``refusal(profile)``: why the plan cannot run under a profile ("" when it can: its layout,
    the switches it turns on, its quantised base); auto then takes the other of Hugging Face and Megatron-Core
    where that one can, so that auto never makes a plan a field error another default would run. ``gpus`` is
    kept for callers that know only the GPU count: one GPU is one node."""
    if requested.strip().lower() != "auto":
        return framework_id(requested)
    chosen, _why = auto_choice(workload, method, nodes if gpus > 1 else 1)
    if refusal is None:
        return chosen
    profiles = load_framework_profiles()
    other = "megatron" if chosen == "hf-trainer" else "hf-trainer"
    if chosen in profiles and refusal(profiles[chosen]) and other in profiles and not refusal(profiles[other]):
        return other
    return chosen


def framework_profile(requested: str, workload: str = "pretrain", gpus: int = 1, method: str = "full",
                      nodes: int = 1, refusal: Callable[[FrameworkProfile], str] | None = None) -> FrameworkProfile:
    """The profile for ``requested`` (an id, an alias, or "auto": ``framework_for``); unknown ids list the known
    ones."""
    profiles = load_framework_profiles()
    key = framework_for(requested, workload, gpus, method, nodes, refusal)
    if key not in profiles:
        raise CatalogError(f"unknown training framework '{requested}'; known: auto, {', '.join(sorted(profiles))}")
    return profiles[key]


def profiles_supporting(switch: str) -> list[str]:
    """Ids of the profiles that support ``switch`` (a ``SWITCH_NAMES`` entry), for "grad_clip:off" that can run
    without gradient clipping, for "loss:<kind>" that run that loss, for "recompute:selective" that have selective
    recompute, for "quant_base:<kind>" that train LoRA on that quantised base, or, for "offload:cpu",
    "offload:nvme" and "offload:parameters", that offload there or that much, for "offload:fraction" that offload a
    share of the optimizer, for "offload:gradients" and "offload:overlap" that have torchao's offload_gradients or
    Megatron-Core's overlapped offload copies, for "zero:<stage>" that run that ZeRO stage: what a refused plan is
    told to pick instead."""
    profiles = load_framework_profiles()
    if switch == "grad_clip:off":
        return sorted(k for k, p in profiles.items() if not p.grad_clip_always)
    if switch.startswith("loss:"):
        kind = switch.split(":", 1)[1]
        return sorted(k for k, p in profiles.items() if kind in p.losses)
    if switch == "recompute:selective":
        return sorted(k for k, p in profiles.items() if p.selective_recompute)
    if switch == "offload:fraction":  # a share of the optimizer offloaded (training.optimizer_offload_fraction)
        return sorted(k for k, p in profiles.items() if p.offload_style == "optimizer" and p.offload_targets)
    if switch == "offload:gradients":  # torchao CPUOffloadOptimizer's offload_gradients (training.offload_gradients)
        return sorted(k for k, p in profiles.items() if p.single_gpu_offload_style == "torchao")
    if switch == "offload:overlap":  # HybridDeviceOptimizer's overlapped copies (training.overlap_cpu_optimizer_copies)
        return sorted(k for k, p in profiles.items() if p.offload_style == "optimizer" and p.offload_targets)
    if switch.startswith("offload:"):  # offload:cpu, offload:nvme, offload:parameters
        what = switch.split(":", 1)[1]
        return sorted(k for k, p in profiles.items() if what in p.offload_devices + p.offload_targets)
    if switch.startswith("zero:"):  # runs that ZeRO stage on some GPU count (framework_profile.zero_refusal)
        stage = int(switch.split(":", 1)[1])
        return sorted(k for k, p in profiles.items() if stage in p.zero_stages + (p.single_gpu_zero_stages or ()))
    if switch.startswith("quant_base:"):
        kind = switch.split(":", 1)[1]
        return sorted(k for k, p in profiles.items() if kind in p.quant_bases)
    return sorted(k for k, p in profiles.items() if switch in p.switches)
