"""Speed of the inference engine: median wall time of one estimate and of one serving search.

Run: .venv/bin/python benchmarks/bench_inference.py   (prints figures; asserts nothing)
"""

from __future__ import annotations

import statistics
import time

from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec, GpuSpec, PeakFlops
from llmplan.core.inference.serving import ServingRequest, plan_serving
from llmplan.core.workload import InferenceSettings, Scenario
from llmplan.formats.hf_config import spec_from_config

LLAMA3_8B = dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336, max_position_embeddings=8192)
H100 = GpuSpec(id="h100", name="NVIDIA H100 SXM 80GB", vendor="nvidia", memory_bytes=81559 * 2**20,
               memory_bandwidth=3.35e12, peak_flops=PeakFlops(bf16=989e12, fp8=1979e12), nvlink_bandwidth=450e9,
               price_per_hour=3.0)


def median_ms(fn, repeat: int = 50) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def measure() -> dict[str, float]:
    """Median ms of one inference estimate and of one serving search."""
    spec = spec_from_config(LLAMA3_8B)
    formats = iter(["bf16", "q4_k_m", "fp8", "awq-4bit"] * 1000)

    def one_estimate() -> None:  # a fresh format each time so the weight cache does not hide the work
        estimate(Scenario(model=spec, cluster=ClusterSpec(gpu=H100), workload="inference",
                          inference=InferenceSettings(weight_format=next(formats), batch=16)))

    out: dict[str, float] = {"estimate_ms": median_ms(one_estimate)}
    gpus = (H100, H100.model_copy(update={"id": "h100-b", "price_per_hour": 2.5, "memory_bandwidth": 2.0e12}))
    req = ServingRequest(rate_per_s=20, prompt_tokens=1024, output_tokens=256, ttft_s=1.0, tpot_s=0.05)

    def one_search() -> None:
        plan_serving(spec, req, gpus, weight_format="bf16")

    out["serving_search_ms"] = median_ms(one_search, 10)
    return out


def main() -> None:
    m = measure()
    print(f"inference estimate (Llama-3-8B, H100): median {m['estimate_ms']:.3f} ms")
    print(f"serving search (2 GPU types, mixes): median {m['serving_search_ms']:.3f} ms")


if __name__ == "__main__":
    main()
