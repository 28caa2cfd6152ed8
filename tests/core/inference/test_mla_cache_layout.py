"""What each engine caches for multi-latent attention (``mla_cache`` in catalogs/engines.toml), and that memory,
concurrency, the longest context and decode bytes all follow it.

DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json): 61 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64,
qk_nope_head_dim 128, v_head_dim 128. By hand, bf16 (2 B), per token and layer:
- latent (vLLM 0.33.0 mla_attention.py; SGLang v0.4.1.post2 MLATokenToKVPool; mlx-lm 0.32.2 deepseek_v3.py;
  llama.cpp after PR #19067): 512 + 64 = 576 elements -> x 61 x 2 = 70,272 B, on every TP rank;
- heads (llama.cpp 2024 builds; transformers): 128 x (192 + 128) = 40,960 -> 4,997,120 B, split over TP;
- heads_padded (TGI v3.3.7 flash_deepseek_v3_modeling.py, head size 192 for K and V): 128 x 384 = 49,152 ->
  5,996,544 B, split over TP. Exact.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.context_fit import longest_context
from llmplan.core.inference.memory import plan_memory
from llmplan.core.kvcache import kv_elements_per_token_per_layer, kv_layout, kv_split_by_heads
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import DEEPSEEK_V3, LLAMA3_8B

HW, MODELS = load_hardware_catalog(), load_model_catalog()
DS = spec_from_config(DEEPSEEK_V3)


def test_elements_by_layout_by_hand():
    assert kv_elements_per_token_per_layer(DS, "latent") == 512 + 64
    assert kv_elements_per_token_per_layer(DS, "heads") == 128 * (128 + 64 + 128)
    assert kv_elements_per_token_per_layer(DS, "heads_padded") == 128 * 2 * 192
    assert kv_layout(DS, "bf16", "latent").bytes_per_token == 70_272
    assert kv_layout(DS, "bf16", "heads").bytes_per_token == 4_997_120
    assert kv_layout(DS, "bf16", "heads_padded").bytes_per_token == 5_996_544
    assert not kv_split_by_heads(DS, "latent") and kv_split_by_heads(DS, "heads_padded")
    llama = spec_from_config(LLAMA3_8B)  # GQA models ignore the MLA layout
    assert {kv_layout(llama, "bf16", m).bytes_per_token for m in ("latent", "heads", "heads_padded")} == {131_072}


@pytest.mark.parametrize("engine, per_token", [
    ("vllm", 70_272), ("sglang", 70_272), ("tensorrt-llm", 70_272), ("llama-cpp-2026", 70_272), ("mlx", 70_272),
    ("tgi", 5_996_544), ("llama-cpp", 4_997_120), ("ollama", 4_997_120), ("transformers", 4_997_120)])
def test_each_engines_layout(engine, per_token):
    assert kv_layout(DS, "bf16", engine_profile(engine).mla_cache).bytes_per_token == per_token


def _scenario(engine: str, batch: int = 1) -> Scenario:
    return Scenario(model=MODELS.get("deepseek-ai/DeepSeek-V3").spec,
                    cluster=ClusterSpec(gpu=HW.gpu("nvidia-h200-sxm-141gb").spec, gpus_per_node=8),
                    workload="inference", parallelism=ParallelLayout(tp=8), engine_profile=engine_profile(engine),
                    inference=InferenceSettings(engine=engine, weight_format="fp8", batch=batch, prompt_tokens=1024,
                                                output_tokens=1024))


def test_tgi_cache_is_split_by_heads_and_sglang_replicated():
    """8 x H200, TP 8: TGI's rank holds 16 of the 128 heads (749,568 B a token), SGLang's the whole latent."""
    tgi, sglang = plan_memory(_scenario("tgi"), engine_profile("tgi")), plan_memory(_scenario("sglang"),
                                                                                    engine_profile("sglang"))
    assert tgi.kv_share == 16 / 128 and sglang.kv_share == 1.0
    assert tgi.kv_per_seq_gpu == 2048 * 5_996_544 / 8  # 2,048 tokens, whole 16-token blocks
    assert sglang.kv_per_seq_gpu == 2048 * 70_272
    # the same pool holds 749,568 / 70,272 = 10.7x fewer tokens under TGI (its pool is also larger: 100% vs 81%)
    est = estimate(_scenario("tgi")).inference
    assert est.kv_bytes_per_token.value == 5_996_544
    assert est.max_concurrency.value == int(tgi.kv_budget // tgi.kv_per_seq_gpu)


def test_longest_context_and_decode_bytes_follow_the_layout():
    tgi = longest_context(_scenario("tgi")).tokens
    as_latent = longest_context(_scenario("tgi").model_copy(update={"engine_profile": engine_profile("tgi").model_copy(
        update={"mla_cache": "latent"})})).tokens
    assert tgi < as_latent / 10  # 749,568 B a token per GPU against 70,272
    # decode reads every sequence's cache: at batch 32 and 2 x 1,024 tokens TGI's step reads its rank's heads
    step = estimate(_scenario("tgi", 32)).inference.tpot_s.inputs["bytes"]
    step_latent = estimate(_scenario("tgi", 32).model_copy(update={"engine_profile": engine_profile("tgi").model_copy(
        update={"mla_cache": "latent"})})).inference.tpot_s.inputs["bytes"]
    mean_context = 1024 + 512
    assert step - step_latent == pytest.approx(32 * mean_context * (5_996_544 / 8 - 70_272), rel=1e-9)


def test_latent_size_against_a_published_llama_cpp_log():
    """ik_llama.cpp (a llama.cpp fork whose MLA path caches only the latent + rotary key, as mainline does from PR
    #19067), DeepSeek-R1 (the V3 architecture), n_ctx 32,768, q8_0 cache, log posted in ikawrakow/ik_llama.cpp PR
    #259 (ubergarm, 2025-03-16): "KV self size = 1166.62 MiB, c^KV (q8_0): 1166.62 MiB, kv^T: not used".
    576 x 61 x 32,768 cells x 34 / 32 B (q8_0 blocks) = 1,166.625 MiB; printed to 2 decimals."""
    mib = kv_layout(DS, "q8_0", "latent").bytes_for_context(32_768) / 2**20
    assert mib == 1166.625
    assert f"{mib:.2f}" == "1166.62"
