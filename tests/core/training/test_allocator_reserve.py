"""The caching allocator's reserve for ZeRO-3 / FSDP gathers on a side stream (issue 26), exact from the code's rules.

Sources (read 2026-11-27): pytorch/pytorch ``c10/cuda/CUDACachingAllocator.cpp`` at commit 001074d (``kMinBlockSize``
512 B, ``kSmallSize`` 1 MiB, ``kSmallBuffer`` 2 MiB, ``kMinLargeAlloc`` 10 MiB, ``kLargeBuffer`` 20 MiB,
``kRoundLarge`` 2 MiB; ``round_size`` then ``get_allocation_size``; per-stream pools; ``record_stream`` frees
deferred to the recorded stream's event); torch ``distributed/fsdp/_limiter_utils.py`` (two all-gathers in
flight) and ``_flat_param.py`` ``_free_unsharded_flat_param``; DeepSpeed v0.12.3 (commit 6ea44d0)
``partition_parameters.free_param`` and ``AllGatherCoalescedHandle.wait``; FSDP2's ``_fsdp_param_group``
``wait_for_unshard`` (no ``record_stream``). Every expected figure below is worked out by hand from those rules:
tolerance 0 (exact), or 1e-9 relative where a float sum is compared.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmplan.catalog.frameworks import framework_problems, framework_profile, load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import in_effect
from llmplan.core.search.planner import quick_layout
from llmplan.core.training.allocator_reserve import gather_reserve, segment_bytes
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

MIB = 1 << 20
L7 = "meta-llama/Llama-2-7b-hf"
L7_BLOCK = 4 * 4096 * 4096 + 3 * 4096 * 11008  # Llama-2-7B decoder layer's matrices (norms: 2 × 4096 more)


@pytest.mark.parametrize("request_bytes, segment", [
    (1, 2 * MIB),  # rounded to 512 B, a small request: packed in a 2 MiB segment
    (MIB, 2 * MIB),  # kSmallSize itself is still small
    (MIB + 1, 20 * MIB),  # 1-10 MiB: a 20 MiB kLargeBuffer segment
    (10 * MIB - 1, 10 * MIB),  # round_size first: 10 MiB exactly, no longer below kMinLargeAlloc
    (10 * MIB + 1, 12 * MIB),  # rounded up to a multiple of kRoundLarge
    (2 * (L7_BLOCK + 2 * 4096), 194 * 2 * MIB),  # one Llama-2-7B block in bf16: 404,766,720 B → 194 × 2 MiB
])
def test_segment_sizes_follow_the_allocators_rules(request_bytes, segment):
    assert segment_bytes(request_bytes) == segment
    assert segment_bytes(np.array([float(request_bytes)]))[0] == segment  # the search's arrays agree


def test_fsdp1_holds_one_block_more_and_the_rounding_of_those_it_counts():
    """hf-trainer under accelerate's FSDP1 (limit_all_gathers): one pending block, plus the 2 MiB rounding of the
    two blocks the allocated bytes count (the current one and the one prefetched)."""
    prof = framework_profile("hf-trainer", "finetune", 2)
    unit = 2.0 * (L7_BLOCK + 2 * 4096)
    seg = 194 * 2 * MIB
    assert prof.gather_pending_blocks == 1 and not prof.gather_flat_copy
    assert gather_reserve(unit, unit, 2, prof) == seg + 2 * (seg - unit)


def test_deepspeed_holds_one_block_and_one_flat_fetch():
    """The Trainer's --deepspeed view: one block freed with record_stream, and the coalesced flat buffer of one
    fetch beside its per-parameter copies (its own segment, rounded to 2 MiB)."""
    prof = in_effect(framework_profile("hf-trainer", "finetune", 4), 3)
    assert prof.gather_pending_blocks == 1 and prof.gather_flat_copy
    unit, fetch = 1.7e9, 5.9e8
    assert gather_reserve(unit, fetch, 2, prof) == segment_bytes(unit) + segment_bytes(fetch)
    assert gather_reserve(unit, 0.0, 1, prof) == 2 * segment_bytes(unit)  # nothing prefetched: one block's fetch


@pytest.mark.parametrize("name", ["fsdp2", "torchtune", "megatron", "unsloth"])
def test_no_reserve_without_record_stream_frees(name):
    """FSDP2 frees its all-gather outputs after event waits, Megatron gathers into persistent buffers, unsloth
    runs on one GPU: nothing beyond the allocated bytes."""
    prof = load_framework_profiles()[name]
    assert gather_reserve(4e8, 4e8, 2, prof) == 0.0


def _answerai(sharding_stage: int, gpus: int = 2, pending: int | None = None):
    """Answer.AI's train.py run (tests/core/training/test_fsdp_qlora_answerai.py), LoRA, batch 1 × 2,048."""
    t = TrainingSettings(framework="hf-trainer", method="lora", micro_batch=1, global_batch=gpus, seq_len=2048,
                         recompute="full", regime="pure", loss="upcast_shifted", lora_rank=64,
                         lora_targets=("q", "k", "v", "gate", "up", "down"), zero_stage=sharding_stage)
    sc = resolve(PlanDocument(model=ModelRef(id=L7), hardware=HardwareRef(gpu="nvidia-rtx-3090-24gb",
                              gpus_per_node=gpus), workload="finetune", training=t,
                              parallelism=ParallelLayout(dp=gpus)))
    update = {"zero_engine": "native"}
    if pending is not None:
        update["gather_pending_blocks"] = pending
    return sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(update=update)})


