"""kvq34 (issue 24): the quantised KV caches TensorRT-LLM, SGLang, mlx-lm and Transformers offer, priced from each
engine's code (core/kv_quant.py names the files and commits). Bytes per token are worked out by hand from the
buffers each engine allocates; tolerance: exact (products of shapes), except the comparisons with published
figures, whose bands are stated."""

from __future__ import annotations

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.core.kvcache import kv_dtype_refusal, kv_layout
from llmplan.errors import InputError, PlanFileError
from llmplan.formats.hf_config import spec_from_config
from llmplan.gui.backend import default_plan
from llmplan.gui.commands import set_path
from llmplan.plan.resolve import resolve
from tests.core.inference.models import DEEPSEEK_V3, GEMMA2_9B, LLAMA3_8B

# Llama 3 8B: 32 layers, 8 KV heads of 128 values, a key and a value each: 512 vectors of 128 per token.
VECTORS = 2 * 8 * 32


@pytest.mark.parametrize("kv,per_vector", [
    # TensorRT-LLM --kv_cache_dtype int8: one byte a value (its per-tensor scales sit with the weights).
    ("int8", 128),
    # SGLang fp4_e2m1 (MHATokenToKVPoolFP4): head_dim // 2 = 64 bytes + 128 / 16 = 8 uint8 scales.
    ("fp4_e2m1", 64 + 8),
    # mlx-lm QuantizedKVCache(bits=4, group_size=64): 128 // (32 // 4) = 16 uint32 words = 64 bytes, and for each
    # of the 2 groups a bf16 scale and bias: 8 bytes.
    ("mlx-4bit", 16 * 4 + 2 * 4),
    ("mlx-8bit", 32 * 4 + 2 * 4),  # 128 // 4 = 32 words
    ("mlx-4bit-g32", 16 * 4 + 4 * 4),  # 4 groups of 32
    # Transformers QuantoQuantizedLayer(nbits=4, q_group_size=64): 2 values a byte, a scale and a shift per group.
    ("quanto-int4", 64 + 2 * 4),
    ("quanto-int2", 32 + 2 * 4),
    # HQQQuantizedLayer(nbits=3): a group of 64 pads to 70 and packs ten to an int32: 7 words = 28 bytes per group.
    ("hqq-3bit", 2 * 28 + 2 * 4),
])
def test_bytes_per_token_by_hand_llama3_8b(kv, per_vector):
    assert kv_layout(spec_from_config(LLAMA3_8B), kv).bytes_per_token == VECTORS * per_vector


def test_mla_latent_in_fp4_and_mlx():
    """DeepSeek-V3's latent (512) and rotary key (64) per token and layer, 61 layers. SGLang's
    MLATokenToKVPoolFP4: 576 / 2 + 576 / 16 bytes; mlx-lm caches the latent as keys and the rotary key as values
    (models/deepseek_v3.py update_and_fetch(kv_latent, k_pe)), each in groups of 64: 256 + 8·4 and 32 + 4."""
    spec = spec_from_config(DEEPSEEK_V3)
    assert kv_layout(spec, "fp4_e2m1").bytes_per_token == 61 * (288 + 36)
    assert kv_layout(spec, "mlx-4bit").bytes_per_token == 61 * (256 + 32 + 32 + 4)


def test_sglang_pr_states_the_same_ratios():
    """SGLang PR #12612 (JackChuang, 2025-11): FP4 with block size 16 holds "≈1.78×" the tokens of KV8 and
    "≈3.56×" those of KV16 — compared, not fitted: 1 / 0.5625 and 2 / 0.5625, within the PR's rounding."""
    spec = spec_from_config(LLAMA3_8B)
    fp4 = kv_layout(spec, "fp4_e2m1").bytes_per_token
    assert kv_layout(spec, "fp8").bytes_per_token / fp4 == pytest.approx(1.78, abs=0.005)
    assert kv_layout(spec, "bf16").bytes_per_token / fp4 == pytest.approx(3.56, abs=0.005)


