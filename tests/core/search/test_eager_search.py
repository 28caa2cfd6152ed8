"""Eager-kernel profiles (the Hugging Face Trainer here) are searched with the engine's own figures, priced
once (issue 16 "one truth"; the double pricing of issue 18's search).

The quick model takes their memory from the engine's ``memory.worst_stage`` per distinct layout and their
step time from the engine's per-operation model, data-parallel collectives, optimizer pass and offload
functions, so the planner no longer re-estimates every candidate with the full engine as well (it did:
``planner._engine_priced``, removed 2026-11-27). The check: every layout the search ranks, without the
engine refining it, carries the engine's own tokens/s and memory for that layout (to 1e-9: the same
functions), and refining changes neither the ranking nor the figures.
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.search.planner import scenario_for
from llmplan.core.workload import TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_eager_profile_search_carries_the_engines_figures(method):
    t = TrainingSettings(framework="hf-trainer", method=method, seq_len=4096, global_batch=64)
    sc = resolve(PlanDocument(model=ModelRef(id="meta-llama/Llama-3.2-1B"),
                              hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8),
                              workload="pretrain" if method == "full" else "finetune", training=t))
    assert sc.framework.kernels == "eager"
    quick = search(sc, top=5)
    assert len(quick.best) == 5
    for r in quick.best:
        e = estimate(scenario_for(sc, r.parallelism, r.training))
        assert r.tokens_per_s == pytest.approx(e.compute.tokens_per_s.value, rel=1e-9), r.label()
        assert r.memory_bytes == pytest.approx(e.memory.total.value, rel=1e-9), r.label()
    refined = search(sc, top=5, refine=estimate)
    assert [r.label() for r in refined.best] == [r.label() for r in quick.best]
    assert [r.tokens_per_s for r in refined.best] == pytest.approx([r.tokens_per_s for r in quick.best], rel=1e-9)
