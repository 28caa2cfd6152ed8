"""Sharding, offload, overrides and explanations: consistency checks of the inference engine.

These follow from the model's definitions (no published number is reproduced here)."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.workload import EfficiencyOverrides, InferenceSettings, ParallelLayout, Scenario
from llmplan.errors import LayoutError
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.gpus import H100, M1_MAX
from tests.core.inference.models import DEEPSEEK_V3, LLAMA3_8B
from tests.core.inference.test_estimate_inference import scenario


def test_pipeline_stages_split_layers_not_latency():
    one = estimate(scenario(LLAMA3_8B, H100))
    two = Scenario(model=spec_from_config(LLAMA3_8B), cluster=ClusterSpec(gpu=H100, gpus_per_node=2),
                   workload="inference", parallelism=ParallelLayout(pp=2), engine_profile=one_engine())
    e2 = estimate(two)
    assert e2.memory.weights.value < 0.6 * one.memory.weights.value
    assert e2.memory.kv_cache.value == pytest.approx(one.memory.kv_cache.value / 2)
    assert e2.inference.tpot_s.value >= one.inference.tpot_s.value  # stages run one after the other


def one_engine():
    from llmplan.catalog.engines import engine_profile
    return engine_profile("vllm")


def test_mla_cache_is_not_split_by_tensor_parallelism():
    e = estimate(scenario(DEEPSEEK_V3, H100, gpus=8, tp=8, weight_format="fp8", batch=1, prompt_tokens=1000,
                          output_tokens=24))
    assert e.memory.kv_cache.value == pytest.approx(70_272 * 1024)  # whole latent on every rank, 64 blocks of 16
    assert e.inference.kv_bytes_per_token.value == 70_272


def test_unified_memory_uses_the_wired_share():
    e = estimate(scenario(LLAMA3_8B, M1_MAX, engine="mlx", weight_format="mlx-4bit"))
    assert e.memory.capacity.value == pytest.approx(0.75 * 64 * 2**30)
    assert e.inference.gpu_layers is None  # MLX has no partial offload
    assert e.memory.overhead.value == 0  # no CUDA context on Metal


def test_efficiency_override_changes_decode():
    base = scenario(LLAMA3_8B, H100)
    slow = base.model_copy(update={"efficiency": EfficiencyOverrides(memory_bandwidth=0.4).apply(base.efficiency)})
    # Half the bandwidth doubles the bytes' time; vLLM's kernel floor (327 kernels × 0.875 µs a step,
    # core/inference/serving_floor.py) does not depend on the bandwidth.
    floor = 327 * 0.875e-6
    assert estimate(slow).inference.tpot_s.value - floor == pytest.approx(
        2 * (estimate(base).inference.tpot_s.value - floor), rel=0.02)


def test_prefix_sharing_saves_cache():
    plain = estimate(scenario(LLAMA3_8B, H100, batch=32, prompt_tokens=2048))
    shared = estimate(scenario(LLAMA3_8B, H100, batch=32, prompt_tokens=2048, shared_prefix_tokens=1024))
    assert shared.memory.kv_cache.value == pytest.approx(plain.memory.kv_cache.value - 31 * 1024 * 131_072)


def test_fp8_prefill_runs_at_fp8_peak():
    bf16 = estimate(scenario(LLAMA3_8B, H100, batch=16, prompt_tokens=4096))
    fp8 = estimate(scenario(LLAMA3_8B, H100, batch=16, prompt_tokens=4096, weight_format="fp8"))
    ratio = fp8.inference.ttft_s.inputs["flops_per_s"] / bf16.inference.ttft_s.inputs["flops_per_s"]
    assert ratio == pytest.approx(1979 / 989)  # H100 dense FP8 vs BF16 peaks


def test_gpu_layers_needs_an_offloading_engine():
    with pytest.raises(LayoutError, match="gpu_layers"):
        estimate(scenario(LLAMA3_8B, H100, engine="vllm", gpu_layers=10))


def test_explicit_gpu_layers_is_respected():
    e = estimate(scenario(LLAMA3_8B, H100, engine="llama-cpp", weight_format="q4_k_m", gpu_layers=20))
    assert e.inference.gpu_layers.value == 20
    assert e.memory.host_ram.value > 0


def test_every_reported_number_is_explained():
    e = estimate(scenario(LLAMA3_8B, H100, batch=4))
    figs = [*e.memory.parts().values(), e.memory.total, e.memory.capacity]
    inf = e.inference
    figs += [inf.ttft_s, inf.tpot_s, inf.tokens_per_s, inf.tokens_per_s_per_user, inf.max_concurrency,
             inf.kv_bytes_per_token, inf.weight_bytes, inf.cost_per_million_input, inf.cost_per_million_output]
    for f in figs:
        assert f.formula, f


def test_inference_settings_reject_nonsense():
    with pytest.raises(ValueError, match="draft_acceptance"):
        InferenceSettings(draft_acceptance=1.0)


def test_deepseek_v3_fp8_needs_h200_class_memory_on_one_node():
    # ~656 GB of FP8 expert/attention weights over 8 GPUs is ~82 GB each: more than an H100's 80 GB,
    # well inside an H200's 141 GB (why DeepSeek-V3 serving guides pair one 8×H200 node or two 8×H100 nodes).
    from tests.core.inference.gpus import H200
    h100 = estimate(scenario(DEEPSEEK_V3, H100, gpus=8, tp=8, weight_format="fp8"))
    h200 = estimate(scenario(DEEPSEEK_V3, H200, gpus=8, tp=8, weight_format="fp8"))
    assert not h100.fits and h200.fits
    assert 640e9 < h200.inference.weight_bytes.value < 700e9


def test_offload_without_host_bandwidth_is_a_clear_error():
    from llmplan.catalog.engines import engine_profile
    from llmplan.errors import InputError
    from tests.core.inference.gpus import RTX4090

    engine = engine_profile("llama-cpp").model_copy(update={"host_memory_bandwidth": 0.0})
    sc = scenario(LLAMA3_8B, RTX4090.model_copy(update={"pcie_bandwidth": 0.0}), engine="llama-cpp",
                  weight_format="f32").model_copy(update={"engine_profile": engine})
    with pytest.raises(InputError, match="host_memory_bandwidth"):
        estimate(sc)


def test_missing_peak_for_the_compute_dtype_is_a_clear_error():
    from llmplan.errors import InputError

    with pytest.raises(InputError, match=r"peak_flops\.fp32"):
        estimate(scenario(LLAMA3_8B, H100, weight_format="fp32"))  # the test H100 lists no FP32 peak


def test_tensor_parallel_must_split_the_heads():
    """A TP degree the heads cannot be split over is refused, as vLLM refuses it ("Total number of attention
    heads (32) must be divisible by tensor parallel size (3)", vllm/config.py verify_with_parallel_config) and as
    the training layout already did. Before this rule the engine priced Llama-3-8B on TP 3 as if it ran."""
    with pytest.raises(LayoutError, match="32 attention heads cannot be split over tp=3; choose tp from 1, 2, 4"):
        estimate(scenario(LLAMA3_8B, H100, gpus=3, tp=3))
    # 48 query heads split over tp=12; 8 KV heads neither divide by 12 nor replicate evenly on 12 ranks
    with pytest.raises(LayoutError, match="8 KV heads cannot be split over tp=12"):
        estimate(scenario({**LLAMA3_8B, "num_key_value_heads": 8, "num_attention_heads": 48, "hidden_size": 6144},
                          H100, gpus=12, tp=12))
    assert estimate(scenario(LLAMA3_8B, H100, gpus=16, tp=16)).fits  # KV heads replicated twice: allowed
