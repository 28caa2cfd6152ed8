"""llama.cpp MMQ prompt speed as int8 ops per SM per clock (core/inference/mmq.py, catalogs/engines.toml).

Source: llama.cpp PR #7676 / #8062 on an RTX 3090 (82 SMs x 1.695 GHz): an 8B model at 14.1 / 14.5 GFLOP
per token runs 3,655 t/s (Q5_0 pp512) and 3,596 t/s (Q6_K pp2048) = 51.5 / 52.1 TFLOP/s. Kernel facts:
ggml-cuda/mma.cuh issues mma.sync m16n8k32 s8 (no wgmma), so Hopper's wgmma-only doubling of the
datasheet's int8 TOPS is out of reach, and the measured share (0.18 of GA102's int8 rate) shows the
tensor cores are not the bound at all."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.inference.mmq import mmq_rate, sm_clocks_per_second

CAT = load_hardware_catalog()
OPS = engine_profile("llama-cpp").prefill_quant_ops_per_sm_clock


def spec(gid):
    return CAT.gpu(gid).spec


def test_ops_per_sm_clock_follow_the_3090_measurements():
    sm_clk = 82 * 1.695e9  # GA102 in the RTX 3090: 82 SMs, 1.695 GHz boost (NVIDIA GA102 whitepaper)
    measured = [3655 * 14.1e9 / sm_clk, 3596 * 14.5e9 / sm_clk]
    assert pytest.approx(sum(measured) / 2, rel=0.01) == OPS
    assert engine_profile("ollama").prefill_quant_ops_per_sm_clock == OPS


@pytest.mark.parametrize(("gid", "sms", "ghz"), [
    ("nvidia-rtx-3090-24gb", 82, 1.695),   # GA102 whitepaper
    ("nvidia-rtx-4090-24gb", 128, 2.52),   # Ada whitepaper
    ("nvidia-a100-sxm4-80gb", 108, 1.41),  # A100 whitepaper (64 FP32 lanes per SM)
    ("nvidia-h100-sxm-80gb", 132, 1.98),   # H100 whitepaper (SXM5 boost for the 67 TFLOPS fp32 figure)
])
def test_sm_clocks_from_the_fp32_rate(gid, sms, ghz):
    assert sm_clocks_per_second(spec(gid)) == pytest.approx(sms * ghz * 1e9, rel=0.03)


def test_h100_mmq_is_far_below_its_int8_datasheet_share():
    h100 = spec("nvidia-h100-sxm-80gb")
    rate = mmq_rate(h100, OPS)
    assert rate == pytest.approx(132 * 1.98e9 * OPS, rel=0.03)  # ~97 TFLOP/s
    assert rate < 0.3 * 0.18 * h100.peak_flops.int8  # the share-of-int8 model gave 356 TFLOP/s
    # GeForce keeps its int8:fp32 ratio of 8, so the two models agree there (within the 3090's two runs)
    r3090 = spec("nvidia-rtx-3090-24gb")
    assert mmq_rate(r3090, OPS) == pytest.approx(0.18 * r3090.peak_flops.int8, rel=0.02)


def test_no_mmq_rate_off_nvidia_or_before_turing():
    assert mmq_rate(spec("nvidia-tesla-p40-24gb"), OPS) is None  # Pascal: dp4a MMQ, the int8 share applies
    assert mmq_rate(spec("amd-radeon-ai-pro-r9700-32gb"), OPS) is None
    assert mmq_rate(spec("apple-m2-max-38c-96gb"), OPS) is None
