"""llama.cpp's MoE prompt kernels on CUDA (core/inference/moe_prompt.py), as read from ggml-org/ggml d99724f2
(2026-08-21, synced from llama.cpp): ggml-cuda.cu ``ggml_cuda_mul_mat_id``, mmq.cuh ``mul_mat_q_switch_J`` and
``mul_mat_q``, mmq-config-ampere.cuh; llama.cpp src/llama-graph.cpp ``build_moe_ffn`` @00395eb2.

Exact where the figure is arithmetic from the code (tile choice, padding, bytes, kernel counts; tolerance 1e-9),
and one published row on a second MoE family: Qwen3-30B-A3B Q4_0 on an RTX 4090 at n_ubatch 64, pp4096, 2,456.92
t/s (llama.cpp PR #15631, 2025-09, master column), where an expert gets ~4 of a 64-row tile (band pinned).
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.backend import backend_of
from llmplan.core.inference.moe_prompt import (
    expected_tiles,
    expert_padding,
    extra_bytes_per_token,
    padding_factor,
    runs_moe_mmq,
    tile_columns,
)
from llmplan.core.quant import parse_weight_format as resolve_format
from llmplan.core.workload import InferenceSettings, Scenario

CAT, MODELS = load_hardware_catalog(), load_model_catalog()
RTX4090 = CAT.gpu("nvidia-rtx-4090-24gb").spec
GPT_OSS, QWEN3_MOE = MODELS.get("openai/gpt-oss-20b").spec, MODELS.get("Qwen/Qwen3-30B-A3B").spec
CURRENT = engine_profile("llama-cpp-2026")


def test_tile_width_is_picked_for_the_whole_micro_batch():
    # mul_mat_q_switch_J: ncols_max = n_tokens, the smallest J with the fewest tiles, 128 at most; matrices whose
    # rows are no multiple of 128 (gpt-oss's 2,880) offer only 8, 16, 32, 64 and 128.
    assert tile_columns(512, 2880) == tile_columns(128, 2048) == 128
    assert tile_columns(40, 2048) == 40 and tile_columns(40, 2880) == 64
    assert tile_columns(64, 768) == 64 and tile_columns(100, 768) == 112


def test_expected_tiles_is_the_binomial_mean_of_the_ceiling():
    # 4 tokens, 1 of 2 experts each, 2-row tiles: R ~ Bin(4, 1/2), E[ceil(R/2)] = (4 + 6 + 2 x 4 + 2 x 1) / 16.
    assert expected_tiles(4, 1, 2, 2) == pytest.approx(2 * 20 / 16, rel=1e-9)
    assert expected_tiles(8, 8, 8, 4) == 8 * 2  # every token uses every expert: no chance involved


def test_padding_of_gpt_oss_at_the_default_micro_batch():
    # 512 x 4 / 32 = 64 rows an expert on average (never above 128 in practice): one 128-column tile each, twice the
    # routed FLOPs; and 23 row tiles of 128 over 2,880 rows.
    assert padding_factor(512, 4, 32, 2880) == pytest.approx(2 * 23 * 128 / 2880, rel=1e-9)
    assert expert_padding(GPT_OSS, 512) == pytest.approx(2 * 23 * 128 / 2880, rel=1e-9)
    # at n_ubatch 1024 the mean is 128 rows, and an expert above it pays a second tile
    assert 1.4 < padding_factor(1024, 4, 32, 2880) / (23 * 128 / 2880) < 1.6


def test_extra_bytes_per_token_of_a_gpt_oss_layer():
    h, k, e = 2880, 4, 32
    expected = (k - 1) * h * 1.125 + (k - 1) * h * 4 + 2 * k * h * 4 + (k + 1) * h * 4 + 2 * e * 4 + 2 * k * 4
    expected += 2 * k * (2 * 2880 + h) * 4  # add_id of the gate, up and down outputs (gpt-oss's expert biases)
    assert extra_bytes_per_token(GPT_OSS) == pytest.approx(expected, rel=1e-9)


def _scenario(model, fmt: str, engine: str = "llama-cpp-2026", ubatch: int | None = None, prompt: int = 512,
              output: int = 1) -> Scenario:
    profile = engine_profile(engine)
    if ubatch:
        profile = profile.model_copy(update={"prefill_chunk_tokens": ubatch})
    return Scenario(model=model, cluster=ClusterSpec(gpu=RTX4090), workload="inference", engine_profile=profile,
                    inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16",
                                                prompt_tokens=prompt, output_tokens=output))


def test_only_moe_models_on_cuda_mmq_are_priced():
    cuda = backend_of(RTX4090)
    assert runs_moe_mmq(QWEN3_MOE, CURRENT, RTX4090, cuda, resolve_format("q4_0"), 512)
    llama = MODELS.get("meta-llama/Meta-Llama-3-8B").spec
    assert not runs_moe_mmq(llama, CURRENT, RTX4090, cuda, resolve_format("q4_0"), 512)  # dense rows do not move
    assert not runs_moe_mmq(QWEN3_MOE, CURRENT, RTX4090, cuda, resolve_format("bf16"), 512)  # cuBLAS path
    assert not runs_moe_mmq(QWEN3_MOE, CURRENT, RTX4090, "vulkan", resolve_format("q4_0"), 512)
    # the 2024 builds dequantise micro-batches above 32 tokens to F16 cuBLAS: not this kernel
    assert not runs_moe_mmq(QWEN3_MOE, engine_profile("llama-cpp"), RTX4090, cuda, resolve_format("q4_0"), 512)


def test_decode_floor_counts_the_moe_layer_kernels():
    # 21 kernels a dense layer; an MoE layer's feed-forward runs 8 instead of 4 (router, fused top-k, quantize,
    # gate+up by id with bias and GLU, quantize, down by id, weighting, fused sum): 25.
    assert CURRENT.decode_floor_per_layer(False) == pytest.approx(21 * 0.875e-6, rel=1e-9)
    assert CURRENT.decode_floor_per_layer(False, 1.0) == pytest.approx(25 * 0.875e-6, rel=1e-9)
    assert CURRENT.decode_floor_per_layer(True, 1.0) == CURRENT.decode_layer_s_apple  # Metal: measured, flat
    llama = MODELS.get("meta-llama/Meta-Llama-3-8B").spec
    flat = CURRENT.model_copy(update={"decode_kernels_per_moe_layer": None})
    sc = _scenario(llama, "q4_0", output=128)
    assert estimate(sc).inference.tpot_s.value == estimate(sc.model_copy(
        update={"engine_profile": flat})).inference.tpot_s.value


def test_qwen3_moe_at_a_small_micro_batch():
    # PR #15631 (master): RTX 4090, qwen3moe 30B.A3B Q4_0, n_ubatch 64, pp4096: 2,456.92 t/s. 64 x 8 / 128 = 4 rows
    # an expert in a 64-column tile (padding 15.7x); estimated 1.33x before the tiles were priced, 1.09x after.
    tokens = 4096
    speed = tokens / estimate(_scenario(QWEN3_MOE, "q4_0", ubatch=64, prompt=tokens)).inference.ttft_s.value
    assert expert_padding(QWEN3_MOE, 64) == pytest.approx(15.74, abs=0.01)
    assert 1.0 < speed / 2_456.92 < 1.2
