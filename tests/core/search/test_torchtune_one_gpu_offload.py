"""torchtune on one GPU: the auto policy, the search (the CLI's automatic layout and the app's Auto…) and the
nearest changes offload with what torchtune's single-device recipes build, torchao's CPUOffloadOptimizer
(``training.offload = cpu`` at ZeRO-0), and never with a ZeRO stage: one GPU is the single-device recipes, which
shard nothing (issue 26; FSDP's ``fsdp_cpu_offload`` is the distributed recipes', shown only when the plan states
ZeRO-3).

Source of the rule: pytorch/torchtune docs/source/tutorials/memory_optimizations.rst at bd2a0fc (2026-04-23):
CPUOffloadOptimizer "is only supported for single-device recipes. To use CPU-offloading in distributed recipes,
use fsdp_cpu_offload=True instead", and of the ordering: "Prioritize using it only if the other techniques are not
enough" (activation checkpointing and a smaller micro-batch come first; the policy's ladder). The 8-bit and paged
optimizers and optimizer-in-backward (recipes/configs/llama3_1/8B_full_single_device.yaml: PagedAdamW8bit,
optimizer_in_bwd: True) change the plan's optimizer or need no gradient accumulation: the plan states them, the
automatic knobs never switch them (docs/offload.md).

Llama-3.1-8B, full fine-tune, pure bf16, seq 4,096, global batch 64 (the CLI's defaults): weights and gradients
2 x 8,030,261,248 B = 29.92 GiB stay on the GPU under torchao, so it fits a 40 GB A100 at micro-batch 1 with full
recompute (35.79 GiB of 39.59), a 48 GB L40S at micro-batch 2 by the search, and an 80 GB A100 needs no offload.
Tolerances: the verdicts are exact; the memory to 0.01 GiB of the engine's figure at the time of writing.
"""

from __future__ import annotations

import json

import pytest

from llmplan.cli import main
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.fit.changes import training_steps
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

GIB = 2**30
CLI = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune",
       "--set", "training.framework=torchtune", "--set", "training.method=full", "--json"]


def _doc(gpu: str) -> PlanDocument:
    """The layout given (one GPU), every automatic knob open: the auto policy's case."""
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), hardware=HardwareRef(gpu=gpu),
                        workload="finetune", training=TrainingSettings(framework="torchtune", method="full"),
                        parallelism=ParallelLayout(tp=1))


@pytest.mark.parametrize(("gpu", "offload"), [("nvidia-a100-sxm4-40gb", True), ("nvidia-l40s-48gb", True),
                                              ("nvidia-a100-sxm4-80gb", False)])
def test_the_policy_offloads_with_the_single_device_recipe(gpu, offload):
    sc, est = evaluate_plan(_doc(gpu))
    assert est.memory.fits
    t = sc.training
    if not offload:
        assert t.offload == "none"
        return
    assert (t.offload, t.zero_stage, t.recompute, t.micro_batch) == ("cpu", 0, "full", 1)
    assert sc.framework.offload_style == "torchao"  # not FSDP's ZeRO-3 offload, which it chose before
    assert est.memory.total.value / GIB == pytest.approx(35.79, abs=0.01)


@pytest.mark.parametrize(("gpu", "offload", "micro_batch"), [("nvidia-a100-sxm4-40gb", "cpu", 1),
                                                             ("nvidia-l40s-48gb", "cpu", 2),
                                                             ("nvidia-a100-sxm4-80gb", "none", 2)])
def test_the_cli_automatic_layout_and_the_search_pick_the_same(capsys, gpu, offload, micro_batch):
    """The CLI without a layout runs the search (the app's Auto… runs the same ``search``): its first row."""
    assert main([*CLI, "--gpu", gpu]) == 0
    data = json.loads(capsys.readouterr().out)
    t = data["training"]
    assert (t["offload"], t["zero_stage"], t["micro_batch"]) == (offload, 0, micro_batch)
    if offload == "cpu":
        assert "torchao.optim.CPUOffloadOptimizer" in data["verdict"]["headline"]
    assert main(["search", *CLI[1:], "--gpu", gpu, "--gpus", "1"]) == 0
    best = json.loads(capsys.readouterr().out)["best"][0]["training"]
    assert (best["offload"], best["zero_stage"], best["micro_batch"]) == (offload, 0, micro_batch)


def test_the_search_lists_only_the_single_device_recipe_on_one_gpu(capsys):
    """Every row of the search on one GPU runs at ZeRO-0 (torchtune's single-device recipes shard nothing; the
    profile's ``single_gpu_zero_stages``): no ZeRO-1/2/3 with or without offload, which no torchtune recipe runs on
    one device. A stated ZeRO-3 is honoured: the distributed recipe's FSDP offload, as the user asked."""
    args = ["search", *CLI[1:], "--gpu", "nvidia-a100-sxm4-40gb", "--gpus", "1", "--top", "50"]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)["best"]
    assert rows and {r["training"]["zero_stage"] for r in rows} == {0}
    assert main([*args, "--set", "training.zero_stage=3"]) == 0
    best = json.loads(capsys.readouterr().out)["best"][0]["training"]
    assert (best["offload"], best["zero_stage"]) == ("cpu", 3)
    # a 24 GB card: the recipe's offload does not fit (weights and gradients, 29.92 GiB, stay on the GPU), and
    # the search says so rather than offering FSDP's ZeRO-3 offload, which it listed before
    assert main(["search", *CLI[1:], "--gpu", "nvidia-rtx-4090-24gb", "--gpus", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["best"] == [] and "no layout fits" in out["note"]


def test_the_policy_stops_at_the_recipe_where_it_does_not_fit():
    """Where even torchao's offload does not fit (8B full on a 24 GB card), the ladder does not go on to FSDP's
    ZeRO-3 offload: its closest step is the recipe's, at ZeRO-0."""
    sc, est = evaluate_plan(_doc("nvidia-rtx-4090-24gb"))
    assert not est.memory.fits
    assert (sc.training.offload, sc.training.zero_stage) == ("cpu", 0)


def test_the_nearest_changes_offer_the_recipe_alone():
    """The nearest changes' offload group (``fit.changes.training_steps``): the recipe's offload only (ZeRO-0 set
    where the plan holds another stage), no FSDP ZeRO-3 offload on one GPU; on two GPUs FSDP's."""
    # ZeRO-3 stated: the distributed recipe's stage (ZeRO-1, which torchtune runs nowhere, is a field error since
    # fsdp34: tests/core/search/test_fsdp_zero_stages.py)
    for zero, sets in ((0, ("training.offload=cpu",)), (3, ("training.offload=cpu", "training.zero_stage=0"))):
        doc = _doc("nvidia-a100-sxm4-40gb").model_copy(update={"training": TrainingSettings(
            framework="torchtune", method="full", zero_stage=zero, recompute="full", micro_batch=1,
            offload="none")})
        offload = next(g for g in training_steps(doc, 1) if g[0].kind == "offload")
        assert [s.overrides for s in offload] == [sets]
        assert "torchao CPUOffloadOptimizer" in offload[0].what
        if zero == 0:
            two = next(g for g in training_steps(doc, 2) if g[0].kind == "offload")
    assert [s.overrides for s in two] == [("training.offload=cpu", "training.zero_stage=3")]
