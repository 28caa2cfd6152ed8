"""Operator-level selective activation checkpointing (``training.recompute = "selective_op"``), as
torchtitan implements it: pytorch/torchtitan ``torchtitan/parallelisms/parallelize_llama.py``,
``checkpoint_wrapper`` (commit 1ea476e9, 2024-04-24): the outputs of ``aten.mm`` and the fused SDPA kernels are
kept, except every second ``aten.mm`` (a counter fresh for each block). Everything here is worked out by hand
from that rule and the model's shapes, so the tolerances are float rounding (1e-9) unless stated.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.planner import quick_layout, search
from llmplan.core.training import activations as act
from llmplan.core.training import selective_op
from llmplan.core.training.layout import resolve
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

from .helpers import cluster

LLAMA3_8B = load_model_catalog(include_user=False).get("meta-llama/Meta-Llama-3-8B").spec


def _fsdp2():
    return framework_profile("fsdp2")


def _sc(rc: str, gpus: int = 8, tp: int = 1, framework=None, model=LLAMA3_8B, **tr) -> Scenario:
    training = TrainingSettings(**{"seq_len": 8192, "micro_batch": 1, "global_batch": gpus // tp, "recompute": rc,
                                   "zero_stage": 3, **tr})
    return Scenario(model=model, cluster=cluster(gpus), training=training,
                    workload="pretrain" if training.method == "full" else "finetune",
                    parallelism=ParallelLayout(tp=tp, dp=gpus // tp, sequence_parallel=tp > 1),
                    framework_profile=framework or _fsdp2())


def test_the_policy_keeps_q_v_gate_and_down():
    """Llama's forward calls wq, wk, wv, wo, w1, w3, w2 in that order (torchtitan models/llama/model.py:
    ``xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)``; ``self.w2(F.silu(self.w1(x)) * self.w3(x))``)."""
    groups = selective_op.block_matmuls(count_params(LLAMA3_8B))
    kept = [g.name for g, keep in zip(groups, selective_op.saved([g.name for g in groups]), strict=True) if keep]
    assert kept == ["attn.q_proj", "attn.v_proj", "mlp.gate_proj", "mlp.down_proj"]


def test_recomputed_flops_are_k_o_and_up_of_every_block():
    sc = _sc("selective_op")
    e = estimate(sc)
    tokens = 8 * 8192
    L, h = 32, 4096
    k_o_up = 2 * L * (1024 * h + h * h + 14336 * h)  # forward FLOPs per token of the recomputed matmuls
    flash_bwd = 2 * 32 * 128 * 2 * L * 8192 / 2  # FlashAttention's backward recomputes QKᵀ (flops module doc)
    recomputed = e.compute.hardware_flops_per_step.value - e.compute.flops_per_step.value
    assert recomputed == pytest.approx(tokens * (k_o_up + flash_bwd), rel=1e-9)
    # 36.5% of the block matmul FLOPs run twice (19,456 of 53,248 weight columns per block)
    assert k_o_up / (2 * L * h * (h + 1024 + 1024 + h + 3 * 14336)) == pytest.approx(19456 / 53248, rel=1e-12)


def test_what_a_block_keeps_by_hand():
    sc = _sc("selective_op")
    lay = resolve(sc)
    s, h = 8192, 4096
    by_hand = (2 * s * h  # the checkpointed block's input
               + 2 * s * h + 2 * s * 1024  # wq and wv outputs
               + 2 * s * h + 4 * 32 * s  # SDPA output and its fp32 log-sum-exp
               + 2 * s * 14336 + 2 * s * h)  # w1 and w2 outputs
    assert act.layer_bytes(LLAMA3_8B, lay, sc.training) == pytest.approx(by_hand, rel=1e-12)


def test_with_tensor_parallelism_the_reduce_scatter_outputs_are_kept_too():
    sc = _sc("selective_op", gpus=16, tp=2)
    lay = resolve(sc)
    s, h, t = 8192, 4096, 2
    by_hand = (2 * s * h / t + 2 * s * h / t + 2 * s * 1024 / t + 2 * s * h / t + 4 * 16 * s
               + 2 * s * 14336 / t + 2 * s * h  # w2's output before the reduce-scatter: full width, partial sums
               + 2 * 2 * s * h / t)  # the two reduce-scatter outputs
    assert act.layer_bytes(LLAMA3_8B, lay, sc.training) == pytest.approx(by_hand, rel=1e-12)


def test_it_sits_between_no_recompute_and_full_in_memory_and_time():
    runs = {rc: estimate(_sc(rc)) for rc in ("none", "selective_op", "full")}
    act_bytes = {rc: e.memory.activations.value for rc, e in runs.items()}
    step = {rc: e.compute.step_time_s.value for rc, e in runs.items()}
    assert act_bytes["full"] < act_bytes["selective_op"] < act_bytes["none"]
    assert step["none"] < step["selective_op"] < step["full"]


@pytest.mark.parametrize(("change", "words"), [
    ({"framework": "megatron"}, "profile has none"),
    ({"method": "lora"}, "full training"),
    ({"model": "Qwen/Qwen1.5-MoE-A2.7B"}, "has experts"),
])
def test_refused_where_it_is_not_modelled(change, words):
    model = LLAMA3_8B
    framework = None
    if "framework" in change:
        framework = framework_profile(change["framework"])
    if "model" in change:
        model = load_model_catalog(include_user=False).get(change["model"]).spec
    extra = {"method": change["method"]} if "method" in change else {}
    with pytest.raises(ValueError, match=words):
        _sc("selective_op", framework=framework, model=model, **extra)


@pytest.mark.parametrize("tp", [1, 2])
def test_the_quick_model_agrees_with_the_engine(tp):
    """The quick model's one-layout figures match the engine's (±5% time, ±2% memory: the tolerances of
    tests/core/search/test_quick_vs_engine.py; recorded 2026-11-27: within 0.3% and 0%)."""
    sc = _sc("selective_op", gpus=8 * tp, tp=tp)
    _ranked, quick = quick_layout(sc)
    e = estimate(sc)
    assert quick.tokens_per_s[0] == pytest.approx(e.compute.tokens_per_s.value, rel=0.05)
    assert quick.memory[0] == pytest.approx(e.memory.total.value, rel=0.02)


def test_the_search_can_hold_it():
    """The search enumerates none/selective/full; a plan that keeps selective_op gets its layouts priced with it."""
    sc = _sc("selective_op")
    res = search(sc, top=3, keep=("recompute",), refine_count=3)
    assert res.best and all(r.training.recompute == "selective_op" for r in res.best)
