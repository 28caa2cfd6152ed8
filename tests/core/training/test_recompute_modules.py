"""Megatron-Core's selective recompute of named modules (``training.recompute_modules``), as NVIDIA/Megatron-LM
core_r0.13.0 (73a28a10, 2025-08-12) runs it under the Transformer Engine layer spec: transformer_config.py
(the allowed names and their rules), transformer_layer.py (``layernorm``: the input and pre-MLP norms unless they are
``IdentityOp``, i.e. fused into a TE linear; ``mlp``: dense layers only), gpt_layer_specs.py (the pre-MLP norm is a
separate TENorm only in MoE layers, the input norm only in MLA layers), moe/experts.py (``moe_act``:
``CheckpointWithoutOutput`` over the activation, fc2's input discarded), moe/moe_layer.py (``moe``: the whole layer
checkpointed) and multi_latent_attention.py (``mla_up_proj``: Q, K and V discarded after the attention core).
Byte counts are worked by hand from those rules and ``activations.layer_bytes``' tensor terms (Korthikanti et al.
2022 §4.1, 2-byte activations): exact (float rounding, 1e-12) unless stated.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.planner import quick_layout, search
from llmplan.core.training import activations as act
from llmplan.core.training import recompute_modules as rm
from llmplan.core.training import timing
from llmplan.core.training.layout import resolve
from llmplan.core.training.ops import layer_ops
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

from .helpers import cluster

_CAT = load_model_catalog(include_user=False)
LLAMA3_8B = _CAT.get("meta-llama/Meta-Llama-3-8B").spec
GPT_OSS = _CAT.get("openai/gpt-oss-120b").spec
V2_LITE = _CAT.get("deepseek-ai/DeepSeek-V2-Lite").spec


def _sc(model, modules=("core_attn",), gpus: int = 8, tp: int = 1, ep: int = 1, rc: str = "selective",
        framework: str = "megatron", **tr) -> Scenario:
    training = TrainingSettings(**{"seq_len": 4096, "micro_batch": 1, "global_batch": 8 * gpus // tp,
                                   "recompute": rc, "recompute_modules": modules, "distributed_optimizer": True,
                                   "framework": framework, **tr})
    return Scenario(model=model, cluster=cluster(gpus), training=training, workload="pretrain",
                    parallelism=ParallelLayout(tp=tp, dp=gpus // tp, ep=ep, sequence_parallel=tp > 1),
                    framework_profile=framework_profile(framework))


def _drop(sc: Scenario, kind: str) -> float:
    """Bytes one block of ``kind`` keeps under classic selective recompute less under the plan's modules."""
    lay = resolve(sc)
    classic = sc.training.model_copy(update={"recompute_modules": ("core_attn",)})
    return act.layer_bytes(sc.model, lay, classic, kind) - act.layer_bytes(sc.model, lay, sc.training, kind)


def test_moe_layer_layernorm_and_moe_act_by_hand():
    """gpt-oss-120b (h 2,880, top-4 of 128 experts of width 2,880), one MoE block, s·b = 4,096, TP1: layernorm drops
    the pre-MLP norm's output (2·s·b·h; its attention norm is fused into linear_qkv), moe_act one expert-wide tensor
    per routed copy (2·s·b·k·I)."""
    sc = _sc(GPT_OSS, ("layernorm", "moe_act"), ep=8)
    sb, h, k, inter = 4096, 2880, 4, 2880
    assert _drop(sc, "moe") == pytest.approx(2 * sb * h + 2 * sb * k * inter, rel=1e-12)
    assert _drop(_sc(GPT_OSS, ("layernorm",), ep=8), "moe") == pytest.approx(2 * sb * h, rel=1e-12)


def test_dense_layer_mlp_by_hand():
    """Llama 3 8B (h 4,096, SwiGLU width 14,336), TP2 with sequence parallelism: ``mlp`` drops the fused norm's
    output (2·s·b·h / t) and the three intermediate-wide tensors (3 · 2·s·b·I / t); the MLP's input stays."""
    sc = _sc(LLAMA3_8B, ("core_attn", "mlp"), tp=2)
    sb = 4096
    assert _drop(sc, "dense") == pytest.approx(2 * sb * 4096 / 2 + 3 * 2 * sb * 14336 / 2, rel=1e-12)


def test_mla_up_proj_drops_q_k_v():
    """DeepSeek-V2-Lite (16 heads, qk 128 + 64, v 128): Q and K 16·192 wide, V 16·128: 2·s·b·(3,072 + 3,072 + 2,048)
    bytes per block at TP1, the latents kept."""
    assert V2_LITE.q_width == 16 * 192
    sc = _sc(V2_LITE, ("mla_up_proj",))
    assert _drop(sc, "dense") == pytest.approx(2 * 4096 * (3072 + 3072 + 2048), rel=1e-12)


