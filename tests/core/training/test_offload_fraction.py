"""Megatron-Core's partial optimizer offload: ``--optimizer-cpu-offload --optimizer-offload-fraction F``
(``training.optimizer_offload_fraction``, issue 26).

Read in NVIDIA/Megatron-LM at d98e8a6 (2026-08-22), megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:
``_get_sub_optimizer_param_groups`` moves the optimizer's parameters to the host in order while the moved count is
below F × the total, each as a pinned fp32 copy (``param_update_in_fp32=True``) with torch AdamW's fp32 states and
a pinned fp32 gradient buffer (``cpu_copy_map_grad``); the rest keep an fp32 copy and their states on the GPU for
the GPU's fused Adam. ``step()`` copies the offloaded gradients to the host on the compute stream, queues the GPU
Adam behind them, steps the host copies while the GPU runs, then copies the fp32 values back (4 B: a
non-blocking copy converts on the GPU, pytorch aten/src/ATen/native/cuda/Copy.cu ``copy_kernel_cuda``).
megatron/training/arguments.py: ``--optimizer-offload-fraction``, default 1.0.

Llama-3.1-8B (8,030,261,248 parameters) fully fine-tuned on 8 H100s of one node, distributed optimizer (ZeRO-1),
F = 0.5: every expected figure is hand arithmetic in bytes from the parameter count; tolerance 1e-9 relative (the
same formula, no fitting).
"""

from __future__ import annotations

import pytest

from llmplan.core.params import count_params
from llmplan.core.search.planner import quick_layout
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan
from llmplan.plan.resolve import resolve

P = 8_030_261_248  # Llama-3.1-8B
GPUS = 8


def _doc(fraction: float = 0.5, framework: str = "megatron", offload: str = "cpu") -> PlanDocument:
    t = TrainingSettings(framework=framework, seq_len=4096, micro_batch=1, global_batch=64, zero_stage=1,
                         offload=offload, recompute="full", optimizer="adamw", method="full",
                         optimizer_offload_fraction=fraction)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=GPUS), workload="finetune",
                        training=t, parallelism=ParallelLayout(dp=GPUS))


def test_the_parameter_count_is_llama_3_1_8b():
    sc = resolve(_doc())
    assert count_params(sc.model).total == P


def test_half_the_optimizer_on_the_host_half_on_the_gpu():
    """Each GPU owns P / 8 parameters' optimizer states. F = 0.5: host per GPU 0.5 × P/8 × (4 fp32 copy + 8 Adam
    states + 4 pinned fp32 gradient) = P bytes, × 8 GPUs per node; GPU: 0.5 × P/8 × 4 B of fp32 master and
    0.5 × P/8 × 8 B of states; the fp32 gradient buffer (4 B × P) stays whole on the GPU."""
    _, est = evaluate_plan(_doc(0.5))
    m = est.memory
    assert m.host_ram.inputs["per_gpu"] == pytest.approx(0.5 * P / GPUS * 16, rel=1e-9)
    assert m.host_ram.value == pytest.approx(0.5 * P / GPUS * 16 * GPUS, rel=1e-9)
    assert m.master_weights.value == pytest.approx(0.5 * P / GPUS * 4, rel=1e-9)
    assert m.optimizer.value == pytest.approx(0.5 * P / GPUS * 8, rel=1e-9)
    assert m.gradients.value == pytest.approx(4 * P, rel=1e-9)
    _, full = evaluate_plan(_doc(1.0))
    assert full.memory.master_weights.value == full.memory.optimizer.value == 0.0
    assert full.memory.host_ram.value == pytest.approx(P / GPUS * 16 * GPUS, rel=1e-9)
    # the GPU keeps 12 B × P/16 more than with everything offloaded
    assert m.total.value - full.memory.total.value == pytest.approx(
        12 * P / 16 * (1 + full.memory.overhead.inputs["fragmentation"]), rel=1e-6)


