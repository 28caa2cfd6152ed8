"""The layout editor's "Offloaded share" (``training.optimizer_offload_fraction``, ``gui.offload_share``): shown
only where the plan's framework offloads a share of its optimizer (Megatron-Core's --optimizer-offload-fraction)
and the plan offloads to the CPU; lowering it keeps more of the optimizer on the GPUs (more memory per GPU, a
shorter CPU step). Llama-3.1-70B full fine-tune on 8 H100s, ZeRO-3, as the shipped 70B example."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QApplication, QComboBox, QDoubleSpinBox

from llmplan.gui.settle import wait_settled

PLAN = {"model.id": "meta-llama/Llama-3.1-70B", "workload": "finetune", "hardware.gpu": "nvidia-h100-sxm-80gb",
        "hardware.gpus_per_node": 8, "hardware.nodes": 1, "parallelism.dp": 8, "training.framework": "megatron",
        "training.method": "full", "training.zero_stage": 3, "training.offload": "cpu", "training.recompute": "full",
        "training.global_batch": 64, "training.seq_len": 4096}


def _spin(window) -> QDoubleSpinBox:
    spin = window.findChild(QDoubleSpinBox, "training.optimizer_offload_fraction")
    assert spin is not None
    return spin


def test_the_share_edits_the_plan_under_megatron_only(window):
    assert window.state.edit_many(PLAN, "70B offload")
    window.resize(int(os.environ.get("LLMPLAN_SHOT_WIDTH", "1440")), 900)
    window.show()
    spin = _spin(window)
    before = window.state.evaluate_now()
    assert before.ok, before.message
    assert spin.isVisible() and spin.value() == 1.0 and "--optimizer-offload-fraction" in spin.toolTip()
    spin.setValue(0.9)
    assert window.state.doc.training.optimizer_offload_fraction == 0.9
    after = window.state.evaluate_now()
    assert after.ok, after.message
    assert after.estimate.memory.total.value > before.estimate.memory.total.value
    assert after.estimate.compute.step_time_s.value < before.estimate.compute.step_time_s.value
    assert "90% of the optimizer states in CPU RAM" in window.results.banner.text()
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>, taken once the window has settled
        assert wait_settled(QApplication.instance(), window)
        window.grab().save(os.path.join(shots, "offload_share.png"))
    spin.setValue(1.0)
    combo = window.findChild(QComboBox, "training.offload")
    combo.setCurrentIndex(combo.findData("none"))
    window.state.evaluate_now()
    assert not spin.isVisible()  # nothing offloaded: no share to set
    assert window.state.edit_many({"training.framework": "hf-trainer", "training.offload": "cpu"}, "HF")
    window.state.evaluate_now()
    assert not spin.isVisible()  # DeepSpeed offloads the whole optimizer