def test_mlx_server_pr_cache_sizes_band():
    """ml-explore/mlx-lm PR #1832 (2026-09-03) measured a cache of 786.6 MB in fp16 and 226.5 MB at 4 bits
    (group 64) for one model and prompt: 0.288 of it. The buffers above give (64 + 8) / 256 = 0.281 for any
    head of 128 or 64 values; the published ratio is 2.4% above it (the model and the allocator's rounding are
    not stated), so the band pinned is 3%."""
    spec = spec_from_config(LLAMA3_8B)
    ratio = kv_layout(spec, "mlx-4bit").bytes_per_token / kv_layout(spec, "fp16").bytes_per_token
    assert ratio == 0.28125
    published = 226.5 / 786.6
    assert published == pytest.approx(ratio, rel=0.03)


def test_mlx_stays_plain_until_its_quantised_start():
    """mlx_lm.generate converts the cache once it holds --quantized-kv-start tokens (default 5000,
    maybe_quantize_kv_cache); until then it is the model's bf16. At the conversion the plain cache and its
    quantised copy are held together, so a context just past it peaks above the quantised cache alone."""
    kv = kv_layout(spec_from_config(LLAMA3_8B), "mlx-4bit")
    assert kv.held_bytes(4999) == kv.bytes_for_context(4999) == 4999 * 131_072
    assert kv.held_bytes(8000) == 8000 * 36_864
    assert kv.bytes_for_context(8000) == 5000 * (131_072 + 36_864)
    assert kv.bytes_for_context(32_000) == kv.held_bytes(32_000) == 32_000 * 36_864


def test_transformers_keeps_a_plain_residual_window():
    """QuantizedLayer.update: the newest tokens wait in the model's dtype until residual_length - 1 = 127 of them
    are there, then everything is quantised again; priced at its largest, 127 tokens in every layer."""
    kv = kv_layout(spec_from_config(LLAMA3_8B), "quanto-int4")
    assert kv.held_bytes(1000) == (1000 - 127) * 36_864 + 127 * 131_072
    assert kv.held_bytes(100) == 100 * 131_072
    assert kv.plain_bytes(1000) == 1000 * 131_072


def test_mlx_quantised_cache_of_an_all_sliding_model_keeps_every_token():
    """Mistral-7B-v0.1 sets a sliding_window but no layer_types: mlx-lm's llama.py builds every layer a plain
    KVCache (make_cache: RotatingKVCache only for 'sliding_attention' layers), which keeps the whole context and
    converts to QuantizedKVCache; Gemma-2 mixes both kinds and is refused (above)."""
    from tests.core.inference.models import MISTRAL_7B_V01

    kv = kv_layout(spec_from_config(MISTRAL_7B_V01), "mlx-4bit")
    assert kv.held_bytes(8192) == 8192 * 36_864


def test_transformers_quantised_cache_keeps_every_token_of_sliding_layers():
    """QuantizedCache builds one QuantizedLayer per layer, none of them sliding: Gemma-2's local layers keep the
    whole context, where DynamicCache caps them at the 4,096-token window."""
    spec = spec_from_config(GEMMA2_9B)
    plain, quant = kv_layout(spec, "bf16"), kv_layout(spec, "quanto-int4")
    assert plain.held_bytes(8192) == 8192 * 21 * 8192 + 4096 * 21 * 8192
    assert quant.held_bytes(8192) == (8192 - 127) * 42 * 8192 * 0.28125 + 127 * 42 * 8192


@pytest.mark.parametrize("cfg,kv,said", [
    (GEMMA2_9B, "mlx-4bit", "RotatingKVCache, which it cannot quantise"),
    (DEEPSEEK_V3, "mlx-4bit-g128", "groups of 128; 64 values do not divide"),
    (LLAMA3_8B, "mlx-6bit", "allocates 25 words for 128 values at 6 bits, where mx.quantize writes 24"),
])
def test_shapes_mlx_lm_cannot_quantise_are_named(cfg, kv, said):
    with pytest.raises(InputError) as err:
        kv_layout(spec_from_config(cfg), kv)
    assert said in str(err.value) and f"inference.kv_dtype={kv}" in str(err.value)


