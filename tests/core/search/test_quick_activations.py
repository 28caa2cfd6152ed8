"""The quick model's activation memory against Korthikanti et al. 2022 (arXiv:2205.05198), §4.

Table 2 gives the activations of one transformer layer for a GPT block (4h MLP, MHA) in
bf16 with dropout: s·b·h·(34/t + 5·a·s/(h·t)) bytes with tensor + sequence parallelism,
no recomputation. Without dropout (modern LLMs, our default) the two s·b·h masks and the
a·s²·b attention mask and dropout output go: s·b·h·(32/t) + 2·a·s²·b/t. Selective
recomputation (or FlashAttention) removes the a·s² term; full recomputation keeps only
each layer's input, 2·s·b·h/t with sequence parallelism. Exact equality (same formula).
"""

import numpy as np
import pytest

from llmplan.core.hardware import Efficiency
from llmplan.core.search.quick import Columns, evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.workload import TrainingSettings

from .specs import A100_80GB, cluster, gpt

GPT3 = gpt("GPT-3 175B", 12288, 96, 96)  # Korthikanti et al. Table 3 uses the same shape
S, H, A, L = 2048, 12288, 96, 96


def _activations(recompute: int, flash: bool, tp: int = 8, mb: int = 1) -> float:
    t = TrainingSettings(seq_len=S, flash_attention=flash)
    one = np.ones(1, dtype=np.int64)
    cols = Columns(tp=one * tp, pp=one, vp=one, dp=one * 16, cp=one, ep=one, zero=one, offload=one * 0,
                   recompute=one * recompute, mb=one * mb, accum=one)
    res = evaluate(cols, model_shape(GPT3, t), cluster(A100_80GB, 8, 16), t, Efficiency())
    logits = 6.0 * mb * S * GPT3.vocab_size / tp
    return (float(res.activations[0]) - logits) / L  # one layer (pp=1: every layer, plus the logits)


@pytest.mark.parametrize("tp", [1, 8])
def test_no_recompute_without_flash_attention(tp):
    expected = S * H * 32 / tp + 2 * A * S * S / tp
    assert _activations(0, flash=False, tp=tp) == pytest.approx(expected, rel=1e-12)


def test_flash_attention_drops_the_score_term():
    assert _activations(0, flash=True) == pytest.approx(S * H * 32 / 8, rel=1e-12)


def test_full_recompute_keeps_only_the_layer_input():
    assert _activations(2, flash=True) == pytest.approx(2 * S * H / 8, rel=1e-12)


def test_activations_scale_with_micro_batch():
    assert _activations(0, flash=True, mb=4) == pytest.approx(4 * _activations(0, flash=True), rel=1e-12)
