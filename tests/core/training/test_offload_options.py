"""torchao's ``offload_gradients`` and Megatron-Core's ``--overlap-cpu-optimizer-d2h-h2d`` (``training.offload_gradients``,
``training.overlap_cpu_optimizer_copies``; issue 26).

Read in pytorch/ao at 36027d8 (2026-08-21), torchao/optim/cpu_offload.py: the post-accumulate-grad hook copies each
gradient to its pinned host buffer on a side stream and, with ``offload_gradients=True``, calls
``record_stream(self.stream)`` and drops the GPU gradient, so the allocator frees it once the copy is done; the
copies are the same with the option off. Its docstring: "Not compatible with gradient accumulation".
Read in NVIDIA/Megatron-LM at d98e8a6 (2026-08-22), megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:
with ``overlap_cpu_optimizer_d2h_h2d`` one CPU optimizer per parameter, the gradient copies on a D2H stream and the
copies back on an H2D stream behind the GPU's Adam; the host buffers do not depend on the flag
(megatron/training/arguments.py: ``--overlap-cpu-optimizer-d2h-h2d``, default False).

Llama-3.1-8B (8,030,261,248 parameters; its largest tensor, the untied embedding or head, 128,256 × 4,096) on
H100s. Expected figures are hand arithmetic from these counts and the estimate's own bandwidths and backward time;
tolerance 1e-9 relative (the same formula, nothing fitted).
"""

from __future__ import annotations

import pytest

from llmplan.core.search.planner import quick_layout
from llmplan.core.training.grad_offload import drained
from llmplan.core.workload import EfficiencyOverrides, ParallelLayout, TrainingSettings
from llmplan.errors import InputError, PlanFileError
from llmplan.fit.changes import training_steps
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.resolve import resolve

P = 8_030_261_248  # Llama-3.1-8B
EMBED = 128_256 * 4_096  # its largest tensor (the embedding; the head is as large)


def _torchtune(gpus: int = 1, batch: int = 2, pcie: float | None = None, **kw) -> PlanDocument:
    t = TrainingSettings(framework=kw.pop("framework", "torchtune"), method="full", micro_batch=2, global_batch=batch,
                         seq_len=4096, recompute="full", zero_stage=kw.pop("zero", 0), optimizer="adamw",
                         offload=kw.pop("offload", "cpu"), **kw)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=gpus), workload="finetune",
                        training=t, parallelism=ParallelLayout(dp=gpus), efficiency=EfficiencyOverrides(pcie=pcie))


def _megatron(fraction: float = 1.0, framework: str = "megatron", **kw) -> PlanDocument:
    t = TrainingSettings(framework=framework, seq_len=4096, micro_batch=1, global_batch=64, zero_stage=1,
                         offload=kw.pop("offload", "cpu"), recompute="full", optimizer="adamw", method="full",
                         optimizer_offload_fraction=fraction, **kw)
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8), workload="finetune",
                        training=t, parallelism=ParallelLayout(dp=8))


def test_the_drained_bound_by_hand():
    """min(G, 2·L + max(0, G − P·T_b)): PCIe keeps up (no backlog), falls behind, or cannot help at all."""
    assert drained(100.0, 10.0, 2.0, 60.0).held == 20.0  # 2·10, the backward drains all 100 B in 50 s
    d = drained(100.0, 10.0, 1.0, 60.0)
    assert d.backlog == 40.0 and d.held == 60.0
    assert drained(100.0, 10.0, 0.0, 60.0).held == 100.0  # no link known: every gradient stays
    assert drained(100.0, 60.0, 2.0, 60.0).held == 100.0  # never more than all of them