def _plan(engine: str, kv: str):
    doc = set_path(set_path(default_plan(), "workload", "inference"), "inference.engine", engine)
    return set_path(doc, "inference.kv_dtype", kv)


@pytest.mark.parametrize("kv,engines", [
    ("int8", ("vllm", "sglang", "tgi", "mlx", "transformers")),
    ("fp4_e2m1", ("vllm", "tensorrt-llm", "tgi", "mlx", "transformers")),
    ("mlx-4bit", ("vllm", "sglang", "tensorrt-llm", "tgi", "transformers")),
    ("quanto-int4", ("vllm", "sglang", "tensorrt-llm", "tgi", "mlx")),
    ("hqq-4bit", ("vllm", "mlx")),
])
def test_each_type_is_refused_where_the_engine_lacks_it(kv, engines):
    """The same refusal as every other type (kvlist33): the engine's name, its 8-bit cache where it has one, and
    the list it takes."""
    for engine in engines:
        prof = engine_profile(engine)
        why = kv_dtype_refusal(kv, prof.name, prof.kv_dtypes)
        assert why is not None and why.startswith(f"{prof.name} has no {kv} KV cache")
        with pytest.raises(PlanFileError) as err:
            resolve(_plan(engine, kv))
        assert why in str(err.value)
    for llama in ("llama.cpp", "ollama"):
        prof = engine_profile(llama)
        assert kv_dtype_refusal(kv, prof.name, prof.kv_dtypes).startswith(f"{prof.name} has no {kv} KV cache; "
                                                                          "its 8-bit cache is q8_0")


@pytest.mark.parametrize("engine,kv", [("tensorrt-llm", "int8"), ("sglang", "fp4_e2m1"), ("mlx", "mlx-4bit"),
                                       ("transformers", "quanto-int4"), ("transformers", "hqq-2bit")])
def test_each_engine_takes_its_own(engine, kv):
    assert kv in engine_profile(engine).kv_dtypes
    assert resolve(_plan(engine, kv)).inference.kv_dtype == kv


def test_transformers_decode_pays_the_dequantise_and_the_cat():
    """Every step and layer QuantizedLayer.update dequantises the whole quantised cache (reads it, writes it in
    bf16), concatenates it with the residual and the new token (reads and writes bf16) and attention reads that;
    every 127 steps it quantises all again. Priced at the profile's measured copy bandwidth (0.869 of an H100's
    3.35 TB/s), no new rate: the quantised cache saves memory but its decode moves more bytes than DynamicCache's
    cat (read + write + attention read)."""
    from llmplan.core.inference.eager import eager_decode
    from llmplan.core.inference.memory import plan_memory
    from tests.core.inference.gpus import H100
    from tests.core.inference.test_estimate_inference import scenario

    ctx, copy_bw = 16_000, 3.35e12 * 0.869

    def step(kv):
        s = scenario(LLAMA3_8B, H100, engine="transformers", prompt_tokens=ctx, kv_dtype=kv)
        plan = plan_memory(s, s.engine_profile)
        plain = plan.kv.plain_bytes(ctx) if plan.kv.quant else 0.0
        return plan.kv, eager_decode(s.model, plan, s.engine_profile, 989e12, 3.35e12, 16e9,
                                     plan.kv.held_bytes(ctx), 16e9, 1, plain)

    bf, plain = step("bf16")
    q4, quant = step("quanto-int4")
    p, q = bf.held_bytes(ctx), q4.held_bytes(ctx)
    assert p == q4.plain_bytes(ctx) == ctx * 131_072 and q == (ctx - 127) * 36_864 + 127 * 131_072
    assert quant.attention_s == pytest.approx(p / copy_bw, rel=1e-12)
    elementwise = plain.memory_bound_s - 2 * p / copy_bw
    assert quant.memory_bound_s - elementwise == pytest.approx((q + 3 * p + (p + q) / 127) / copy_bw, rel=1e-12)
    assert quant.gpu_s > plain.gpu_s


