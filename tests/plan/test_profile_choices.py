"""What the chosen framework can run: ``training.loss`` per profile (``FrameworkProfile.losses``) and selective
recompute where the framework has it (``FrameworkProfile.selective_recompute``), issue 26.

Which losses each framework runs is read from its code (catalogs/frameworks.toml names the file for each profile):
Megatron-Core's ``compute_language_model_loss`` runs the vocab-parallel cross-entropy or, with
``cross_entropy_fusion_impl te``, Transformer Engine's; the Hugging Face stack runs transformers' ForCausalLMLoss
(or Liger's fused linear cross-entropy with ``use_liger_kernel``); torchtune its chunked loss or a plain
cross-entropy on the upcast logits (``TransformerDecoder.unembed``); unsloth its fused kernels only. Before
this, ``te_ce`` (Transformer Engine's loss) was accepted under the Hugging Face Trainer, which cannot run it.

The Hugging Face Trainer's ``gradient_checkpointing`` checkpoints every decoder layer or none: no selective
recompute. A plan that leaves ``training.recompute`` on its default (selective) runs as none there; with flash
attention the engine priced the two alike, so its numbers do not move (exact). A plan that states selective
is a field error naming the profiles that have it. Exact checks: ids, messages and equal estimates.
"""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.frameworks import load_framework_profiles, profiles_supporting
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import LOSS_KINDS
from llmplan.errors import PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.planfile import loads_plan
from llmplan.plan.resolve import resolve

L8 = "meta-llama/Llama-3.1-8B"
H100 = "nvidia-h100-sxm-80gb"


def _doc(*sets: str, workload: str = "finetune") -> PlanDocument:
    doc = PlanDocument(model=ModelRef(id=L8), hardware=HardwareRef(gpu=H100), workload=workload)
    return apply_overrides(doc, ["training.method=lora", "training.seq_len=2048", *sets])


def test_every_profile_runs_its_own_loss_and_every_loss_has_a_profile():
    profiles = load_framework_profiles()
    for p in profiles.values():
        assert p.loss in p.losses, p.id
        if "liger" in p.switches:
            assert "fused_linear" in p.losses, p.id
    for kind in LOSS_KINDS:
        assert profiles_supporting(f"loss:{kind}"), kind
    assert profiles_supporting("loss:te_ce") == ["megatron"]
    assert "hf-trainer" not in profiles_supporting("loss:chunked")


def test_te_ce_under_the_hugging_face_trainer_is_a_field_error_naming_who_runs_it():
    with pytest.raises(PlanFileError) as err:
        resolve(_doc("training.framework=hf-trainer", "training.loss=te_ce"))
    msg = str(err.value)
    assert msg.startswith("training.loss: the hf-trainer profile does not run te_ce; profiles that do: megatron")
    assert "choose auto (upcast, its own) or one of upcast, upcast_shifted, shifted_16bit, fused_linear" in msg


@pytest.mark.parametrize(("framework", "loss"), [("unsloth", "upcast"), ("torchtune", "fused_linear"),
                                                 ("fsdp2", "chunked"), ("megatron", "fused_linear")])
def test_a_loss_the_framework_cannot_run_is_refused(framework, loss):
    workload = "pretrain" if framework in ("fsdp2", "megatron") else "finetune"
    sets = ["training.method=full"] if workload == "pretrain" else []
    with pytest.raises(PlanFileError, match=f"training.loss: the {framework} profile does not run {loss}"):
        resolve(_doc(f"training.framework={framework}", f"training.loss={loss}", *sets, workload=workload))


def test_auto_takes_a_framework_that_runs_the_stated_loss_and_its_own_loss_otherwise():
    assert resolve(_doc("training.loss=te_ce")).framework_profile.id == "megatron"  # LoRA would be hf-trainer
    sc = resolve(_doc())
    assert (sc.framework_profile.id, sc.training.loss) == ("hf-trainer", "upcast")
    assert resolve(_doc("training.liger=true")).training.loss == "fused_linear"
    assert resolve(_doc("training.framework=torchtune")).training.loss == "chunked"


def test_a_saved_plan_with_a_loss_its_profile_cannot_run_loads_and_says_what_to_choose():
    """Plans saved before the check keep loading; the estimate is refused with the field error (as a switch the
    profile does not support is), never a crash."""
    text = json.dumps({"format": "llmplan", "schema_version": 5, "workload": "finetune",
                       "model": {"id": L8}, "hardware": {"gpu": H100},
                       "training": {"method": "lora", "framework": "hf-trainer", "loss": "te_ce"}})
    doc = loads_plan(text)
    assert doc.training.loss == "te_ce"
    with pytest.raises(PlanFileError, match=r"profiles that do: megatron .* choose auto"):
        evaluate_plan(doc)


def test_every_profile_says_whether_it_has_selective_recompute():
    has = profiles_supporting("recompute:selective")
    assert {"megatron", "deepspeed"} <= set(has)
    assert not {"hf-trainer", "torchtune", "unsloth", "llama-factory", "axolotl", "fsdp2"} & set(has)


@pytest.mark.parametrize("framework", ["hf-trainer", "llama-factory", "axolotl", "torchtune", "unsloth"])
def test_the_default_selective_runs_as_none_where_the_framework_has_no_selective_recompute(framework):
    """The plan leaves recompute on its default: the scenario says none, and the estimate is the one the plan
    stating none gets (flash attention: identical memory and step time)."""
    layout = ["parallelism.dp=1"]
    default = resolve(_doc(f"training.framework={framework}", *layout))
    assert default.training.recompute == "none"
    stated = resolve(_doc(f"training.framework={framework}", "training.recompute=none", *layout))
    a, b = estimate(default), estimate(stated)
    assert a.memory.total.value == b.memory.total.value
    assert a.compute.step_time_s.value == b.compute.step_time_s.value


def test_megatron_keeps_selective_recompute():
    assert resolve(_doc("training.framework=megatron", "parallelism.dp=1")).training.recompute == "selective"


def test_stated_selective_under_the_trainer_is_a_field_error_naming_who_has_it():
    with pytest.raises(PlanFileError) as err:
        resolve(_doc("training.framework=hf-trainer", "training.recompute=selective"))
    msg = str(err.value)
    assert msg.startswith("training.recompute: the hf-trainer profile has no selective recompute")
    assert "set recompute to none or full (gradient checkpointing)" in msg and "deepspeed, llama3-meta, megatron" in msg


def test_the_search_never_offers_selective_where_the_framework_has_none():
    """Without flash attention the search tries selective recompute (it drops the scores), but not under the
    Hugging Face Trainer, which cannot run it: every layout it returns is none or full."""
    from llmplan.core.search.planner import search

    sc = resolve(_doc("training.framework=hf-trainer", "training.flash_attention=false", "parallelism.dp=1"))
    found = search(sc, top=50)
    assert found.best
    assert {r.training.recompute for r in found.best} <= {"none", "full"}
    mega = search(resolve(_doc("training.framework=megatron", "training.flash_attention=false", "parallelism.dp=1")),
                  top=50)
    assert "selective" in {r.training.recompute for r in mega.best}  # the same space where the framework has it
