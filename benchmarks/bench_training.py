"""Median wall time of one full training ``estimate()`` (target: under 0.2 ms on the dev box).

``measure`` estimates the same ``Scenario`` again and again, as the app does on an edit that leaves most
spec objects alone and as the search re-checks its finalists: the engine's identity caches
(``llmplan.core.memo``) answer its heavy parts. ``measure_new_objects`` estimates equal scenarios built
afresh (new spec objects throughout, the model too), so that no cache keyed by a spec object's identity
can answer: the cost of a plan resolved from scratch, printed beside it so the cache cannot hide a slower
engine. Value-keyed caches still answer there: the parameter counts and the per-model facts keyed by them,
the per-shape layer times and the collectives. ``measure_changed_knob`` changes one training knob
(``training.tokens``) on every call, so that every cache keyed by the training settings, by identity or by
value, misses too: what an edit of a training knob costs.

Run: .venv/bin/python benchmarks/bench_training.py
"""

from __future__ import annotations

import statistics
import time

from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec, GpuSpec, NetworkSpec, PeakFlops
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.formats.hf_config import spec_from_config


def _scenario() -> Scenario:
    model = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
    gpu = GpuSpec(id="h100", name="H100 SXM", vendor="nvidia", memory_bytes=81559 * 2**20,
                  memory_bandwidth=3.35e12, peak_flops=PeakFlops(bf16=989e12, fp8=1979e12), nvlink_bandwidth=450e9)
    cluster = ClusterSpec(gpu=gpu, gpus_per_node=8, nodes=2, network=NetworkSpec(bandwidth_per_gpu=50e9))
    return Scenario(model=model, cluster=cluster, training=TrainingSettings(seq_len=8192, global_batch=128),
                    parallelism=ParallelLayout(tp=2, pp=2, dp=4))


def measure(batches: int = 30, n: int = 200) -> dict[str, float]:
    """Median and min wall time of one estimate, in ms, over ``batches`` batches of ``n`` calls, and the median
    CPU time (``cpu_ms``: the thread's, which other jobs on a busy machine inflate far less than the wall time)."""
    sc = _scenario()
    estimate(sc)  # warm the parameter-count cache
    samples, cpu = [], []
    for _ in range(batches):
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(n):
            estimate(sc)
        samples.append((time.perf_counter() - t0) / n)
        cpu.append((time.thread_time() - c0) / n)
    return {"median_ms": statistics.median(samples) * 1e3, "min_ms": min(samples) * 1e3, "calls": batches * n,
            "cpu_ms": statistics.median(cpu) * 1e3}


def _each_once(copies: list[Scenario], batches: int, n: int) -> dict[str, float]:
    """Median and min wall time of one estimate, each of ``copies`` estimated once, in ``batches`` of ``n``
    (the last copy warms the caches first)."""
    estimate(copies[-1])
    samples = []
    for b in range(batches):
        chunk = copies[b * n:(b + 1) * n]
        t0 = time.perf_counter()
        for sc in chunk:
            estimate(sc)
        samples.append((time.perf_counter() - t0) / n)
    return {"median_ms": statistics.median(samples) * 1e3, "min_ms": min(samples) * 1e3, "calls": batches * n}


def measure_new_objects(batches: int = 15, n: int = 200) -> dict[str, float]:
    """Median and min wall time of one estimate of a scenario rebuilt from its dump (new spec objects); the
    warm-up fills the value-keyed caches (parameter counts by equal spec, layer times, collectives)."""
    data = _scenario().model_dump()
    return _each_once([Scenario.model_validate(data) for _ in range(batches * n + 1)], batches, n)


def measure_changed_knob(batches: int = 15, n: int = 200) -> dict[str, float]:
    """Median and min wall time of one estimate of a scenario whose ``training.tokens`` differs from every
    scenario estimated before it (new spec objects, a new training value); the warm-up fills only what does
    not depend on the training settings (parameter counts and the per-model facts keyed by them)."""
    data = _scenario().model_dump()
    copies = []
    for i in range(batches * n + 1):
        data["training"]["tokens"] = 1e12 + i * 1e9
        copies.append(Scenario.model_validate(data))
    return _each_once(copies, batches, n)


def main() -> None:
    m = measure()
    print(f"training estimate(): median {m['median_ms']:.3f} ms "
          f"(min {m['min_ms']:.3f} ms; CPU {m['cpu_ms']:.3f} ms) over {m['calls'] // 200} × 200 calls")
    f = measure_new_objects()
    print(f"training estimate() of a scenario built afresh (new spec objects): median {f['median_ms']:.3f} ms "
          f"(min {f['min_ms']:.3f} ms) over {f['calls'] // 200} × 200 calls")
    k = measure_changed_knob()
    print(f"training estimate() with training.tokens changed on every call: median {k['median_ms']:.3f} ms "
          f"(min {k['min_ms']:.3f} ms) over {k['calls'] // 200} × 200 calls")


if __name__ == "__main__":
    main()
