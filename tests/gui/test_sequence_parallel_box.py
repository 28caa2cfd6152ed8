"""The layout editor's "Sequence parallel" box is there only where it applies.

Sequence parallelism (Korthikanti et al. 2022, arXiv:2205.05198 §4.2.2) splits the norm, dropout and residual
activations over the tensor-parallel group; the engine applies it only with TP > 1 (``core.training.layout``).
The framework profiles say which frameworks have tensor parallelism at all (``supports_tp`` in
catalogs/frameworks.toml: false for the Hugging Face Trainer, torchtune, unsloth, LLaMA-Factory, axolotl and
Composer). The box used to show, checked and clickable, on a one-GPU Hugging Face LoRA plan, where it means
nothing. Now: hidden where the framework has no TP, greyed with the reason while TP is 1, a working box with
TP > 1. Driven with real mouse and key events (pytest-qt, QTest).
"""

from __future__ import annotations

from drive import type_into
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QCheckBox


def _box(window) -> QCheckBox:
    return window.findChild(QCheckBox, "parallelism.sequence_parallel")


def test_hidden_where_the_framework_has_no_tensor_parallelism(window):
    window.state.edit_many({"workload": "finetune", "training.method": "lora", "training.framework": "hf-trainer"},
                           "HF LoRA")
    assert window.state.doc.parallelism.tp == 1
    assert not _box(window).isVisibleTo(window)
    for framework in ("torchtune", "unsloth"):
        window.state.edit_many({"training.framework": framework, "parallelism.tp": 2}, framework)
        assert not _box(window).isVisibleTo(window), framework


def test_greyed_while_tp_is_one_then_a_working_box(window, qtbot):
    window.state.edit_many({"workload": "pretrain", "training.framework": "megatron", "parallelism.tp": 1}, "pick")
    box = _box(window)
    assert box.isVisibleTo(window) and not box.isEnabled()
    assert box.toolTip().startswith("Off while TP is 1") and "parallelism.sequence_parallel" in box.toolTip()
    QTest.mouseClick(box, Qt.MouseButton.LeftButton)  # a click on a greyed box changes nothing
    assert window.state.doc.parallelism.sequence_parallel is True
    type_into(window, "parallelism.tp", "2")
    assert window.state.doc.parallelism.tp == 2
    assert box.isEnabled() and box.toolTip().startswith("Sequence parallelism (Korthikanti")
    QTest.mouseClick(box, Qt.MouseButton.LeftButton)
    assert window.state.doc.parallelism.sequence_parallel is False and not box.isChecked()
    window.state.undo_stack.undo()
    assert window.state.doc.parallelism.sequence_parallel is True and box.isChecked()


def test_shown_for_fine_tuning_with_a_tensor_parallel_framework(window):
    window.state.edit_many({"workload": "finetune", "training.method": "full", "training.framework": "fsdp2",
                            "parallelism.tp": 2}, "torchtitan TP 2")
    box = _box(window)
    assert box.isVisibleTo(window) and box.isEnabled()
    window.state.edit("workload", "inference")
    assert not box.isVisibleTo(window)