def test_serving_decode_reads_the_smaller_cache():
    """TensorRT-LLM's attention reads its INT8 cache directly: a long-context decode step streams fewer bytes at
    int8 than at bf16 (as SGLang's fp8)."""
    from llmplan.core.engine import estimate
    from tests.core.inference.gpus import H100
    from tests.core.inference.test_estimate_inference import scenario

    def tpot(engine, kv):
        e = estimate(scenario(LLAMA3_8B, H100, engine=engine, batch=4, prompt_tokens=30_000, kv_dtype=kv))
        assert e.inference.decode_bound == "memory bandwidth"
        return e.inference.tpot_s.value

    assert tpot("tensorrt-llm", "int8") < tpot("tensorrt-llm", "bf16")
    assert tpot("sglang", "fp8") < tpot("sglang", "bf16")


def test_sglang_fp4_dequantises_its_whole_pool_every_pass():
    """MHATokenToKVPoolFP4._get_key_buffer / _get_value_buffer (PR #12612, #13547) hand the attention backend the
    layer's whole k_buffer / v_buffer dequantised to bf16 (KVFP4QuantizeUtil.batched_dequantize), every slot of
    the pool, at every forward pass: the pool is read (0.5625 B a value) and written in bf16 (2 B), and attention
    reads the batch's tokens from that copy. Unchecked against a measurement (none published for MHA); SGLang's
    docs warn that unfused dequantisation "can be extremely slow", and the same whole-pool read made an earlier
    4-bit cache run at ~0.03 tokens/s on an H200 (sgl-project/sglang issue #23134)."""
    from llmplan.core.engine import estimate
    from llmplan.core.inference.latency import pool_dequant_bytes
    from llmplan.core.inference.memory import plan_memory
    from tests.core.inference.gpus import H100
    from tests.core.inference.test_estimate_inference import scenario

    s = scenario(LLAMA3_8B, H100, engine="sglang", batch=4, prompt_tokens=30_000, kv_dtype="fp4_e2m1")
    plan = plan_memory(s, s.engine_profile)
    assert pool_dequant_bytes(s.model, plan) == plan.kv_budget * (1 + 2 / 0.5625)
    step = estimate(s).inference.tpot_s.value
    fp8 = estimate(scenario(LLAMA3_8B, H100, engine="sglang", batch=4, prompt_tokens=30_000, kv_dtype="fp8"))
    assert step > 5 * fp8.inference.tpot_s.value  # 259 GB moved a step (a 56.9 GB pool) against 24 GB
    mla = scenario(DEEPSEEK_V3, H100, engine="sglang", kv_dtype="fp4_e2m1")
    assert pool_dequant_bytes(mla.model, plan) == 0  # the MLA pool's read path is not priced
    for kv in ("fp8", "int8"):
        other = scenario(LLAMA3_8B, H100, engine="tensorrt-llm", kv_dtype=kv)
        assert pool_dequant_bytes(other.model, plan_memory(other, other.engine_profile)) == 0


@pytest.mark.parametrize("prompt,published_mb", [(8192, 3337), (16384, 5734), (32768, 9967)])
def test_mlx_quantised_prompt_peak_against_unsloth_measurements(prompt, published_mb):
    """unslothai/unsloth-zoo PR #1151 (merged 2026-09-04) measured mlx_lm prefill peaks above the weights for
    mlx-community/Qwen3-4B-4bit at the default 2,048-token step with a 4-bit KV cache: 3,337 / 5,734 / 9,967 MB
    at 8,192 / 16,384 / 32,768 prompt tokens — above the bf16 cache's 2,267 / 3,388 / 5,670 MB. Nothing here is
    fitted to it: the cache (start 5,000), two [heads, step, prompt] bf16 score tensors of the last step
    (quantized_scaled_dot_product_attention), the activations. Measured: -7.4%, -8.7%, -0.1%; band 10%.
    Without the score matrix the estimate was 945 / 945 / 1,370 MB of cache plus 126 MB of activations."""
    import json
    from pathlib import Path

    from llmplan.core.engine import estimate
    from llmplan.core.hardware import ClusterSpec
    from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
    from tests.core.inference.gpus import M2_ULTRA

    cfg = json.loads((Path(__file__).parents[3] / "catalogs/models/Qwen__Qwen3-4B.json").read_text())["config"]
    s = Scenario(model=spec_from_config(cfg), cluster=ClusterSpec(gpu=M2_ULTRA, gpus_per_node=1),
                 workload="inference", parallelism=ParallelLayout(), engine_profile=engine_profile("mlx"),
                 inference=InferenceSettings(engine="mlx", kv_dtype="mlx-4bit", weight_format="mlx-4bit",
                                             prompt_tokens=prompt, output_tokens=1))
    m = estimate(s).memory
    assert (m.total.value - m.weights.value) / 1e6 == pytest.approx(published_mb, rel=0.10)
    assert m.activations.value > m.kv_cache.value  # the scores, not the cache, set the peak


