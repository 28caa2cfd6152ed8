"""The ZeRO stages each framework runs (``FrameworkProfile.zero_stages``, ``single_gpu_zero_stages``;
``framework_profile.zero_choices``) bound what the search, the auto policy and the nearest changes offer (chart33,
leftover33; 2026-11-28).

Sources (catalogs/frameworks.toml cites each): unsloth patches a single-device model (FastLanguageModel) and has no
DeepSpeed ZeRO or FSDP path of its own, so it runs ZeRO-0 only; torchtune on one GPU is its single-device recipes
(recipes/*_single_device.py at bd2a0fc), which shard nothing; its distributed recipes shard with FSDP2 (2 or 3). The
FSDP-based profiles run no ZeRO-1 (tests/core/search/test_fsdp_zero_stages.py); DeepSpeed, the Hugging Face
Trainer (DeepSpeed's ZeRO) and Megatron keep every stage. Exact checks (sets of stages, the steps offered); no tolerance.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import FrameworkProfile, zero_choices
from llmplan.core.search import search
from llmplan.core.search.policy import apply_policy
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.fit.changes import more_gpu_steps, training_steps
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

KNOBS = ("micro_batch", "zero_stage", "recompute", "offload")


def _doc(framework: str, gpus: int, model: str = "meta-llama/Llama-3.2-1B", gpu: str = "nvidia-h100-sxm-80gb",
         seq_len: int = 2048, method: str = "lora") -> PlanDocument:
    t = TrainingSettings(framework=framework, seq_len=seq_len, micro_batch=1, global_batch=4 * gpus, zero_stage=0,
                         method=method)
    return PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                        workload="finetune", training=t, parallelism=ParallelLayout(dp=gpus))


def test_the_profiles_say_which_stages_they_run():
    p = load_framework_profiles()
    assert zero_choices(p["unsloth"], 1) == zero_choices(p["unsloth"], 2) == (0,)
    assert zero_choices(p["torchtune"], 1) == (0,)
    assert zero_choices(p["torchtune"], 8) == (2, 3)  # its distributed recipes: FSDP2 only (tests/core/search/test_fsdp_zero_stages.py)
    for name in ("deepspeed", "hf-trainer", "megatron"):
        assert zero_choices(p[name], 1) == zero_choices(p[name], 8) == (0, 1, 2, 3)


def test_a_one_gpu_offload_needs_zero_0_on_one_gpu():
    tune = load_framework_profiles()["torchtune"].model_dump()
    with pytest.raises(ValueError, match="single_gpu_zero_stages"):
        FrameworkProfile(**{**tune, "single_gpu_zero_stages": (3,)})
    with pytest.raises(ValueError, match="at least one stage"):
        FrameworkProfile(**{**tune, "zero_stages": ()})


def test_the_search_offers_unsloth_no_zero_stage_on_two_gpus():
    """Llama-3.2-1B LoRA on 2 × H100: every layout fits, and before the profile field the search listed ZeRO-1/2/3
    over the two data-parallel ranks; now every row is ZeRO-0. The Hugging Face Trainer keeps its stages."""
    rows = search(resolve(_doc("unsloth", 2)), top=50).best
    assert rows and {r.training.zero_stage for r in rows} == {0}
    hf = search(resolve(_doc("hf-trainer", 2)), top=50).best
    assert {r.training.zero_stage for r in hf} > {0}


def test_the_policy_and_nearest_changes_never_take_unsloth_to_zero_3():
    """Llama-3.1-8B LoRA at 64k tokens on 2 × RTX 4090 does not fit under unsloth: the ladder's ZeRO-3 step (which
    it took before) is skipped, and neither the nearest changes nor "more GPUs" propose ZeRO-3."""
    doc = _doc("unsloth", 2, model="meta-llama/Llama-3.1-8B", gpu="nvidia-rtx-4090-24gb", seq_len=65536)
    sc = resolve(doc)
    assert not estimate(sc).fits
    choice = apply_policy(sc, KNOBS, estimate)
    assert all(k != "zero_stage" for k, _ in choice.chosen)
    sets = [o for g in training_steps(doc, 2) for s in g for o in s.overrides]
    assert "training.zero_stage=3" not in sets
    assert more_gpu_steps(doc.model_copy(update={"hardware": HardwareRef(gpu="nvidia-rtx-4090-24gb")})) == []
    hf = doc.model_copy(update={"training": doc.training.model_copy(update={"framework": "hf-trainer"})})
    assert ("zero_stage", 3) in apply_policy(resolve(hf), KNOBS, estimate).chosen
    assert any("training.zero_stage=3" in s.overrides for g in training_steps(hf, 2) for s in g)
