"""FSDP-based profiles offer only the sharding FSDP has (fsdp34, issue 26; 2026-11-28).

PyTorch FSDP has no ZeRO-1: its strategies shard nothing (NO_SHARD, or DDP), the gradients with the optimizer states
(SHARD_GRAD_OP; FSDP2 ``reshard_after_forward=False``: ZeRO-2) or the weights too (FULL_SHARD: ZeRO-3); the hybrids
are ``training.shard_group``. What each profile's code runs, read where catalogs/frameworks.toml cites it:

- fsdp2, pytorch/torchtitan b5bcd76 (2026-08-21): config/configs.py ParallelismConfig (data_parallel_shard_degree 1
  with a replicate degree is DDP; fsdp_reshard_after_forward "never" / "always"), distributed/fsdp.py
  get_fsdp_reshard_after_forward_policy ("default": reshard unless PP, where it does not: ZeRO-2 beside PP);
- composer, mosaicml/composer 6405188 (2026-04-29): distributed/mosaic_parallelism.py SHARDING_MAP (NO_SHARD,
  SHARD_GRAD_OP, FULL_SHARD, _HYBRID_SHARD_ZERO2, HYBRID_SHARD); llm-foundry 8c8dd48: all 25 train yamls FULL_SHARD;
- torchtune, pytorch/torchtune bd2a0fc (2026-04-23): the distributed recipes always fully_shard
  (fsdp_reshard_after_forward True / False), "DDP is currently not supported"; one GPU is the single-device recipes;
- axolotl 067b021 (fsdp_config reshard_after_forward) and LLaMA-Factory ff6d4d1 (examples/accelerate fsdp_config*:
  FULL_SHARD): the plan's ZeRO is accelerate FSDP there; their DeepSpeed configs (axolotl zero1.json …) are the
  hf-trainer profile's, whose ZeRO is DeepSpeed's (stages 1–3);
- llama3-meta: arXiv 2407.21783 §3.3.2 (FSDP sharding optimizer states and gradients: 2; 0 and 3 assumed).

A ZeRO stage left open moves to the nearest the profile runs (ZeRO-1 → ZeRO-2: SHARD_GRAD_OP is FSDP's smallest
sharding) and the plan says so; a stated stage no GPU count of the profile runs is a field error. Exact checks (sets
of stages, the chosen stage, the messages); no tolerance.
"""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.cli import main
from llmplan.core.framework_profile import auto_zero, nearest_zero, zero_choices
from llmplan.core.search import search
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import PlanFileError
from llmplan.fit.changes import more_gpu_steps, training_steps
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan, save_plan
from llmplan.plan.resolve import resolve

FSDP_PROFILES = ("fsdp2", "composer", "axolotl", "llama-factory", "llama3-meta")


def _doc(framework: str, gpus: int = 8, method: str = "full", **training) -> PlanDocument:
    t = TrainingSettings(framework=framework, method=method, **training)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=gpus),
                        workload="finetune", training=t, parallelism=ParallelLayout(dp=gpus))


def test_each_profile_lists_what_its_code_runs():
    p = load_framework_profiles()
    for name in FSDP_PROFILES:
        assert zero_choices(p[name], 8) == zero_choices(p[name], 1) == (0, 2, 3), name
        assert p[name].zero_setting, name  # the field error names the framework's own settings
    assert zero_choices(p["torchtune"], 8) == (2, 3) and zero_choices(p["torchtune"], 1) == (0,)
    for name in ("hf-trainer", "deepspeed", "megatron"):  # DeepSpeed's ZeRO (hf-trainer's --deepspeed), Megatron
        assert zero_choices(p[name], 8) == (0, 1, 2, 3), name
    # their ZeRO-2 is FSDP's SHARD_GRAD_OP (gathered per block each micro-batch), not DeepSpeed's bucketed ZeRO-2
    assert all(p[n].fsdp_zero2 for n in ("fsdp2", "composer", "torchtune", "axolotl", "llama-factory"))
    assert p["fsdp2"].zero2_with_pp  # torchtitan's default under PP: reshard_after_forward False


def test_the_nearest_stage_rule():
    p = load_framework_profiles()
    assert nearest_zero(p["fsdp2"], 1, 8) == 2  # SHARD_GRAD_OP, FSDP's smallest sharding
    assert nearest_zero(p["fsdp2"], 1, 8, pp=4) == 2  # beside PP too (zero2_with_pp)
    assert nearest_zero(p["composer"].model_copy(update={"zero2_with_pp": False}), 1, 8, pp=4) == 0
    assert nearest_zero(p["torchtune"], 1, 1) == 0 and nearest_zero(p["torchtune"], 0, 8) == 2
    assert nearest_zero(p["unsloth"], 1, 2) == 0
    assert nearest_zero(p["megatron"], 1, 8) == 1 and nearest_zero(p["fsdp2"], 3, 8) == 3
    # the default ZeRO-1 on one data-parallel rank without offload shards nothing: left as it is
    assert auto_zero(p["axolotl"], 1, 1, 1, "none") == 1
    assert auto_zero(p["axolotl"], 1, 1, 1, "cpu") == 2
    assert auto_zero(p["axolotl"], 1, 8, 8, "none") == 2


