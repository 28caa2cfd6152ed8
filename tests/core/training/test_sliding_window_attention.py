"""Sliding-window layers in the training time model: flash attention at their window's speed, and without flash the
whole s×s square they compute before masking.

Sources: flash-attention 2 skips the key tiles wholly outside the window (``n_block_min`` from
``window_size_left`` in csrc/flash_attn/src/flash_fwd_kernel.h) with 128-query tiles for head sizes 64 and 128 on
sm90 (csrc/flash_attn/src/flash_fwd_launch_template.h), Dao-AILab/flash-attention at 0251105 (2026-08-15). Eager
attention (transformers' ``eager_attention_forward``) multiplies q by every key and adds the window as a mask.
The flash shares are the SDPA microbenchmark's (H100 SXM, torch 2.11, 2026-11-24; ``kernel_rates._SDPA``). Values
worked by hand from those rows; exact to 1e-12 relative.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params
from llmplan.core.training import kernel_rates as kr
from llmplan.core.training.op_time import Rates, layer_backward, layer_forward
from llmplan.core.training.ops import layer_ops
from llmplan.core.workload import TrainingSettings

R = Rates(gemm=792.1e12, attention_scale=1.0, peak=989.4e12, bandwidth=2.911e12, elem_bytes=2.0)


def _lay(seq: int = 4096):
    return SimpleNamespace(micro_batch=1, seq_len=seq, cp=1, ep=8, tp=1, sp=False, kv_replicated=False)


def _ops(model_id: str, flash: bool = True, seq: int = 4096):
    m = load_model_catalog(include_user=False).get(model_id).spec
    tr = TrainingSettings(flash_attention=flash, seq_len=seq)
    return layer_ops(m, count_params(m), _lay(seq), tr, load_framework_profiles()["megatron"])


def test_a_128_key_window_runs_at_the_512_token_row_times_its_counted_keys():
    """gpt-oss: window 128, 128-query tiles: each tile computes 256 keys, a causal 384-token attention's average;
    below the measured 512 tokens the 512 row (head 64: 166.3 TFLOP/s forward, 85.0 forward + backward), times the
    window's 256 of 384."""
    assert kr.window_share(4096, 128, 64, False) == pytest.approx(166.3 / 989.4 * 256 / 384, rel=1e-12)
    assert kr.window_share(4096, 128, 64, True) == pytest.approx(85.0 / 989.4 * 256 / 384, rel=1e-12)


def test_a_wide_window_is_causal_attention():
    """A window of half the sequence or more (2·w + 128 ≥ s) leaves the causal share at that length."""
    assert kr.window_share(4096, 4096, 128, False) == kr.flash_share(4096, 128, False)
    assert kr.window_share(8192, 4096, 128, True) == kr.flash_share(8192, 128, True)


def test_gpt_oss_sliding_layers_are_priced_at_their_window():
    """GPT-OSS 120B, 4,096 tokens, half the layers sliding: the full layers' FLOPs (2,048 keys per query) at the
    4,096-token share, the sliding layers' (128 keys) at the window's."""
    ops = _ops("openai/gpt-oss-120b")
    per_key = 2 * 64 * 4096 * (64 + 64)
    assert ops.sliding_flops == pytest.approx(per_key * 0.5 * 128, rel=1e-12)
    assert ops.attention_flops - ops.sliding_flops == pytest.approx(per_key * 0.5 * 2048, rel=1e-12)
    full_fwd = kr.flash_share(4096, 64, False) * R.peak
    slide_fwd = kr.window_share(4096, 128, 64, False) * R.peak
    want = (ops.attention_flops - ops.sliding_flops) / full_fwd + ops.sliding_flops / slide_fwd
    assert layer_forward(ops, R).attention == pytest.approx(want, rel=1e-12)
    slide_both = kr.window_share(4096, 128, 64, True) * R.peak
    full_both = kr.flash_share(4096, 64, True) * R.peak
    back = (3.5 * (ops.attention_flops - ops.sliding_flops) / full_both
            - (ops.attention_flops - ops.sliding_flops) / full_fwd
            + 3.5 * ops.sliding_flops / slide_both - ops.sliding_flops / slide_fwd)
    assert layer_backward(ops, R).attention == pytest.approx(back, rel=1e-12)


def test_models_without_windows_keep_the_causal_price():
    """Llama 3 8B: no sliding layers, the forward is the causal FLOPs at the 4,096-token share (as before)."""
    ops = _ops("meta-llama/Meta-Llama-3-8B")
    assert ops.sliding_flops == 0
    want = ops.attention_flops / (kr.flash_share(4096, 128, False) * R.peak)
    assert layer_forward(ops, R).attention == pytest.approx(want, rel=1e-12)


def test_without_flash_every_layer_computes_its_whole_square():
    """Eager attention masks the window after the s×s product: Mistral-7B v0.1 (window 4,096) at 8,192 tokens pays
    the full square, 2 · 32 heads · 8,192² · (128 + 128) FLOPs forward, as a model without a window does. The softmax
    traffic moves at the copy kind's rate (no measured kind: ``kernel_rates.EW_RATIO``, since ew31)."""
    ops = _ops("mistralai/Mistral-7B-v0.1", flash=False, seq=8192)
    square = 2 * 32 * 8192 * 8192 * (128 + 128)
    assert ops.square_flops == pytest.approx(square, rel=1e-12)
    assert layer_forward(ops, R).attention == pytest.approx(square / R.gemm + ops.scores_bytes / R.copy,
                                                           rel=1e-12)
