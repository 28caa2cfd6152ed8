"""Each serving engine's CUDA-graph batch limit (catalogs/engines.toml ``cuda_graph_max_tokens``), and what a
pass outside the graphs costs.

Limits read from the engines' code: TGI v3.3.7 (huggingface/text-generation-inference dfb3fbe7, 2025-12-18)
launcher/src/main.rs default cuda_graphs [1, 2, 4, 8, 16, 32] and flash_causal_lm.py (no graph above the largest,
none for prefill); vLLM 0.33.0 (PyPI sdist, 2026-11) vllm/config/vllm.py ``min(2 x max_num_seqs, 512)``, 1,024 on
compute capability 10.x, max_num_seqs 256/1,024 (engine/arg_utils.py); SGLang v0.4.1.post2 (PyPI sdist,
2024-12-29) srt/server_args.py ``cuda_graph_max_bs`` 160, or 8 / 80 under 25,000 MiB. Eager costs: 1.8 µs GPU gap
per kernel (torch.profiler, H100 SXM, 2026-11-28: core/training/kernel_rates.py) and 15.5 µs host launch per
kernel (one PyTorch op from Python, H100 SXM host, torch 2.11, 2026-11-24). Counts and times exact (1e-12 s).
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.serving_floor import decode_floor, graph_limit, replays_graph, step_kernels
from llmplan.core.training.kernel_rates import KERNEL_GAP_S
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario

HW, MODELS = load_hardware_catalog(), load_model_catalog()
H100, H200, RTX4090 = (HW.gpu(g).spec for g in ("nvidia-h100-sxm-80gb", "nvidia-h200-sxm-141gb",
                                                "nvidia-rtx-4090-24gb"))
LLAMA8 = "meta-llama/Llama-3.1-8B"


def _tpot(model: str, gpu: str, tp: int, engine: str, fmt: str, batch: int, graphs: bool = True) -> float:
    profile = engine_profile(engine)
    if not graphs:  # the same engine with graphs at every size (the model before the limit was read)
        profile = profile.model_copy(update={"cuda_graph_max_tokens": ()})
    s = Scenario(model=MODELS.get(model).spec, cluster=ClusterSpec(gpu=HW.gpu(gpu).spec, gpus_per_node=8),
                 workload="inference", parallelism=ParallelLayout(tp=tp), engine_profile=profile,
                 inference=InferenceSettings(engine=engine, weight_format=fmt, batch=batch, prompt_tokens=128,
                                             output_tokens=256))
    return estimate(s).inference.tpot_s.value


def test_limits_read_from_each_engines_defaults():
    tgi, vllm, sglang = engine_profile("tgi"), engine_profile("vllm"), engine_profile("sglang")
    assert graph_limit(tgi, H100, 1) == 32 and graph_limit(tgi, RTX4090, 1) == 32
    assert graph_limit(vllm, H100, 1) == 512 and graph_limit(vllm, H200, 8) == 512
    assert graph_limit(vllm, HW.gpu("nvidia-b200-180gb").spec, 8) == 1024  # compute capability 10.0
    # SGLang: 160 from 25,000 MiB; the RTX 4090 reports 24,564 MiB: 8 at TP < 4, 80 at TP >= 4
    assert graph_limit(sglang, H100, 1) == 160
    assert graph_limit(sglang, RTX4090, 1) == 8 and graph_limit(sglang, RTX4090, 4) == 80
    # decode only for SGLang and TGI; vLLM V1 replays prompt passes within the limit too
    assert replays_graph(tgi, H100, 1, 32, prefill=False) and not replays_graph(tgi, H100, 1, 33, prefill=False)
    assert not replays_graph(tgi, H100, 1, 1, prefill=True)
    assert replays_graph(vllm, H100, 1, 512, prefill=True) and not replays_graph(vllm, H100, 1, 513, prefill=True)
    # an engine without rows (llama.cpp replays its own graph; its floor is not this module's) never turns eager
    assert replays_graph(engine_profile("tensorrt-llm"), H100, 1, 10**6, prefill=False)


def test_eager_pass_prices_gap_and_host_launch_per_kernel():
    """Llama 3.1 8B on TGI: 32 x (7 + 3) + 48 = 368 kernels + 129 GEMMs = 497 a step."""
    tgi, spec = engine_profile("tgi"), MODELS.get(LLAMA8).spec
    assert sum(step_kernels(spec, tgi, 32, fp8=False)) == 497
    graphed = decode_floor(spec, tgi, 32, 1, 32, False, 16e9, 2.68e12, 0.0, graphed=True)
    eager = decode_floor(spec, tgi, 32, 1, 33, False, 16e9, 2.68e12, 0.0, graphed=False)
    assert graphed.kernel_s == pytest.approx(497 * 0.875e-6, abs=1e-12) and graphed.host_s == 0.0
    assert eager.kernel_s == pytest.approx(497 * KERNEL_GAP_S, abs=1e-12)
    assert eager.host_s == pytest.approx(497 * 15.5e-6, abs=1e-12)
    # the host launches overlap the GPU's work: what they add beyond the GPU's fixed part
    assert eager.launch_s == pytest.approx(497 * (15.5e-6 - KERNEL_GAP_S) - eager.gemm_floor_s, abs=1e-12)


def test_tgi_batch_32_is_graphed_and_33_is_not():
    """Llama 3.1 8B bf16, one H100: batch 32 unchanged by the limit; batch 33 host bound at the 497 launches."""
    at32, at33 = _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "tgi", "bf16", 32), \
        _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "tgi", "bf16", 33)
    assert at32 == _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "tgi", "bf16", 32, graphs=False)
    assert at33 == pytest.approx(497 * 15.5e-6, rel=1e-9)  # the host's launches set the step
    assert at33 > 1.15 * at32


def test_vllm_across_512():
    """Llama 3.1 8B bf16 on one H100 under vLLM: compute bound at 512 sequences, so the eager step adds only the
    GPU's gaps (1.8 µs instead of 0.875 µs a kernel over 327 kernels) beyond 513's own work."""
    at512 = _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "vllm", "bf16", 512)
    assert at512 == _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "vllm", "bf16", 512, graphs=False)
    at513 = _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "vllm", "bf16", 513)
    at513_graphed = _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "vllm", "bf16", 513, graphs=False)
    assert at513 - at513_graphed == pytest.approx(327 * (KERNEL_GAP_S - 0.875e-6), rel=1e-6)


def test_sglang_deepseek_beyond_160():
    """DeepSeek-V3 fp8 on 8 x H200 under SGLang: batch 160 replays a graph, 161 launches 967 kernels + 602 fp8
    quantisations + 602 GEMMs = 2,171 per step from Python (x 15.5 µs = 33.7 ms of host time: host bound)."""
    ds = MODELS.get("deepseek-ai/DeepSeek-V3").spec
    other, gemms = step_kernels(ds, engine_profile("sglang"), 61, fp8=True)
    assert (other, gemms) == (61 * 9 + 58 * 7 + 3 * 2 + 6 + 602, 602)
    at160 = _tpot("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", 160)
    assert at160 == _tpot("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", 160, graphs=False)
    at161 = _tpot("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", 161)
    assert other + gemms == 2171
    assert at161 > 1.25 * at160


def test_tgi_captures_no_graph_with_bitsandbytes():
    """TGI v3.3.7 launcher/src/main.rs: "Bitsandbytes doesn't work with cuda graphs, deactivating them"."""
    tgi = engine_profile("tgi")
    assert tgi.cuda_graph_off_formats == ("bnb",)
    assert not replays_graph(tgi, H100, 1, 1, prefill=False, weight_kind="bnb")
    assert replays_graph(tgi, H100, 1, 1, prefill=False, weight_kind="float")
    nf4 = _tpot(LLAMA8, "nvidia-h100-sxm-80gb", 1, "tgi", "nf4", 1)
    assert nf4 >= 497 * 15.5e-6  # host bound at batch 1: every kernel launched from Python
