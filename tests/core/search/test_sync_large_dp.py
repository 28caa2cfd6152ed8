"""The search's quick model against the engine at large data-parallel sizes (issue 16 "one truth", issue 18's
target search): 1,024, 4,096 and 16,384 H100 (8 per node, NDR InfiniBand 400 Gb/s per GPU) × ZeRO 0-3 ×
dense and MoE models, in four layouts each (DP only; TP 8; TP 4 × PP 4, where ZeRO-2/3 are not allowed; the same
interleaved over two chunks per stage, whose gradient reduction hides chunk by chunk).

Before, the quick model priced ZeRO-3's weight gathers by bandwidth alone, once per micro-batch, and hid
them behind its own window: at thousands of ranks NCCL's ring latency (one network step per node) is most
of each gather, so target search found 70B on 8,192 H100 with ZeRO-3 in 21.6 days where the engine says
69.2 days for that layout (2026-11-27). Its data-parallel term is now the engine's own
(``comms.data_parallel_calls`` priced by ``nccl``, hidden by ``comms.exposed``), as are its TP, CP, PP
and EP traffic and its optimizer pass (``search/quick_time.py``). Tolerances: the issue's, step time within
5% and memory within 2%, and the exposed DP time within 5% of the engine's. Measured on this grid
(2026-11-27): all three equal to rounding. With only the DP term shared, the step time was 0.962-1.000
(the MoE layouts' expert all-to-all); on the code before, the DP-only ZeRO-0 cells already failed. These
are two llmplan models checked against each other, not a published table.
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.search.planner import quick_layout, scenario_for
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

MODELS = {"dense": "meta-llama/Llama-3.2-1B", "moe": "Qwen/Qwen1.5-MoE-A2.7B"}  # Qwen: 60 experts, EP 4
GPUS = (1024, 4096, 16384)
GLOBAL_BATCH = 16384  # sequences of 2,048 tokens: one per GPU at 16,384 GPUs with DP only


def _cluster(model: str, gpus: int):
    doc = PlanDocument(name="large dp", model=ModelRef(id=model),
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, nodes=gpus // 8,
                                            network="ib-ndr-400"), workload="pretrain")
    return resolve(doc)


def _layouts(gpus: int, moe: bool):
    ep = 4 if moe else 1
    yield ParallelLayout(tp=1, pp=1, dp=gpus, ep=ep), (0, 1, 2, 3)
    yield ParallelLayout(tp=8, pp=1, dp=gpus // 8, ep=ep), (0, 1, 2, 3)
    yield ParallelLayout(tp=4, pp=4, dp=gpus // 16, ep=ep), (0, 1)  # ZeRO-2/3 do not combine with pipelines
    # interleaved: the gradient reduction hides chunk by chunk (comms.interleaved_windows)
    yield ParallelLayout(tp=4, pp=4, dp=gpus // 16, ep=ep, virtual_stages=2), (0, 1)


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("gpus", GPUS)
def test_quick_model_equals_the_engine_at_large_dp(kind, gpus):
    base = _cluster(MODELS[kind], gpus)
    cells = 0
    for layout, stages in _layouts(gpus, kind == "moe"):
        for zero in stages:
            t = TrainingSettings(seq_len=2048, global_batch=GLOBAL_BATCH, micro_batch=1, zero_stage=zero)
            sc = scenario_for(base.model_copy(update={"training": t}), layout, t)
            e = estimate(sc)
            _ranked, q = quick_layout(sc)
            step = float(q.step_time[0]) / e.compute.step_time_s.value
            mem = float(q.memory[0]) / e.memory.total.value
            cell = (kind, gpus, layout.tp, layout.pp, layout.dp, zero)
            assert abs(step - 1) <= 0.05, (cell, step)
            assert abs(mem - 1) <= 0.02, (cell, mem)
            engine_dp = sum(c.exposed_s.value for c in e.communication.collectives if c.group == "dp")
            assert float(q.dp_comm[0]) == pytest.approx(engine_dp, rel=0.05, abs=1e-6), cell
            cells += 1
    assert cells == 12


def test_target_search_case_zero3_on_8192_h100():
    """The reported case: Llama 3.1 70B, 15T tokens, Llama 3's batch (2,048 × 8,192), ZeRO-3 held, 1,024 DGX
    H100 nodes. The search's own figure for its best layout is the engine's for that layout (within 5%)."""
    doc = PlanDocument(name="70B", model=ModelRef(id="meta-llama/Llama-3.1-70B"),
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, nodes=1024,
                                            network="ib-ndr-400"), workload="pretrain")
    sc = resolve(doc)
    t = sc.training.model_copy(update={"seq_len": 8192, "global_batch": 2048, "zero_stage": 3, "tokens": 15e12})
    sc = sc.model_copy(update={"training": t})
    best = search(sc, top=1, use_fewer_gpus=False, keep=("zero_stage",)).best[0]
    assert best.training.zero_stage == 3
    e = estimate(scenario_for(sc, best.parallelism, best.training))
    assert best.tokens_per_s == pytest.approx(e.compute.tokens_per_s.value, rel=0.05)
