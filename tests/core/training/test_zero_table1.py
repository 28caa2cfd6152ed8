"""Rajbhandari et al. 2020 (ZeRO, arXiv:1910.02054), Table 1: model-state memory per device.

Mixed-precision Adam, K = 12 (fp32 master, momentum, variance), fp16 weights and
gradients; GB = 1e9 bytes. Columns: baseline data parallelism, P_os, P_os+g, P_os+g+p.
Values are those printed in the paper's Table 1 (the search tool did not return the
table's text; each value also follows from the paper's own formulas (2+2+K)Ψ,
2Ψ+2Ψ+KΨ/Nd, 2Ψ+(2+K)Ψ/Nd, (2+2+K)Ψ/Nd, which is what the test re-derives).
Tolerance: 1%, or half a unit of the table's last printed digit when that is larger
(0.12 GB is 0.117 GB rounded).
"""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.shard import StageParams
from llmplan.core.training.states import model_states
from llmplan.core.workload import TrainingSettings

from .helpers import gpt, scenario

TABLE1 = [  # psi, Nd, (baseline, P_os, P_os+g, P_os+g+p) in GB, last-digit half-unit
    (7.5e9, 64, (120, 31.4, 16.6, 1.88), (0.5, 0.05, 0.05, 0.005)),
    (7.5e9, 1024, (120, 30.1, 15.1, 0.12), (0.5, 0.05, 0.05, 0.005)),
    (128e9, 64, (2048, 536, 284, 32), (0.5, 0.5, 0.5, 0.5)),
    (128e9, 1024, (2048, 513, 258, 2), (0.5, 0.5, 0.5, 0.5)),
    (1e12, 64, (16000, 4187, 2218, 250), (0.5, 0.5, 0.5, 0.5)),
    (1e12, 1024, (16000, 4011, 2013, 15.6), (0.5, 0.5, 0.5, 0.05)),
]


def _states_gb(psi: float, nd: int, stage: int) -> float:
    tr = TrainingSettings(precision="fp16", optimizer="adamw", zero_stage=stage, fp32_grad_accumulation=False)
    sp = StageParams("only", psi, 0.0, psi, psi, 0.0, True, True)
    st = model_states(tr, sp, psi, 0.0, nd, 1, True)
    return (st.weights + st.gradients + st.master + st.optimizer) / 1e9


@pytest.mark.parametrize(("psi", "nd", "expected", "half_unit"), TABLE1)
def test_model_states_per_device(psi, nd, expected, half_unit):
    for stage, want, rounding in zip((0, 1, 2, 3), expected, half_unit, strict=True):
        got = _states_gb(psi, nd, stage)
        assert abs(got - want) <= max(0.01 * want, rounding), (psi, nd, stage, got, want)


def test_whole_engine_reports_the_same_states_for_a_real_model():
    # The 7.5B GPT of Narayanan et al. Table 1 (7.5B parameters) on 64 GPUs, ZeRO-3:
    # 16 bytes/param / 64 = 0.25 B/param; the engine's four state figures must sum to it.
    sc = scenario(gpt(4096, 32, 36), 64, seq_len=2048, precision="bf16", zero_stage=3,
                  fp32_grad_accumulation=False)
    e = estimate(sc)
    mem = e.memory
    states = mem.weights.value + mem.gradients.value + mem.master_weights.value + mem.optimizer.value
    assert states == pytest.approx(16 * e.params.total / 64, rel=1e-9)
