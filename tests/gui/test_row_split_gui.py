"""The Cards in this machine panel's "Split mode": a user with two RTX 3090s picks llama.cpp's row split and sees
the same per-card numbers as `llmplan-cli estimate --gpu A --gpu B --split-mode row` (core/inference/row_split.py;
bytes by hand in tests/core/inference/test_row_split.py)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6.QtWidgets")

from tests.gui.test_machine_cards import pick

from llmplan.core.present import MemoryUnit
from llmplan.plan.evaluate import estimate_cards


@pytest.fixture
def llama70b(window):
    window.state.edit_many({"model.id": "meta-llama/Llama-3.1-70B", "workload": "inference",
                            "inference.engine": "llama-cpp", "inference.weight_format": "q4_k_m"}, "test plan")
    window.workload.setCurrentIndex(0)
    return window


def test_pick_row_split_on_two_cards(llama70b, qtbot):
    cards = llama70b.workload.machine_cards
    pick(cards, "nvidia-rtx-3090-24gb")
    pick(cards, "nvidia-rtx-3090-24gb")
    layer_summary = cards.summary.text()
    cards.split_mode.setCurrentIndex(cards.split_mode.findData("row"))
    assert llama70b.state.doc.inference.split_mode == "row"
    plan, _ = estimate_cards(llama70b.state.doc)
    assert plan.split_mode == "row"
    mem = MemoryUnit("GiB")
    assert [cards.table.item(r, 2).text() for r in range(2)] == [mem.fmt(c.total) for c in plan.cards]
    assert cards.summary.text().startswith("Fits (row split):") and cards.summary.text() != layer_summary
    llama70b.state.evaluate_now()
    qtbot.waitUntil(lambda: not llama70b.state.pending, timeout=10_000)
    # the window's verdict is the cards' (their row split), not an error for the one-GPU view
    assert llama70b.results.banner.text().startswith("Fits on 2 cards"), llama70b.results.banner.text()
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        llama70b.resize(1280, 800)
        llama70b.workload.widget(0).ensureWidgetVisible(cards)
        llama70b.grab().save(os.path.join(shot, "inference-row-split.png"))
    # Ollama has no split mode: the panel says so instead of numbers
    llama70b.state.edit("inference.engine", "ollama")
    assert cards.table.rowCount() == 0 and "Ollama exposes no split mode" in cards.summary.text()
