"""torch.optim AdamW's foreach step: the moment-sized intermediates it allocates beside the states.

Source: PyTorch 2.0 torch/optim/adamw.py ``_multi_tensor_adamw`` (read 2026-11-27 in a public copy of the 2.0
code): ``exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)`` and ``denom = torch._foreach_add(exp_avg_sq_sqrt,
eps)``, both alive at ``_foreach_addcdiv_``: two tensor lists the size of the moments; pytorch/pytorch PR #104898
(2023-07-10, torch 2.1) keeps one (issue #97712: "a minimum budget of 1 intermediate"). The Trainer's optim was
adamw_torch (torch.optim.AdamW, foreach on CUDA) from transformers 4.32 (PR #25109) until adamw_torch_fused,
whose fused kernel allocates none (the profile default, 0). Tolerance: exact (the formula on Qwen-7B LoRA,
r 64, one A100, 512 tokens).
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve


def _memory(intermediates: int, **training):
    kw = dict(framework="hf-trainer", method="lora", micro_batch=1, global_batch=8, seq_len=512, recompute="full",
              optimizer="adamw", lora_rank=64, zero_stage=0)
    kw.update(training)
    doc = PlanDocument(model=ModelRef(id="Qwen/Qwen-7B"), hardware=HardwareRef(gpu="nvidia-a100-sxm4-80gb"),
                       training=TrainingSettings(**kw), workload="finetune", parallelism=ParallelLayout())
    sc = resolve(doc)
    sc = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
        update={"optimizer_intermediates": intermediates})})
    return estimate(sc).memory


def test_two_intermediates_the_size_of_one_moment_each_at_the_step():
    fused, torch20, torch21 = _memory(0), _memory(2), _memory(1)
    assert fused.activations.inputs["phase"] == "loss backward"  # fused: the loss's backward is the peak
    assert torch20.activations.inputs["phase"] == "optimizer step"  # 7B LoRA at 512 tokens: now the step
    moment = fused.optimizer.value / 2  # fp32 adapters: one moment is 4 B per trained parameter
    assert torch20.buffers.value == pytest.approx(2 * moment)  # the step's only buffers
    assert torch21.total.value <= torch20.total.value


@pytest.mark.parametrize("training", [dict(optimizer="adam8bit"), dict(paged_optimizer=True), dict(zero_stage=2)])
def test_none_for_another_optimizer_a_paged_one_or_deepspeed(training):
    """bitsandbytes' optimizers and DeepSpeed's FusedAdam step without them."""
    assert _memory(2, **training).total.value == _memory(0, **training).total.value
