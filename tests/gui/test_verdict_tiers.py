"""Issue 18 items 4, 9 (bottleneck sentence) and 10, driven the way a person does it: real key and
mouse events (QTest) on the window's widgets.

The plan under test is the issue's: Llama-3-70B Q4_K_M with llama.cpp on one RTX 4090 24GB, where
llama.cpp keeps about 32 of the 80 layers in CPU RAM (tests/fit/test_tiers.py has the figures and
their sources). The banner used to read green "Fits: 23.5 of 24.0 GiB".
"""

from __future__ import annotations

import itertools
import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QSpinBox

from llmplan.gui.theme import BAD_COLOUR, OK_COLOUR, WARN_COLOUR

OFFLOADED_70B = {"workload": "inference", "model.id": "meta-llama/Meta-Llama-3-70B",
                 "hardware.gpu": "nvidia-rtx-4090-24gb", "inference.engine": "llama.cpp",
                 "inference.weight_format": "q4_k_m"}


def _settle(window, qtbot) -> None:
    window.state.evaluate_now()
    window.results.fixes.wait_idle()
    if window.charts is not None:
        window.charts.wait_idle()
    qtbot.wait(80)  # the sweep's result reaches the UI thread as a queued signal


def _banner_colour(window) -> str:
    return window.results.banner.styleSheet()


def test_offloaded_plan_is_amber_and_one_click_fixes_it(window, qtbot):
    window.workload.setCurrentIndex(0)
    window.state.edit_many(OFFLOADED_70B, "70B Q4_K_M on a 4090")
    _settle(window, qtbot)
    banner = window.results.banner.text()
    assert banner.startswith("Fits with offload: ") and " of 80 layers in CPU RAM, ~" in banner, banner
    assert "tokens/s" in banner and WARN_COLOUR in _banner_colour(window)
    layers = int(banner.split("Fits with offload: ")[1].split()[0])
    assert 28 <= layers <= 35
    bar = window.results.bar
    (label, host), = bar.off_gpu  # host RAM per node, as the table has it (one GPU: the same as per GPU)
    assert label == "Host RAM per node" and host / 2**30 > 10 and "not on a GPU" in bar.accessibleDescription()
    cost = window.results.cost
    assert cost.isVisible() and "Offload costs" in cost.text() and "all on the GPU" in cost.text()
    fixes = window.results.fixes
    assert fixes.isVisible() and "To keep it all on the GPU" in fixes.title.text()
    first = fixes.buttons[0]
    assert first.isVisible() and "Use 2 GPUs" in first.text()
    QTest.mouseClick(first, Qt.MouseButton.LeftButton)
    _settle(window, qtbot)
    assert window.state.doc.hardware.gpus_per_node == 2
    assert window.results.banner.text().startswith("Fits: ") and OK_COLOUR in _banner_colour(window)
    assert not window.results.cost.isVisible() and not fixes.isVisible() and bar.off_gpu == ()
    QTest.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # one undo step takes it back
    _settle(window, qtbot)
    assert window.state.doc.hardware.gpus_per_node == 1
    assert window.results.banner.text().startswith("Fits with offload")


def test_a_plan_that_does_not_fit_a_catalog_gpu_gets_red_and_fixes(window, qtbot):
    window.workload.setCurrentIndex(0)
    window.state.edit_many({**OFFLOADED_70B, "inference.engine": "vllm", "inference.weight_format": "bf16"}, "70B")
    _settle(window, qtbot)
    assert window.results.banner.text().startswith("Does not fit: needs ")
    assert BAD_COLOUR in _banner_colour(window)
    fixes = window.results.fixes
    assert fixes.title.text().startswith("To fit on NVIDIA GeForce RTX 4090")
    shown = [b for b in fixes.buttons if b.isVisible()]
    assert shown
    shown[-1].setFocus()  # keyboard: a focused fix applies with Space
    QTest.keyClick(shown[-1], Qt.Key.Key_Space)
    _settle(window, qtbot)
    assert window.state.outcome.estimate.fits, window.results.banner.text()


@pytest.mark.parametrize("size", [(1440, 900), (2560, 1440)])
def test_the_bottleneck_sentence_is_never_cut(window, qtbot, size):
    window.resize(*size)
    window.workload.setCurrentIndex(2)
    window.state.edit_many({"workload": "pretrain", "training.method": "full", "model.id": "meta-llama/Llama-3.1-70B",
                            "hardware.gpus_per_node": 8, "hardware.nodes": 4, "hardware.network": "ib-ndr-400",
                            "parallelism.tp": 8, "parallelism.pp": 2, "parallelism.dp": 2}, "70B on 32 GPUs")
    _settle(window, qtbot)
    detail = window.results.detail
    assert detail.text() and detail.wordWrap()
    assert detail.height() >= detail.heightForWidth(detail.width())  # every wrapped line has room
    table = window.results.table
    sentences = [table.topLevelItem(i) for i in range(table.topLevelItemCount())
                 if table.topLevelItem(i).isFirstColumnSpanned() and ":" in table.topLevelItem(i).text(0)]
    assert any(detail.text() in item.text(0) for item in sentences)  # the table row holds the whole sentence
    metrics = QFontMetrics(table.font())
    for item in sentences:
        rect = table.visualItemRect(item)
        needed = metrics.boundingRect(0, 0, rect.width() - 8, 100_000, int(Qt.TextFlag.TextWordWrap),
                                      item.text(0)).height()
        assert rect.height() >= needed, item.text(0)


