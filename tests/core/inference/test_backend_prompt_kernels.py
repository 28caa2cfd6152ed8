"""llama.cpp's quantised prompt kernels on AMD (ROCm, Vulkan), Intel (SYCL, Vulkan) and Vulkan on NVIDIA:
a measured share of the GPU's dense fp16 matrix peak per back-end and GPU family (catalogs/engines.toml,
``prefill_quant_share``; core/inference/backend.py).

Sources (public llama-bench runs, none from an acceptance table): llama.cpp PR #26284 (RX 7900 XTX and Radeon
AI PRO R9700, ROCm), PR #18749 (Radeon 8060S, ROCm and Vulkan, 2026-01-11), issue #28843 (RX 7900 XTX, Vulkan,
2026-09-21),
PR #14949 (MI100, ROCm MFMA, 2025-07-29), intel/ipex-llm issue #12991 (Arc B580, SYCL, 2025-03-22),
geerlingguy/ai-benchmarks issue #27 (Arc Pro B50, Vulkan, 2025-10-10), PR #12135 (RTX 3090, Vulkan
coopmat2, 2025-03-30). Two kinds of check:
1. each share is the cited run's throughput × FLOP per token ÷ the catalog's fp16 peak, to the three decimals
   engines.toml keeps (the arithmetic in its comment);
2. the estimate reproduces the runs it was derived from within 1 % (it counts FLOP the same way: this checks
   the chain from share to time, not accuracy, which these runs cannot judge), and never exceeds the GPU's
   fp16 matrix peak.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.backend import quant_prompt_rate
from llmplan.core.workload import InferenceSettings, Scenario

CAT = load_hardware_catalog()
LLAMA = engine_profile("llama-cpp")
SHARES = {(b, p): s for b, p, s in LLAMA.prefill_quant_share}
L8 = "meta-llama/Meta-Llama-3-8B"


def prompt_rate(model: str, gpu: str, fmt: str, tokens: int, backend: str = "auto") -> float:
    sc = Scenario(model=load_model_catalog().get(model).spec, cluster=ClusterSpec(gpu=CAT.gpu(gpu).spec),
                  workload="inference",
                  inference=InferenceSettings(engine="llama-cpp", weight_format=fmt, kv_dtype="fp16",
                                              prompt_tokens=tokens, output_tokens=1, backend=backend),
                  engine_profile=LLAMA)
    return tokens / estimate(sc).inference.ttft_s.value


# (back-end, pattern, t/s measured, GFLOP per token, fp16 peak TFLOP/s of the measured card)
DERIVATIONS = [
    ("rocm", "amd-radeon-rx-7*", 3226.54, 14.5, 122.8),
    ("rocm", "amd-ryzen-ai-max-*", 815.22, 14.1, 59.4),
    ("vulkan", "amd-ryzen-ai-max-*", 875.24, 14.1, 59.4),
    ("vulkan", "amd-radeon-rx-7*", 962.5, 2 * 27.32, 122.8),
    ("rocm", "amd-mi250x-*", 847.13, 25.8, 184.6),  # MI100: 120 CUs x 1.502 GHz x 1024
    ("rocm", "amd-radeon-ai-pro-r9700*", 4095.11, 14.5, 191.0),  # PR #26284, RDNA 4
    ("sycl", "intel-arc-*", 2335.96, 13.16, 116.5),
    ("vulkan", "intel-arc-*", 489.15, 5.72, 85.2),  # Arc Pro B50: 16 Xe-cores x 2.6 GHz x 2048
    ("vulkan", "nvidia-*", 4259.42, 14.1, 71.0),
]


@pytest.mark.parametrize(("backend", "pattern", "tps", "gflop", "peak"), DERIVATIONS)
def test_each_share_is_its_cited_run(backend, pattern, tps, gflop, peak):
    assert SHARES[(backend, pattern)] == pytest.approx(tps * gflop / 1e3 / peak, abs=0.0006)


@pytest.mark.parametrize(("model", "gpu", "fmt", "tokens", "backend", "measured"), [
    (L8, "amd-radeon-rx-7900-xtx-24gb", "q4_k_m", 2048, "auto", 3226.54),  # auto = ROCm
    (L8, "amd-radeon-ai-pro-r9700-32gb", "q4_k_m", 2048, "auto", 4095.11),
    (L8, "amd-ryzen-ai-max-395-128gb", "q4_0", 512, "rocm", 815.22),
    (L8, "amd-ryzen-ai-max-395-128gb", "q4_0", 512, "vulkan", 875.24),
    ("Qwen/Qwen2.5-7B", "intel-arc-b580-12gb", "q4_k_m", 512, "auto", 2335.96),  # auto = SYCL
    (L8, "nvidia-rtx-3090-24gb", "q4_0", 512, "vulkan", 4259.42),
])
def test_estimate_reproduces_the_runs_it_comes_from(model, gpu, fmt, tokens, backend, measured):
    assert prompt_rate(model, gpu, fmt, tokens, backend) == pytest.approx(measured, rel=0.01)


def test_never_above_the_matrix_peak():
    """Share-of-fp16 back-ends stay under the fp16 matrix peak; CUDA's MMQ runs int8 mma, so its roofline is
    the int8 peak (on an RTX 3090 it measures 71.4 TFLOP/s, above the 71 TFLOP/s fp16-with-fp32-accumulate
    figure: PR #12135)."""
    for gpu_id in ("amd-radeon-rx-7900-xtx-24gb", "amd-ryzen-ai-max-395-128gb", "intel-arc-b580-12gb",
                   "intel-arc-pro-b60-24gb", "nvidia-rtx-3090-24gb", "amd-mi250x-gcd-64gb",
                   "amd-radeon-ai-pro-r9700-32gb"):
        gpu = CAT.gpu(gpu_id).spec
        for backend in ("rocm", "vulkan", "sycl", "cuda"):
            rate = quant_prompt_rate(LLAMA, gpu, backend)
            peak = gpu.peak_flops.int8 if backend == "cuda" else gpu.peak_flops.for_dtype("fp16")
            assert rate is None or rate <= peak


def test_backend_picks_the_kernels():
    xtx = CAT.gpu("amd-radeon-rx-7900-xtx-24gb").spec
    assert quant_prompt_rate(LLAMA, xtx, "rocm") == pytest.approx(0.381 * 122.8e12)
    assert quant_prompt_rate(LLAMA, xtx, "vulkan") == pytest.approx(0.428 * 122.8e12)
    r3090 = CAT.gpu("nvidia-rtx-3090-24gb").spec
    assert quant_prompt_rate(LLAMA, r3090, "vulkan") == pytest.approx(0.846 * 71e12)
    assert quant_prompt_rate(LLAMA, r3090, "cuda") == pytest.approx(82 * 1.695e9 * 372, rel=0.01)  # MMQ per SM-clock
    current = engine_profile("llama-cpp-2026")  # 2025+ builds: faster MMQ on CUDA, the same shares elsewhere
    assert quant_prompt_rate(current, r3090, "cuda") == pytest.approx(82 * 1.695e9 * 524, rel=0.01)
    assert current.prefill_quant_share == LLAMA.prefill_quant_share


def test_gpus_without_a_measurement_keep_the_shared_int8_share():
    """CDNA 3 and Intel Data Center GPU Max: no public llama.cpp kernel measurement found (docs/inference.md)."""
    for gpu_id, backend in (("amd-mi300x-192gb", "rocm"), ("intel-max-1550-128gb", "sycl")):
        gpu = CAT.gpu(gpu_id).spec
        assert quant_prompt_rate(LLAMA, gpu, backend) == pytest.approx(0.18 * gpu.peak_flops.int8)
