"""llama.cpp's Metal prompt kernel: a measured share of the Apple GPU's fp16 peak per weight type.

Every weight type multiplies a prompt through ``kernel_mul_mm`` (ggml-metal.metal), which dequantises a tile of the
weights to half in threadgroup memory before its simdgroup-matrix multiply-accumulates, so the rate falls with the
type's dequantisation work (engines.toml ``prefill_metal_share``; core/inference/backend.py).

Sources, none of them an acceptance table (tests/core/inference/test_apple_llama_cpp_table.py holds those):
- the F16 level: llama.cpp PR #5488 (ggerganov, 2024-02-16, master 113e0d5d, M2 Ultra 76-core GPU): MPT 7B F16
  pp512 1,454.24 t/s;
- the other types: llama.cpp PR #3084 (ggerganov's M2 Ultra run, 2023-09-09), pp512 of LLaMA 7B in one build:
  F16 1,265.30, Q8_0 1,142.84, Q4_0 1,164.00, Q4_1 1,161.63, Q4_K_M 1,028.20, Q5_K_M 976.31, Q6_K 977.56 t/s;
- the checks: llama.cpp PR #10238 (2024-11-09, M2 Ultra), Llama 3.2 3B F16 pp512 3,237.78 and Q4_0 2,986.43 t/s;
  PR #3648 (2023-10-18, M2 Ultra, a month before discussion #4167's reference build), LLaMA 2 7B Q4_0 pp512
  1,235.45 t/s.
Tolerances: the shares are the stated arithmetic to 0.002; the later run agrees within 3%, the earlier within 8%.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.inference.backend import metal_prompt_rate
from llmplan.core.quant import parse_weight_format

CAT = load_hardware_catalog()
M2_ULTRA = CAT.gpu("apple-m2-ultra-76c-192gb").spec
LLAMA = engine_profile("llama-cpp")
SHARES = dict(LLAMA.prefill_metal_share)


def prompt_flop_per_token(layers: int, block_params: int, head_params: int, heads: int, head_dim: int,
                          tokens: int = 512) -> float:
    """The engine's count for a pp``tokens`` run: 2 FLOP per block weight per token, the head once per prompt,
    attention's QK and AV over the causal pairs (core/inference/latency.py prefill_time)."""
    pairs = tokens * (tokens + 1) / 2
    attention = 2 * (2 * heads * head_dim) * pairs * layers
    return (2 * block_params * tokens + 2 * head_params + attention) / tokens


# MPT-7B: 32 layers of width 4096 (Wqkv 4096 x 12288, out 4096 x 4096, up and down 4096 x 16384), vocab 50,432
MPT_7B = prompt_flop_per_token(32, 32 * (4096 * 12288 + 4096 * 4096 + 2 * 4096 * 16384), 50432 * 4096, 32, 128)
# Llama 3.2 3B: 28 layers of width 3072 (q, o 3072 x 3072; k, v 3072 x 1024; gate, up, down 3072 x 8192)
LLAMA_32_3B = prompt_flop_per_token(28, 28 * (2 * 3072 * 3072 + 2 * 3072 * 1024 + 3 * 3072 * 8192),
                                    128256 * 3072, 24, 128)
PR_3084 = {"F16": 1265.30, "Q8_0": 1142.84, "Q4_0": 1164.00, "Q4_1": 1161.63, "Q4_K*": 1028.20, "Q5_K*": 976.31,
           "Q6_K": 977.56}


def test_the_f16_share_is_pr_5488s_m2_ultra_run():
    peak = M2_ULTRA.peak_flops.for_dtype("fp16")
    assert abs(MPT_7B / 13.02e9 - 1) < 0.001  # GFLOP per token as the engine counts it
    assert SHARES["F16"] == pytest.approx(1454.24 * MPT_7B / peak, abs=0.002)


@pytest.mark.parametrize("pattern", [p for p in PR_3084 if p != "F16"])
def test_other_types_keep_their_rate_beside_f16_in_one_build(pattern):
    assert SHARES[pattern] == pytest.approx(SHARES["F16"] * PR_3084[pattern] / PR_3084["F16"], abs=0.002)


