"""Family quirks of config.json parsing, checked tensor by tensor on the shipped catalog configs.

Totals are proven exact in tests/catalog/test_models_catalog.py; these tests pin the
per-family structure that makes them exact (which tensors exist, their shapes, which
layers are sparse or sliding), so a regression names the quirk it broke.
"""

from __future__ import annotations

from llmplan.catalog.models import load_model_catalog
from llmplan.core.params import count_params

CAT = load_model_catalog(include_user=False)


def groups(model_id: str) -> dict[str, tuple]:
    return {g.name: (g.shape, g.count) for g in count_params(CAT.get(model_id).spec).groups}


def test_qwen2_moe_shared_expert_and_its_gate():
    g = groups("Qwen/Qwen1.5-MoE-A2.7B")
    assert g["moe.shared_experts.gate_proj"] == ((5632, 2048), 24)
    assert g["moe.shared_expert_gate"] == ((1, 2048), 24)
    assert g["moe.experts.down_proj"] == ((2048, 1408), 24 * 60)
    assert "attn.qkv.bias" in g and "attn.o_proj.bias" not in g  # Qwen2: q/k/v biases only


def test_qwen3_moe_has_per_head_qk_norm_and_no_shared_expert():
    spec = CAT.get("Qwen/Qwen3-30B-A3B").spec
    g = groups("Qwen/Qwen3-30B-A3B")
    assert g["attn.q_norm"] == ((128,), 48) and spec.qk_norm == "per_head"
    assert not any("shared" in k for k in g) and spec.moe_layer_count == 48


def test_deepseek_v2_lite_projects_queries_directly():
    spec = CAT.get("deepseek-ai/DeepSeek-V2-Lite").spec
    g = groups("deepseek-ai/DeepSeek-V2-Lite")
    assert spec.mla.q_lora_rank is None
    assert g["attn.q_proj"] == ((16 * 192, 2048), 27) and "attn.q_a_proj" not in g
    assert spec.layer_mlp[0] == "dense" and spec.moe_layer_count == 26
    assert g["moe.shared_experts.gate_proj"] == ((2 * 1408, 2048), 26)  # two shared experts, fused
    assert not any("e_score" in k for k in g)  # greedy top-k has no score-correction bias


def test_deepseek_v3_dense_prefix_score_bias_and_mtp_copies():
    spec = CAT.get("deepseek-ai/DeepSeek-V3").spec
    g = groups("deepseek-ai/DeepSeek-V3")
    assert spec.layer_mlp[:4] == ("dense", "dense", "dense", "moe") and spec.moe_layer_count == 58
    assert g["moe.router.e_score_correction_bias"] == ((256,), 58)
    assert g["mtp.embed_tokens"] == ((129280, 7168), 1) and g["mtp.shared_head.head"] == ((129280, 7168), 1)
    assert g["mtp.eh_proj"] == ((7168, 14336), 1)
    pc = count_params(spec)
    assert pc.mtp > 0 and pc.active < pc.total - pc.mtp  # MTP is neither active nor part of the main model


def test_gemma2_four_norms_tied_and_alternating_windows():
    spec = CAT.get("google/gemma-2-9b").spec
    assert spec.norms_per_layer == 4 and spec.tie_embeddings and "lm_head" not in groups("google/gemma-2-9b")
    assert spec.layer_attention[:4] == ("sliding", "full", "sliding", "full") and spec.sliding_window == 4096


def test_gemma3_text_config_unwrapped_with_five_local_per_global():
    spec = CAT.get("google/gemma-3-27b-it").spec
    assert (spec.hidden_size, spec.num_layers, spec.vocab_size, spec.head_dim) == (5376, 62, 262208, 128)
    assert spec.qk_norm == "per_head" and spec.norms_per_layer == 4
    assert spec.layer_attention[:6] == ("sliding",) * 5 + ("full",)
    assert spec.full_attention_layer_count == 10 and spec.sliding_window == 1024


def test_falcon_7b_mqa_one_norm_vs_40b_two_norms():
    f7, f40 = CAT.get("tiiuae/falcon-7b").spec, CAT.get("tiiuae/falcon-40b").spec
    assert (f7.num_kv_heads, f7.norms_per_layer, f7.parallel_block) == (1, 1, True)
    assert (f40.num_kv_heads, f40.norms_per_layer, f40.parallel_block) == (8, 2, True)
    assert f7.tie_embeddings and not f7.attention_bias and f7.norm == "layernorm"


def test_opt_350m_projects_embeddings_and_has_no_final_norm():
    spec = CAT.get("facebook/opt-350m").spec
    g = groups("facebook/opt-350m")
    assert spec.embedding_proj_dim == 512 and not spec.final_norm
    assert g["embed_tokens"] == ((50272, 512), 1) and g["project_in"] == ((1024, 512), 1)
    assert g["embed_positions"] == ((2050, 1024), 1)  # OPT offsets positions by 2
    assert CAT.get("facebook/opt-125m").spec.final_norm