def test_transformers_holds_one_layer_dequantised_while_it_attends():
    """QuantizedLayer.update keeps the dequantised cache and its concatenation (keys and values) while the layer
    attends: Llama 3 8B, 4 sequences of 512 + 8,192 tokens, one layer in bf16 = 8,704 x 4,096 B, twice, x 4. The
    phase replaces the prompt's activations where it is the larger (a long generation after a short prompt); a
    long prompt's own activations (the whole prompt in one pass) outweigh it."""
    from llmplan.core.inference.memory import plan_memory
    from llmplan.core.inference.score_buffer import transformers_dequant_bytes
    from tests.core.inference.gpus import H100
    from tests.core.inference.test_estimate_inference import scenario

    s = scenario(LLAMA3_8B, H100, engine="transformers", batch=4, prompt_tokens=512, output_tokens=8192,
                 kv_dtype="hqq-4bit")
    held = 2 * 4 * 8704 * 4096
    assert transformers_dequant_bytes(s, s.engine_profile) == held
    plan = plan_memory(s, s.engine_profile)
    assert plan.scores == held - plan.activations > 0
    long = scenario(LLAMA3_8B, H100, engine="transformers", batch=4, prompt_tokens=8192, kv_dtype="hqq-4bit")
    assert plan_memory(long, long.engine_profile).scores == 0
    bf16 = scenario(LLAMA3_8B, H100, engine="transformers", batch=4, prompt_tokens=512, output_tokens=8192)
    assert transformers_dequant_bytes(bf16, bf16.engine_profile) == 0


def test_mlx_quantised_prompt_moves_its_score_matrices():
    """After the conversion (offset 6,144: the first 2,048-token step ending past 5,000) each prompt step's scores
    are written by mx.quantized_matmul, read and written by mx.where and by mx.softmax, and read by the second
    quantized_matmul: 6 passes of 2 bytes per element, at the MLX copy stream (0.817 of the M2 Ultra's 800 GB/s,
    the engine's measured share). Llama 3 8B, 32,768 tokens: steps 4 ... 16 of 2,048 queries see 2,048 x k keys,
    Σ k = 136 - 6 = 130, x 32 heads x 32 layers."""
    from llmplan.core.engine import estimate
    from llmplan.core.inference.latency import mlx_quant_score_traffic_s
    from llmplan.core.inference.memory import plan_memory
    from tests.core.inference.gpus import M2_ULTRA
    from tests.core.inference.test_estimate_inference import scenario

    def case(kv):
        return scenario(LLAMA3_8B, M2_ULTRA, engine="mlx", weight_format="mlx-4bit", prompt_tokens=32_768,
                        output_tokens=128, kv_dtype=kv)

    s = case("mlx-4bit")
    elements = 2048 * 2048 * 130 * 32 * 32
    stream = 800e9 * 0.817
    plan = plan_memory(s, s.engine_profile)
    assert mlx_quant_score_traffic_s(s, plan, 32, stream, 1, 32_768, 2048) == pytest.approx(elements * 12 / stream)
    ttft = estimate(s).inference.ttft_s.value - estimate(case("bf16")).inference.ttft_s.value
    assert ttft == pytest.approx(elements * 12 / stream, rel=0.01)
    assert mlx_quant_score_traffic_s(s, plan, 32, stream, 1, 6000, 2048) == 0  # converted after the prompt
