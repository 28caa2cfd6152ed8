"""MLX (mlx-lm) kernels as data: decode = bytes / (bandwidth x stream efficiency) + layers x per-layer floor,
prompts through quantized_matmul at a fraction of the fp16 GEMM rate by Apple GPU generation.

Sources (catalogs/engines.toml [mlx]): a published MLX bandwidth test and mlx-lm run on an M3 Ultra
(pokgak.xyz, mlx 0.31.1: 2 GB copy 669 of 819 GB/s; Mistral 7B 4-bit, 4.5 GB, 110-120 t/s) and raw
quantized_matmul vs GEMM timings at 4096 rows (Rapid-MLX #3058: ~30% slower on an M2 Pro, none on an
M3 Ultra). These tests check the figures against those sources, not against benchmark tables."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.latency import apple_generation, curve_at_or_below
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.formats.hf_config import spec_from_config

MISTRAL_7B = dict(model_type="mistral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                  max_position_embeddings=32768)  # mistralai/Mistral-7B-v0.1 config.json
CAT = load_hardware_catalog()
MLX = engine_profile("mlx")


def run(gpu_id: str, fmt: str, prompt: int = 128, output: int = 128, engine: str = "mlx"):
    sc = Scenario(model=spec_from_config(MISTRAL_7B), cluster=ClusterSpec(gpu=CAT.gpu(gpu_id).spec),
                  workload="inference",
                  inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16",
                                              prompt_tokens=prompt, output_tokens=output),
                  engine_profile=engine_profile(engine))
    return estimate(sc).inference


def test_profile_figures_follow_their_sources():
    assert MLX.decode_bandwidth_efficiency_apple == pytest.approx(669 / 819, abs=0.001)
    floor = (1 / 115 - 4.5e9 / 669e9) / 32  # 115 t/s: the middle of 110-120
    assert MLX.decode_layer_s_apple == pytest.approx(floor, rel=0.01)
    assert MLX.weight_formats == ("float", "mlx")
    assert engine_profile("llama-cpp").weight_formats == ("gguf", "float")


def test_mistral_4bit_on_m3_ultra_reproduces_the_source_run():
    """The source's own run (110-120 t/s): the model's weights as llmplan sizes them (mlx 4-bit g64, the
    embedding and head quantised too) are a little under the 4.5 GB it quoted, so within 110-130 t/s."""
    inf = run("apple-m3-ultra-80c-256gb", "mlx-4bit")
    assert 110 <= 1 / inf.tpot_s.value <= 130
    assert inf.decode_bound == "memory bandwidth"


def test_decode_never_beats_the_bandwidth_roofline():
    for gpu in ("apple-m1-8c-16gb", "apple-m2-max-38c-96gb", "apple-m3-ultra-80c-256gb", "apple-m4-max-40c-128gb"):
        for fmt in ("mlx-4bit", "mlx-8bit", "bf16"):
            inf = run(gpu, fmt)
            bits = {"mlx-4bit": 4.5, "mlx-8bit": 8.5, "bf16": 16}[fmt]  # + fp16 scale and bias per 64
            read = inf.weight_bytes.value - 32000 * 4096 * bits / 8  # the embedding is a lookup, not read
            roofline = read / CAT.gpu(gpu).spec.memory_bandwidth  # peak bandwidth, no efficiency
            assert inf.tpot_s.value > roofline / 0.817, (gpu, fmt)


def test_prompt_pays_the_quantised_matmul_penalty_before_m3():
    assert curve_at_or_below(MLX.prefill_quant_factor_apple, 1) == 0.70
    assert curve_at_or_below(MLX.prefill_quant_factor_apple, 2) == 0.70
    assert curve_at_or_below(MLX.prefill_quant_factor_apple, 4) == 1.0
    assert [apple_generation(n) for n in ("Apple M2 Ultra 76-core GPU, 192 GB", "Apple M4 Max", "x")] == [2, 4, 1]
    long = 4096  # compute-bound: the prompt's time is its FLOPs over the rate
    m2_q, m2_f = run("apple-m2-ultra-76c-192gb", "mlx-4bit", long), run("apple-m2-ultra-76c-192gb", "fp16", long)
    m3_q, m3_f = run("apple-m3-ultra-80c-256gb", "mlx-4bit", long), run("apple-m3-ultra-80c-256gb", "fp16", long)
    assert m2_q.ttft_s.value / m2_f.ttft_s.value == pytest.approx(1 / 0.70, rel=0.03)
    assert m3_q.ttft_s.value / m3_f.ttft_s.value == pytest.approx(1.0, rel=0.03)


def test_mlx_8bit_decodes_slower_than_4bit_by_the_bytes():
    q4, q8 = run("apple-m2-max-38c-96gb", "mlx-4bit"), run("apple-m2-max-38c-96gb", "mlx-8bit")
    floor = 32 * MLX.decode_layer_s_apple
    ratio = (q8.tpot_s.value - floor) / (q4.tpot_s.value - floor)
    assert ratio == pytest.approx(q8.weight_bytes.value / q4.weight_bytes.value, rel=0.03)  # 8.5 / 4.5 bits