def test_offload_gradients_holds_two_embedding_gradients_when_pcie_keeps_up():
    """One H100 (PCIe 5 x16 × efficiency.pcie): 2 B × P of bf16 gradients drain in less than the backward, so the
    GPU holds at most the embedding's gradient in flight and the one being written: 2 × 2 B × EMBED. The host keeps
    the same 8 B per parameter (its gradient buffer is pinned either way)."""
    sc, on = evaluate_plan(_torchtune(offload_gradients=True))
    _, off = evaluate_plan(_torchtune())
    g = on.memory.gradients.inputs
    pcie = sc.cluster.gpu.pcie_bandwidth * sc.efficiency.pcie
    assert g["all_gradients"] == pytest.approx(2 * P, rel=1e-9)
    assert g["largest_gradient"] == pytest.approx(2 * EMBED, rel=1e-9)
    assert pcie * g["backward_s"] > 2 * P  # so no backlog
    assert g["backlog"] == 0.0
    assert g["held_at_most"] == pytest.approx(4 * EMBED, rel=1e-9)
    assert on.memory.gradients.value <= g["held_at_most"]
    assert off.memory.gradients.value == pytest.approx(2 * P, rel=1e-9)  # the default keeps all of them
    assert on.memory.total.value < off.memory.total.value - 8 * 2**30  # 34.34 -> 24.99 GiB (2026-11-28)
    assert on.memory.host_ram.value == off.memory.host_ram.value == pytest.approx(8 * P, rel=1e-9)
    # the same hook copies either way: the offload time and the step do not change
    assert on.compute.offload_time_s.value == off.compute.offload_time_s.value
    assert on.compute.step_time_s.value == off.compute.step_time_s.value


def test_a_slow_link_leaves_a_backlog_on_the_gpu():
    """efficiency.pcie 0.01 (0.63 GB/s): the backward produces the gradients faster than the link drains them; the
    GPU holds 2·L + (G − P·T_b), with T_b the estimate's backward of one micro-batch."""
    sc, est = evaluate_plan(_torchtune(offload_gradients=True, pcie=0.01))
    g = est.memory.gradients.inputs
    pcie = sc.cluster.gpu.pcie_bandwidth * 0.01
    assert g["pcie_bandwidth"] == pytest.approx(pcie, rel=1e-9)
    backlog = 2 * P - pcie * g["backward_s"]
    assert backlog > 0
    assert g["held_at_most"] == pytest.approx(min(2 * P, 4 * EMBED + backlog), rel=1e-9)


def test_offload_gradients_bad_inputs():
    with pytest.raises(InputError, match=r"cannot accumulate 2 micro-batches"):  # torchao: not with accumulation
        evaluate_plan(_torchtune(batch=4, offload_gradients=True))
    with pytest.raises(InputError, match=r"single-device recipes only"):  # two GPUs: FSDP's CPU offload
        evaluate_plan(_torchtune(gpus=2, batch=4, zero=3, offload_gradients=True))
    with pytest.raises(PlanFileError, match=r"^training\.offload_gradients: the hf-trainer profile has no torchao "
                       r"CPUOffloadOptimizer.*; profiles that have it: torchtune \(training\.framework\)"):
        resolve(_torchtune(framework="hf-trainer", zero=1, offload_gradients=True))
    _, none = evaluate_plan(_torchtune(offload="none", offload_gradients=True))  # no offload: no such optimizer
    _, base = evaluate_plan(_torchtune(offload="none"))
    assert none.memory.total.value == base.memory.total.value


