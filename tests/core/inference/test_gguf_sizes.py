"""Predicted GGUF weight sizes against sizes llama.cpp itself printed for real files.

Sources (sizes in GiB = 2^30 bytes, as llama.cpp prints them; they are the tensor data of the
file, i.e. the file minus its header of < 1 MB):
- LLaMA 7B (same tensor shapes as Llama-2-7B): ``llama-bench`` table by ggerganov on M2 Ultra in
  llama.cpp PR #3084 "Metal: PP speedup" (2023-09-09): F16 12.55, Q8_0 6.67, Q4_0 3.56, Q4_1 3.95,
  Q6_K 5.15, Q5_K_M 4.45, Q5_K_S 4.33, Q4_K_M 3.80 GiB.
- Meta-Llama-3-8B(-Instruct): ``llama-bench`` size column as printed in many public benchmark logs
  (SYCL, Vulkan and CUDA runs found with the code-search tool): Q4_K_M 4.58, Q5_K_M 5.33, Q8_0 7.95 GiB.
- Llama-3.2-3B-Instruct Q4_K_M (tied embeddings: token_embd doubles as the head and gets Q6_K):
  1.87 GiB, llama-bench table in geerlingguy/ai-benchmarks issue #48 (M1 Ultra) and #54.
- Qwen2.5-7B-Instruct Q4_K_M: ``model_size`` 4,677,120,000 bytes exactly (and 7,615,616,512 params),
  llama.cpp examples/llama-bench/README.md, CSV/JSON output examples (build 5163, 2025-04-24).
- Mixtral-8x7B Q4_K_M: ``llama 8x7B Q4_K - Medium | 26.49 GiB | 46.70 B`` in a llama-bench Vulkan log
  (build 067de93) found with the code-search tool (its repository is not shown by the tool). It checks
  llama.cpp's 8-expert rules: attn_v and attn_k Q8_0, attn_output Q5_K.
- Mistral-7B-Instruct-v0.2 Q5_K_M: ``llm_load_print_meta: model size = 4.78 GiB (5.67 BPW)``,
  llama.cpp issue #5619 (2024-02).
Tolerance: 2% (the brief's); the model reproduces them within 0.1%.
"""

import pytest

from llmplan.core.quant import gguf_metadata_bytes, quantized_weights
from llmplan.core.quant_ggml import GGML_TYPES, use_more_bits
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import (
    LLAMA3_8B,
    LLAMA32_3B,
    LLAMA_7B,
    MISTRAL_7B_V02,
    MIXTRAL_8X7B,
    QWEN25_7B,
)

GIB = 2**30


@pytest.mark.parametrize(
    ("preset", "published_gib"),
    [("f16", 12.55), ("q8_0", 6.67), ("q4_0", 3.56), ("q4_1", 3.95), ("q6_k", 5.15), ("q5_k_m", 4.45),
     ("q5_k_s", 4.33), ("q4_k_m", 3.80)],
)
def test_llama_7b_presets_match_llama_bench(preset, published_gib):
    got = quantized_weights(spec_from_config(LLAMA_7B), preset).total_bytes / GIB
    assert got == pytest.approx(published_gib, rel=0.02)


@pytest.mark.parametrize(
    ("cfg", "preset", "published_gib"),
    [(LLAMA3_8B, "q4_k_m", 4.58), (LLAMA3_8B, "q5_k_m", 5.33), (LLAMA3_8B, "q8_0", 7.95),
     (LLAMA32_3B, "q4_k_m", 1.87)],
)
def test_llama3_presets_match_llama_bench(cfg, preset, published_gib):
    got = quantized_weights(spec_from_config(cfg), preset).total_bytes / GIB
    assert got == pytest.approx(published_gib, rel=0.02)


def test_qwen25_7b_q4_k_m_exact_bytes():
    # Exact: attn_v/ffn_down Q6_K in 14 of 28 layers, output Q6_K, biases and norms F32.
    assert quantized_weights(spec_from_config(QWEN25_7B), "q4_k_m").total_bytes == 4_677_120_000


def test_mixtral_q4_k_m_expert_rules():
    q = quantized_weights(spec_from_config(MIXTRAL_8X7B), "q4_k_m")
    assert q.total_bytes / GIB == pytest.approx(26.49, rel=0.02)
    by_name = {g.group.name: g.dtype for g in q.groups}
    assert by_name["attn.v_proj"] == by_name["attn.k_proj"] == "Q8_0"
    assert by_name["attn.o_proj"] == "Q5_K"
    assert by_name["moe.router"] == "F32"


def test_mistral_q5_k_m_size_and_bpw():
    q = quantized_weights(spec_from_config(MISTRAL_7B_V02), "q5_k_m")
    assert q.total_bytes / GIB == pytest.approx(4.78, rel=0.02)
    assert q.bits_per_weight == pytest.approx(5.67, rel=0.02)


def test_q4_k_m_mix_follows_use_more_bits():
    # llama.cpp llama_tensor_get_type: Q4_K_M bumps attn_v and ffn_down to Q6_K in use_more_bits layers
    # (16 of 32: the first and last 4, and every third layer between), output.weight to Q6_K.
    assert sum(use_more_bits(i, 32) for i in range(32)) == 16
    q = quantized_weights(spec_from_config(LLAMA_7B), "q4_k_m")
    by_name = {g.group.name: g.dtype for g in q.groups}
    assert by_name["attn.v_proj"] == "Q4_K x16 + Q6_K x16"
    assert by_name["mlp.down_proj"] == "Q4_K x16 + Q6_K x16"
    assert by_name["lm_head"] == "Q6_K"
    assert by_name["embed_tokens"] == "Q4_K"
    assert by_name["block_norms"] == "F32"


@pytest.mark.parametrize(
    ("name", "bpw"),
    [("Q4_0", 4.5), ("Q4_1", 5.0), ("Q5_0", 5.5), ("Q5_1", 6.0), ("Q8_0", 8.5), ("Q2_K", 2.625), ("Q3_K", 3.4375),
     ("Q4_K", 4.5), ("Q5_K", 5.5), ("Q6_K", 6.5625), ("Q8_K", 9.125), ("IQ2_XXS", 2.0625), ("IQ2_XS", 2.3125),
     ("IQ2_S", 2.5625), ("IQ3_XXS", 3.0625), ("IQ3_S", 3.4375), ("IQ1_S", 1.5625), ("IQ1_M", 1.75),
     ("IQ4_NL", 4.5), ("IQ4_XS", 4.25), ("TQ1_0", 1.6875), ("TQ2_0", 2.0625), ("F16", 16), ("BF16", 16),
     ("F32", 32)],
)
def test_bits_per_weight_of_each_ggml_type(name, bpw):
    # Bits per weight quoted in llama.cpp's quantize help and PRs (#1684 K-quants, #4773/#5590 i-quants, #8151
    # ternary): e.g. "Q4_K ... 4.5 bpw", "IQ4_XS 4.25 bpw", "IQ1_S 1.5625 bpw", "TQ1_0 1.69 bpw".
    assert GGML_TYPES[name].bits_per_weight == pytest.approx(bpw)


def test_file_adds_only_a_small_header():
    spec = spec_from_config(LLAMA_7B)
    assert gguf_metadata_bytes(spec) < 0.001 * quantized_weights(spec, "q4_k_m").total_bytes
