"""The Inference tab's "Cards in this machine": a user adds an RTX 5090 and an RTX 3090 with the mouse
and sees each card's layers and memory; detection of a mixed machine fills the list. The numbers are
the engine's split_layers (tests/core/inference/test_multi_gpu.py checks its rule by hand)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from llmplan.hw.types import DetectedGpu, DetectionReport

MIB = 2**20


def pick(cards, gpu_id: str) -> None:
    cards.pick.setCurrentIndex(cards.pick.findData(gpu_id))
    QTest.mouseClick(cards.add_button, Qt.MouseButton.LeftButton)


@pytest.fixture
def llama70b(window):
    window.state.edit_many({"model.id": "meta-llama/Llama-3.1-70B", "workload": "inference",
                            "inference.engine": "llama-cpp", "inference.weight_format": "q4_k_m",
                            "inference.prompt_tokens": 4096, "inference.output_tokens": 256}, "test plan")
    window.workload.setCurrentIndex(0)
    return window


def test_add_two_cards_and_see_the_split(llama70b, qtbot):
    cards = llama70b.workload.machine_cards
    pick(cards, "nvidia-rtx-5090-32gb")
    assert cards.table.rowCount() == 0 and "two or more" in cards.summary.text()
    pick(cards, "nvidia-rtx-3090-24gb")
    assert cards.card_ids() == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"]
    assert cards.table.rowCount() == 2
    assert [cards.table.item(r, 1).text() for r in range(2)] == ["46", "34 + head"]  # as the CLI's split
    assert cards.table.item(0, 3).text() == "31.8 GiB" and cards.table.item(1, 4).text() == "yes"
    assert cards.summary.text().startswith("Fits:") and "tokens/s" in cards.summary.text()
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        llama70b.resize(1400, 1000)
        area = llama70b.workload.widget(0)
        area.ensureWidgetVisible(cards)
        llama70b.grab().save(os.path.join(shot, "inference-machine-cards.png"))
    # the engine follows the plan: a vLLM plan gets the reason, not numbers
    llama70b.state.edit("inference.engine", "vllm")
    assert cards.table.rowCount() == 0 and "llama.cpp or Ollama" in cards.summary.text()
    llama70b.state.edit("inference.engine", "ollama")
    assert cards.table.rowCount() == 2
    cards.cards.setCurrentRow(1)
    QTest.mouseClick(cards.remove_button, Qt.MouseButton.LeftButton)
    assert cards.card_ids() == ["nvidia-rtx-5090-32gb"] and cards.table.rowCount() == 0


def test_a_detected_mixed_machine_is_one_click_away(llama70b):
    cards = llama70b.workload.machine_cards
    report = DetectionReport(gpus=(
        DetectedGpu(vendor="nvidia", name="NVIDIA GeForce RTX 5090", memory_total_bytes=32607 * MIB,
                    memory_free_bytes=None, index=0, source="nvml"),
        DetectedGpu(vendor="nvidia", name="NVIDIA GeForce RTX 3090", memory_total_bytes=24576 * MIB,
                    memory_free_bytes=None, index=1, source="nvml"),
    ), host=None)
    cards.set_report(report)
    assert cards.card_ids() == []  # detection alone leaves the plan as it is
    assert cards.detect_button.isEnabled()
    QTest.mouseClick(cards.detect_button, Qt.MouseButton.LeftButton)
    assert cards.card_ids() == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"] and cards.table.rowCount() == 2
    assert llama70b.state.doc.hardware.card_ids() == cards.card_ids()  # the plan's hardware.cards


def test_training_plans_get_the_reason(llama70b):
    cards = llama70b.workload.machine_cards
    cards.set_cards(["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"])
    llama70b.state.edit("workload", "finetune")
    assert "identical GPUs" in cards.summary.text()


def test_cards_are_saved_with_the_plan_and_reopen_with_the_same_numbers(llama70b, tmp_path):
    """Schema 5: the list is the plan's hardware.cards; save, then open the file: the same split, and undo
    takes a card edit back like any other edit."""
    cards = llama70b.workload.machine_cards
    pick(cards, "nvidia-rtx-5090-32gb")
    pick(cards, "nvidia-rtx-3090-24gb")
    before = [[cards.table.item(r, k).text() for k in range(5)] for r in range(2)]
    summary = cards.summary.text()
    path = tmp_path / "two-cards.llmplan"
    assert llama70b._write(path)
    llama70b.state.undo_stack.undo()
    assert cards.card_ids() == ["nvidia-rtx-5090-32gb"]
    assert llama70b.open_path(path, ask=False)
    assert cards.card_ids() == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"]
    assert [[cards.table.item(r, k).text() for k in range(5)] for r in range(2)] == before
    assert cards.summary.text() == summary
