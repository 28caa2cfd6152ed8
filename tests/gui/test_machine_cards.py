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
    assert [cards.table.item(r, 1).text() for r in range(2)] == ["47", "33 + head"]  # as the CLI's split
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


def test_this_machine_all_cards_entry_plans_on_every_detected_card(llama70b, tmp_path):
    """Recorded detection of a mixed machine (two RTX 3090s from NVML, an RTX 4090 from nvidia-smi, as in
    tests/fit/test_fit_mixed_cards.py): the GPU list's "This machine" offers "All 3 cards", which puts every
    card in the plan; the cards pane and the verdict line then show the three-way layer split."""
    import dataclasses
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hw"))
    from hw_fixtures import build_fake_pynvml, data_text

    from llmplan.hw.nvidia import parse_nvidia_smi_csv, read_nvml

    nvml = build_fake_pynvml(json.loads(data_text("nvml_2xrtx3090_nvlink.json")))
    r4090 = [dataclasses.replace(g, index=2) for g in parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv"))]
    w = llama70b
    w.hardware.detector.finished.emit(DetectionReport(gpus=(*read_nvml(nvml), *r4090), host=None), "")
    w.this_machine.wait_idle()
    from llmplan.gui.picker_models import walk
    view = w.hardware.tree
    entry = next(i for i in walk(view.model()) if str(i.data()).startswith("All "))
    assert entry.data() == "All 3 cards (layer split)"
    view.setCurrentIndex(entry)
    ids = ["nvidia-rtx-3090-24gb", "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb"]
    assert w.state.doc.hardware.card_ids() == ids
    cards = w.workload.machine_cards
    assert cards.card_ids() == ids and cards.table.rowCount() == 3
    assert [cards.table.item(r, 1).text() for r in range(3)] == ["28", "27", "25 + head"]
    w.this_machine.wait_idle()
    assert "layers 28 + 27 + 25" in w.this_machine.verdict.text()
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        w.resize(1400, 1000)
        w.workload.widget(0).ensureWidgetVisible(cards)
        w.grab().save(os.path.join(shot, "this-machine-all-cards.png"))


def test_backend_choice_changes_the_runtime_context(llama70b):
    """Inference tab, "GPU back-end": Vulkan on an RTX 5090 drops llama.cpp's 300 MiB CUDA context (engines.toml,
    backend_context_bytes) from the plan's overhead, as `--set inference.backend=vulkan` does; Metal on an NVIDIA
    card is refused with the back-ends it runs."""
    from PySide6.QtWidgets import QComboBox

    w = llama70b
    w.state.edit("hardware.gpu", "nvidia-rtx-5090-32gb")
    combo = next(c for c in w.workload.findChildren(QComboBox) if c.accessibleName() == "GPU back-end")
    before = w.state.evaluate_now().estimate.memory.overhead.value
    combo.setCurrentIndex(combo.findData("vulkan"))
    assert w.state.doc.inference.backend == "vulkan"
    after = w.state.evaluate_now().estimate.memory.overhead.value
    assert before - after == 300 * MIB
    combo.setCurrentIndex(combo.findData("metal"))
    outcome = w.state.evaluate_now()
    assert outcome.estimate is None and "cuda (CUDA), vulkan (Vulkan)" in outcome.message


def test_cards_show_the_longest_context_and_one_click_fixes(llama70b, qtbot):
    """2x RTX 3090 + RTX 4090 with Llama 3.1 70B Q8_0 and a 16k fp16 KV cache: 15 layers stay in host RAM (2024
    llama.cpp, no flash attention: each card holds a layer's score matrix too), no context fits with every layer on
    a card (the first 3090's share, 28 layers, is too big), the
    pane lists the nearest changes (as `llmplan-cli estimate --gpu ...` does, tests/cli/test_cli_mixed_cards.py)
    and a click makes the first one, after which every layer is on a card and the list is gone."""
    llama70b.state.edit_many({"inference.weight_format": "q8_0", "inference.kv_dtype": "fp16",
                              "inference.prompt_tokens": 16384}, "long prompt")
    cards = llama70b.workload.machine_cards
    for gpu in ("nvidia-rtx-3090-24gb", "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb"):
        pick(cards, gpu)
    assert "15 layers in host RAM" in cards.summary.text()
    assert "With every layer on a card, a card overflows at any context." in cards.summary.text()
    assert cards.fixes.isVisibleTo(cards) and "Use Q6_K weights instead of Q8_0" in cards.fixes.text()
    from llmplan.fit.tiers import plan_fixes

    assert cards._changes == plan_fixes(llama70b.state.doc)  # the one source of a plan's fixes
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        llama70b.resize(1400, 1000)
        llama70b.workload.widget(0).ensureWidgetVisible(cards)
        llama70b.grab().save(os.path.join(shot, "inference-machine-cards-fixes.png"))
    assert cards.apply_fix(0)
    assert llama70b.state.doc.inference.weight_format == "q6_k"
    assert "host RAM" not in cards.summary.text() and not cards.fixes.isVisibleTo(cards)
    llama70b.state.undo_stack.undo()
    assert llama70b.state.doc.inference.weight_format == "q8_0" and cards.fixes.isVisibleTo(cards)
