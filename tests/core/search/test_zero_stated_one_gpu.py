"""A ZeRO stage the plan states on one GPU without offload: the estimate and the search follow one rule,
``framework_profile.one_rank_zero`` (through ``zero_refusal``), so they agree (zero1gpu34, 2026-11-28).

Sources of the rule (read, not run): DeepSpeed runs every stage on a data-parallel group of one
(deepspeed/runtime/zero/stage_1_and_2.py and stage3.py partition over ``dp_process_group``; one partition, its
buffers and hooks still made; Qwen's one-GPU Q-LoRA script runs ZeRO-2 that way); PyTorch FSDP1 on a world of one
runs FULL_SHARD as NO_SHARD (torch/distributed/fsdp/_init_utils.py); unsloth has no ZeRO or FSDP path at all
(unslothai/unsloth README, models/llama.py), so a stated stage there is a field error in both.

Before: ``estimate`` priced hf-trainer/deepspeed ZeRO-3 on one H100 (Llama-3.2-1B full fine-tune: it fits), while
``search`` of the same plan said "no layout can run training.zero_stage=3 as set on these GPUs: ... on one GPU it runs
only with a CPU offload". The search's top row re-estimates with the same engine, so memory and tokens/s agree to
float rounding (rel 1e-9); the verdicts are exact.
"""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.cli import main
from llmplan.core.framework_profile import one_rank_zero
from llmplan.core.search import quick_layout
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

ARGS = ["--model", "meta-llama/Llama-3.2-1B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "1",
        "--workload", "finetune", "--set", "training.zero_stage=3", "--json"]


@pytest.mark.parametrize("framework", ["hf-trainer", "deepspeed"])
def test_estimate_and_search_agree_on_a_stated_zero3_on_one_gpu(capsys, framework):
    args = [*ARGS, "--set", f"training.framework={framework}"]
    assert main(["estimate", *args]) == 0
    est = json.loads(capsys.readouterr().out)
    assert est["fits"] and est["training"]["zero_stage"] == 3 and est["training"]["offload"] == "none"
    assert main(["search", *args]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert best, "the search found no layout for a stage the estimate prices"
    top = best[0]
    assert top["layout"]["dp"] == 1 and top["training"]["zero_stage"] == 3 and top["training"]["offload"] == "none"
    assert top["training"]["micro_batch"] == est["training"]["micro_batch"]
    assert top["memory_per_gpu_bytes"] == pytest.approx(est["memory_per_gpu"]["total"], rel=1e-9)
    assert top["tokens_per_s"] == pytest.approx(est["compute"]["tokens_per_s"], rel=1e-9)


def test_unsloth_refuses_a_stated_zero3_in_both(capsys):
    args = [*ARGS, "--set", "training.framework=unsloth", "--set", "training.method=lora"]
    for cmd in ("estimate", "search"):
        assert main([cmd, *args]) != 0
        err = capsys.readouterr().err
        assert "training.zero_stage: the unsloth profile runs ZeRO stages 0" in err, (cmd, err)


def test_the_rule():
    """Left open: only ZeRO-0 on one rank without offload (ZeRO above it buys nothing there, so the search does not
    propose it); stated: kept where the profile runs it on some GPU count (torchtune's distributed recipe launched on
    one device included), never under unsloth."""
    profiles = load_framework_profiles()
    assert one_rank_zero(profiles["deepspeed"], None) == (0,)
    assert one_rank_zero(profiles["deepspeed"], 2) == (0, 2)
    assert one_rank_zero(profiles["hf-trainer"], 3) == (0, 3)
    assert one_rank_zero(profiles["torchtune"], 3) == (0, 3)
    assert one_rank_zero(profiles["fsdp2"], 1) == (0,)  # FSDP has no ZeRO-1: a field error before any search
    assert one_rank_zero(profiles["unsloth"], 3) == (0,)


def test_the_quick_model_takes_the_estimates_layout():
    """``quick_layout`` checks a given layout by the same rule (``space.check_layout``): the stated ZeRO-3 on one
    GPU was "training.zero_stage > 0 needs data parallelism (dp·cp > 1) or offload"."""
    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.2-1B"), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                       workload="finetune", training=TrainingSettings(framework="deepspeed", zero_stage=3),
                       parallelism=ParallelLayout(tp=1))
    sc, _ = evaluate_plan(doc)
    ranked, _ = quick_layout(sc)
    assert (ranked.training.zero_stage, ranked.parallelism.dp) == (3, 1)
