"""Gradient clipping (``training.grad_clip``, ``core.training.grad_clip``): its bytes and launches as the frameworks'
code runs it, the auto default of every profile, the refusals, the search's price, and old plans.

Sources (read 2026-11-28):
- torch.nn.utils.clip_grad_norm_ (pytorch/pytorch torch/nn/utils/clip_grad.py at 01a57d8, torch 2.11): one
  ``_foreach_norm`` reading each gradient, ``vector_norm`` of the stacked norms, the clamped coefficient, one
  ``_foreach_mul_`` reading and writing each gradient: 3 × the gradient bytes, no host sync. Multi-tensor launches
  hold at most 110 tensors and 320 blocks of 65,536 elements (aten/src/ATen/native/cuda/MultiTensorApply.cuh).
- Megatron-Core clip_grad_norm_fp32 (NVIDIA/Megatron-LM megatron/core/optimizer/clip_grads.py at 0293807): with
  Transformer Engine, multi_tensor_l2norm then multi_tensor_scale_tensor over the main grads the optimizer owns.
- DeepSpeed ZeRO-1/2 (microsoft/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py at 022f223): ``step()`` runs
  ``get_grad_norm_direct`` (``torch.linalg.norm(g.data.double())`` per gradient) and ``unscale_and_clip_grads``
  (a ``mul_`` of the fp32 partition) at every step, clipping or not; the Trainer reads the norm with ``.item()``
  (transformers trainer.py ``model.get_global_grad_norm()``).
Tolerance: exact to rounding (1e-12 relative) for the hand-computed bytes and seconds; the search to 1e-9.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.quick import Columns, evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.training.kernel_rates import KERNEL_GAP_S
from llmplan.core.workload import ParallelLayout, TrainingSettings, effective_training
from llmplan.errors import PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.planfile import dumps_plan, loads_plan
from llmplan.plan.resolve import resolve

MODEL = "meta-llama/Llama-3.2-1B"
P = 1_235_814_400  # Llama-3.2-1B: 16 blocks of 60,821,504, the tied 128,256 × 2,048 embedding, the final norm
TENSORS = 1 + 16 * 9 + 1  # embedding, 9 per block (q, k, v, o, gate, up, down, 2 norms), the final norm
LAUNCH_S = 15.5e-6  # the profiles' launch_s: a one-element kernel from Python, H100 SXM, torch 2.11, 2026-11-24


def _plan(framework="hf-trainer", gpus=1, zero=0, grad_clip="auto", method="full", **kw) -> PlanDocument:
    t = TrainingSettings(framework=framework, method=method, micro_batch=4, global_batch=4 * gpus, seq_len=2048,
                         recompute="none", zero_stage=zero, optimizer="adamw", grad_clip=grad_clip, **kw)
    return PlanDocument(model=ModelRef(id=MODEL), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=gpus),
                        workload="finetune", training=t, parallelism=ParallelLayout(dp=gpus))


def _clip(est):
    return est.compute.grad_clip_s


def test_llama_1b_full_amp_clips_three_fp32_passes_by_hand():
    """The Hugging Face Trainer's default (max_grad_norm 1.0) on one H100, AMP: fp32 gradients of all
    1,235,814,400 parameters, read by _foreach_norm, read and written by _foreach_mul_: 12 B each, 14.83 GB.
    146 tensors fit 2 launches of 110, the elements need ⌈P / (320 · 65,536)⌉ = 59: 59 launches a pass, 2 · 59 +
    6 one-element kernels = 124. The host's 7 calls (108.5 µs) are under the GPU's 5.76 ms."""
    assert count_params(resolve(_plan()).model).total == P
    est = estimate(resolve(_plan()))
    fig = _clip(est)
    assert fig.inputs["bytes"] == 12 * P == 14_829_772_800
    assert fig.inputs["kernels"] == 2 * 59 + 6 == 124
    assert fig.inputs["host_s"] == pytest.approx(7 * LAUNCH_S, rel=1e-12)
    assert fig.inputs["sync_s"] == 0.0  # torch's clamp avoids the host sync; the Trainer keeps the norm a tensor
    bandwidth = fig.inputs["bandwidth"]
    assert bandwidth == pytest.approx(3.35e12 * 0.8, rel=1e-12)  # H100 SXM HBM3 × the catalog's achievable share
    assert fig.value == pytest.approx(12 * P / bandwidth + 124 * KERNEL_GAP_S, rel=1e-12)  # 5.757 ms
    assert est.compute.breakdown["gradient_clipping"] == fig.value
    off = estimate(resolve(_plan(grad_clip="off")))
    assert _clip(off) is None and "gradient_clipping" not in off.compute.breakdown
    assert est.compute.step_time_s.value - off.compute.step_time_s.value == pytest.approx(fig.value, rel=1e-9)


def test_lora_clips_only_the_adapters():
    """LoRA r=16 on the seven projections: only the adapters have gradients (fp32 under PEFT): 3 × 4 B × their
    count; 16 layers × 7 modules × (A, B) = 224 tensors, 3 launches a pass; the host's 7 calls set the time."""
    from llmplan.core.training.lora import adapter_params

    sc = resolve(_plan(method="lora", lora_rank=16))
    adapters = adapter_params(count_params(sc.model), sc.model, None, sc.training)
    fig = _clip(estimate(sc))
    assert fig.inputs["bytes"] == pytest.approx(12 * adapters, rel=1e-12)
    assert fig.inputs["kernels"] == 2 * 3 + 6
    assert fig.value == pytest.approx(max(12 * adapters / fig.inputs["bandwidth"] + 12 * KERNEL_GAP_S,
                                          7 * LAUNCH_S), rel=1e-12)


