"""FSDP casts only its local shard of the fp32 weights, once per gather (issue 15; ``ops.fsdp_cast_shard``).

Source: PyTorch FSDP's mixed precision. FSDP1 ``FlatParamHandle.pre_unshard`` (torch/distributed/fsdp/
_flat_param.py) copies the local fp32 shard into its low-precision ``_mp_shard`` before every all-gather;
FSDP2 ``FSDPParam.all_gather_inputs`` (torch/distributed/fsdp/_fully_shard/_fsdp_param.py) casts the sharded
parameter to ``param_dtype`` with ``_to_dtype_if_needed``. The gathered weights are bf16, so nothing is cast
again in the forward or in a recompute. Under FULL_SHARD (ZeRO-3) each micro-batch gathers twice (forward
and backward), under SHARD_GRAD_OP once. Autocast without FSDP casts every weight each forward (and again in
a full recompute). The 16-bit weight gradient's upcast into the fp32 gradient stays full-size: with an fp32
``reduce_dtype`` FSDP casts the unsharded gradient before the reduce-scatter.

Each cast moves 6 B per weight: an fp32 -> bf16 cast (read fp32, write bf16) at the pointwise rate, the gradient's
bf16 -> fp32 cast at the widening cast's rate (``kernel_rates.EW_RATIO``, H100 SXM microbenchmark, 2026-11-28;
with ``Rates.pointwise`` unset the pointwise rate is ``bandwidth``). The values below are that arithmetic on the
block's own weight count (``LayerOps.cast_params``): exact (relative 1e-12). A cast of a small shard costs at
least its kernels' floor, one cast per weight matrix (K of them) at the pointwise kernel's 1.565 µs.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.core.framework_profile import in_effect
from llmplan.core.params import count_params
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training import op_time as ot
from llmplan.core.training import timing
from llmplan.core.training.ops import fsdp_cast_shard, head_ops, layer_ops
from llmplan.core.workload import TrainingSettings

from .helpers import gpt

M = gpt(2048, 16, 4, vocab=32000)
R = ot.Rates(gemm=300e12, attention_scale=1.0, peak=989e12, bandwidth=3e12, elem_bytes=2.0)
N = 64  # the sharding group
D = 6 / R.bandwidth  # seconds per weight cast down to bf16
U = 6 / (R.bandwidth * kr.EW_RATIO[kr.EW_UPCAST])  # per bf16 gradient cast up into the fp32 .grad
K = 6  # weight matrices of a block (q, k, v, o, up, down), one cast kernel each
FLOOR = K * kr.EW_FLOOR_S[kr.EW_POINTWISE]


def _times(zero: int, recompute: str = "full", framework: str = "fsdp2", n: int = N):
    tr = TrainingSettings(framework=framework, zero_stage=zero, recompute=recompute, seq_len=2048, micro_batch=1,
                          global_batch=N, flash_attention=True, precision="bf16", regime="amp")
    prof = framework_profile(framework)
    shard = fsdp_cast_shard(tr, prof, n)
    shape = timing.OpShape(1, 1, 1, 1, 2048, False, False, shard)
    ops = layer_ops(M, count_params(M), shape, tr, prof, shard)  # type: ignore[arg-type]
    head = head_ops(M, count_params(M), shape, tr, prof, ops.residual_bytes, shard)  # type: ignore[arg-type]
    timing.layer_and_head.cache_clear()
    fwd, rest, head_t = timing.layer_and_head(M, shape, tr, prof, R)
    assert sum(g.count for g in ops.gemms) == K
    return shard, ops.cast_params, head.cast_params, fwd.casts, rest.casts, head_t.casts


def test_zero3_casts_the_shard_at_both_gathers_and_not_in_the_recompute():
    shard, w, hw, fwd, rest, head = _times(3)
    assert shard == N and w > 0
    assert w / N * D < FLOOR  # 1/64 of a block's weights: the cast kernels' floor
    assert fwd == pytest.approx(FLOOR, rel=1e-12)
    # the gradient upcast (full) + the backward gather's cast (shard); the full recompute casts nothing
    assert rest == pytest.approx(w * U + w / N * D, rel=1e-12)
    assert head == pytest.approx(2 * hw / N * D + hw * U, rel=1e-12)


def test_shard_grad_op_casts_the_shard_once_a_micro_batch():
    shard, w, hw, fwd, rest, head = _times(2)
    assert shard == N
    assert fwd == pytest.approx(FLOOR, rel=1e-12)
    assert rest == pytest.approx(w * U, rel=1e-12)
    assert head == pytest.approx(hw / N * D + hw * U, rel=1e-12)


def test_without_per_micro_batch_gathers_autocast_casts_every_weight_each_forward():
    shard, w, hw, fwd, rest, head = _times(1)
    assert shard == 0
    assert fwd == pytest.approx(w * D, rel=1e-12)
    assert rest == pytest.approx(w * U + w * D, rel=1e-12)  # gradient upcast + the recompute's cast
    assert head == pytest.approx(hw * D + hw * U, rel=1e-12)


def test_one_rank_still_casts_per_gather():
    """A one-GPU ZeRO-3 run gathers (and casts) the whole weight twice a micro-batch."""
    shard, w, _, fwd, rest, _ = _times(3, n=1)
    assert shard == 1
    assert fwd == pytest.approx(w * D, rel=1e-12)
    assert rest == pytest.approx(w * U + w * D, rel=1e-12)


def test_only_fp32_parameters_gathered_per_micro_batch_have_the_shard_cast():
    tr = TrainingSettings(framework="fsdp2", zero_stage=3, seq_len=2048, micro_batch=1, precision="bf16", regime="amp")
    assert fsdp_cast_shard(tr, framework_profile("fsdp2"), N) == N
    assert fsdp_cast_shard(tr, framework_profile("composer"), N) == N
    assert fsdp_cast_shard(tr.model_copy(update={"precision": "fp32"}), framework_profile("fsdp2"), N) == 0
    assert fsdp_cast_shard(tr, framework_profile("megatron"), N) == 0  # 16-bit weights: nothing to cast
    # the Hugging Face Trainer's ZeRO-3 is DeepSpeed's: 16-bit weights, no autocast (framework_profile.in_effect)
    assert fsdp_cast_shard(tr, in_effect(framework_profile("hf-trainer"), 3), N) == 0
