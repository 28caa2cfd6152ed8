"""llama.cpp's per-GPU runtime context is counted only on back-ends that keep one (CUDA, HIP/ROCm).

Sources: a bare CUDA primary context holds 107 MiB on an RTX 4060 Ti and 555 MiB on an RTX PRO 6000 Blackwell
(llama.cpp PR #23604, 2026-05-24, cudaMemGetInfo against NVML); catalogs/engines.toml keeps 300 MiB for
llama.cpp with its kernels loaded. Metal counts only llama.cpp's MTLBuffers against the working-set limit
(ggml-metal's "allocated buffer ... ( used / max )" log line), so an Apple plan carries no such context; nor
do Vulkan and SYCL. The figures are exact: the overhead is context + the 256 MiB compute buffer, no tolerance.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.backend import backend_of, backends_for, runtime_context_bytes
from llmplan.core.inference.multi_gpu import split_layers
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.errors import InputError

MIB = 2**20
CAT = load_hardware_catalog()
LLAMA = engine_profile("llama-cpp")


def overhead(gpu_id: str, backend: str = "auto", engine: str = "llama-cpp") -> float:
    sc = Scenario(model=load_model_catalog().get("meta-llama/Llama-2-7b-hf").spec,
                  cluster=ClusterSpec(gpu=CAT.gpu(gpu_id).spec), workload="inference",
                  inference=InferenceSettings(engine=engine, weight_format="q4_0", kv_dtype="fp16",
                                              prompt_tokens=512, output_tokens=64, backend=backend),
                  engine_profile=engine_profile(engine))
    return estimate(sc).memory.overhead.value


def test_metal_has_no_cuda_context():
    assert overhead("apple-m1-7c-8gb") == 256 * MIB  # the compute buffer only


def test_cuda_and_rocm_keep_the_300_mib_context():
    assert overhead("nvidia-rtx-3090-24gb") == (300 + 256) * MIB
    assert overhead("amd-radeon-rx-7900-xtx-24gb") == (300 + 256) * MIB  # auto = ROCm (HIP)


def test_vulkan_and_sycl_have_none():
    assert overhead("amd-radeon-rx-7900-xtx-24gb", backend="vulkan") == 256 * MIB
    assert overhead("nvidia-rtx-3090-24gb", backend="vulkan") == 256 * MIB
    assert overhead("intel-arc-b580-12gb") == 256 * MIB  # auto = SYCL


def test_ollama_follows_llama_cpp():
    assert overhead("apple-m1-7c-8gb", engine="ollama") == 256 * MIB
    assert overhead("nvidia-rtx-3090-24gb", engine="ollama") == (300 + 256) * MIB


def test_a_backend_the_card_cannot_run_is_refused_naming_those_it_can():
    with pytest.raises(InputError, match=r"does not run on NVIDIA.*cuda \(CUDA\), vulkan"):
        overhead("nvidia-rtx-3090-24gb", backend="metal")
    with pytest.raises(InputError, match="metal"):
        overhead("apple-m1-7c-8gb", backend="vulkan")


def test_vendor_defaults():
    assert [backend_of(CAT.gpu(g).spec) for g in ("nvidia-rtx-3090-24gb", "amd-radeon-rx-7900-xtx-24gb",
                                                   "intel-arc-b580-12gb", "apple-m1-7c-8gb")] == \
        ["cuda", "rocm", "sycl", "metal"]
    assert backends_for(CAT.gpu("apple-m1-7c-8gb").spec) == ("metal",)
    assert runtime_context_bytes(engine_profile("vllm"), "metal") == 512 * MIB  # vLLM names no other back-end


def test_mixed_cards_count_the_context_per_card():
    """An RTX 3090 (CUDA) beside an Arc B580 (SYCL): only the NVIDIA card carries the context, and (2024 builds,
    no flash attention) the F16 copy of a micro-batch's scores in ggml-cuda's pool: n_ctx 1,280 x n_ubatch 512 x 32
    heads x 2 B = 40 MiB (core/inference/score_buffer.py)."""
    sc = Scenario(model=load_model_catalog().get("meta-llama/Llama-2-7b-hf").spec,
                  cluster=ClusterSpec(gpu=CAT.gpu("nvidia-rtx-3090-24gb").spec), workload="inference",
                  inference=InferenceSettings(engine="llama-cpp", weight_format="q4_0", kv_dtype="fp16"),
                  engine_profile=LLAMA)
    plan = split_layers(sc, [CAT.gpu("nvidia-rtx-3090-24gb").spec, CAT.gpu("intel-arc-b580-12gb").spec])
    nvidia, intel = plan.cards
    assert nvidia.runtime - (intel.runtime - (4 * sc.model.vocab_size if intel.has_output else 0)) == \
        300 * MIB + 1280 * 512 * 32 * 2
