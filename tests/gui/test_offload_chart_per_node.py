"""The memory charts of a llama.cpp layer split with layers in host RAM: what the offload curve means.

The plan is the one of ``test_layer_split_results``: Llama-3.1-70B Q8_0 with llama.cpp on 2 × RTX 3090, the
app's default request (1,024 tokens in, 256 out), 26 of 80 layers, the head and the embedding in host RAM,
26,007,732,224 B by hand there (model config.json, llama.cpp's Q8_0 block of 34 B per 32 weights).

The charts' dashed curve used to read "GPU + CPU RAM (offloaded)" and plot per GPU + host RAM ÷ GPUs per node
(12.11 GiB of the host's 24.22 GiB added to each card), an amount no GPU holds and no host has. It now plots
host RAM per node under the results table's words, at the point of the plan's own batch the very number the
memory bar's legend, the table and the CLI show. The lines' labels ("GPU capacity", "offload starts") keep off
every curve and each other; "capacity" touched the dashed curve at 1,280 × 800 and lay on the GPU curve at
1,024 × 700 (pictures looked at, 2026-11-28). Checked exactly (no tolerance), in view coordinates.
"""

from __future__ import annotations

import itertools
import math

import pytest
from test_layer_split_results import HOST, settle, two_3090s_q8

from llmplan.gui.chart_labels import crosses
from llmplan.gui.theme import OFF_GPU_LABELS, offload_label


def _segments(chart) -> list[tuple[float, float, float, float]]:
    """Every drawn curve's segments and points in view coordinates (log10 x, as plotted)."""
    out = []
    for item in (chart.gpu, chart.host, chart.nvme):
        xs, ys = item.xData, item.yData  # as set (``getData`` gives log10 x on a log axis)
        if xs is None:
            continue
        pts = [(math.log10(x), y) for x, y in zip(xs, ys, strict=True) if not math.isnan(y)]
        out += [(*a, *b) for a, b in itertools.pairwise(pts)] + [(*p, *p) for p in pts]
    return out


@pytest.mark.parametrize("size", [(1280, 800), (1024, 700)])
def test_layer_split_charts_plot_host_ram_per_node_and_labels_keep_off_the_curves(window, qtbot, size):
    window.resize(*size)
    out = two_3090s_q8(window, qtbot)
    assert out.estimate.memory.host_ram.value == HOST
    charts = window.charts
    for tab, chart in ((1, charts.batch_chart), (0, charts.seq_chart)):
        charts.setCurrentIndex(tab)
        settle(qtbot, window)
        series = charts.last.memory_vs_batch if tab == 1 else charts.last.memory_vs_seq
        if tab == 1:  # the plan's own batch (1) is a swept point: the curve's value there is the bar's figure
            assert series.xs[0] == 1 and series.host[0] == HOST
            assert window.results.bar.off_gpu == ((OFF_GPU_LABELS["host_ram"], HOST),)
            assert window.results.value_of(offload_label("host_ram")) == window.unit.fmt_any(series.host[0])
        assert chart.host.yData[0] == pytest.approx(series.host[0] / window.unit.divisor, rel=1e-12)
        assert [label.text for _s, label in chart.legend.items][:2] == ["on each GPU", "Host RAM per node (offload)"]
        assert chart.plot.getAxis("left").labelText == window.unit.name  # the legend says per GPU / per node
        segments = _segments(chart)
        rects = [label.rect() for label in chart.labels if label.rect() is not None]
        assert chart.labels[0].rect() is not None, "the capacity is labelled"
        (x0, x1), (y0, y1) = chart.plot.getViewBox().viewRange()
        for rect in rects:
            assert not any(crosses(seg, rect) for seg in segments), (tab, size, rect)
            assert x0 <= rect[0] and rect[2] <= x1 and y0 <= rect[1] and rect[3] <= y1  # inside the view
        if len(rects) == 2:
            a, b = rects
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), "the labels overlap"


def test_crosses_is_exact_on_edges_and_misses():
    box = (0.0, 0.0, 1.0, 1.0)
    assert crosses((-1.0, 0.5, 2.0, 0.5), box)  # straight through
    assert crosses((0.5, 0.5, 0.5, 0.5), box)  # a point inside
    assert not crosses((-1.0, 2.0, 2.0, 1.5), box)  # passes above
    assert not crosses((1.5, -1.0, 3.0, 0.5), box)  # diagonal past the corner
    assert crosses((1.5, 0.0, 0.0, 1.5), box)  # cuts the corner


@pytest.mark.parametrize("size", [(1280, 800), (1024, 700)])
def test_offload_from_mid_sweep_labels_both_lines_apart_and_off_the_curves(window, qtbot, size):
    """Llama-3.1-8B Q8_0 with llama.cpp on an RTX 4080 16GB keeps layers in host RAM from 65,536 tokens of
    context on (``test_sweeps_marks``): both the capacity and the "offload starts" marker are labelled."""
    window.resize(*size)
    window.workload.setCurrentIndex(0)
    window.state.edit_many({"workload": "inference", "model.id": "meta-llama/Llama-3.1-8B",
                            "hardware.gpu": "nvidia-rtx-4080-16gb", "inference.engine": "llama.cpp",
                            "inference.weight_format": "q8_0"}, "8B on a 4080")
    window.charts.setCurrentIndex(0)
    window.state.evaluate_now()
    settle(qtbot, window)
    chart = window.charts.seq_chart
    assert window.charts.last.memory_vs_seq.offload_from == 65_536 and chart.offload.isVisible()
    rects = [label.rect() for label in chart.labels]
    assert all(rects), "both lines are labelled"
    segments = _segments(chart)
    for rect in rects:
        assert not any(crosses(seg, rect) for seg in segments), (size, rect)
    a, b = rects
    assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), "the labels overlap"
