"""The quick model's activation memory is the engine's (issue 16: one truth).

The engine's per-block count follows Korthikanti et al. 2022 (arXiv:2205.05198) §4, Table 2, and is
tested against it in tests/core/training; the search evaluates the same functions on arrays
(``search/quick_memory.py``), so on the GPT-3 175B shape the two must agree to rounding for every
recompute mode, with and without FlashAttention, with and without tensor parallelism, and for
several micro-batch sizes.
"""

import numpy as np
import pytest

from llmplan.core.engine import estimate
from llmplan.core.hardware import Efficiency
from llmplan.core.search.planner import scenario_for
from llmplan.core.search.quick import Columns, evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import layout_of
from llmplan.core.workload import Scenario, TrainingSettings

from .specs import A100_80GB, cluster, gpt

GPT3 = gpt("GPT-3 175B", 12288, 96, 96)  # Korthikanti et al. Table 3 uses the same shape
S = 2048


@pytest.mark.parametrize("recompute", [0, 1, 2])
@pytest.mark.parametrize("flash", [True, False])
@pytest.mark.parametrize(("tp", "mb"), [(1, 1), (8, 1), (8, 4)])
def test_quick_activations_are_the_engines(recompute, flash, tp, mb):
    t = TrainingSettings(seq_len=S, flash_attention=flash, global_batch=16 * 128 // tp * mb)
    one = np.ones(1, dtype=np.int64)
    dp = 128 // tp
    cols = Columns(tp=one * tp, pp=one, vp=one, dp=one * dp, cp=one, ep=one, zero=one, offload=one * 0,
                   recompute=one * recompute, mb=one * mb, accum=one * 16)
    sc = Scenario(model=GPT3, cluster=cluster(A100_80GB, 8, 16), training=t)
    res = evaluate(cols, model_shape(GPT3, t), sc.cluster, t, Efficiency())
    p, tt = layout_of(cols, 0, t)
    e = estimate(scenario_for(sc, p, tt))
    assert float(res.activations[0]) == pytest.approx(e.memory.activations.value, rel=1e-9)
    assert float(res.memory[0]) == pytest.approx(e.memory.total.value, rel=1e-9)