@pytest.mark.parametrize("framework", ["fsdp2", "torchtune", "axolotl", "composer"])
def test_the_search_offers_no_stage_the_profile_lacks(framework):
    prof = load_framework_profiles()[framework]
    rows = search(resolve(_doc(framework)), top=60).best
    assert rows and all(r.training.zero_stage in zero_choices(prof, r.parallelism.gpus) for r in rows)
    assert 1 not in {r.training.zero_stage for r in rows}  # one-GPU rows (fewer GPUs) included


@pytest.mark.parametrize("framework", [*FSDP_PROFILES, "torchtune"])
def test_the_nearest_changes_offer_no_stage_the_profile_lacks(framework):
    doc = _doc(framework, gpus=2)
    sets = [o for g in training_steps(doc, 2) + more_gpu_steps(doc) for step in g for o in step.overrides]
    stages = {int(o.split("=")[1]) for o in sets if o.startswith("training.zero_stage=")}
    assert 3 in stages and stages <= set(zero_choices(load_framework_profiles()[framework], 2)), sets


def test_cli_search_lists_no_zero_1_under_fsdp2(capsys):
    assert main(["search", "--model", "meta-llama/Llama-3.2-1B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
                 "--workload", "finetune", "--set", "training.framework=fsdp2", "--set", "training.method=full",
                 "--top", "40", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["best"]
    assert rows and {r["training"]["zero_stage"] for r in rows} <= {0, 2, 3}


def test_a_default_plan_moves_to_zero_2_and_says_so(capsys):
    """Llama-3.1-8B full fine-tune on 8 × H100 under fsdp2, ZeRO left open: before, priced at ZeRO-1 (104.79 GiB per
    GPU, does not fit); now ZeRO-2 (77.30 GiB, fits), and the plan says why."""
    sc, _ev = evaluate_plan(_doc("fsdp2"))
    assert sc.training.zero_stage == 2
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
                 "--workload", "finetune", "--set", "training.framework=fsdp2", "--set", "training.method=full",
                 "--set", "parallelism.dp=8"]) == 0
    out = capsys.readouterr().out
    assert "auto: ZeRO-2 (fsdp2 runs no ZeRO-1; the nearest it runs)" in out
    assert "does not fit on the GPUs without it" not in out  # the move is not the fit ladder's
    # one GPU: the default ZeRO-1 shards nothing and stays (no move, no note)
    sc1, _ = evaluate_plan(_doc("axolotl", gpus=1, method="lora"))
    assert sc1.training.zero_stage == 1


def test_an_old_plan_with_fsdp2_and_zero_1_is_a_field_error(tmp_path, capsys):
    """A plan file that states ZeRO-1 under fsdp2 (a run FSDP cannot make) loads, and evaluating it is a field error
    naming the stages fsdp2 runs, the fix, and the profiles that run ZeRO-1; the same plan without the stage runs at
    ZeRO-2 with the note above."""
    path = tmp_path / "old.llmplan"
    save_plan(_doc("fsdp2"), path)
    assert '"zero_stage"' not in path.read_text()  # left open, the stage is not written: a saved plan leaves it open
    data = json.loads(path.read_text())
    data["training"]["zero_stage"] = 1  # written by hand or by another tool
    path.write_text(json.dumps(data))
    doc = load_plan(path)
    with pytest.raises(PlanFileError) as err:
        evaluate_plan(doc)
    msg = str(err.value)
    assert msg.startswith("training.zero_stage: the fsdp2 profile runs ZeRO stages 0, 2, 3 (")
    assert "set zero_stage to 2 (the nearest it runs) or leave it out" in msg
    assert msg.endswith("profiles that run ZeRO-1: deepspeed, hf-trainer, megatron (training.framework)")
    assert main(["estimate", str(path)]) != 0
    assert "training.zero_stage: the fsdp2 profile runs ZeRO stages 0, 2, 3" in capsys.readouterr().err
    # a stage the profile runs on another GPU count is honoured (torchtune's distributed recipe on one GPU)
    evaluate_plan(_doc("torchtune", gpus=1, zero_stage=3, offload="cpu"))
