"""KV cache bytes against published figures. Tolerance: exact (these are products of shapes)."""

import pytest

from llmplan.core.kvcache import batch_kv_bytes, kv_element_bytes, kv_layout, paged_tokens
from llmplan.errors import InputError
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import DEEPSEEK_V3, GEMMA2_9B, LLAMA3_8B, MISTRAL_7B_V01, OPT_13B


def test_llama3_8b_gqa_bf16():
    # 2 (K,V) × 8 kv heads × 128 head_dim × 32 layers × 2 B = 131,072 B per token.
    assert kv_layout(spec_from_config(LLAMA3_8B), "bf16").bytes_per_token == 131_072


def test_opt_13b_matches_vllm_paper():
    # Kwon et al., SOSP 2023, §2.2: "2 (key and value vectors) × 5120 (hidden state size) × 40 (number of
    # layers) × 2 (bytes per FP16) = 800 KB" per token for OPT-13B.
    assert kv_layout(spec_from_config(OPT_13B), "fp16").bytes_per_token == 819_200


def test_deepseek_v3_mla_latent():
    # DeepSeek-V2 report §2.1.4: MLA caches (d_c + d_h^R) elements per token per layer; V3 config:
    # kv_lora_rank 512 + qk_rope_head_dim 64, 61 layers, bf16: 576 × 61 × 2 = 70,272 B.
    assert kv_layout(spec_from_config(DEEPSEEK_V3), "bf16").bytes_per_token == 70_272


def test_mistral_sliding_window_caps_the_cache():
    # Mistral-7B-v0.1: every layer slides over 4096 tokens; at 8192 tokens the cache holds 4096 per layer.
    kv = kv_layout(spec_from_config(MISTRAL_7B_V01), "bf16")
    assert kv.bytes_for_context(4096) == 4096 * 131_072
    assert kv.bytes_for_context(8192) == 4096 * 131_072 == 536_870_912
    assert kv.marginal_bytes_per_token(8192) == 0


def test_gemma2_hybrid_local_global():
    # Gemma-2-9B: 42 layers alternating local (window 4096) and global; 2 × 8 × 256 × 2 B = 8192 B per layer.
    kv = kv_layout(spec_from_config(GEMMA2_9B), "bf16")
    assert kv.bytes_per_token == 42 * 8192
    assert kv.bytes_for_context(8192) == 8192 * (21 * 8192 + 21 * 4096)


@pytest.mark.parametrize(("dtype", "per_elem"), [("fp8", 1.0), ("q8_0", 34 / 32), ("q4_0", 18 / 32), ("fp32", 4.0)])
def test_cache_dtypes(dtype, per_elem):
    assert kv_element_bytes(dtype) == per_elem
    assert kv_layout(spec_from_config(LLAMA3_8B), dtype).bytes_per_token == pytest.approx(65_536 * per_elem)  # 2·8·128·32 elements


def test_paged_rounding_and_prefix_sharing():
    kv = kv_layout(spec_from_config(LLAMA3_8B), "bf16")
    assert paged_tokens(1000, 16) == 1008
    assert batch_kv_bytes(kv, 1000, 4, 16) == 4 * 1008 * 131_072
    # 512 shared tokens are cached once, not 4 times.
    shared = batch_kv_bytes(kv, 1000, 4, 16, shared_prefix_tokens=512)
    assert shared == (4 * 1008 - 3 * 512) * 131_072


def test_unknown_dtype_is_a_clear_error():
    with pytest.raises(InputError, match="kv_dtype"):
        kv_element_bytes("int3")
