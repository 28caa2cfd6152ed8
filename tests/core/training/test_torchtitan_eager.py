"""torchtitan's modules run uncompiled — the FSDP2 profile's default, as torchtitan's (``--training.compile``
is off unless set; train_configs llama3_8b.toml and llama3_70b.toml say ``compile = false``, pytorch/torchtitan
at 9dec370a, 2024-12-26): the time and memory terms they add, worked by hand, and the search's quick model
agreeing with the engine on them.

What the terms are read from (``activations.eager_block_extra``, ``ops.titan_eager``): torchtitan's
models/llama/model.py and models/norms.py at 9dec370a. Both sides of every comparison here are llmplan's own
arithmetic, so they are asserted to 1e-9 (the by-hand sums) or to rounding (the quick model, which calls the
engine's functions on arrays)."""

from __future__ import annotations

import numpy as np
import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.planner import scenario_for
from llmplan.core.search.quick import evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import layout_of, training_columns
from llmplan.core.training.layout import resolve
from llmplan.core.training.ops import layer_ops, residual_bytes
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

L31_8B = "meta-llama/Llama-3.1-8B"
T = 8192  # one sequence of 8,192 tokens per GPU
L, H, Q, KV, INTER = 32, 4096, 4096, 1024, 14336  # Llama 3.1 8B


def _plan(recompute: str, compile: bool | None = None, norm: str = "rmsnorm", tp: int = 1) -> Scenario:
    dp = 8 // tp
    tr = TrainingSettings(framework="fsdp2", seq_len=T, micro_batch=1, global_batch=dp, recompute=recompute,
                          zero_stage=3, flash_attention=True, torch_compile=compile)
    doc = PlanDocument(model=ModelRef(id=L31_8B), workload="pretrain", training=tr,
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, nodes=1, network="roce-400"),
                       parallelism=ParallelLayout(dp=dp, tp=tp, sequence_parallel=tp > 1))
    sc = evaluate_plan(doc)[0]
    if norm != "rmsnorm":
        prof = sc.framework.model_copy(update={"titan_norm": norm})
        sc = Scenario.model_validate(sc.model_copy(update={"framework_profile": prof}).model_dump())
    return sc


def _activations(sc: Scenario) -> float:
    return estimate(sc).memory.activations.value


def test_torchtitans_default_is_uncompiled_and_compile_is_a_switch():
    prof = framework_profile("fsdp2")
    assert prof.kernels == "eager" and prof.eager_modules == "torchtitan"
    assert prof.switches == ("torch_compile",) and prof.on_by_default == ()
    assert _plan("none").training.torch_compile is False
    assert _plan("none", compile=True).training.torch_compile is True


def test_uncompiled_blocks_keep_more_by_hand():
    """No checkpointing, so every block keeps its tensors. Per token and block, beyond fused kernels: two
    RMSNorms' fp32 input copies and rsqrt (2 × (4·4,096 + 4) B), K and V repeated from 1,024 to 4,096 wide
    (2 × (2·4,096 − 2·1,024) B) and SiLU's output (2 × 14,336 B): 73,736 B; and the final norm's 16,388 B."""
    extra = T * (L * (2 * (4 * H + 4) + 2 * (2 * Q - 2 * KV) + 2 * INTER) + (4 * H + 4))
    assert _activations(_plan("none")) - _activations(_plan("none", compile=True)) == pytest.approx(extra, rel=1e-9)


def test_fused_rmsnorm_keeps_only_its_rsqrt_beyond_a_fused_norm():
    """torchtitan's ``norm_type = "fused_rmsnorm"`` (the Triton kernel of the A100 8B and 13B runs) saves its
    input and one fp32 rsqrt per row: 4 B per token and norm beyond fused kernels; rotary, repeat_kv and
    SwiGLU still run eager."""
    extra = T * (L * (2 * 4 + 2 * (2 * Q - 2 * KV) + 2 * INTER) + 4)
    fused_norm = _activations(_plan("none", norm="fused_rmsnorm"))
    assert fused_norm - _activations(_plan("none", compile=True)) == pytest.approx(extra, rel=1e-9)


def test_checkpointed_blocks_keep_what_the_policy_keeps():
    """Under operator-level (and full) checkpointing a block keeps the same tensors compiled or not; the
    recomputed block's larger eager working set comes after the loss's backward (12 B per logit), which stays
    the peak here, so only the final norm's fp32 copy and rsqrt is added."""
    for rc in ("selective_op", "full"):
        diff = _activations(_plan(rc)) - _activations(_plan(rc, compile=True))
        assert diff == pytest.approx(T * (4 * H + 4), rel=1e-9), rc


def test_uncompiled_op_list_is_torchtitans_in_bf16():
    """FSDP2's mixed precision hands the modules bf16 parameters and inputs: a 2-byte stream, no autocast
    casts; torchtitan's norm, rotary and repeat_kv kernels; compiled, the fused style."""
    for compile, names in ((False, {"RMSNorm (fp32 upcast, 6-8 kernels)", "rotary (complex multiply in fp32)",
                                    "repeat_kv copies of K and V", "act(gate)·up"}),
                           (True, {"fused norms", "fused rotary", "fused SwiGLU"})):
        sc = _plan("selective_op", compile=compile)
        lay = resolve(sc)
        ops = layer_ops(sc.model, count_params(sc.model), lay, sc.training, sc.framework)
        got = {e.name for e in ops.elementwise}
        assert names <= got, got
        assert not any("autocast" in n for n in got)
        assert residual_bytes(sc.training, sc.framework) == 2.0
    assert estimate(_plan("selective_op")).compute.step_time_s.value > \
        estimate(_plan("selective_op", compile=True)).compute.step_time_s.value


@pytest.mark.parametrize("compile", [False, True])
def test_quick_model_matches_the_engine(compile):
    """The search's quick model prices the FSDP2 layouts of this plan (TP 1, 2 and 4, recompute none or full,
    micro-batches 1-4 where they divide) with the engine's memory and step-time functions: equal to rounding."""
    sc = _plan("full", compile=compile)
    tr = sc.training
    shape = model_shape(sc.model, tr)
    cols = training_columns(shape, [8], 8, tr.seq_len, 8, offload=False)
    res = evaluate(cols, shape, sc.cluster, tr, sc.efficiency, prof=sc.framework)
    checked = 0
    for i in range(len(cols)):
        if cols.pp[i] != 1 or cols.cp[i] != 1 or cols.zero[i] != 3:
            continue
        p, t = layout_of(cols, i, tr)
        e = estimate(scenario_for(sc, p, t))
        assert res.memory[i] == pytest.approx(e.memory.total.value, rel=1e-9), (p, t.recompute)
        assert res.tokens_per_s[i] == pytest.approx(e.compute.tokens_per_s.value, rel=1e-6), (p, t.recompute)
        checked += 1
    assert checked >= 6 and np.unique(cols.recompute).size >= 2