def test_moe_covers_moe_act_and_shared_experts():
    """``moe`` checkpoints the whole MoE layer (router logits in fp32, the k dispatched copies in and out, routed and
    shared experts' intermediates); naming moe_act or shared_experts beside it drops nothing more."""
    e = V2_LITE.moe
    sb, h = 4096, 2048
    whole = (4 * sb * e.num_experts + 2 * 2 * sb * h * e.experts_per_token
             + 3 * 2 * sb * (e.experts_per_token * e.expert_intermediate_size
                             + e.shared_intermediate_size * e.num_shared_experts))
    assert _drop(_sc(V2_LITE, ("moe",)), "moe") == pytest.approx(whole, rel=1e-12)
    assert _drop(_sc(V2_LITE, ("moe", "moe_act", "shared_experts")), "moe") == pytest.approx(whole, rel=1e-12)


def test_old_plans_mean_what_they_meant():
    """A plan without the field is classic selective recompute (Megatron-Core's default ``["core_attn"]``) to the
    byte and the second; the names are kept in one order without repeats."""
    assert TrainingSettings().recompute_modules == ("core_attn",)
    assert TrainingSettings(recompute_modules=["moe_act", "layernorm", "moe_act"]).recompute_modules == \
        ("layernorm", "moe_act")
    old = Scenario.model_validate(_sc(LLAMA3_8B).model_dump(exclude={"training": {"recompute_modules"}}))
    a, b = estimate(old), estimate(_sc(LLAMA3_8B))
    assert a.memory.total.value == b.memory.total.value
    assert a.compute.step_time_s.value == b.compute.step_time_s.value


@pytest.mark.parametrize(("build", "words"), [
    (lambda: _sc(LLAMA3_8B, ("mlp",), framework="fsdp2"), "Megatron-Core"),
    (lambda: _sc(LLAMA3_8B, ("moe_act",)), r"under moe_act \(moe_act: needs MoE layers.*allowed here: core_attn, mlp \["),
    (lambda: _sc(LLAMA3_8B, ("layernorm",)), "fused into a linear"),
    (lambda: _sc(GPT_OSS, ("mla_up_proj",), ep=8), "multi-latent attention"),
    (lambda: _sc(GPT_OSS, ("mlp",), ep=8), "dense"),
    (lambda: _sc(GPT_OSS, ("shared_experts",), ep=8), "shared experts"),
    (lambda: _sc(V2_LITE, ("moe_act",), precision="fp8"), "delayed scaling"),
    (lambda: _sc(V2_LITE, ()), "at least one module"),
])
def test_refused_where_megatron_core_runs_nothing(build, words):
    with pytest.raises(ValueError, match=words):
        build()


def test_other_recompute_settings_ignore_the_list():
    """Megatron-Core reads --recompute-modules under granularity selective only; a list left in a plan set to full
    or none (the app keeps the ticks when the Recompute list changes) changes nothing, nor is it refused."""
    for rc in ("none", "full"):
        a, b = estimate(_sc(LLAMA3_8B, rc=rc)), estimate(_sc(LLAMA3_8B, ("mlp", "moe_act"), rc=rc))
        assert a.memory.total.value == b.memory.total.value
        assert a.compute.step_time_s.value == b.compute.step_time_s.value


def test_recompute_time_is_the_forward_again_at_the_engine_prices():
    """``layernorm`` on gpt-oss: one fused norm's forward per MoE block (4·h bytes per token at the achievable
    bandwidth, one launch), half of ``ops``' two-norm entry; ``moe_act``: the experts' fused activation (6 bytes per
    intermediate element) and the clamped GLU's eager ops again (16·I bytes per routed row, 3 kernels)."""
    sc = _sc(GPT_OSS, ("layernorm", "moe_act"), ep=8)
    lay, tr, prof = resolve(sc), sc.training, sc.framework
    r, _ = timing.rates(sc.cluster.gpu, sc.efficiency, "bf16")
    ops = layer_ops(GPT_OSS, count_params(GPT_OSS), lay, tr, prof)
    T, h, rows, inter = 4096, 2880, 4096 * 4, 2880
    got = rm.recompute_time(GPT_OSS, ops, r, tr)
    assert got.gemm == 0.0
    assert got.elementwise == pytest.approx((4 * h * T + 6 * inter * rows + 16 * inter * rows) / r.bandwidth,
                                            rel=1e-12)
    assert got.kernels == 1 + 1 + 3