def test_chart_items_survive_a_knob_change_typed_with_the_keyboard(window, qtbot):
    window.workload.setCurrentIndex(0)
    window.state.edit_many(OFFLOADED_70B, "70B Q4_K_M on a 4090")
    window.charts.setCurrentWidget(window.charts.seq_plot)
    _settle(window, qtbot)
    chart = window.charts.seq_chart
    items = list(window.charts.seq_plot.listDataItems())
    before = chart.gpu.getData()[1].copy()
    spin = window.findChild(QSpinBox, "inference.prompt_tokens")
    spin.setFocus()
    spin.selectAll()
    QTest.keyClicks(spin, "512")
    QTest.keyClick(spin, Qt.Key.Key_Return)
    _settle(window, qtbot)
    assert window.state.doc.inference.prompt_tokens == 512
    assert list(window.charts.seq_plot.listDataItems()) == items  # the same PlotDataItem objects
    assert window.charts.seq_chart.gpu is chart.gpu
    assert window.charts.last.memory_vs_seq.current_x == 512 + 256
    assert chart.current.value() == pytest.approx(math.log10(512 + 256))
    assert len(chart.gpu.getData()[1]) == len(before)


def test_memory_vs_context_under_offload_plots_host_ram_and_marks_the_start(window, qtbot):
    window.workload.setCurrentIndex(0)
    window.state.edit_many(OFFLOADED_70B, "70B Q4_K_M on a 4090")
    window.charts.setCurrentWidget(window.charts.seq_plot)
    _settle(window, qtbot)
    series = window.charts.last.memory_vs_seq
    assert any(h > 0 for h in series.host)
    chart = window.charts.seq_chart
    host = chart.host.getData()[1]  # host RAM per node, from where offload starts (here the first point)
    assert len(host) == len(series.xs) and all(b >= a - 1e-9 for a, b in itertools.pairwise(host))
    # offloaded from the sweep's first point on: no "offload starts" marker at the left edge (it says nothing)
    assert series.offload_from == series.xs[0] and not chart.offload.isVisible()
    labels = [label.text for _sample, label in chart.legend.items]
    assert labels == ["on each GPU", "Host RAM per node (offload)"]


def test_throughput_chart_marks_setups_that_do_not_fit(window, qtbot):
    from llmplan.gui.chart_items import ThroughputChart
    from llmplan.gui.sweeps import Series

    chart: ThroughputChart = window.charts.gpus_chart
    series = Series("Throughput vs GPU count", "GPUs", "tokens/s", (8.0, 16.0, 32.0), (900.0, 800.0, 1600.0), 16.0,
                    fits=(False, True, True))  # 8 GPUs "faster" than 16, but they cannot hold the model
    chart.draw(series)
    xs, ys = chart.no_fit.xData, chart.no_fit.yData  # the data as given (getData is in log space)
    assert list(xs) == [8.0] and list(ys) == [900.0]
    fit_y = chart.fit.yData
    assert math.isnan(fit_y[0]) and list(fit_y[1:]) == [800.0, 1600.0]  # a gap, not a valid point
    labels = [label.text for _sample, label in chart.legend.items]
    assert labels == ["fits in GPU memory", "does not fit in GPU memory (not reachable)"]


def test_pareto_axis_has_thousands_separators(window):
    window.charts.show_pareto([(64, 300_000.0, "a"), (128, 500_000.0, "b")], [(64, 300_000.0, "a")], 0,
                              window.state.doc)
    axis = window.charts.pareto_plot.getAxis("left")
    assert axis.tickStrings([300_000.0, 400_000.0], 1.0, 100_000.0) == ["300,000", "400,000"]
    front = window.charts.pareto_front
    assert list(front.xData) == [64.0]
    window.charts.show_pareto([], [])
    assert window.charts.pareto_front is front and front.xData is None  # emptied, not replaced


def test_memory_chart_rings_the_points_that_do_not_fit(window):
    from llmplan.gui.sweeps import Series

    chart = window.charts.batch_chart
    series = Series("Memory vs batch", "concurrent sequences", "memory per GPU", (1.0, 2.0, 4.0),
                    (60 * 2**30, 75 * 2**30, 90 * 2**30), 1.0, 80 * 2**30, fits=(True, True, False))
    chart.draw(series, window.unit)
    assert list(chart.no_fit.xData) == [4.0] and list(chart.no_fit.yData) == [pytest.approx(90.0)]
    assert [label.text for _s, label in chart.legend.items] == ["memory per GPU", "does not fit in GPU memory"]
    chart.draw(Series("Memory vs batch", "concurrent sequences", "memory per GPU", (1.0,), (60 * 2**30,), 1.0,
                      80 * 2**30, fits=(True,)), window.unit)
    assert chart.no_fit.xData is None or len(chart.no_fit.xData) == 0
    assert chart.legend.items == []
