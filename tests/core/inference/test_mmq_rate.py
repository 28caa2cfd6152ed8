"""llama.cpp MMQ prompt speed as int8 ops per SM per clock (core/inference/mmq.py, catalogs/engines.toml).

Source of the figure: llama.cpp PR #24127 ("CUDA: refactor MMQ kernel configuration", JohannesGaessler, 2026),
one build on three cards, llama 8B at n_ubatch 512, pp512 (14.1 GFLOP per token): RTX 4090 Q4_K_S 12,382.64
t/s and Q5_0 11,810 t/s, RTX 5090 IQ4_NL 14,925.08 t/s. Independent check (a run the figure was not taken
from): RTX 3090 llama 8B Q4_0 pp512 5,060.73 t/s with CUDA (llama.cpp PR #12135, 2025-03-30), tolerance 5 %.
Kernel facts: ggml-cuda/mma.cuh issues mma.sync m16n8k32 s8 (no wgmma), so Hopper's wgmma-only doubling of
the datasheet's int8 TOPS is out of reach, and the measured share (a quarter of an RTX 4090's int8 rate)
shows the tensor cores are not the bound at all."""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.backend import quant_prompt_rate
from llmplan.core.inference.mmq import mmq_rate, sm_clocks_per_second
from llmplan.core.workload import InferenceSettings, Scenario

CAT = load_hardware_catalog()
OPS = engine_profile("llama-cpp").prefill_quant_ops_per_sm_clock
GFLOP_8B_PP512 = 14.1  # 2 x 6.98 B weights outside embedding and head + attention at mean depth 256


def spec(gid):
    return CAT.gpu(gid).spec


def pp512_8b(gid: str, fmt: str) -> float:
    """Estimated llama-bench pp512 of Llama 3 8B with llama.cpp (CUDA) on ``gid``."""
    sc = Scenario(model=load_model_catalog().get("meta-llama/Meta-Llama-3-8B").spec,
                  cluster=ClusterSpec(gpu=spec(gid)), workload="inference",
                  inference=InferenceSettings(engine="llama-cpp", weight_format=fmt, kv_dtype="fp16",
                                              prompt_tokens=512, output_tokens=1),
                  engine_profile=engine_profile("llama-cpp"))
    return 512 / estimate(sc).inference.ttft_s.value


def test_ops_per_sm_clock_are_the_mean_of_the_pr_24127_runs():
    sm_4090, sm_5090 = 128 * 2.52e9, 170 * 2.407e9  # Ada and RTX Blackwell whitepapers: SMs x boost clock
    measured = [12382.64 * GFLOP_8B_PP512 * 1e9 / sm_4090, 11810 * GFLOP_8B_PP512 * 1e9 / sm_4090,
                14925.08 * GFLOP_8B_PP512 * 1e9 / sm_5090]
    assert max(measured) / min(measured) < 1.06  # Ada and Blackwell agree: one figure per SM-clock holds
    assert pytest.approx(sum(measured) / 3, abs=1) == OPS
    assert engine_profile("ollama").prefill_quant_ops_per_sm_clock == OPS


@pytest.mark.parametrize(("gid", "fmt", "measured", "rel"), [
    ("nvidia-rtx-4090-24gb", "q4_k_s", 12382.64, 0.05),  # PR #24127 (derivation runs: checks the arithmetic)
    ("nvidia-rtx-5090-32gb", "iq4_nl", 14925.08, 0.05),
    ("nvidia-rtx-3090-24gb", "q4_0", 5060.73, 0.05),     # PR #12135, 2025-03-30: independent of the figure
])
def test_estimate_meets_current_pp512_runs(gid, fmt, measured, rel):
    assert pp512_8b(gid, fmt) == pytest.approx(measured, rel=rel)


def test_mmq_never_exceeds_the_int8_peak():
    """The roofline of int8 mma: no NVIDIA card in the catalog gets an MMQ rate above its int8 peak."""
    llama = engine_profile("llama-cpp")
    for entry in CAT.gpus:
        gpu = entry.spec
        if gpu.vendor != "nvidia" or not gpu.peak_flops.int8:
            continue
        rate = quant_prompt_rate(llama, gpu, "cuda")
        assert rate is None or rate <= gpu.peak_flops.int8, gpu.id


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
    assert rate == pytest.approx(132 * 1.98e9 * OPS, rel=0.03)  # ~137 TFLOP/s
    assert rate < 0.4 * 0.18 * h100.peak_flops.int8  # a share of the int8 datasheet rate would give 356


def test_no_mmq_rate_off_nvidia_or_before_turing():
    assert mmq_rate(spec("nvidia-tesla-p40-24gb"), OPS) is None  # Pascal: dp4a MMQ, the int8 share applies
    assert mmq_rate(spec("amd-radeon-ai-pro-r9700-32gb"), OPS) is None
    assert mmq_rate(spec("apple-m2-max-38c-96gb"), OPS) is None
