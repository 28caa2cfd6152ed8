"""The search's quick model charges offload time as the engine does: it calls the engine's
``offload_time.offload_time`` on arrays of layouts (``search.quick._offload``).

Before, an offloaded layout paid only its PCIe copies, so the search ranked offload layouts as if
the CPU optimizer step were free; then a vectorised copy of the engine's formulas ran within 25% of it.
Checked on Llama-2-70B-shaped full fine-tuning on 8 H100 (ZeRO-3, AdamW states on the CPU): the quick
model's offload time equals the engine's exposed offload time (to 1e-9: the same function).
"""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec
from llmplan.core.search.planner import quick_layout
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

from .specs import H100_80GB, LLAMA_405B

LLAMA_70B = LLAMA_405B.model_copy(update={"name": "Llama 70B shape", "hidden_size": 8192, "num_layers": 80,
                                          "num_heads": 64, "intermediate_size": 28672})


def _sc(host: float | None) -> Scenario:
    return Scenario(model=LLAMA_70B, cluster=ClusterSpec(gpu=H100_80GB, gpus_per_node=8, host_memory_bandwidth=host),
                    workload="finetune", parallelism=ParallelLayout(dp=8),
                    training=TrainingSettings(seq_len=4096, global_batch=64, zero_stage=3, offload="cpu",
                                              recompute="full"))


def test_quick_model_charges_the_cpu_step():
    with_host, _ = quick_layout(_sc(409.6e9))
    without, _ = quick_layout(_sc(None))
    _, res = quick_layout(_sc(409.6e9))
    params = 70.55e9  # Llama-2-70B-shaped with a 128k vocabulary
    cpu = params * 30 / (409.6e9 * 0.7)  # every GPU of the node shares the host bus: all params × 30 B
    assert with_host.step_time_s - without.step_time_s == pytest.approx(cpu, rel=0.02)
    engine = estimate(_sc(409.6e9)).compute.offload_time_s.value
    assert float(res.optimizer_time[0]) == pytest.approx(engine, rel=1e-9)