def test_mlp_recompute_counts_its_matmuls_again():
    """Hardware FLOPs (HFU): ``mlp`` on Llama 3 8B runs gate, up and down again, 2·3·h·I per token and block, beside
    FlashAttention's backward recompute of QKᵀ (half the attention FLOPs, ``flops`` module doc) and, since
    ``core_attn`` is in the list, the fused attention forward again (Megatron-Core checkpoints the core whatever
    its backend: twice that half)."""
    sc = _sc(LLAMA3_8B, ("core_attn", "mlp"))
    e = estimate(sc)
    tokens = 8 * 8 * 4096
    L, h = 32, 4096
    mlp = 2 * 3 * h * 14336 * L
    flash_bwd = 2 * 32 * 128 * 2 * L * 4096 / 2
    recomputed = e.compute.hardware_flops_per_step.value - e.compute.flops_per_step.value
    assert recomputed == pytest.approx(tokens * (mlp + flash_bwd + 2 * flash_bwd), rel=1e-9)


def test_memory_down_and_time_up():
    """Against no recompute (classic selective now re-runs the fused attention core, so it is no longer the
    free baseline it was)."""
    plain, named = estimate(_sc(V2_LITE, rc="none")), estimate(_sc(V2_LITE, ("mla_up_proj", "moe_act", "layernorm")))
    assert named.memory.total.value < plain.memory.total.value
    assert named.compute.step_time_s.value > plain.compute.step_time_s.value


@pytest.mark.parametrize("modules", [("layernorm", "moe_act"), ("mla_up_proj", "mlp", "moe")])
def test_the_quick_model_agrees_with_the_engine(modules):
    """The search prices a layout with the estimate's own functions (``recompute_modules.recompute_time``,
    ``dropped`` and ``working_bytes``): the same tokens/s and bytes (recorded 2026-11-28: equal to 1e-16)."""
    sc = _sc(V2_LITE, modules, tp=2, ep=4)
    _ranked, quick = quick_layout(sc)
    e = estimate(sc)
    assert quick.tokens_per_s[0] == pytest.approx(e.compute.tokens_per_s.value, rel=1e-9)
    assert quick.memory[0] == pytest.approx(e.memory.total.value, rel=1e-9)


def test_the_search_holds_the_plans_modules():
    sc = _sc(V2_LITE, ("layernorm", "moe_act"))
    res = search(sc, top=3, keep=("recompute",), refine_count=3)
    assert res.best and all(r.training.recompute == "selective"
                            and r.training.recompute_modules == ("layernorm", "moe_act") for r in res.best)


def test_a_free_search_tries_the_plans_list_as_its_selective_option():
    """With flash attention, classic selective recompute drops nothing and the search tries none and full only;
    with named modules it tries selective too (the plan's list): half as many layouts again."""
    plain = search(_sc(V2_LITE), top=3, refine_count=1)
    named = search(_sc(V2_LITE, ("layernorm", "moe_act")), top=3, refine_count=1)
    assert plain.evaluated > 0 and named.evaluated == plain.evaluated * 3 // 2
    assert all(r.training.recompute_modules == ("layernorm", "moe_act") for r in named.best)


def test_megatron_core_reruns_the_fused_attention_core_under_selective():
    """Megatron-Core checkpoints the attention core whatever its backend (attention.py at core_r0.13.0:
    ``if self.checkpoint_core_attention and self.training: core_attn_out = self._checkpointed_attention_forward(...)``),
    so with flash attention the fused forward runs once more in the backward: the step gains exactly one attention
    forward per block (one kernel) and the hardware FLOPs one attention forward. Legacy Megatron-LM and
    Megatron-DeepSpeed skip the checkpoint under ``--use-flash-attn`` (``ParallelAttention.forward`` checkpoints only
    the non-flash core): the DeepSpeed profile charges nothing there. The search prices it the same way."""
    flash = _sc(LLAMA3_8B, flash_attention=True)
    none = _sc(LLAMA3_8B, rc="none", flash_attention=True)
    assert rm.reruns_core_attention(flash.training, flash.framework_profile)
    shape = timing.OpShape.of(resolve(flash), flash.training, flash.framework_profile)
    r, _ = timing.rates(flash.cluster.gpu, flash.efficiency, "bf16")
    fwd, rest, _head = timing._full_clock(flash.model, shape, flash.training, flash.framework_profile, r)
    _f0, rest0, _h0 = timing._full_clock(none.model, shape, none.training, none.framework_profile, r)
    assert rest.attention - rest0.attention == pytest.approx(fwd.attention, rel=1e-12)
    assert rest.kernels - rest0.kernels == 1
    a, b = estimate(flash).compute, estimate(none).compute
    assert a.hardware_flops_per_step.value > b.hardware_flops_per_step.value
    assert a.step_time_s.value > b.step_time_s.value
    _ranked, quick = quick_layout(flash)
    assert quick.tokens_per_s[0] == pytest.approx(a.tokens_per_s.value, rel=1e-9)
    ds = _sc(LLAMA3_8B, framework="deepspeed", flash_attention=True)
    assert not rm.reruns_core_attention(ds.training, ds.framework_profile)
