"""``training.framework = auto``: which profile a plan gets (``catalog.frameworks.auto_choice``), and that auto
never turns a plan into a field error that the other default profile would run.

The policy (docs/fine-tuning-frameworks.md, "Which framework auto picks"): LoRA and QLoRA at any scale and full
fine-tunes within one node run the Hugging Face Trainer + PEFT (sharded with ZeRO/FSDP on several GPUs);
pre-training and multi-node full fine-tunes run Megatron-Core. Before, every multi-GPU fine-tune was Megatron,
including QLoRA of Qwen2.5-72B on 2 × 48 GB (new-user trial, round 31, row 14), which Megatron-Core does not run
with bitsandbytes, while Answer.AI's FSDP + QLoRA trains 70B on 2 × 24 GB with the Hugging Face stack
(answer.ai/posts/2024-03-06-fsdp-qlora.html, 2024-03-06). Exact: the profile chosen is an id.
"""

from __future__ import annotations

import pytest

from llmplan.core.framework_profile import SWITCH_NAMES
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.resolve import resolve


def _plan(workload: str, method: str = "full", gpus: int = 1, nodes: int = 1, *sets: str) -> PlanDocument:
    doc = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"), workload=workload,
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=gpus, nodes=nodes))
    network = ["hardware.network=ib-ndr-400"] if nodes > 1 else []
    return apply_overrides(doc, [*network, f"training.method={method}", f"parallelism.dp={gpus * nodes}", *sets])


@pytest.mark.parametrize(("workload", "method", "gpus", "nodes", "profile"), [
    ("finetune", "qlora", 2, 1, "hf-trainer"),  # was megatron: the trial's QLoRA on 2 × 48 GB
    ("finetune", "lora", 8, 1, "hf-trainer"),
    ("finetune", "lora", 8, 4, "hf-trainer"),   # adapters at any scale: FSDP/ZeRO-3 over the nodes
    ("finetune", "full", 1, 1, "hf-trainer"),
    ("finetune", "full", 8, 1, "hf-trainer"),   # one node: Trainer + DeepSpeed/FSDP (LLaMA-Factory, axolotl)
    ("finetune", "full", 8, 2, "megatron"),
    ("pretrain", "full", 1, 1, "megatron"),
    ("pretrain", "full", 8, 2, "megatron"),
])
def test_auto_chooses_by_method_and_scale(workload, method, gpus, nodes, profile):
    assert resolve(_plan(workload, method, gpus, nodes)).framework_profile.id == profile


def test_a_layout_the_hugging_face_trainer_lacks_takes_megatron_instead_of_an_error():
    doc = _plan("finetune", "lora", 2, 1, "parallelism.tp=2", "parallelism.dp=1")
    assert resolve(doc).framework_profile.id == "megatron"


@pytest.mark.parametrize("switch", SWITCH_NAMES)
@pytest.mark.parametrize(("workload", "gpus", "nodes"), [("finetune", 2, 1), ("finetune", 8, 2), ("pretrain", 1, 1)])
def test_auto_never_refuses_a_switch_one_default_supports(switch, workload, gpus, nodes):
    """Every switch the Hugging Face or the Megatron profile supports resolves under auto, whatever the scale."""
    from llmplan.catalog.frameworks import load_framework_profiles

    profiles = load_framework_profiles()
    if not any(switch in profiles[k].switches for k in ("hf-trainer", "megatron")):
        pytest.skip(f"{switch}: neither default profile has it (a field error naming the profiles that do)")
    method = "lora" if switch in ("lora_on_lm_head", "modules_to_save") else "full"
    doc = _plan(workload, method if workload == "finetune" else "full", gpus, nodes, f"training.{switch}=true")
    assert switch in resolve(doc).framework_profile.switches
