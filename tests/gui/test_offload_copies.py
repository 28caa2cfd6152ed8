"""The layout editor's offload options (``gui.offload_copies``): "Free gradients once copied"
(``training.offload_gradients``, torchao's CPUOffloadOptimizer) shows on a one-GPU torchtune plan that offloads at
ZeRO-0 and lowers the memory per GPU; "Overlap offload copies" (``training.overlap_cpu_optimizer_copies``,
Megatron-Core's --overlap-cpu-optimizer-d2h-h2d) shows under Megatron-Core with CPU offload and shortens the step.
Neither shows elsewhere. Llama-3.1-8B full fine-tunes on H100s (the plans of tests/core/training/test_offload_options.py)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QApplication, QCheckBox

from llmplan.gui.settle import wait_settled

TORCHTUNE = {"model.id": "meta-llama/Llama-3.1-8B", "workload": "finetune", "hardware.gpu": "nvidia-h100-sxm-80gb",
             "hardware.gpus_per_node": 1, "hardware.nodes": 1, "parallelism.dp": 1, "training.framework": "torchtune",
             "training.method": "full", "training.zero_stage": 0, "training.offload": "cpu",
             "training.recompute": "full", "training.micro_batch": 2, "training.global_batch": 2,
             "training.seq_len": 4096}
MEGATRON = {**TORCHTUNE, "hardware.gpus_per_node": 8, "parallelism.dp": 8, "training.framework": "megatron",
            "training.zero_stage": 1, "training.micro_batch": 1, "training.global_batch": 64}


def _box(window, path: str) -> QCheckBox:
    box = window.findChild(QCheckBox, path)
    assert box is not None
    return box


def test_the_boxes_follow_the_plans_offload(window):
    assert window.state.edit_many(TORCHTUNE, "torchtune offload")
    window.resize(int(os.environ.get("LLMPLAN_SHOT_WIDTH", "1440")), 900)
    window.show()
    grads, overlap = _box(window, "training.offload_gradients"), _box(window, "training.overlap_cpu_optimizer_copies")
    before = window.state.evaluate_now()
    assert before.ok, before.message
    assert grads.isVisible() and not grads.isChecked() and not overlap.isVisible()
    assert "offload_gradients" in grads.toolTip()
    grads.setChecked(True)
    assert window.state.doc.training.offload_gradients is True
    after = window.state.evaluate_now()
    assert after.ok, after.message
    assert after.estimate.memory.total.value < before.estimate.memory.total.value
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>, taken once the window has settled
        assert wait_settled(QApplication.instance(), window)
        window.grab().save(os.path.join(shots, "offload_copies.png"))
    grads.setChecked(False)
    assert window.state.edit_many(MEGATRON, "Megatron offload")
    before = window.state.evaluate_now()
    assert before.ok, before.message
    assert overlap.isVisible() and not grads.isVisible()
    overlap.setChecked(True)
    after = window.state.evaluate_now()
    assert after.ok, after.message
    assert after.estimate.compute.step_time_s.value < before.estimate.compute.step_time_s.value
    overlap.setChecked(False)
    assert window.state.edit_many({"training.framework": "hf-trainer"}, "HF")
    window.state.evaluate_now()
    assert not overlap.isVisible() and not grads.isVisible()
