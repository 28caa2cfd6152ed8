"""llama.cpp prompt kernels that are not MMQ (catalogs/engines.toml, core/inference/backend.py and latency.py):

- F16 weights run cuBLAS with ``CUBLAS_COMPUTE_16F`` (ggml-cuda.cu, ``ggml_cuda_op_mul_mat_cublas``), so a GeForce
  RTX card runs them at its fp16-accumulate rate, twice the fp32-accumulate figure the catalog stores (Ampere GA102 /
  Ada whitepapers: RTX 3090 142 vs 71, RTX 4090 330.3 vs 165.2 dense TFLOP/s). The share of that peak, 0.438, comes
  from one run: llama.cpp PR #4766 (2024-01-10), RTX 4090, LLaMA 7B F16, pp512 11,048.22 t/s (calibration: the test
  below checks the arithmetic, tolerance 1%).
- Builds of 2024 run attention without flash attention by default (llama-bench ``-fa 0``): each 512-token
  micro-batch writes its f32 score matrix against the whole cache so far, soft-maxes it and converts it to F16 for
  the KQV GEMM: 20 B per score element (4 written, 4 + 4 soft-max, 4 + 2 conversion, 2 read by the GEMM), counted
  from llama.cpp's ``llm_build_kqv``. Current builds (``llama-cpp-2026``) run flash attention: no such term.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.backend import dequantises_prompt, float_prompt_rate, fp16_accumulate_peak
from llmplan.core.inference.latency import score_elements
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import LLAMA_7B, MISTRAL_7B_V01

CAT = load_hardware_catalog()
LLAMA3_8B = load_model_catalog().get("meta-llama/Meta-Llama-3-8B").spec


def gpu(gid):
    return CAT.gpu(gid).spec


@pytest.mark.parametrize(("gid", "tflops"), [
    ("nvidia-rtx-4090-24gb", 330.4),    # GeForce: twice the fp32-accumulate 165.2
    ("nvidia-rtx-3090-24gb", 142.0),    # GeForce: twice 71
    ("nvidia-rtx-6000-ada-48gb", 364.2),  # workstation: fp32 accumulate at the full rate already
    ("nvidia-a100-pcie-80gb", 312.0),   # data centre: the same
])
def test_fp16_accumulate_peak(gid, tflops):
    assert fp16_accumulate_peak(gpu(gid)) == pytest.approx(tflops * 1e12, rel=1e-3)


def test_float_prompt_rate_only_for_llama_cpp_on_cuda():
    g = gpu("nvidia-rtx-4090-24gb")
    assert float_prompt_rate(engine_profile("llama-cpp"), g, "cuda") == pytest.approx(0.438 * 330.4e12, rel=1e-3)
    assert float_prompt_rate(engine_profile("llama-cpp"), g, "vulkan") is None
    assert float_prompt_rate(engine_profile("vllm"), g, "cuda") is None
    assert engine_profile("llama-cpp-2026").prefill_float_share == engine_profile("ollama").prefill_float_share == 0.438


def test_share_reproduces_the_run_it_comes_from():
    sc = Scenario(model=spec_from_config(LLAMA_7B), cluster=ClusterSpec(gpu=gpu("nvidia-rtx-4090-24gb")),
                  workload="inference", engine_profile=engine_profile("llama-cpp-2026"),  # no score term: the share
                  inference=InferenceSettings(engine="llama-cpp-2026", weight_format="f16", kv_dtype="fp16",
                                              prompt_tokens=512, output_tokens=1))
    assert 512 / estimate(sc).inference.ttft_s.value == pytest.approx(11048.22, rel=0.01)


def test_score_elements_count_every_cached_key_per_micro_batch():
    # pp512: one micro-batch of 512 queries x 512 keys x 32 heads x 32 layers
    assert score_elements(LLAMA3_8B, 512, 512, 32) == 512 * 512 * 32 * 32
    # pp2048: micro-batches against 512, 1,024, 1,536 and 2,048 cached keys (the mask does not skip the future)
    assert score_elements(LLAMA3_8B, 2048, 512, 32) == 512 * (512 + 1024 + 1536 + 2048) * 32 * 32


def pp(engine: str, tokens: int) -> float:
    sc = Scenario(model=LLAMA3_8B, cluster=ClusterSpec(gpu=gpu("nvidia-rtx-4090-24gb")), workload="inference",
                  engine_profile=engine_profile(engine),
                  inference=InferenceSettings(engine=engine, weight_format="q4_k_m", kv_dtype="fp16",
                                              prompt_tokens=tokens, output_tokens=1))
    return estimate(sc).inference.ttft_s.value


def test_score_traffic_only_without_flash_attention():
    """Llama 3 8B pp8192 on an RTX 4090: the 2024 profile adds 8,192/512 micro-batches x their score bytes at the
    decode stream bandwidth (0.869 x 1,008 GB/s); the current-build profile (flash attention) adds nothing."""
    elements = score_elements(LLAMA3_8B, 8192, 512, 32)
    extra = elements * 20 / (1008e9 * 0.869)
    no_fa = engine_profile("llama-cpp").model_copy(update={"prefill_score_bytes": None})
    sc = Scenario(model=LLAMA3_8B, cluster=ClusterSpec(gpu=gpu("nvidia-rtx-4090-24gb")), workload="inference",
                  engine_profile=no_fa, inference=InferenceSettings(engine="llama-cpp", weight_format="q4_k_m",
                                                                     kv_dtype="fp16", prompt_tokens=8192,
                                                                     output_tokens=1))
    assert pp("llama-cpp", 8192) - estimate(sc).inference.ttft_s.value == pytest.approx(extra, rel=1e-6)
    assert engine_profile("llama-cpp-2026").prefill_score_bytes is None


def test_sliding_window_layers_see_at_most_their_window():
    # Mistral 7B v0.1, every layer a 4,096-token window: pp8192 in 512-token micro-batches sees 512, 1,024 ...
    # 4,096 keys for the first eight, then 4,096 for each of the last eight
    mistral = spec_from_config(MISTRAL_7B_V01)
    per_head_layer = 512 * (512 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8) + 8 * 4096)
    assert score_elements(mistral, 8192, 512, 32) == per_head_layer * 32 * 32
    assert score_elements(mistral, 1000, 512, 32) == (512 * 512 + 488 * 1000) * 32 * 32  # a part micro-batch


def pp512(gid: str, cfg: dict, fmt: str, engine: str = "llama-cpp") -> float:
    sc = Scenario(model=spec_from_config(cfg), cluster=ClusterSpec(gpu=gpu(gid)), workload="inference",
                  engine_profile=engine_profile(engine),
                  inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16", prompt_tokens=512,
                                              output_tokens=1))
    return 512 / estimate(sc).inference.ttft_s.value


@pytest.mark.parametrize(("gid", "fmt", "measured_ratio"), [
    ("nvidia-rtx-4090-24gb", "q4_0", 7979.85 / 11048.22),  # PR #4766 (ggerganov, 2024-01-10), one llama-bench call
    ("nvidia-rtx-4090-24gb", "q8_0", 7664.00 / 11048.22),
    ("nvidia-rtx-a6000-48gb", "q4_k_m", 3450.93 / 4098.15),  # PR #3816 (2023-10, build 1431), master rows
])
def test_quantised_prompts_of_2024_dequantise_then_run_the_f16_gemm(gid, fmt, measured_ratio):
    """Before llama.cpp PR #8075 (2024-06-23) a prompt micro-batch above 32 tokens multiplied block-quantised weights
    by dequantising them to F16 (one kernel: the quantised bytes read, 2 B per weight written, each micro-batch) and
    running the F16 cuBLAS GEMM (ggml-cuda.cu at b2843, ``ggml_cuda_mul_mat``; PR #3412). So a quantised pp512 is the
    F16 run plus that traffic. Checked on runs of that path with their F16 run beside them on the same machine (none
    of them sets a figure): LLaMA 7B, ours Q/F16 against measured Q/F16: RTX 4090 Q4_0 0.735 / 0.722 (+1.7%), Q8_0
    0.698 / 0.694 (+0.7%), RTX A6000 Q4_K_M 0.809 / 0.842 (-3.9%). Tolerance 6%."""
    ours = pp512(gid, LLAMA_7B, fmt) / pp512(gid, LLAMA_7B, "f16")
    assert ours / measured_ratio == pytest.approx(1, abs=0.06)


def test_mmq_below_the_threshold_and_in_current_builds():
    """Micro-batches of up to 32 tokens keep MMQ in the 2024 profile; llama-cpp-2026 runs MMQ at every size."""
    llama = engine_profile("llama-cpp")
    a100 = gpu("nvidia-a100-pcie-80gb")
    assert llama.prefill_quant_mmq_max_tokens == 32
    assert dequantises_prompt(llama, a100, "cuda", 512) and not dequantises_prompt(llama, a100, "cuda", 32)
    assert not dequantises_prompt(llama, a100, "vulkan", 512)  # Vulkan keeps its measured quantised share
    assert not dequantises_prompt(engine_profile("llama-cpp-2026"), a100, "cuda", 512)


def test_a100_share_reproduces_the_run_it_comes_from():
    """llama.cpp PR #6017 (ggerganov, 2024-03-12): one A100 80GB PCIe, codellama-7b F16 (LLaMA 7B shapes), pp512
    8,668.24 t/s -> 0.364 of 312 TFLOP/s (calibration: checks the arithmetic, tolerance 1%, no score term as for the
    4090 share). Carried to the other A100s, the H100s and the H200 at the ratio of their measured GEMM efficiency
    (test_cublas_share_carry.py), unmeasured in llama.cpp."""
    llama = engine_profile("llama-cpp")
    assert float_prompt_rate(llama, gpu("nvidia-a100-pcie-80gb"), "cuda") == pytest.approx(0.364 * 312e12, rel=1e-3)
    assert float_prompt_rate(llama, gpu("nvidia-h100-pcie-80gb"), "cuda") == pytest.approx(
        0.290 * gpu("nvidia-h100-pcie-80gb").peak_flops.fp16, rel=1e-6)
    assert pp512("nvidia-a100-pcie-80gb", LLAMA_7B, "f16", "llama-cpp-2026") == pytest.approx(8668.24, rel=0.01)