def test_the_step_copies_half_and_overlaps_the_cpu_adam_with_the_gpu_adam():
    """Gradient copy 4 B × P/16 over PCIe (× efficiency.pcie), exposed in full; the CPU's AdamW over P/16 per GPU,
    8 GPUs sharing the node's bus: 28 B × P/16 × 8 / (host bandwidth × efficiency); the GPU's fused Adam over the
    other P/16 at its measured fp32 rate: 2·4 + 4 + 2·8 + 2 = 30 B per parameter, above the 28 B of the fp32
    kernel, so at 30 / (HBM bandwidth × adamw_fp32) s each; the fp32 values back, 4 B × P/16. Exposed: copy +
    max(CPU, GPU) + copy."""
    sc, est = evaluate_plan(_doc(0.5))
    parts = est.compute.offload_time_s.inputs
    pcie = sc.cluster.gpu.pcie_bandwidth * sc.efficiency.pcie
    host = sc.cluster.host_memory_bandwidth * sc.efficiency.host_memory_bandwidth
    half = P / 16
    assert parts["offload_fraction"] == 0.5
    assert parts["params_per_gpu"] == pytest.approx(half, rel=1e-9)
    assert parts["grad_exposed_s"] == parts["grad_copy_s"] == pytest.approx(4 * half / pcie, rel=1e-9)
    assert parts["param_copy_s"] == pytest.approx(4 * half / pcie, rel=1e-9)
    assert parts["cpu_step_s"] == pytest.approx(28 * half * GPUS / host, rel=1e-9)
    gpu = 30 * half / (sc.cluster.gpu.memory_bandwidth * sc.efficiency.adamw_fp32)
    assert parts["gpu_step_s"] == pytest.approx(gpu, rel=1e-9)
    assert est.compute.offload_time_s.value == pytest.approx(
        2 * 4 * half / pcie + max(28 * half * GPUS / host, gpu), rel=1e-9)
    # the whole optimizer offloaded: twice the copies and the CPU step, no GPU step
    _, full = evaluate_plan(_doc(1.0))
    fp = full.compute.offload_time_s.inputs
    assert fp["gpu_step_s"] == 0.0
    assert fp["cpu_step_s"] == pytest.approx(2 * parts["cpu_step_s"], rel=1e-9)
    assert est.compute.step_time_s.value < full.compute.step_time_s.value


def test_the_search_quick_model_prices_the_fraction_as_the_engine():
    sc, est = evaluate_plan(_doc(0.5))
    _, res = quick_layout(sc)
    assert float(res.optimizer_time[0]) == pytest.approx(est.compute.offload_time_s.value, rel=1e-9)
    kept = est.memory.optimizer.value + est.memory.master_weights.value  # the quick model's optimizer: both
    assert float(res.optimizer[0]) == pytest.approx(kept, rel=1e-9)


def test_a_fraction_outside_megatron_is_a_field_error_naming_megatron():
    with pytest.raises(PlanFileError, match=r"^training\.optimizer_offload_fraction: the hf-trainer profile offloads "
                       r"the whole optimizer or none of it.*; profiles that offload a share: megatron "
                       r"\(training\.framework\)"):
        resolve(_doc(0.5, framework="hf-trainer"))
    with pytest.raises(PlanFileError, match=r"^training\.optimizer_offload_fraction: the torchtune profile"):
        resolve(_doc(0.5, framework="torchtune", offload="none"))
    with pytest.raises(ValueError):
        TrainingSettings(optimizer_offload_fraction=0.0)
    with pytest.raises(ValueError):
        TrainingSettings(optimizer_offload_fraction=1.5)


def test_without_offload_megatron_ignores_the_fraction_and_old_plans_load(tmp_path):
    """Megatron reads --optimizer-offload-fraction only with --optimizer-cpu-offload; a plan without the field
    loads with 1.0 (the flag's default) and estimates as before."""
    _, off = evaluate_plan(_doc(0.5, offload="none"))
    _, base = evaluate_plan(_doc(1.0, offload="none"))
    assert off.memory.total.value == base.memory.total.value
    assert off.compute.step_time_s.value == base.compute.step_time_s.value
    path = tmp_path / "old.llmplan"
    text = _doc(1.0).model_dump_json()
    path.write_text(text.replace('"optimizer_offload_fraction":1.0,', ""))
    assert "optimizer_offload_fraction" not in path.read_text()
    assert load_plan(path).training.optimizer_offload_fraction == 1.0
