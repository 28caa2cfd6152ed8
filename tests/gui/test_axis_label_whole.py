"""Every chart's x-axis label lies whole inside the chart, with or without a legend under it.

pyqtgraph places the bottom axis's label 5 px lower than the axis's height allows (``AxisItem.resizeEvent``'s
"nudge", counting on the text item's margin). When a memory chart had no legend row under its axis, the label
was the chart's last row and its descenders were cut by the chart's bottom edge: "sequence length (tokens)" of
a QLoRA plan on an RTX 4090 at 1,024 × 700 (picture looked at, 2026-11-28). Checked in scene coordinates,
in the pixels of the chart as drawn: the chart's last rows under the label hold nothing but the background
(before, they held the cut letters; the label's geometry alone did not show it).
"""

from __future__ import annotations

import pytest
from test_layer_split_results import settle

QLORA_4090 = {"workload": "finetune", "training.method": "qlora", "training.framework": "unsloth",
              "model.id": "meta-llama/Meta-Llama-3-8B", "hardware.gpu": "nvidia-rtx-4090-24gb"}


@pytest.mark.parametrize("size", [(1024, 700), (1280, 800)])
def test_x_axis_labels_are_whole(window, qtbot, size):
    window.resize(*size)
    window.workload.setCurrentIndex(1)
    window.state.edit_many(QLORA_4090, "QLoRA on a 4090")
    window.state.evaluate_now()
    settle(qtbot, window)
    charts = window.charts
    for i in range(4):  # the Pareto tab's axis has no label
        charts.setCurrentIndex(i)
        settle(qtbot, window)
        plot = charts.currentWidget()
        label = plot.getPlotItem().getAxis("bottom").label
        assert label.isVisible() and label.toPlainText(), charts.tabText(i)
        box = label.mapRectToScene(label.boundingRect())
        image = plot.grab().toImage()
        background = image.pixelColor(3, image.height() - 2)
        drawn = [(x, y) for y in range(image.height() - 3, image.height()) for x in range(int(box.left()),
                 min(int(box.right()), image.width())) if image.pixelColor(x, y) != background]
        assert not drawn, (charts.tabText(i), size, drawn[:5])
    assert not charts.seq_chart.legend.isVisible()  # the case that cut it: nothing under the axis
