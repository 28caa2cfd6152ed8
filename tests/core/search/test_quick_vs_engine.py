"""The quick model must stay close to the full engine, or the short list it hands over misses the best.

Checked on the GPT-3 175B shape on 1,024 A100 (global batch 1,536), every 10th valid layout:
tokens/s within ±25% of the engine's for 90% of layouts, per-GPU memory at most 5% above the
engine's (the quick model prunes, so it must not overstate memory) and within 15% below it, and
the quick model's favourite within 2% of the engine's best tokens/s. Tolerances are ours (no
published reference: this is a consistency check between two llmplan models).
"""

import numpy as np

from llmplan.core.engine import estimate
from llmplan.core.search.planner import scenario_for
from llmplan.core.search.quick import evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import layout_of, training_columns
from llmplan.core.workload import Scenario, TrainingSettings
from llmplan.errors import LlmplanError

from .specs import A100_80GB, cluster, gpt


def test_quick_model_tracks_the_engine():
    sc = Scenario(model=gpt("GPT-3 175B", 12288, 96, 96, vocab=50257), cluster=cluster(A100_80GB, 8, 128),
                  training=TrainingSettings(seq_len=2048, global_batch=1536))
    shape = model_shape(sc.model, sc.training)
    cols = training_columns(shape, [1024], 8, 2048, 1536, offload=False)
    res = evaluate(cols, shape, sc.cluster, sc.training, sc.efficiency)
    rows, quick_tps, engine_tps, quick_mem, engine_mem = [], [], [], [], []
    for i in range(0, len(cols), 10):
        p, t = layout_of(cols, i, sc.training)
        try:
            e = estimate(scenario_for(sc, p, t))
        except LlmplanError:
            continue
        rows.append(i)
        quick_tps.append(res.tokens_per_s[i])
        engine_tps.append(e.compute.tokens_per_s.value)
        quick_mem.append(res.memory[i])
        engine_mem.append(e.memory.total.value)
    assert len(rows) > 500
    ratio = np.array(quick_tps) / np.array(engine_tps)
    assert np.mean(np.abs(ratio - 1) <= 0.25) >= 0.9
    mem = np.array(quick_mem) / np.array(engine_mem)
    assert mem.max() <= 1.05 and mem.min() >= 0.85
    cap = sc.cluster.gpu.usable_memory_bytes
    fits = np.array(engine_mem) <= cap
    engine_best = np.max(np.where(fits, engine_tps, 0))
    quick_pick = int(np.argmax(np.where(np.array(quick_mem) <= cap, quick_tps, 0)))
    assert engine_tps[quick_pick] >= 0.98 * engine_best
