"""At 1,024 × 700 a chart keeps room to draw, whatever its legend takes.

The plan: gpt-oss-120b on llama.cpp on one RTX 3090 (24 of 36 layers' routed experts in host RAM), the plan in
which labels34 (2026-11-28, offscreen, 1,024 × 700) saw the memory chart's view box 48 px tall under its
three-line legend ("on each GPU", "Host RAM per node (offload)", "does not fit in GPU memory"; now "over GPU capacity"), so none of the
"GPU capacity" label's 72 spots was free and it lay on the host-RAM curve. Now the chart asks for
``MIN_VIEW`` px of view box on top of its title, axes and legend, and the right column gives it that.
Checked exactly (no tolerance): the view box's height in px, and the label's rectangle against every curve
segment in view coordinates (``chart_labels.crosses``, the test helpers of ``test_offload_chart_per_node``).
"""

from __future__ import annotations

import pytest
from test_offload_chart_per_node import _segments
from test_small_screens import SMALL, inside_window, settle

from llmplan.gui.chart_labels import crosses
from llmplan.gui.chart_legend import MIN_VIEW

pytest.importorskip("PySide6.QtWidgets")

EXPERTS_IN_RAM = {"workload": "inference", "model.id": "openai/gpt-oss-120b",
                  "hardware.gpu": "nvidia-rtx-3090-24gb", "inference.engine": "llama-cpp"}


def test_memory_chart_keeps_its_view_and_the_capacity_label_keeps_off_the_curves(window, qtbot):
    window.resize(*SMALL)
    window.state.edit_many(EXPERTS_IN_RAM, "experts in host RAM")
    window.workload.setCurrentIndex(0)
    window.charts.setCurrentIndex(0)
    window.state.evaluate_now()
    settle(qtbot, window)
    settle(qtbot, window)  # the redrawn chart's new minimum re-shares the right column (a posted refit)
    assert (window.width(), window.height()) == SMALL
    chart = window.charts.seq_chart
    assert len(chart.legend.items) == 3 and chart.legend.columnCount == 1  # the legend of three lines
    ringed = chart.legend.items[-1][1]
    assert ringed.text == "over GPU capacity" and "does not fit in GPU memory" in ringed.toolTip()  # the long form
    vb = chart.plot.getViewBox()
    assert vb.height() >= MIN_VIEW, f"the plot is {vb.height()} px tall"
    assert inside_window(window.charts.seq_plot, window)  # the room came from inside the window
    capacity = chart.capacity_label.rect()
    assert capacity is not None, "the capacity is labelled"
    assert not any(crosses(seg, capacity) for seg in _segments(chart)), capacity
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x0 <= capacity[0] and capacity[2] <= x1 and y0 <= capacity[1] and capacity[3] <= y1


def test_every_chart_keeps_its_view_at_1024x700(window, qtbot):
    """The default plan's charts too (no legend, or two lines of it): each view box at least ``MIN_VIEW``."""
    window.resize(*SMALL)
    settle(qtbot, window)
    for tab in range(window.charts.count()):
        window.charts.setCurrentIndex(tab)
        settle(qtbot, window)
        plot = window.charts.currentWidget()
        assert plot.getViewBox().height() >= MIN_VIEW, (window.charts.tabText(tab), plot.getViewBox().height())
