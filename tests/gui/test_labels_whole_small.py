"""At 1,024 × 700 every figure label and value of the results table shows whole: a text wider than its column
wraps onto more lines of a taller row instead of being elided.

Before (main at 51fb291, 2026-11-28): rows stayed one line high, so Qt elided what did not fit: "Exposed …",
"Intra-n…bandwidth …", "Goodput (useful share of wall time)" and every collective's row on the 70B pre-train;
"Weights (whole model, all GPUs)", "Max concurrent sequences" and the value "host memory bandwidth" under
llama.cpp; the full text was only in the tooltip.

How "shows whole" is judged, independently of the code under test: each cell's text is laid out the way Qt's item
views lay out a cell's text (qcommonstyle.cpp, ``viewItemTextLayout`` and ``viewItemDrawText``, Qt 6.x: a
QTextLayout wrapping at a word boundary or anywhere, in the cell's width less the style's text margin on each side,
PM_FocusFrameHMargin + 1; each line below the font's leading). Qt elides a line only when the next one would fall
below the cell, so the text is whole when its lines fit the cell's height. A label is measured without its leading
spaces in the width left after them (the strictest reading: its continuation lines get no more room than its
first). Tolerance: none (px).
"""

from __future__ import annotations

import math

import pytest
from test_small_screens import SMALL, settle

pytest.importorskip("PySide6.QtWidgets")

PLANS = {  # the brief's plans: a pre-train over nodes, the default LoRA fine-tune, QLoRA, llama.cpp, vLLM
    "pretrain 70B on 32 H100": {"workload": "pretrain", "training.method": "full", "hardware.gpus_per_node": 8,
                                "hardware.nodes": 4, "hardware.network": "ib-ndr-400",
                                "model.id": "meta-llama/Llama-3.1-70B", "parallelism.tp": 8, "parallelism.pp": 2,
                                "parallelism.dp": 2, "training.zero_stage": 1},
    "default LoRA fine-tune": {},
    "QLoRA fine-tune": {"training.method": "qlora"},
    "llama.cpp, experts in host RAM": {"workload": "inference", "model.id": "openai/gpt-oss-120b",
                                       "hardware.gpu": "nvidia-rtx-3090-24gb", "inference.engine": "llama-cpp"},
    "vLLM 70B on 2 H100": {"workload": "inference", "model.id": "meta-llama/Llama-3.1-70B",
                           "hardware.gpus_per_node": 2, "inference.engine": "vllm", "parallelism.tp": 2},
}


def lines_height(font, text: str, width: int) -> int:
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QFontMetrics, QTextLayout, QTextOption

    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    y = 0.0
    layout.beginLayout()
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        y += QFontMetrics(font).leading()
        line.setPosition(QPointF(0, y))
        y += line.height()
    layout.endLayout()
    return math.ceil(y)


def cut_cells(table) -> list[str]:
    """The figure cells whose text does not fit their cell (see the module's docstring)."""
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QStyle

    margin = table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1
    fm = QFontMetrics(table.font())
    cut = []
    for i in range(table.topLevelItemCount()):
        item = table.topLevelItem(i)
        if item.isFirstColumnSpanned():  # section titles and sentences (their own test: test_panels)
            continue
        for column in (0, 1):
            text = item.text(column)
            body = text.lstrip(" ")
            rect = table.visualRect(table.indexFromItem(item, column))
            width = rect.width() - 2 * margin - fm.horizontalAdvance(text[:len(text) - len(body)])
            need = lines_height(table.font(), body, width)
            if need > rect.height():
                cut.append(f"{body!r}: needs {need} px at {width} px, row {rect.height()} px")
    return cut


@pytest.mark.parametrize("plan", list(PLANS))
def test_no_figure_label_elided_at_1024x700(window, qtbot, plan):
    window.resize(*SMALL)
    if PLANS[plan]:
        window.state.edit_many(PLANS[plan], plan)
    window.workload.setCurrentIndex({"inference": 0, "finetune": 1, "pretrain": 2}[window.state.doc.workload])
    window.state.evaluate_now()
    settle(qtbot, window)
    assert window.results.outcome.estimate is not None, window.results.banner.text()
    table = window.results.table
    assert table.width() < 300  # the narrow column this is about (268 px on main)
    assert cut_cells(table) == []
    wrapped = [table.topLevelItem(i) for i in range(table.topLevelItemCount())
               if table.visualItemRect(table.topLevelItem(i)).height() > table.fontMetrics().height() * 3 // 2
               and not table.topLevelItem(i).isFirstColumnSpanned()]
    assert wrapped  # some labels did not fit one line at this width: they wrapped, whole
    from llmplan.gui import report

    out = window.results.outcome  # the words are the report's, none shortened
    labels = [r.label for r in report.rows(out.estimate, out.scenario, window.results.unit)]
    assert all(item.text(0).strip() in labels for item in wrapped)


def test_labels_follow_the_divider(window, qtbot):
    """Dragging the column divider wider gives a wrapped label its one line back; narrower wraps it again."""
    window.resize(*SMALL)
    settle(qtbot, window)
    table = window.results.table
    row = next(i for i in range(table.topLevelItemCount())
               if table.topLevelItem(i).text(0).strip() == "Expected interruptions")
    item = table.topLevelItem(row)
    one_line = table.fontMetrics().height()
    assert table.visualItemRect(item).height() > one_line
    wide = table.fontMetrics().horizontalAdvance(item.text(0)) + 20
    assert wide < table.viewport().width() - 70  # room for it and its value ("0.00")
    table.setColumnWidth(0, wide)  # as a drag of the header's divider does
    qtbot.waitUntil(lambda: table.visualItemRect(item).height() <= one_line + 2, timeout=2000)
    assert cut_cells(table) == []
    table.setColumnWidth(0, 120)
    qtbot.waitUntil(lambda: table.visualItemRect(item).height() >= 2 * one_line, timeout=2000)
    assert cut_cells(table) == []
