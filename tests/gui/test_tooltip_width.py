"""Tooltips wrap at a readable width, and never inside a token of a formula or an input.

Qt shows a plain-text tooltip one line per line of its text (it wraps rich text only). A figure's explanation
(``Figure.describe()``: formula, inputs with units, assumptions, source) and the knobs' help came out as lines
of up to 982 characters (the training.loss list's tooltip; the results table's power rows 751), wider than a
1,024-px screen (trial32, 2026-11-28). Every tooltip now goes through ``gui.tooltips.wrap_tip``.

Checked, exactly: for a set of plans (a llama.cpp layer split with layers in host RAM, a 64 GB Mac, LoRA under
the Hugging Face Trainer, full fine-tuning under torchtune, a 70B pre-train on 64 × 8 H100 with ZeRO-Offload),
no line of any tooltip in the window (widgets, list entries, table cells, chart tabs, the memory and step bars'
segments) is longer than ``TIP_WIDTH`` characters unless it is a single word (a URL).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QWidget
from test_layer_split_results import settle

from llmplan.gui.tooltips import TIP_WIDTH, wrap_line, wrap_tip

PLANS = {
    "layer split": {"workload": "inference", "model.id": "meta-llama/Llama-3.1-70B", "inference.engine": "llama.cpp",
                    "hardware.gpu": "nvidia-rtx-3090-24gb", "hardware.gpus_per_node": 2,
                    "inference.weight_format": "q8_0"},
    "mac": {"workload": "inference", "model.id": "meta-llama/Llama-3.1-70B", "inference.engine": "llama.cpp",
            "hardware.gpu": "apple-m1-max-32c-64gb", "inference.weight_format": "q4_k_m"},
    "lora hf": {"workload": "finetune", "training.method": "lora", "training.framework": "hf-trainer",
                "model.id": "meta-llama/Meta-Llama-3-8B", "hardware.gpu": "nvidia-h100-sxm-80gb"},
    "full torchtune": {"workload": "finetune", "training.method": "full", "training.framework": "torchtune",
                       "model.id": "meta-llama/Meta-Llama-3-8B", "hardware.gpu": "nvidia-h100-sxm-80gb"},
    "70b offload": {"workload": "pretrain", "training.method": "full", "model.id": "meta-llama/Meta-Llama-3-70B",
                    "hardware.gpu": "nvidia-h100-sxm-80gb", "hardware.gpus_per_node": 8, "hardware.nodes": 64,
                    "hardware.network": "ib-ndr-400", "training.framework": "deepspeed", "training.zero_stage": 3,
                    "training.offload": "cpu", "parallelism.dp": 512},
}


def _tips(window) -> list[tuple[str, str]]:
    out = []
    for w in window.findChildren(QWidget):
        if w.toolTip():
            out.append((f"{type(w).__name__} {w.objectName() or w.accessibleName()}", w.toolTip()))
        if isinstance(w, QComboBox):
            out += [(f"{w.objectName()} entry {w.itemText(i)}", w.itemData(i, Qt.ItemDataRole.ToolTipRole))
                    for i in range(w.count()) if w.itemData(i, Qt.ItemDataRole.ToolTipRole)]
    out += [(f"chart tab {i}", window.charts.tabToolTip(i)) for i in range(window.charts.count())]
    table = window.results.table
    for i in range(table.topLevelItemCount()):
        item = table.topLevelItem(i)
        out += [(f"table {item.text(0).strip()}", table.tooltip(i, c)) for c in (0, 1) if table.tooltip(i, c)]
    return out


def _too_long(tip: str) -> list[str]:
    return [line for line in tip.splitlines() if len(line) > TIP_WIDTH and " " in line.strip()]


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_no_tooltip_line_is_wider_than_the_width(window, qtbot, monkeypatch, plan):
    from PySide6.QtWidgets import QToolTip

    from llmplan.gui import memory_bar, step_bar

    shown = []
    for module in (memory_bar, step_bar):  # the bars' segments show their tooltips on hover
        monkeypatch.setattr(module.QToolTip, "showText", lambda _pos, text, *_a: shown.append(text))
    window.state.edit_many(PLANS[plan], plan)
    out = window.state.evaluate_now()
    assert out.estimate is not None, out.message
    settle(qtbot, window)
    tips = _tips(window)
    assert len(tips) > 50
    for bar in (window.results.bar, window.results.step_bar):
        for rect, _key in bar._segments:
            from PySide6.QtCore import QPointF
            from PySide6.QtGui import QMouseEvent

            bar.mouseMoveEvent(QMouseEvent(QMouseEvent.Type.MouseMove, rect.center(), QPointF(0, 0),
                                           Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                                           Qt.KeyboardModifier.NoModifier))
    tips += [("bar segment", text) for text in shown]
    assert shown and QToolTip is not None
    long = {name: _too_long(tip) for name, tip in tips if _too_long(tip)}
    assert not long, long


def test_formulas_and_inputs_break_only_between_tokens():
    text = ("inputs: weights = 22.86 GiB, kv_cache = 135 MiB, activations = 162 MiB, buffers = 0 B, "
            "overhead = 556 MiB, context = 1,280 tokens, bandwidth = 2,680.0 GB/s")
    lines = wrap_tip(text).splitlines()
    assert len(lines) == 3 and all(len(line) <= TIP_WIDTH for line in lines)
    assert " ".join(part.strip() for part in lines) == text  # the same words in the same order
    for line in lines:
        assert not line.rstrip().endswith(("=", "22.86", "135", "162", "0", "556", "1,280", "2,680.0"))
        assert not line.lstrip().startswith(("=", "GiB", "MiB", "B,", "tokens", "GB/s"))
    assert lines[1].startswith("  ") and lines[2].startswith("  ")  # continuations are indented
    url = "see https://example.org/" + "x" * 90
    assert wrap_line(url) == ("see", "  https://example.org/" + "x" * 90)  # a long word stays whole
    short = "memory per GPU = weights + kv_cache\ninputs: a = 1 B"
    assert wrap_tip(short) is short
