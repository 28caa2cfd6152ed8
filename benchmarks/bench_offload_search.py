"""What the offload term costs the auto-planner, and what it changes in its answer.

    .venv/bin/python benchmarks/bench_offload_search.py

Llama-2/3-70B-shaped full fine-tune (80 layers, h 8192, GQA 8, 128k vocabulary) on one node of
8 H100, seq 4,096, global batch 64: 16 B/param of model states need 141 GB per GPU even with ZeRO-3,
so nothing fits without offload and the search tries the CPU-offload layouts. Printed: the search's
median wall time, its favourite layout, and that layout's exposed offload time, for a host whose
memory bandwidth is unknown (the CPU step is then free, as before this term existed), the default
2-socket DDR4-3200 host (409.6 GB/s) and a DGX H100 host (614.4 GB/s).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from core.search.specs import H100_80GB, LLAMA_405B
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.search import search
from llmplan.core.search.planner import scenario_for
from llmplan.core.workload import Scenario, TrainingSettings

LLAMA_70B = LLAMA_405B.model_copy(update={"name": "Llama 70B shape", "hidden_size": 8192, "num_layers": 80,
                                          "num_heads": 64, "intermediate_size": 28672})


def main() -> None:
    for label, host in (("host bandwidth unknown", None), ("default host 409.6 GB/s", 409.6e9),
                        ("DGX H100 host 614.4 GB/s", 614.4e9)):
        sc = Scenario(model=LLAMA_70B, cluster=ClusterSpec(gpu=H100_80GB, gpus_per_node=8, host_memory_bandwidth=host),
                      workload="finetune", training=TrainingSettings(seq_len=4096, global_batch=64))
        result = search(sc, top=5)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            search(sc, top=5)
            runs.append(time.perf_counter() - t0)
        best = result.best[0]
        full = estimate(scenario_for(sc, best.parallelism, best.training)).compute
        print(f"{label}: {result.evaluated:,} layouts, {result.fitting:,} fit, median wall "
              f"{statistics.median(runs) * 1e3:.0f} ms; {result.note}")
        print(f"    best: {best.label()}  quick {best.tokens_per_s:,.0f} tokens/s MFU {best.mfu:.1%}; engine "
              f"step {full.step_time_s.value:.2f} s, exposed offload {full.step_time_s.inputs['exposed_offload_s']:.2f} s,"
              f" MFU {full.mfu.value:.1%}")


if __name__ == "__main__":
    main()
