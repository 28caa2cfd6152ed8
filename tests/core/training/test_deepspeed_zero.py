"""DeepSpeed under the Hugging Face Trainer: the hf-trainer profile's ZeRO plans run as DeepSpeed does.

Source: microsoft/DeepSpeed tag v0.12.3 (commit 6ea44d0, 2023-11-10), read 2026-11-27:
- runtime/engine.py ``_configure_distributed_model``: ``module.half()`` / ``module.bfloat16()``;
- runtime/zero/stage_1_and_2.py: ``single_partition_of_fp32_groups`` (the fp32 master), ``backward()``'s
  ``ipg_buffer`` (``reduce_bucket_size`` elements in the model dtype, a second one with ``overlap_comm``),
  ``step()``'s ``flatten(averaged_gradients).to(fp32)``;
- runtime/zero/stage3.py: ``__ipg_bucket_flat_buffer`` (kept), ``_prepare_fp32_grad_for_sub_group``; ``step()``
  calls ``_partition_all_parameters`` first (nothing gathered at the step);
- both optimizers' ``get_grad_norm_direct``: ``g.double().norm(2)``, one gradient at a time (8 B per element);
- runtime/zero/partition_parameters.py ``all_gather_coalesced``: one rank returns ``_no_gather_coalesced``;
  runtime/zero/partitioned_param_coordinator.py ``__params_to_release``: a parameter used again within
  ``max_reuse_distance`` parameters stays gathered (the output head, from its forward to its backward);
- runtime/zero/config.py: reduce_bucket_size 5e8, sub_group_size 1e9 by default.
transformers ``HfTrainerDeepSpeedConfig.trainer_config_finalize`` fills reduce_bucket_size "auto" with
hidden_size². Tolerance: exact (each term is its formula, evaluated on Qwen-7B, hidden 4,096, at 1 × 512).
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.framework_profile import in_effect
from llmplan.core.training import deepspeed_zero as ds
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

H = 4096  # Qwen-7B hidden size


def _scenario(method="lora", zero_stage=2, gpus=1, framework="hf-trainer", **profile):
    kw = dict(framework=framework, micro_batch=1, global_batch=8 * gpus, seq_len=512, recompute="full",
              optimizer="adamw", lora_rank=64, method=method, zero_stage=zero_stage)
    doc = PlanDocument(model=ModelRef(id="Qwen/Qwen-7B"), hardware=HardwareRef(gpu="nvidia-a100-sxm4-80gb",
                       gpus_per_node=gpus), training=TrainingSettings(**kw),
                       workload="finetune" if method != "full" else "pretrain", parallelism=ParallelLayout(dp=gpus))
    sc = resolve(doc)
    if profile:
        sc = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(update=profile)})
    return sc


def test_zero_plans_run_as_deepspeed_casts_them():
    """16-bit module weights, an fp32 master in the optimizer, 16-bit gradients; no autocast copies."""
    amp = estimate(_scenario(zero_stage=0)).memory
    zero = estimate(_scenario(zero_stage=2)).memory
    assert amp.master_weights.value == 0  # AMP: the fp32 adapters are the master
    assert zero.weights.inputs["bytes_per_weight"] == 2.0
    trainable = zero.weights.inputs["trainable"]
    assert zero.master_weights.value == pytest.approx(4.0 * trainable)
    assert amp.weights.inputs["bytes_per_weight"] == 4.0


def test_view_only_where_the_profile_hands_zero_to_deepspeed():
    sc = _scenario(zero_stage=0)
    assert sc.framework is sc.framework_profile  # no ZeRO: the profile as it is
    one = _scenario(zero_stage=1)  # every plan's default: ZeRO-1 on one GPU shards nothing, no DeepSpeed
    assert one.deepspeed_stage == 0 and one.framework is one.framework_profile
    assert _scenario(zero_stage=1, gpus=2).deepspeed_stage == 1
    assert _scenario(zero_stage=2).deepspeed_stage == 2  # Qwen's one-GPU Q-LoRA: ZeRO-2
    assert _scenario(zero_stage=2).framework.params_are_master is False
    assert "DeepSpeed ZeRO-2" in _scenario(zero_stage=2).framework.name
    tt = _scenario(method="full", zero_stage=3, gpus=2, framework="torchtune")  # FSDP2: native
    assert tt.framework is tt.framework_profile
    prof = _scenario(zero_stage=0).framework_profile
    assert in_effect(prof, 3) is in_effect(prof, 3)  # cached: identity-keyed caches keep hitting


def test_zero2_backward_holds_two_buckets_with_overlap_comm():
    """2 × reduce_bucket_size × 2 B through the backward; one bucket without overlap_comm; "auto" is h²."""
    sc = _scenario(zero_stage=2, zero2_reduce_bucket=200_000_000)
    assert ds.backward_buckets(sc.model, sc.training, sc.framework, 2) == 2 * 200_000_000 * 2
    one = _scenario(zero_stage=2, zero2_reduce_bucket=200_000_000, overlap_grad_reduce=False)
    assert ds.backward_buckets(one.model, one.training, one.framework, 2) == 200_000_000 * 2
    auto = _scenario(zero_stage=2, zero2_reduce_bucket=0)
    assert ds.bucket_elements(auto.model, 2, auto.framework) == H * H
    assert ds.persistent_bucket(sc.model, sc.training, sc.framework, 2) == 0.0
    # the buckets are in the breakdown's buffers at a backward peak (LoRA at 512 tokens peaks there)
    small = estimate(_scenario(zero_stage=2, zero2_reduce_bucket=1)).memory
    big = estimate(sc).memory
    assert big.buffers.value - small.buffers.value == pytest.approx(2 * (200_000_000 - 1) * 2)
    assert big.buffers.inputs["deepspeed_zero_stage"] == 2 and "DeepSpeed's gradient buckets" in big.buffers.formula


def test_zero3_keeps_one_flat_bucket_and_copies_one_sub_group_at_the_step():
    sc = _scenario(method="full", zero_stage=3, gpus=2)
    m, tr, prof = sc.model, sc.training, sc.framework
    assert ds.persistent_bucket(m, tr, prof, 3) == H * H * 2  # "auto": h² elements, 16-bit
    assert ds.backward_buckets(m, tr, prof, 3) == 0.0
    assert ds.step_copies(3.5e9, tr, 3) == 6.0 * 1e9  # one sub-group of sub_group_size parameters
    assert ds.step_copies(0.5e9, tr, 3) == 6.0 * 0.5e9
    assert ds.step_copies(3.5e9, tr, 2) == 6.0 * 3.5e9  # ZeRO-1/2: the whole partition
    offloaded = tr.model_copy(update={"offload": "cpu"})
    assert ds.step_copies(3.5e9, offloaded, 2) == 0.0  # the optimizer steps on the host
    mem = estimate(sc).memory  # 3.9e9 parameters per GPU: the step, with its copies, is the peak
    assert mem.activations.inputs["phase"] == "optimizer step"
    assert mem.buffers.value >= 6.0 * 1e9 + H * H * 2


def test_no_deepspeed_no_terms():
    sc = _scenario(zero_stage=1)
    m, tr, prof, zs = sc.model, sc.training, sc.framework, sc.deepspeed_stage
    assert (ds.backward_buckets(m, tr, prof, zs), ds.persistent_bucket(m, tr, prof, zs),
            ds.step_copies(1e9, tr, zs)) == (0.0, 0.0, 0.0)
    assert estimate(sc).memory.buffers.value == estimate(_scenario(zero_stage=0)).memory.buffers.value


def test_step_transient_is_the_larger_of_the_norm_copy_and_the_step_copies():
    """The norm's fp64 copy of the largest gradient piece comes before the flat copies, and is freed first."""
    tr = _scenario(zero_stage=2).training
    # ZeRO-2, a partition of 1e8 that one 5e8-element tensor fills: the norm copies 1e8 elements at 8 B
    piece = ds.largest_gradient_piece(5e8, 1e8, shard=64, stage=2)
    assert piece == 1e8 and ds.step_transient(1e8, piece, tr, 2) == 8.0 * 1e8
    # ZeRO-3 partitions every tensor: Qwen-7B's 622M-element head on 2 GPUs is 311M, under one sub-group's copies
    piece3 = ds.largest_gradient_piece(151_936 * H, 3.86e9, shard=2, stage=3)
    assert piece3 == 151_936 * H / 2 and ds.step_transient(3.86e9, piece3, tr, 3) == 6.0 * 1e9
    offloaded = tr.model_copy(update={"offload": "cpu"})
    assert ds.step_transient(1e8, piece, offloaded, 2) == 0.0  # ZeRO-Offload: the step runs on the host


