"""The quick model's model-state memory against Rajbhandari et al., ZeRO (SC 2020), Figure 1.

Figure 1: Ψ = 7.5B parameters, N_d = 64 data-parallel GPUs, mixed-precision Adam (K = 12):
baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB per GPU. Our model has its
own parameter count, so the check is on bytes per parameter: 16, 4 + 12/64, 2 + 14/64 and
16/64, i.e. the figure's values divided by 7.5e9. Tolerance ±0.05 GB on Ψ (the figure rounds to 0.1 GB).
"""

import numpy as np
import pytest

from llmplan.core.hardware import Efficiency
from llmplan.core.search.quick import Columns, evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.workload import TrainingSettings

from .specs import A100_80GB, cluster, gpt

FIGURE_1_GB = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
PSI = 7.5e9


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_model_states_per_parameter_match_zero_figure_1(stage):
    model = gpt("GPT 7.5B-like", 4096, 32, 36)
    t = TrainingSettings(seq_len=2048, fp32_grad_accumulation=False)  # ZeRO: fp16 gradients
    one = np.ones(1, dtype=np.int64)
    cols = Columns(tp=one, pp=one, vp=one, dp=one * 64, cp=one, ep=one, zero=one * stage, offload=one * 0,
                   recompute=one * 2, mb=one, accum=one)
    shape = model_shape(model, t)
    res = evaluate(cols, shape, cluster(A100_80GB, 8, 8), t, Efficiency())
    states = float(res.weights[0] + res.grads[0] + res.optimizer[0])
    assert states / shape.total_params == pytest.approx(FIGURE_1_GB[stage] * 1e9 / PSI, abs=0.05e9 / PSI)