def test_deepspeed_computes_the_norm_whatever_the_setting():
    """The Trainer's ZeRO-2 on 2 GPUs runs DeepSpeed's optimizer: the 16-bit partition (P/2) is copied to fp64 and
    normed (2 + 8 + 8 B), the fp32 partition scaled (4 + 4 B): 26 B per element; 2 kernels and calls per tensor of
    the partition (73) + 24 one-element ones; the Trainer's .item() adds one launch. Off prices the same, and says
    why."""
    on = _clip(estimate(resolve(_plan(gpus=2, zero=2))))
    e = P / 2
    assert on.inputs["bytes"] == pytest.approx(26 * e, rel=1e-12)
    assert on.inputs["kernels"] == pytest.approx(2 * 73 + 24, rel=1e-12)
    gpu = 26 * e / on.inputs["bandwidth"] + (2 * 73 + 24) * KERNEL_GAP_S
    host = (2 * 73 + 24) * LAUNCH_S
    assert on.value == pytest.approx(max(gpu, host) + LAUNCH_S, rel=1e-12)
    off = _clip(estimate(resolve(_plan(gpus=2, zero=2, grad_clip="off"))))
    assert off.value == on.value and "at every step all the same" in off.assumptions[0]


def test_megatron_scales_the_shard_its_distributed_optimizer_owns():
    """Megatron-Core on 8 GPUs with the distributed optimizer (zero_stage 1): the fp32 main grads of P/8
    parameters, three passes (multi_tensor_l2norm, multi_tensor_scale_tensor): 12 · P/8 bytes."""
    sc = resolve(_plan(framework="megatron", gpus=8, zero=1).model_copy(update={"workload": "pretrain"}))
    fig = _clip(estimate(sc))
    assert fig.inputs["bytes"] == pytest.approx(12 * P / 8, rel=1e-12)
    assert "multi_tensor_l2norm" in fig.inputs["how"]


@pytest.mark.parametrize("framework, default", [
    ("megatron", "on"), ("llama3-meta", "on"), ("deepspeed", "on"), ("fsdp2", "on"), ("composer", "on"),
    ("hf-trainer", "on"), ("torchtune", "off"), ("unsloth", "on"), ("llama-factory", "on"), ("axolotl", "on")])