def test_zero3_gathers_per_phase():
    """Nothing on one rank; at the step nothing; at the loss the head with the prefetch; in the blocks' backward
    the block with its prefetch. No DeepSpeed ZeRO-3: no per-phase view (the caller's block in every phase)."""
    assert ds.gathered_by_phase(10.0, 7.0, 2.0, shard=1, stage=3) == {}
    assert ds.gathered_by_phase(10.0, 7.0, 2.0, shard=2, stage=3) == {
        "loss forward": 9.0, "loss backward": 9.0, "backward through the blocks": 10.0, "optimizer step": 0.0}
    assert ds.gathered_by_phase(10.0, 0.0, 2.0, shard=2, stage=3)["loss forward"] == 10.0  # not the last stage
    assert ds.gathered_by_phase(10.0, 7.0, 2.0, shard=2, stage=2) is None


def test_zero3_step_peak_holds_no_gathered_block():
    """Qwen-7B full on 2 GPUs peaks at the step: its buffers are the sub-group copies and the flat bucket only."""
    mem = estimate(_scenario(method="full", zero_stage=3, gpus=2)).memory
    assert mem.activations.inputs["phase"] == "optimizer step"
    assert mem.buffers.value == pytest.approx(6.0 * 1e9 + H * H * 2)
    one = estimate(_scenario(method="full", zero_stage=3, gpus=1)).memory  # one rank: never a gathered copy
    assert one.buffers.value == pytest.approx(6.0 * 1e9 + H * H * 2)


def test_zero3_prefetch_is_the_bucket_and_one_matrix():
    """stage3_prefetch_bucket_size "auto" = 0.9 · hidden² (the Trainer), and whole parameters are queued while
    fewer than that are in flight: one matrix more at most, the widest (Qwen-7B: hidden × 11,008)."""
    sc = _scenario(method="full", zero_stage=3, gpus=2)
    assert ds.prefetch_elements(sc.model, sc.framework) == 0.9 * H * H + H * 11_008
    set_by_user = sc.framework.model_copy(update={"prefetch_params": 50_000_000})
    assert ds.prefetch_elements(sc.model, set_by_user) == 50_000_000 + H * 11_008
