"""The score matrix llama.cpp keeps without flash attention (core/inference/score_buffer.py), counted by hand and
set beside the compute-buffer sizes llama.cpp itself printed for the same models and contexts:

- Llama 3 8B, n_ctx 8192, n_ubatch 512, flash_attn = 0: "CUDA0 compute buffer size = 560.00 MiB" (an Ollama server
  log, 2024-08-30), and the same reservation failing on an RTX 4080 with llama.cpp b2843 (2024-05): "failed to
  allocate CUDA0 buffer of size 587206656" (XiongjieDai/GPU-Benchmarks-on-LLM-Inference at aa72e0e,
  "LLaMA 3/Gaming GPUs/4080_v3.ipynb").
- Llama 3 70B F16 over six RTX 3090, n_ctx 8192, n_ubatch 512, build 2824: "failed to allocate CUDA0 buffer of size
  1275076608" (the same repository, "3090_6_v3.ipynb").
Nothing in the count was set from these logs; the tolerances are stated per test.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.models import load_model_catalog
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.memory import plan_memory
from llmplan.core.inference.score_buffer import score_buffer_bytes, score_phase_bytes
from llmplan.core.workload import InferenceSettings, Scenario
from tests.core.inference.gpus import M2_ULTRA, RTX4080

MIB = 2**20


def scenario(model_id="meta-llama/Meta-Llama-3-8B", gpu=RTX4080, engine="llama-cpp", tokens=8192):
    return Scenario(model=load_model_catalog().get(model_id).spec, cluster=ClusterSpec(gpu=gpu), workload="inference",
                    inference=InferenceSettings(engine=engine, weight_format="f16", kv_dtype="fp16",
                                                prompt_tokens=tokens - 1, output_tokens=1),
                    engine_profile=engine_profile(engine))


def test_llama_3_8b_at_8192_by_hand():
    """kq: 8,192 x 512 x 32 heads x 4 B = 512 MiB; mask 8,192 x 512 x 4 B = 16 MiB; residual and kqv output
    512 x 4,096 x 4 B = 8 MiB each: 544 MiB, 2.9% under the 560 MiB llama.cpp printed (alignment and holes of its
    allocator). Tolerance 5%."""
    phase = score_phase_bytes(scenario(), engine_profile("llama-cpp"))
    assert phase == (8192 * 512 * 32 + 8192 * 512 + 2 * 512 * 4096) * 4 == 544 * MIB
    assert phase / 587_206_656 - 1 == pytest.approx(-0.029, abs=0.005)
    assert abs(phase / (560 * MIB) - 1) < 0.05


def test_llama_3_70b_on_one_card_of_a_split_pinned():
    """64 heads: 1,024 + 16 + 16 + 16 = 1,072 MiB, 11.8% under the 1,216 MiB that card 0 of six RTX 3090 asked for.
    With several CUDA cards llama.cpp pipelines micro-batches (PR #6017) and keeps GGML_SCHED_MAX_COPIES = 4 copies of
    each split's inputs (the mask and the layer input, 16 MiB each at this size), which the count leaves out: pinned
    between -15% and -5% so that counting them shows here."""
    phase = score_phase_bytes(scenario("meta-llama/Meta-Llama-3-70B"), engine_profile("llama-cpp"))
    assert phase == 1072 * MIB
    assert -0.15 < phase / 1_275_076_608 - 1 < -0.05


def test_the_buffer_replaces_the_flash_attention_charge_and_cuda_adds_the_f16_copy():
    """What the plan adds: the score phase less what it already charges for the compute buffer (the profile's 256
    MiB + the prefill activations), plus on CUDA the F16 copy of the scores in ggml-cuda's pool (8,192 x 512 x 32 x
    2 B = 256 MiB); Metal reserves the same graph but multiplies the f32 scores directly."""
    sc, profile = scenario(), engine_profile("llama-cpp")
    plan = plan_memory(sc, profile)
    flash_buffer = profile.framework_bytes + plan.activations
    assert plan.scores == pytest.approx(544 * MIB - flash_buffer + 256 * MIB, rel=1e-12)
    metal = score_buffer_bytes(scenario(gpu=M2_ULTRA), profile, "metal", flash_buffer)
    assert metal == pytest.approx(544 * MIB - flash_buffer, rel=1e-12)


def test_short_contexts_and_flash_attention_add_nothing_to_the_buffer():
    """At 512 tokens the phase (32 + 1 + 8 + 8 = 49 MiB) is below the 256 MiB charged for the logits phase: no
    extra but the 16 MiB pool copy. Current builds (flash attention) hold no score matrix at all."""
    short = plan_memory(scenario(tokens=512), engine_profile("llama-cpp"))
    assert short.scores == 512 * 512 * 32 * 2 == 16 * MIB
    assert plan_memory(scenario(engine="llama-cpp-2026"), engine_profile("llama-cpp-2026")).scores == 0
    assert engine_profile("ollama").flash_attention is False  # OLLAMA_FLASH_ATTENTION=1 turns it on
