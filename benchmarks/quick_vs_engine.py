"""How closely the search's quick model tracks the full training engine (the figures in
docs/plans-and-cli.md, "The quick model against the full engine").

    .venv/bin/python benchmarks/quick_vs_engine.py

For the GPT-3 175B shape on 1,024 A100 (the first case of ``bench_search.py``) every layout the
search enumerates is run through both models; the script prints the quick/engine ratios of
tokens/s and per-GPU memory, how often the two fit verdicts agree, and where the quick model's
favourite lands in the engine's ranking. ``tests/core/search/test_quick_vs_engine.py`` keeps
the same agreement (on every 10th layout) in CI.
"""

from __future__ import annotations

import numpy as np

from bench_search import _cases
from llmplan.core.engine import estimate
from llmplan.core.search.planner import scenario_for
from llmplan.core.search.quick import evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import layout_of, training_columns
from llmplan.errors import LlmplanError


def measure(case: str = "GPT-3 175B on 1,024 A100") -> dict:
    sc = _cases()[case]
    shape = model_shape(sc.model, sc.training)
    gpus = sc.cluster.total_gpus
    cols = training_columns(shape, [gpus], sc.cluster.gpus_per_node, sc.training.seq_len,
                            sc.training.global_batch, offload=False)
    quick = evaluate(cols, shape, sc.cluster, sc.training, sc.efficiency)
    q_tps, e_tps, q_mem, e_mem = [], [], [], []
    for i in range(len(cols)):
        p, t = layout_of(cols, i, sc.training)
        try:
            e = estimate(scenario_for(sc, p, t))
        except LlmplanError:
            continue
        q_tps.append(quick.tokens_per_s[i])
        e_tps.append(e.compute.tokens_per_s.value)
        q_mem.append(quick.memory[i])
        e_mem.append(e.memory.total.value)
    q_tps, e_tps, q_mem, e_mem = map(np.array, (q_tps, e_tps, q_mem, e_mem))
    cap = sc.cluster.gpu.usable_memory_bytes
    q_fit, e_fit = q_mem <= cap, e_mem <= cap
    favourite = int(np.argmax(np.where(q_fit, q_tps, 0)))
    engine_order = np.argsort(-np.where(e_fit, e_tps, 0))
    tps_ratio, mem_ratio = q_tps / e_tps, q_mem / e_mem
    return {
        "case": case, "enumerated": len(cols), "accepted": len(e_tps),
        "tps_ratio": np.percentile(tps_ratio, [10, 50, 90]), "mem_ratio": np.percentile(mem_ratio, [10, 50, 90]),
        "agree": int(np.sum(q_fit == e_fit)), "quick_only": int(np.sum(q_fit & ~e_fit)),
        "engine_only": int(np.sum(~q_fit & e_fit)),
        "favourite_rank": int(np.where(engine_order == favourite)[0][0]) + 1,
        "favourite_share": float(e_tps[favourite] / np.max(np.where(e_fit, e_tps, 0))),
    }


def main() -> None:
    r = measure()
    t10, t50, t90 = r["tps_ratio"]
    m10, m50, m90 = r["mem_ratio"]
    print(f"{r['case']}: {r['enumerated']:,} layouts enumerated, {r['accepted']:,} accepted by the engine")
    print(f"  tokens/s quick/engine: median {t50:.2f} (10th–90th percentile {t10:.2f}–{t90:.2f})")
    print(f"  memory per GPU quick/engine: median {m50:.3f} (10th–90th percentile {m10:.3f}–{m90:.3f})")
    print(f"  fit verdicts agree on {r['agree']:,}; quick fits but engine not: {r['quick_only']}; "
          f"engine fits but quick not: {r['engine_only']}")
    print(f"  the quick model's favourite is #{r['favourite_rank']} by the engine, "
          f"at {r['favourite_share']:.1%} of the engine's best tokens/s")


if __name__ == "__main__":
    main()