def test_auto_is_the_profiles_default(framework, default):
    """Each profile's default with its source in catalogs/frameworks.toml: Megatron --clip-grad 1.0, torchtitan
    max_norm 1.0, MPT yamls' gradient_clipping 1.0, the Trainer's max_grad_norm 1.0 (unsloth through TRL's
    SFTConfig, LLaMA-Factory and axolotl through TrainingArguments), torchtune's clip_grad_norm: null."""
    prof = load_framework_profiles()[framework]
    assert effective_training(TrainingSettings(method="lora"), prof).grad_clip == default
    assert prof.grad_clip_setting


def test_torchtitan_cannot_turn_it_off_and_the_error_names_who_can():
    """torchtitan's train_step calls clip_grad_norm_ at every step (max_norm 0 would zero the gradients)."""
    with pytest.raises(PlanFileError, match=r"training\.grad_clip: the fsdp2 profile clips at every step \(max_norm "
                                            r"1\.0\) and cannot turn it off; profiles that can: axolotl, composer, "
                                            r"deepspeed, hf-trainer, llama-factory, llama3-meta, megatron, torchtune, "
                                            r"unsloth"):
        resolve(_plan(framework="fsdp2", grad_clip="off").model_copy(update={"workload": "pretrain"}))


def test_torchtune_clipping_and_optimizer_in_backward_exclude_each_other():
    """torchtune's recipes raise "Gradient clipping is not supported with optimizer in bwd": clipping on leaves
    the auto optimizer-in-backward off; both on is refused, naming the field."""
    sc = resolve(_plan(framework="torchtune", grad_clip="on"))
    assert sc.training.grad_clip == "on" and sc.training.optimizer_in_backward is False
    assert estimate(sc).compute.breakdown["gradient_clipping"] > 0
    assert resolve(_plan(framework="torchtune")).training.optimizer_in_backward is True  # auto: no clipping
    with pytest.raises(PlanFileError, match=r"training\.grad_clip: clipping needs the whole gradient"):
        resolve(_plan(framework="torchtune", grad_clip="on", optimizer_in_backward=True))


@pytest.mark.parametrize("gpus, zero", [(1, 0), (2, 2), (2, 1)])
@pytest.mark.parametrize("grad_clip", ["on", "off"])
def test_the_search_prices_it_as_the_estimate(gpus, zero, grad_clip):
    """One truth: the quick model's step is the estimate's, with torch's clipping (one GPU) and DeepSpeed's
    (ZeRO on 2 GPUs under the Trainer), on and off."""
    sc = resolve(_plan(gpus=gpus, zero=zero, grad_clip=grad_clip))
    e = estimate(sc)
    t = sc.training
    one = np.ones(1, dtype=np.int64)
    cols = Columns(tp=one, pp=one, vp=one, dp=one * gpus, cp=one, ep=one, zero=one * zero, offload=one * 0,
                   recompute=one * 0, mb=one * t.micro_batch, accum=one)
    q = evaluate(cols, model_shape(sc.model, t), sc.cluster, t, sc.efficiency, True, sc.framework_profile)
    assert q.step_time[0] == pytest.approx(e.compute.step_time_s.value, rel=1e-9)
    assert q.optimizer_time[0] == pytest.approx(e.compute.breakdown["optimizer"]
                                                + e.compute.breakdown.get("gradient_clipping", 0.0), rel=1e-9)


def test_plans_without_the_field_load_as_auto_and_a_bad_value_names_the_choices():
    """A plan saved before the field (schema 5, unchanged) loads with auto and is written back without it."""
    old = {"format": "llmplan", "schema_version": 5, "model": {"id": MODEL}, "workload": "finetune",
           "training": {"method": "lora"}}
    doc = loads_plan(json.dumps(old))
    assert doc.training.grad_clip == "auto"
    assert "grad_clip" not in dumps_plan(doc)
    old["training"]["grad_clip"] = "yes"
    with pytest.raises(PlanFileError, match=r"training\.grad_clip: input should be 'auto', 'on' or 'off'"):
        loads_plan(json.dumps(old))
