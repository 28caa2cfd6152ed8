"""The Cards in this machine panel's "Split mode": a user with two RTX 3090s picks llama.cpp's row split and sees
the same per-card numbers as `llmplan-cli estimate --gpu A --gpu B --split-mode row` (core/inference/row_split.py;
bytes by hand in tests/core/inference/test_row_split.py)."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("PySide6.QtWidgets")

from tests.gui.drive import type_into
from tests.gui.test_machine_cards import pick

from llmplan.cli import main
from llmplan.core import present
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


def test_row_split_on_identical_gpus_agrees_with_the_cli_and_auto(llama70b, qtbot, capsys):
    """Two identical RTX 3090s as GPUs per node 2 (no cards listed) with the row split: the banner, the results
    table and Auto…'s top row give the figures of `llmplan-cli estimate --gpu X --gpus 2 --split-mode row` (one
    function, ``split_cards``: relative tolerance 1e-12 on tokens/s, the same printed string). Before, the
    window's one-GPU path refused the plan and Auto… found "no layout fits"."""
    w = llama70b
    w.state.edit_many({"hardware.gpu": "nvidia-rtx-3090-24gb", "inference.split_mode": "row"}, "3090, row split")
    type_into(w, "hardware.gpus_per_node", "2")  # as a user does: llama.cpp's one layout over both (PP 2)
    assert (w.state.doc.hardware.gpus_per_node, w.state.doc.parallelism.pp) == (2, 2)
    out = w.state.evaluate_now()
    assert out.ok and out.cards is None, out.message
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference", "--gpu",
                 "nvidia-rtx-3090-24gb", "--gpus", "2", "--split-mode", "row", "--set", "inference.engine=llama-cpp",
                 "--set", "inference.weight_format=q4_k_m", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    per_user = cli["inference"]["tokens_per_s_per_user"]
    assert cli["fits"] and cli["mixed_gpus"]["split_mode"] == "row"
    assert out.estimate.inference.tokens_per_s_per_user.value == pytest.approx(per_user, rel=1e-12)
    assert w.results.banner.text().startswith("Fits"), w.results.banner.text()
    assert w.results.value_of("Throughput per user") == present.tokens_per_s(per_user)
    w.layout_editor.auto_button.click()
    dlg = w.auto_dialog
    with qtbot.waitSignal(dlg.finished_search, timeout=120_000):
        pass
    assert dlg.result is not None and dlg.result.best, dlg.status.text()
    assert dlg.result.best[0].tokens_per_s == pytest.approx(cli["inference"]["tokens_per_s"], rel=1e-12)
    assert "row split" in dlg.result.note
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        w.resize(1280, 800)
        w.grab().save(os.path.join(shot, "inference-row-split-identical.png"))
        dlg.grab().save(os.path.join(shot, "inference-row-split-auto.png"))
    dlg.close()