def test_gptj_lm_head_bias_and_unbiased_attention():
    g = groups("EleutherAI/gpt-j-6b")
    assert g["lm_head.bias"] == ((50400,), 1) and "attn.qkv.bias" not in g and "mlp.up_proj.bias" in g


def test_bloom_embedding_layernorm_and_alibi():
    spec = CAT.get("bigscience/bloom-560m").spec
    assert spec.embedding_norm and spec.position == "alibi"
    assert groups("bigscience/bloom-560m")["embedding_norm"] == ((2 * 1024,), 1)  # weight and bias


def test_gpt_oss_sinks_biases_and_alternating_layers():
    spec = CAT.get("openai/gpt-oss-20b").spec
    g = groups("openai/gpt-oss-20b")
    assert g["attn.sinks"] == ((64,), 24) and g["attn.o_proj.bias"] == ((2880,), 24)
    assert g["moe.router.bias"] == ((32,), 24) and g["moe.experts.down_proj.bias"] == ((2880,), 24 * 32)
    assert spec.layer_attention[:2] == ("sliding", "full") and spec.sliding_window == 128


def test_olmo2_qk_norm_over_full_width():
    g = groups("allenai/OLMo-2-1124-7B")
    assert g["attn.q_norm"] == ((4096,), 32) and g["attn.k_norm"] == ((4096,), 32)


def test_starcoder2_biases_layernorm_plain_mlp():
    spec = CAT.get("bigcode/starcoder2-7b").spec
    g = groups("bigcode/starcoder2-7b")
    assert not spec.gated_mlp and spec.norm == "layernorm" and "mlp.gate_proj" not in g
    assert "attn.qkv.bias" in g and "attn.o_proj.bias" in g and "mlp.down_proj.bias" in g


def test_phi3_window_only_when_shorter_than_context():
    assert CAT.get("microsoft/Phi-3-mini-4k-instruct").spec.sliding_window == 2047
    assert CAT.get("microsoft/Phi-3.5-mini-instruct").spec.sliding_layer_count == 0  # 262144 >= 131072


def test_qwen2_sliding_window_off_unless_enabled():
    assert CAT.get("Qwen/Qwen2.5-7B").spec.sliding_layer_count == 0  # use_sliding_window: false


def test_phi2_one_norm_parallel_and_biased_head():
    spec = CAT.get("microsoft/phi-2").spec
    g = groups("microsoft/phi-2")
    assert (spec.norms_per_layer, spec.parallel_block, spec.gated_mlp) == (1, True, False)
    assert g["lm_head.bias"] == ((51200,), 1) and g["block_norms"] == ((2 * 2560,), 32)


def test_phi_qk_layernorm_is_refused_not_miscounted():
    import pytest

    from llmplan.errors import ConfigError
    from llmplan.formats.hf_config import spec_from_config

    with pytest.raises(ConfigError, match="qk_layernorm"):
        spec_from_config({**CAT.get("microsoft/phi-2").config, "qk_layernorm": True})


def test_starcoder_gpt_bigcode_is_multi_query_with_learned_positions():
    spec = CAT.get("bigcode/starcoderbase").spec
    g = groups("bigcode/starcoderbase")
    assert spec.num_kv_heads == 1 and spec.tie_embeddings and spec.position == "learned"
    assert g["attn.k_proj"] == ((128, 6144), 40) and g["embed_positions"] == ((8192, 6144), 1)


def test_qwen1_fused_qkv_bias_and_half_width_mlp():
    """Qwen 1.0 (modeling_qwen.py): c_attn carries a bias over q, k and v, c_proj none; the config's
    intermediate_size is w1 + w2 together, each half as wide. Qwen-72B: 72,287,920,128 parameters, its
    checkpoint index's total_size / 2 (checked exactly in tests/catalog/test_models_catalog.py)."""
    g = groups("Qwen/Qwen-72B")
    assert g["attn.qkv.bias"][1] == 80 and "attn.o_proj.bias" not in g
    assert g["mlp.gate_proj"] == ((24576, 8192), 80)
    assert count_params(CAT.get("Qwen/Qwen-72B").spec).total == 72_287_920_128


def test_qwen1_early_config_keys_size_the_same_model():
    """Qwen-7B's first config.json (Aug 2023) spells n_embd, n_head, n_layer and ffn_hidden_size."""
    from llmplan.formats.hf_config import spec_from_config

    early = {"model_type": "qwen", "n_embd": 4096, "n_head": 32, "n_layer": 32, "ffn_hidden_size": 22016,
             "kv_channels": 128, "vocab_size": 151936, "no_bias": True, "tie_word_embeddings": False}
    assert count_params(spec_from_config(early)).total == count_params(CAT.get("Qwen/Qwen-7B").spec).total
    assert count_params(CAT.get("Qwen/Qwen-7B").spec).total == 7_721_324_544