def test_the_estimate_adds_the_term_to_the_overhead_only_where_blocks_are_gathered():
    """The gathered block as the memory model counts it (``memory._gathered_blocks``): the frozen bf16 layer with
    its norms and the layer's r = 64 adapters (q, k, v: 64 × (4,096 + 4,096) each; gate, up, down: 64 × (4,096 +
    11,008) each), 16-bit under the pure regime: 413,712,384 B, a 198 × 2 MiB segment. One such block pending, and
    the 1,523,712 B rounding of each of the two blocks the allocated bytes count."""
    with_term, without = estimate(_answerai(3)), estimate(_answerai(3, pending=0))
    unit = 2.0 * (L7_BLOCK + 2 * 4096 + 64 * (3 * 8192 + 3 * 15104))
    seg = 198 * 2 * MIB
    ov = with_term.memory.overhead
    assert ov.source == "caching-allocator" and ov.inputs["pending_blocks"] == 1
    assert ov.inputs["gathered_block"] == unit
    assert ov.inputs["gather_reserve"] == seg + 2 * (seg - unit) == 418_283_520
    got = with_term.memory.total.value - without.memory.total.value
    assert got == pytest.approx(418_283_520, rel=1e-9)  # beside the allocated bytes, not scaled by fragmentation
    for sc in (_answerai(0), _answerai(3, gpus=1)):  # NO_SHARD, or one GPU: nothing gathered per use
        assert "gather_reserve" not in estimate(sc).memory.overhead.inputs


def test_the_search_prices_the_same_reserve():
    """One truth: the quick model's fused-kernel memory (DeepSpeed's Megatron-style profile, ZeRO-3 on 8 GPUs)
    is the engine's, reserve included."""
    t = TrainingSettings(framework="deepspeed", method="full", zero_stage=3, seq_len=2048, micro_batch=1,
                         global_batch=8, recompute="full")
    sc = resolve(PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                              hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8),
                              workload="pretrain", training=t, parallelism=ParallelLayout(dp=8)))
    e = estimate(sc)
    assert e.memory.overhead.inputs["gather_reserve"] > 0
    _ranked, q = quick_layout(sc)
    assert q.memory[0] == pytest.approx(e.memory.total.value, rel=1e-9)


@pytest.mark.parametrize("bad", ["gather_pending_blocks = 9", "gather_pending_blocks = -1",
                                 "gather_flat_copy = 'sometimes'"])
def test_a_bad_user_entry_is_skipped_and_named(tmp_path, monkeypatch, bad):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "frameworks.toml").write_text(f"[hf-trainer]\n{bad}\n")
    assert load_framework_profiles()["hf-trainer"].gather_pending_blocks == 1  # the shipped entry
    (problem,) = framework_problems()
    assert bad.split(" =")[0] in problem and "skipped" in problem


def test_a_full_fine_tune_block_is_counted_in_the_dtype_it_is_gathered_in():
    """Composer's FSDP1 keeps fp32 shards (``params_are_master``) but allocates the unsharded flat parameter in
    its bf16 ``param_dtype``: Llama 3.1 8B's block (4,096² × 2 + 4,096 × 1,024 × 2 + 3 × 4,096 × 14,336 + 2 ×
    4,096 = 218,112,000 parameters) is 436,224,000 B, a 209 × 2 MiB segment; one block pending and the rounding
    of the one block the fused path counts gathered."""
    t = TrainingSettings(framework="composer", method="full", zero_stage=3, seq_len=2048, micro_batch=1,
                         global_batch=8, recompute="full")
    sc = resolve(PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                              hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8),
                              workload="pretrain", training=t, parallelism=ParallelLayout(dp=8)))
    assert sc.framework.params_are_master
    ov = estimate(sc).memory.overhead
    block = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert ov.inputs["gathered_block"] == 2.0 * block == 436_224_000
    seg = 209 * 2 * MIB
    assert ov.inputs["gather_reserve"] == seg + (seg - 2.0 * block)
