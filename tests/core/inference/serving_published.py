"""Published small-batch decode measurements of the GPU serving engines, and llmplan's estimate of each.

None of these numbers is an input to llmplan: the kernel lists are counted from the engines' code, the per-kernel
and GEMM costs come from microbenchmarks, and the all-reduce latencies from sglang PR #2904's kernel test
(catalogs/engines.toml). Rows:

- vLLM's nightly performance benchmark, "Latency tests" (benchmarks/benchmark_latency.py: batch 8, 32 tokens in,
  128 out, end-to-end latency of the batch; Llama 3.1 8B on one GPU, Llama 3 70B on TP 4; bf16), as published on
  buildkite.com/vllm/performance-benchmark: build 9513 (H200), 9555 (8 x H100), 9523 (A100-SXM4-80GB).
  Compared with llmplan's request latency (TTFT + 128 x TPOT) at the same batch and lengths.
- NVIDIA NIM for LLMs benchmarking, "Performance" (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance):
  Llama-3.3-70B-Instruct, NIM 1.8.0 (a TensorRT-LLM engine), 2 x H100 80G, fp8, TP 2, 500 tokens in / 2,000 out,
  concurrency 1: ITL 18.91 ms. Compared with llmplan's TPOT under the tensorrt-llm profile.
- SGLang v0.4.1.post2 (sgl-project/sglang PR #2643, 2024-12-29), DeepSeek-V3 FP8 on 8 x H200, TP 8, CUDA graphs,
  128 tokens in / 256 out: 30.29, 206.32 and 760.52 output tokens/s at batch 1, 8 and 32 (launched with
  --enable-dp-attention, so estimated with inference.dp_attention). Compared with llmplan's TPOT (batch / tokens/s).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

VLLM_NIGHTLY = ("vLLM nightly performance benchmark, latency tests (batch 8, 32 in / 128 out, bf16), "
                "buildkite.com/vllm/performance-benchmark build {build}")
NIM = ("NVIDIA NIM benchmarking 'Performance' page, Llama-3.3-70B-Instruct NIM 1.8.0, 2 x H100 80G fp8 TP2, "
       "500 in / 2000 out, concurrency 1 (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance)")
SGLANG_DSV3 = "sgl-project/sglang PR #2643 (v0.4.1.post2, 2024-12-29), DeepSeek-V3 FP8, 8 x H200 TP8, 128 in / 256 out"


@dataclass(frozen=True)
class Row:
    key: str
    model: str
    gpu: str
    tp: int
    engine: str
    weight_format: str
    batch: int
    prompt: int
    output: int
    measured_s: float  # what the source measured: request latency (vLLM rows) or seconds per output token
    what: str  # "request latency" or "TPOT"
    source: str
    dp_attention: bool = False  # SGLang's --enable-dp-attention


ROWS = (
    Row("vllm-8b-h200", "meta-llama/Llama-3.1-8B", "nvidia-h200-sxm-141gb", 1, "vllm", "bf16", 8, 32, 128,
        834.059e-3, "request latency", VLLM_NIGHTLY.format(build=9513)),
    Row("vllm-70b-h200-tp4", "meta-llama/Meta-Llama-3-70B", "nvidia-h200-sxm-141gb", 4, "vllm", "bf16", 8, 32, 128,
        2075.08e-3, "request latency", VLLM_NIGHTLY.format(build=9513)),
    Row("vllm-8b-h100", "meta-llama/Llama-3.1-8B", "nvidia-h100-sxm-80gb", 1, "vllm", "bf16", 8, 32, 128,
        997.542e-3, "request latency", VLLM_NIGHTLY.format(build=9555)),
    Row("vllm-70b-h100-tp4", "meta-llama/Meta-Llama-3-70B", "nvidia-h100-sxm-80gb", 4, "vllm", "bf16", 8, 32, 128,
        2444.47e-3, "request latency", VLLM_NIGHTLY.format(build=9555)),
    Row("vllm-8b-a100", "meta-llama/Llama-3.1-8B", "nvidia-a100-sxm4-80gb", 1, "vllm", "bf16", 8, 32, 128,
        1579.27e-3, "request latency", VLLM_NIGHTLY.format(build=9523)),
    Row("vllm-70b-a100-tp4", "meta-llama/Meta-Llama-3-70B", "nvidia-a100-sxm4-80gb", 4, "vllm", "bf16", 8, 32, 128,
        3990.59e-3, "request latency", VLLM_NIGHTLY.format(build=9523)),
    Row("trtllm-70b-fp8-h100-tp2", "meta-llama/Llama-3.3-70B-Instruct", "nvidia-h100-sxm-80gb", 2, "tensorrt-llm",
        "fp8", 1, 500, 2000, 18.91e-3, "TPOT", NIM),
)

DEEPSEEK_V3 = tuple(
    Row(f"sglang-deepseek-v3-h200-b{b}", "deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm-141gb", 8, "sglang", "fp8", b,
        128, 256, b / tps, "TPOT", SGLANG_DSV3, dp_attention=True)
    for b, tps in ((1, 30.29), (8, 206.32), (32, 760.52))
)


@cache
def estimate_row(row: Row) -> float:
    """llmplan's figure for ``row`` (seconds), the same quantity the source measured."""
    from llmplan.catalog.engines import engine_profile
    from llmplan.catalog.hardware import load_hardware_catalog
    from llmplan.catalog.models import load_model_catalog
    from llmplan.core.engine import estimate
    from llmplan.core.hardware import ClusterSpec
    from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario

    sc = Scenario(model=load_model_catalog().get(row.model).spec,
                  cluster=ClusterSpec(gpu=load_hardware_catalog().gpu(row.gpu).spec, gpus_per_node=8),
                  workload="inference", parallelism=ParallelLayout(tp=row.tp),
                  engine_profile=engine_profile(row.engine),
                  inference=InferenceSettings(engine=row.engine, weight_format=row.weight_format, batch=row.batch,
                                              prompt_tokens=row.prompt, output_tokens=row.output,
                                              dp_attention=row.dp_attention))
    inf = estimate(sc).inference
    return inf.request_latency_s.value if row.what == "request latency" else inf.tpot_s.value