def test_overlapped_copies_pipeline_the_megatron_offload_step():
    """8 H100s, ZeRO-1: each GPU steps n = P/8 parameters on the host; the largest tensor's share q is EMBED/8 of
    them. Exposed: max(D2H + q·(CPU + H2D), q·D2H + CPU + q·H2D, q·(D2H + CPU) + H2D, GPU Adam + H2D), against
    D2H + max(CPU, GPU Adam) + H2D without the flag. The memory is the same."""
    for fraction in (1.0, 0.5):
        _, seq = evaluate_plan(_megatron(fraction))
        sc, ov = evaluate_plan(_megatron(fraction, overlap_cpu_optimizer_copies=True))
        x = seq.compute.offload_time_s.inputs
        a, b, c, g = x["grad_copy_s"], x["cpu_step_s"], x["param_copy_s"], x["gpu_step_s"]
        assert seq.compute.offload_time_s.value == pytest.approx(a + max(b, g) + c, rel=1e-9)
        q = (EMBED / 8) / (fraction * P / 8)
        assert ov.compute.offload_time_s.inputs["largest_tensor_share"] == pytest.approx(q, rel=1e-9)
        expected = max(a + q * (b + c), q * a + b + q * c, q * (a + b) + c, g + c)
        assert ov.compute.offload_time_s.value == pytest.approx(expected, rel=1e-9)
        assert expected == pytest.approx(b + q * (a + c), rel=1e-9)  # the CPU step limits: one tensor fills, one drains
        assert ov.memory.total.value == seq.memory.total.value
        assert ov.memory.host_ram.value == seq.memory.host_ram.value
        _, res = quick_layout(sc)  # the search's quick model prices it as the engine
        assert float(res.optimizer_time[0]) == pytest.approx(ov.compute.offload_time_s.value, rel=1e-9)


def test_overlapped_copies_bad_inputs():
    with pytest.raises(PlanFileError, match=r"^training\.overlap_cpu_optimizer_copies: the deepspeed profile has no "
                       r"Megatron-Core HybridDeviceOptimizer.*; profiles that have it: megatron \(training\.framework\)"):
        resolve(_megatron(framework="deepspeed", overlap_cpu_optimizer_copies=True))
    _, on = evaluate_plan(_megatron(offload="none", overlap_cpu_optimizer_copies=True))  # ignored without offload
    _, off = evaluate_plan(_megatron(offload="none"))
    assert on.compute.step_time_s.value == off.compute.step_time_s.value


def test_the_nearest_changes_free_the_gradients_where_the_recipe_offload_alone_does_not_fit():
    """Llama-3.1-8B full on one 24 GB RTX 4090, micro-batch 2 of 2,048 tokens, one micro-batch a step: torchao's
    offload keeps every gradient (33.13 GiB, does not fit); freeing them once copied fits (21.11 GiB; 2026-11-28).
    The nearest changes (``fit.changes.training_steps``) offer both, the plain offload first; a plan that offloads
    already is offered the option alone; one that accumulates is offered neither (torchao refuses it)."""
    def plan(**kw) -> PlanDocument:
        t = TrainingSettings(framework="torchtune", method="full", micro_batch=2, global_batch=kw.pop("batch", 2),
                             seq_len=2048, recompute="full", zero_stage=0, optimizer="adamw", **kw)
        return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), workload="finetune", training=t,
                            hardware=HardwareRef(gpu="nvidia-rtx-4090-24gb", gpus_per_node=1),
                            parallelism=ParallelLayout(dp=1))

    offload = next(g for g in training_steps(plan(), 1) if g[0].kind == "offload")
    assert [s.overrides for s in offload] == [("training.offload=cpu",),
                                              ("training.offload=cpu", "training.offload_gradients=true")]
    assert "offload_gradients" in offload[1].what
    kept = evaluate_plan(plan(offload="cpu"))[1].memory
    freed = evaluate_plan(plan(offload="cpu", offload_gradients=True))[1].memory
    assert not kept.fits and freed.fits
    assert kept.total.value / 2**30 == pytest.approx(33.13, abs=0.01)
    assert freed.total.value / 2**30 == pytest.approx(21.11, abs=0.01)
    alone = [g for g in training_steps(plan(offload="cpu"), 1) if g[0].kind == "offload_gradients"]
    assert [[s.overrides for s in g] for g in alone] == [[("training.offload_gradients=true",)]]
    accumulating = training_steps(plan(batch=8), 1)
    assert all("training.offload_gradients=true" not in s.overrides for g in accumulating for s in g)
