"""How fast is the auto-planner? Layouts per second and the wall time of two large searches.

    .venv/bin/python benchmarks/bench_search.py

1. GPT-3 175B shape (96 layers, h 12288, 96 heads, seq 2048, Brown et al. 2020 Table 2.1) on
   1,024 A100 80GB (128 nodes of 8, HDR InfiniBand), global batch 1,536 sequences;
2. Llama 3.1 405B (its config.json) on 16,384 H100 (2,048 nodes of 8, 400 Gb/s per GPU),
   seq 8,192, global batch 2,048 sequences (16M tokens, Llama 3 paper Table 4);
3. Llama 3.1 8B (its config.json) LoRA with the Hugging Face Trainer (an eager-kernel profile: plain data
   parallelism, memory from the engine's per-phase peak) on one node of 8 H100, seq 4,096, 64 sequences.
First the quick model alone, then the whole search with the full engine re-estimating the short list,
as the app and the CLI run it.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from core.search.specs import A100_80GB, H100_80GB, LLAMA_405B, NDR_IB, cluster, gpt
from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.workload import Scenario, TrainingSettings

# Llama 3.1 8B config.json (meta-llama/Llama-3.1-8B): hidden 4096, 32 layers, 32 heads, 8 KV heads,
# intermediate 14336, vocab 128256.
LLAMA_8B = LLAMA_405B.model_copy(update={"name": "Llama 3.1 8B", "hidden_size": 4096, "num_layers": 32,
                                         "num_heads": 32, "intermediate_size": 14336})


def _time(fn, repeat: int = 5) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def _cases() -> dict[str, Scenario]:
    return {
        "GPT-3 175B on 1,024 A100": Scenario(
            model=gpt("GPT-3 175B", 12288, 96, 96, vocab=50257),
            cluster=cluster(A100_80GB, 8, 128), training=TrainingSettings(seq_len=2048, global_batch=1536)),
        "Llama 3.1 405B on 16,384 H100": Scenario(
            model=LLAMA_405B, cluster=cluster(H100_80GB, 8, 2048, NDR_IB),
            training=TrainingSettings(seq_len=8192, global_batch=2048)),
        "Llama 3.1 8B LoRA, Hugging Face Trainer, on 8 H100": Scenario(
            model=LLAMA_8B, cluster=cluster(H100_80GB, 8, 1), workload="finetune",
            framework_profile=load_framework_profiles()["hf-trainer"],
            training=TrainingSettings(method="lora", seq_len=4096, global_batch=64, framework="hf-trainer")),
    }


def measure(repeat: int = 5) -> list[dict]:
    """One row per search: layouts evaluated, fitting, median wall (s), layouts/s, best layout;
    then, per case, the whole search with the full engine refining the short list (``scope`` 'full engine')."""
    rows: list[dict] = []
    for name, sc in _cases().items():
        for fewer in (False, True):
            result = search(sc, top=5, use_fewer_gpus=fewer)
            wall = _time(lambda sc=sc, fewer=fewer: search(sc, top=5, use_fewer_gpus=fewer), repeat)
            best = result.best[0]
            rows.append({"case": name, "scope": "all GPU counts (Pareto)" if fewer else "exactly all GPUs",
                         "evaluated": result.evaluated, "fitting": result.fitting, "wall_s": wall,
                         "layouts_per_s": result.evaluated / wall, "best": best.label(),
                         "best_tokens_per_s": best.tokens_per_s, "best_mfu": best.mfu})
        refined = search(sc, top=5, refine=estimate)
        wall = _time(lambda sc=sc: search(sc, top=5, refine=estimate), repeat)
        best = refined.best[0] if refined.best else None
        rows.append({"case": name, "scope": "full engine", "evaluated": refined.evaluated, "refined": refined.refined,
                     "wall_s": wall, "best": best.label() if best else None,
                     "best_tokens_per_s": best.tokens_per_s if best else None, "best_mfu": best.mfu if best else None,
                     "note": refined.note})
    return rows


def main() -> None:
    for row in measure():
        if row["scope"] == "full engine":
            print(f"    with the full engine: median wall {row['wall_s'] * 1e3:.0f} ms, {row['refined']} full estimates"
                  + (f"; best {row['best']} {row['best_tokens_per_s']:,.0f} tokens/s MFU {row['best_mfu']:.1%}"
                     if row["best"] else "")
                  + (f" ({row['note']})" if row["note"] else ""))
            continue
        print(f"{row['case']}, {row['scope']}: {row['evaluated']:,} layouts, {row['fitting']:,} fit, "
              f"median wall {row['wall_s'] * 1e3:.0f} ms, {row['layouts_per_s']:,.0f} layouts/s")
        print(f"    best: {row['best']}  {row['best_tokens_per_s']:,.0f} tokens/s MFU {row['best_mfu']:.1%}")


if __name__ == "__main__":
    main()