def test_a_later_build_on_the_same_chip_agrees():
    """PR #10238's F16 and Q4_0 runs, nine months later, land within 3% of the shares, and their ratio (0.922)
    is PR #3084's (0.920)."""
    peak = M2_ULTRA.peak_flops.for_dtype("fp16")
    f16, q4_0 = 3237.78 * LLAMA_32_3B / peak, 2986.43 * LLAMA_32_3B / peak
    print(f"PR #10238: F16 {f16:.3f} (ours {SHARES['F16']}), Q4_0 {q4_0:.3f} (ours {SHARES['Q4_0']})")
    assert f16 == pytest.approx(SHARES["F16"], rel=0.03)
    assert q4_0 == pytest.approx(SHARES["Q4_0"], rel=0.03)


def test_an_earlier_build_on_the_same_chip_is_a_little_slower():
    """PR #3648's Q4_0 run (2023-10) reaches 0.594 of the peak, 7% under the share: builds of the #4167 table's
    time ran quantised prompts a little slower than the 2024 runs the shares come from."""
    peak = M2_ULTRA.peak_flops.for_dtype("fp16")
    llama2_7b = prompt_flop_per_token(32, 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008), 32000 * 4096, 32, 128)
    share = 1235.45 * llama2_7b / peak
    print(f"PR #3648: Q4_0 {share:.3f} (ours {SHARES['Q4_0']})")
    assert share == pytest.approx(SHARES["Q4_0"], rel=0.08)
    assert share < SHARES["Q4_0"]


@pytest.mark.parametrize(("fmt", "share"), [("f16", 0.696), ("fp16", 0.696), ("q8_0", 0.629), ("q4_0", 0.640),
                                            ("q4_k_m", 0.565), ("q4_k_s", 0.565), ("q5_k_m", 0.537),
                                            ("q6_k", 0.538)])
def test_rate_by_weight_type(fmt, share):
    rate = metal_prompt_rate(LLAMA, M2_ULTRA, "metal", parse_weight_format(fmt))
    assert rate == pytest.approx(share * 27.21e12, rel=1e-9)


@pytest.mark.parametrize("fmt", ["bf16", "q3_k_m", "iq4_xs", "q5_0"])
def test_unmeasured_types_keep_the_plans_matmul_efficiency(fmt):
    assert metal_prompt_rate(LLAMA, M2_ULTRA, "metal", parse_weight_format(fmt)) is None


def test_only_metal_and_only_engines_that_give_shares():
    rtx = CAT.gpu("nvidia-rtx-4090-24gb").spec  # a CUDA card: no Metal kernels
    assert metal_prompt_rate(LLAMA, rtx, "cuda", parse_weight_format("q4_0")) is None
    assert metal_prompt_rate(engine_profile("mlx"), M2_ULTRA, "metal", parse_weight_format("f16")) is None


def test_both_eras_and_ollama_share_the_metal_figures():
    """No per-type Metal prompt run of a 2025-26 build was found, so `llama-cpp-2026` keeps these."""
    assert engine_profile("llama-cpp-2026").prefill_metal_share == LLAMA.prefill_metal_share
    assert engine_profile("ollama").prefill_metal_share == LLAMA.prefill_metal_share


@pytest.mark.parametrize("rows", ["[['Q4_0', 1.5]]", "[['', 0.6]]", "[['F16', 0]]"])
def test_a_bad_user_row_is_skipped_naming_the_field(tmp_path, monkeypatch, rows):
    """A user's engines.toml row outside (0, 1] or without a pattern: the shipped profile is used, and the
    catalog problem names the field."""
    from llmplan.catalog.engines import engine_problems, load_engine_profiles

    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text(f"[llama-cpp]\nprefill_metal_share = {rows}\n")
    assert load_engine_profiles()["llama-cpp"].prefill_metal_share == LLAMA.prefill_metal_share
    (problem,) = engine_problems()
    assert "prefill_metal_share" in problem and "skipped" in problem
