"""FLOPs per token from the tensor shapes: MoE counts only the routed top-k experts."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

MIXTRAL = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                num_local_experts=8, num_experts_per_tok=2))


def test_moe_model_flops_use_active_parameters():
    s = 1024
    e = estimate(scenario(MIXTRAL, 8, ep=8, seq_len=s, recompute="none", flash_attention=False))
    pb = count_params(MIXTRAL)
    matmul_active = pb.active - 32000 * 4096 - sum(g.params for g in pb.groups if len(g.shape) == 1)
    attention = 2 * 32 * (128 + 128) * 32 * s  # QKᵀ and AV per token, 32 layers
    per_token = 3 * (2 * matmul_active + attention)
    assert e.compute.flops_per_step.value / (8 * s) == pytest.approx(per_token, rel=1e-12)
    # Mixtral's "12.9B active parameters" (Mistral AI): ≈ 6 · 12.9e9 FLOPs per token at short context
    assert per_token == pytest.approx(6 * 12.9e9, rel=0.03)


def test_flash_attention_adds_the_recomputed_scores_to_hardware_flops_only():
    a = estimate(scenario(MIXTRAL, 8, ep=8, seq_len=4096, recompute="none", flash_attention=True)).compute
    b = estimate(scenario(MIXTRAL, 8, ep=8, seq_len=4096, recompute="none", flash_attention=False)).compute
    assert a.flops_per_step.value == b.flops_per_step.value
    assert a.hardware_flops_per_step.value > b.hardware_flops_per_step.value
