"""torchao's ``CPUOffloadOptimizer`` as torchtune's one-GPU offload (issue 26, left by offload32).

Read in pytorch/ao at 36027d8 (2026-08-21), torchao/optim/cpu_offload.py: for every trained parameter of at least
4,096 elements a pinned host copy ``torch.empty_like(p_device)`` (the parameter's dtype), a pinned host gradient of
the same dtype, and its own base optimizer (torch AdamW, ``fused=True``) over the host copy; a
post-accumulate-grad hook copies each gradient to the host on a side stream during the backward; ``step()`` steps
each parameter on the CPU and queues its copy back, so the copies back overlap the following steps.
``offload_gradients`` defaults to False (the GPU keeps its gradients). torchtune (pytorch/torchtune at bd2a0fc,
docs/source/tutorials/memory_optimizations.rst) takes it as the ``optimizer`` of its single-device recipes only;
the distributed recipes offload with ``fsdp_cpu_offload``.

Llama-3.1-8B (8,030,261,248 parameters) fully fine-tuned in pure bf16 on one H100 with ``training.offload = cpu``
and no ZeRO (the single-device recipe): by hand, host RAM 8 B per parameter (bf16 copy 2 + bf16 gradient 2 + two
bf16 AdamW states 4: the docs' "4x model size"), no optimizer state or master on the GPU, the CPU step
2·(2 + 4) + 2 = 14 B per parameter over the host's memory bus, gradients and parameters 2 B each over PCIe.
Tolerance 1e-9 relative (the same arithmetic, no fitting).
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.search.planner import quick_layout
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

P = 8_030_261_248  # Llama-3.1-8B


def _doc(offload: str = "cpu", zero: int = 0, gpus: int = 1, **kw) -> PlanDocument:
    t = TrainingSettings(framework="torchtune", method="full", micro_batch=2, global_batch=2 * gpus, seq_len=4096,
                         recompute="full", zero_stage=zero, offload=offload, optimizer="adamw", **kw)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=gpus), workload="finetune",
                        training=t, parallelism=ParallelLayout(dp=gpus))


def test_one_gpu_without_zero_offloads_with_cpu_offload_optimizer():
    sc, est = evaluate_plan(_doc())
    assert sc.framework.offload_style == "torchao"
    assert sc.training.optimizer_in_backward is False  # the recipe builds CPUOffloadOptimizer instead
    m = est.memory
    assert m.host_ram.value == pytest.approx(8 * P, rel=1e-9)
    assert m.optimizer.value == m.master_weights.value == 0.0
    assert m.gradients.value == pytest.approx(2 * P, rel=1e-9)  # offload_gradients=False: they stay
    assert any("torchao CPUOffloadOptimizer" in w for w in est.warnings)


def test_its_time_is_the_cpu_step_with_the_copies_behind_backward_and_step():
    sc, est = evaluate_plan(_doc())
    parts = est.compute.offload_time_s.inputs
    pcie = sc.cluster.gpu.pcie_bandwidth * sc.efficiency.pcie
    host = sc.cluster.host_memory_bandwidth * sc.efficiency.host_memory_bandwidth
    assert parts["bytes_per_param"] == 14.0
    assert parts["cpu_step_s"] == pytest.approx(14 * P / host, rel=1e-9)
    assert parts["grad_copy_s"] == pytest.approx(2 * P / pcie, rel=1e-9)  # one micro-batch
    assert parts["param_copy_s"] == pytest.approx(2 * P / pcie, rel=1e-9)
    assert parts["param_copy_hidden_s"] == pytest.approx(min(2 * P / pcie, 14 * P / host), rel=1e-9)
    assert est.compute.offload_time_s.value == pytest.approx(
        parts["grad_exposed_s"] + max(14 * P / host, 2 * P / pcie), rel=1e-9)
    assert parts["grad_exposed_s"] <= parts["grad_copy_s"]


def test_distributed_recipes_and_zero_keep_fsdp_cpu_offload():
    """Several GPUs, or ZeRO sharding on one (the distributed recipe under FSDP2), stay FSDP's offload."""
    sc, _ = evaluate_plan(_doc(zero=3, gpus=2))
    assert sc.framework.offload_style == "fsdp"
    sc, _ = evaluate_plan(_doc(zero=3, gpus=1))
    assert sc.framework.offload_style == "fsdp"
    sc, _ = evaluate_plan(_doc(offload="none"))
    assert sc.framework.offload_style == "fsdp"  # nothing offloaded: the profile as it is


def test_the_search_quick_model_prices_it_as_the_engine():
    sc, est = evaluate_plan(_doc())
    _, res = quick_layout(sc)
    assert float(res.optimizer_time[0]) == pytest.approx(est.compute.offload_time_s.value, rel=1e-9)
    assert float(res.memory[0]) == pytest.approx(est.memory.total.value, rel=1e-9)


def test_only_a_phase_priced_profile_with_cpu_offload_may_name_it():
    tt = load_framework_profiles()["torchtune"]
    assert tt.single_gpu_offload_style == "torchao"
    with pytest.raises(ValueError, match="single_gpu_offload_style needs CPU offload"):
        FrameworkProfile(kernels="fused", single_gpu_offload_style="torchao")
    with pytest.raises(ValueError, match="offload_style torchao is a one-GPU offload"):
        FrameworkProfile(kernels="eager", offload_style="torchao")
