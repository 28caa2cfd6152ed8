"""The Recompute selector offers torchtitan's operator-level selective checkpointing
(``training.recompute = "selective_op"``, ``core.training.selective_op``) with a tooltip that says what it
keeps; a profile that has no such policy gets the engine's reason in the banner."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

TITAN_8B = {"model.id": "meta-llama/Meta-Llama-3-8B", "workload": "pretrain", "hardware.gpu": "nvidia-a100-sxm4-80gb",
            "hardware.gpus_per_node": 8, "hardware.nodes": 1, "parallelism.dp": 8, "training.framework": "fsdp2",
            "training.seq_len": 8192, "training.zero_stage": 3, "training.method": "full"}


def _pick(window, value: str) -> QComboBox:
    combo = window.findChild(QComboBox, "training.recompute")
    i = combo.findData(value)
    assert i >= 0, [combo.itemData(k) for k in range(combo.count())]
    combo.setCurrentIndex(i)
    return combo


def test_per_op_selective_entry_sets_the_plan_and_is_priced_between_none_and_full(window):
    assert window.state.edit_many(TITAN_8B, "torchtitan 8B")
    combo = _pick(window, "selective_op")
    tip = combo.itemData(combo.currentIndex(), Qt.ItemDataRole.ToolTipRole)
    assert "torchtitan" in tip and "every second matmul" in tip
    assert combo.currentText() == "per-op selective"
    assert window.state.doc.training.recompute == "selective_op"
    steps = {}
    for value in ("none", "selective_op", "full"):
        _pick(window, value)
        out = window.state.evaluate_now()
        assert out.ok, out.message
        steps[value] = out.estimate.compute.step_time_s.value
    assert steps["none"] < steps["selective_op"] < steps["full"]
    _pick(window, "selective_op")
    window.state.evaluate_now()
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>
        window.resize(1440, 900)
        window.grab().save(os.path.join(shots, "selective_op.png"))


def test_a_profile_without_it_says_so_in_the_banner(window):
    """The list offers it only where the framework runs it; a plan that holds it elsewhere (an older plan, or the
    framework changed after it) keeps it listed, marked, and the banner says why."""
    assert window.state.edit_many({**TITAN_8B, "training.framework": "megatron"}, "Megatron 8B")
    combo = window.findChild(QComboBox, "training.recompute")
    assert combo.findData("selective_op") < 0
    assert window.state.edit("training.recompute", "selective_op")
    assert combo.currentText() == "per-op selective (not run by Megatron-LM (Megatron-Core))"
    out = window.state.evaluate_now()
    assert not out.ok
    assert "selective_op is torchtitan's operator-level checkpointing" in out.message
