"""The GPU serving engines' decode floor (core/inference/serving_floor.py): kernel counts per architecture, the
custom all-reduce table, and that the floor matters at batch 1 and is amortised at serving batches.

Kernel lists: catalogs/engines.toml (vLLM llama.py at 0035bdf2, SGLang deepseek_v2.py at 00114aef, TGI v3.3.7's
flash_llama_modeling.py and flash_deepseek_v3_modeling.py at dfb3fbe7); all-reduce
rows: sgl-project/sglang PR #2904 (2025-01-15, 8 x H100). Exact counts are checked exactly; times to 1e-9 s.
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.inference.serving_floor import decode_floor, small_allreduce_s, step_kernels
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario

HW, MODELS = load_hardware_catalog(), load_model_catalog()


def _scenario(model: str, gpu: str, tp: int, engine: str, fmt: str, batch: int, profile=None) -> Scenario:
    return Scenario(model=MODELS.get(model).spec, cluster=ClusterSpec(gpu=HW.gpu(gpu).spec, gpus_per_node=8),
                    workload="inference", parallelism=ParallelLayout(tp=tp),
                    engine_profile=profile or engine_profile(engine),
                    inference=InferenceSettings(engine=engine, weight_format=fmt, batch=batch, prompt_tokens=128,
                                                output_tokens=256))


def test_kernel_counts_per_architecture():
    vllm = engine_profile("vllm")
    llama = MODELS.get("meta-llama/Llama-3.1-8B").spec
    # 32 layers x (4 + 2 attention, 2 + 2 MLP) + per step 6 + lm_head: 198 other kernels, 129 GEMMs
    assert step_kernels(llama, vllm, 32, fp8=False) == (198, 129)
    # fp8: one activation-quantisation kernel per GEMM
    assert step_kernels(llama, vllm, 32, fp8=True) == (198 + 129, 129)
    ds = MODELS.get("deepseek-ai/DeepSeek-V3").spec
    assert (ds.num_layers, ds.moe_layer_count) == (61, 58)  # first_k_dense_replace = 3
    # MLA 9 + 5 on every layer; 58 MoE layers 7 + 5, 3 dense 2 + 2; per step 6 + 1
    other = 61 * 9 + 58 * 7 + 3 * 2 + 6
    gemms = 61 * 5 + 58 * 5 + 3 * 2 + 1
    assert step_kernels(ds, engine_profile("sglang"), 61, fp8=False) == (other, gemms)


def test_tgi_kernel_counts():
    """TGI v3.3.7 (dfb3fbe7): GQA 7 + 2 (two rotary calls, two index_put cache writes, flashinfer's split-KV decode and
    merge), MLP 3 + 2 (SiLU and the multiply unfused), non-absorbed MLA 19 + 5, MoE 26 + 5 (Python grouped top-k),
    per step 48 + lm_head (9 in the graph, 39 eager around it); catalogs/engines.toml names every kernel."""
    tgi = engine_profile("tgi")
    llama = MODELS.get("meta-llama/Llama-3.1-8B").spec
    assert step_kernels(llama, tgi, 32, fp8=False) == (32 * (7 + 3) + 48, 32 * 4 + 1)
    assert step_kernels(llama, tgi, 32, fp8=True) == (32 * (7 + 3) + 48 + 129, 129)
    ds = MODELS.get("deepseek-ai/DeepSeek-V3").spec
    assert step_kernels(ds, tgi, 61, fp8=False) == (61 * 19 + 58 * 26 + 3 * 3 + 48, 61 * 5 + 58 * 5 + 3 * 2 + 1)
    # more kernels per layer than vLLM's fused llama.py: a larger floor at batch 1, the same 0.875 us each
    vllm = engine_profile("vllm")
    assert step_kernels(llama, tgi, 32, False)[0] > step_kernels(llama, vllm, 32, False)[0]
    assert tgi.decode_kernel_s == vllm.decode_kernel_s


def test_custom_allreduce_rows_and_interpolation():
    vllm, sgl = engine_profile("vllm"), engine_profile("sglang")
    # PR #2904's table, 4,096 fp32 elements = 16 KiB: vLLM's 9.3 us at TP8, SGLang's own 5.7 us
    assert small_allreduce_s(vllm, 8, 16384) == pytest.approx(9.3e-6, abs=1e-9)
    assert small_allreduce_s(sgl, 8, 16384) == pytest.approx(5.7e-6, abs=1e-9)
    # below the smallest message: its time; between rows: log-size interpolation
    assert small_allreduce_s(vllm, 4, 100) == pytest.approx(9.1e-6, abs=1e-9)
    mid = small_allreduce_s(vllm, 8, (16384 * 131072) ** 0.5)
    assert mid == pytest.approx((9.3e-6 + 11.8e-6) / 2, abs=1e-9)
    # TP 3 takes the TP 4 rows; no table (TGI): None, the flat latency applies
    assert small_allreduce_s(vllm, 3, 16384) == small_allreduce_s(vllm, 4, 16384)
    assert small_allreduce_s(engine_profile("tgi"), 8, 16384) is None


def test_gemm_floor_only_where_bytes_are_smaller():
    vllm = engine_profile("vllm")
    llama = MODELS.get("meta-llama/Llama-3.1-8B").spec
    big = decode_floor(llama, vllm, 32, 1, 1, False, weight_bytes=16e9, bandwidth=2.9e12, allreduce_s=0.0)
    assert big.gemm_floor_s == 0.0  # 129 GEMMs x 3 us = 0.39 ms < 5.5 ms of bytes
    assert big.kernel_s == pytest.approx(327 * 0.875e-6)
    assert big.collectives == 0
    tiny = decode_floor(llama, vllm, 32, 2, 1, False, weight_bytes=0.1e9, bandwidth=2.9e12, allreduce_s=9e-6)
    assert tiny.gemm_floor_s == pytest.approx(129 * 3e-6 - 0.1e9 / 2.9e12)
    assert tiny.collectives == 65 and tiny.collective_s == pytest.approx(65 * 9e-6)  # 2 a layer + the logits


def test_floor_matters_at_batch_1_and_is_amortised_at_serving_batches():
    """TPOT rises with the batch; the floor is a large share of a DeepSeek-V3 batch-1 step on 8 x H200 and a small
    one of a large batch, so serving throughput stays what the bytes and FLOPs say."""
    tpot = {b: estimate(_scenario("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", b))
            .inference.tpot_s.value for b in (1, 8, 64, 256)}
    assert tpot[1] < tpot[8] < tpot[64] < tpot[256]
    bare = engine_profile("sglang").model_copy(update={"decode_kernels": ()})  # the same bytes, no kernel list
    floor_s = tpot[1] - estimate(_scenario("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", 1,
                                           profile=bare)).inference.tpot_s.value
    assert floor_s > 0.3 * tpot[1]
    assert floor_s < 0.1 * tpot[256]


def test_tgi_floor_is_its_kernel_count_at_batch_1():
    """Llama 3.1 8B bf16 on one H100 under TGI: the floor adds exactly its 368 kernels + 129 GEMMs at 0.875 us (the
    GEMMs' 3 us minimums stay under the step's 16 GB of weights at the bandwidth; no TP, no all-reduce)."""
    tgi = engine_profile("tgi")
    bare = tgi.model_copy(update={"decode_kernels": ()})
    args = ("meta-llama/Llama-3.1-8B", "nvidia-h100-sxm-80gb", 1, "tgi", "bf16", 1)
    added = (estimate(_scenario(*args)).inference.tpot_s.value
             - estimate(_scenario(*args, profile=bare)).inference.tpot_s.value)
    assert added == pytest.approx((368 + 129) * 0.875e-6, abs=1e-9)
