"""Chart legends never cover a curve, a point or a label (the flaw named in stop 30's closing note: on
small charts the legend overlapped the "capacity" and "offload starts" labels and sat on curves).

Each chart that has a legend is drawn with every entry it can show, at the smallest window size the app
allows and at 1,024 × 700 (issue 18's small laptop). Checked in scene coordinates, exactly (no tolerance):
the legend's rectangle does not meet the view box (where every curve, point and line label is drawn) nor
the title or an axis, every entry lies inside the legend and inside the chart, and no two entries meet.
A legend anchored in the view box, as pyqtgraph's ``addLegend`` places it, fails the first check.
The sentences written in the view box (an empty chart's note, the Pareto tab's hint) and the roofline's
point labels stay inside it at 1,024 × 700 too: they were cut at its edges.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6.QtWidgets")

GIB = 2**30
SMALL = (1024, 700)


def _memory_series(offloaded: bool):
    from llmplan.gui.sweeps import Series

    xs = (512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
    ys = tuple(g * GIB for g in (20.0, 30.0, 45.0, 60.0, 75.0, 90.0))
    host = (0.0, 0.0, 5 * GIB, 10 * GIB, 20 * GIB, 40 * GIB) if offloaded else ()
    return Series("Memory vs context length", "context (tokens)", "memory per GPU", xs, ys, 4096.0, 80 * GIB,
                  host=host, fits=(True, True, True, True, True, False))


def _throughput_series():
    from llmplan.gui.sweeps import Series

    return Series("Throughput vs GPU count", "GPUs", "tokens/s", (8.0, 16.0, 32.0, 64.0),
                  (900.0, 800.0, 1600.0, 3200.0), 16.0, fits=(False, True, True, True))


def _settle(window, qtbot, tab: int) -> None:
    """The plan's own estimate and sweeps done and the tab on show, so nothing redraws the chart after the
    test draws its series (a tab opened draws the plan's series if they are out of date)."""
    qtbot.waitUntil(lambda: not window.state.pending, timeout=10_000)
    window.charts.wait_idle()
    qtbot.wait(50)
    window.charts.setCurrentIndex(tab)
    window.charts.wait_idle()
    qtbot.wait(50)  # a sweep's result reaches the UI thread as a queued signal; the plot takes its size


def _draw(window, tab: int):
    """Draw chart ``tab`` with all its legend entries: (plot, legend, entries, labels drawn in the view)."""
    charts = window.charts
    if tab == 0:
        charts.seq_chart.draw(_memory_series(offloaded=True), window.unit)  # the most entries: three
        return charts.seq_plot, charts.seq_chart.legend, 3, [charts.seq_chart.capacity_label.item,
                                                             charts.seq_chart.offload_label.item]
    if tab == 1:
        charts.batch_chart.draw(_memory_series(offloaded=False), window.unit)
        return charts.batch_plot, charts.batch_chart.legend, 2, [charts.batch_chart.capacity_label.item]
    if tab == 2:
        charts.gpus_chart.draw(_throughput_series())
        return charts.gpus_plot, charts.gpus_chart.legend, 2, []
    charts.show_pareto([(8, 1000.0, "a"), (16, 1900.0, "b"), (16, 1500.0, "c")], [(8, 1000.0, "a"), (16, 1900.0, "b")],
                       1, front_source="full engine")
    return charts.pareto_plot, charts.pareto_legend, 2, []


def _smallest(window) -> tuple[int, int]:
    size = window.minimumSize().expandedTo(window.minimumSizeHint())
    return size.width(), size.height()


@pytest.mark.parametrize("size", ["smallest", SMALL])
def test_no_legend_covers_the_plot_or_its_labels(window, qtbot, size):
    window.resize(*(_smallest(window) if size == "smallest" else size))
    for tab in (0, 1, 2, 4):  # the roofline has no legend
        _settle(window, qtbot, tab)
        plot, legend, count, labels = _draw(window, tab)
        qtbot.wait(20)
        item = plot.getPlotItem()
        name = window.charts.tabText(tab)
        assert legend.isVisible() and len(legend.items) == count, name
        box = legend.sceneBoundingRect()
        assert not box.intersects(item.vb.sceneBoundingRect()), f"{name}: the legend covers the plot"
        for label in labels:
            assert label.isVisible() and not box.intersects(label.sceneBoundingRect()), name
        for other in (item.titleLabel, item.getAxis("bottom"), item.getAxis("left")):
            assert not box.intersects(other.sceneBoundingRect()), f"{name}: the legend covers {other}"
        assert item.sceneBoundingRect().contains(box), f"{name}: the legend sticks out of the chart"
        entries = [part.sceneBoundingRect() for sample, label in legend.items for part in (sample, label)]
        for i, a in enumerate(entries):
            assert box.contains(a), f"{name}: an entry sticks out of the legend"
            assert not any(a.intersects(b) for b in entries[i + 1:]), f"{name}: two entries overlap"
        texts = [label.item for _sample, label in legend.items]
        assert all(label.rect().contains(t.mapRectToParent(t.boundingRect())) for t, (_s, label)
                   in zip(texts, legend.items, strict=True)), f"{name}: a label's text is cut"


def test_entries_share_a_row_when_wide_and_wrap_when_narrow(window, qtbot):
    """The throughput chart's longest label ("does not fit in GPU memory (not reachable)") on one row beside
    the other entry on a wide chart; one entry per row, the long one wrapped inside the chart, on a narrow one."""
    charts = window.charts
    _settle(window, qtbot, 2)
    charts.gpus_chart.draw(_throughput_series())
    legend = charts.gpus_chart.legend
    plot = charts.gpus_plot
    plot.resize(900, 400)
    qtbot.wait(20)
    (_s1, l1), (_s2, l2) = legend.items
    assert legend.columnCount == 2 and l1.sceneBoundingRect().top() == l2.sceneBoundingRect().top()
    plot.resize(200, 400)
    qtbot.wait(20)
    assert legend.columnCount == 1
    assert l2.sceneBoundingRect().top() >= l1.sceneBoundingRect().bottom()
    assert l2.item.textWidth() > 0 and legend.sceneBoundingRect().right() <= plot.getPlotItem().sceneBoundingRect().right()
    assert [label.text for _s, label in legend.items] == ["fits in GPU memory",
                                                           "does not fit in GPU memory (not reachable)"]
    plot.resize(900, 400)
    qtbot.wait(20)
    assert legend.columnCount == 2 and l2.item.textWidth() < 0  # wide again: back on one line


def test_an_empty_legend_takes_no_room(window, qtbot):
    from llmplan.gui.sweeps import Series

    chart = window.charts.batch_chart
    _settle(window, qtbot, 1)
    chart.draw(_memory_series(offloaded=False), window.unit)
    qtbot.wait(20)
    with_legend = window.charts.batch_plot.getPlotItem().vb.height()
    chart.draw(Series("Memory vs batch", "sequences", "memory per GPU", (1.0, 2.0), (GIB, 2 * GIB), 1.0, 80 * GIB),
               window.unit)
    qtbot.wait(20)
    assert not chart.legend.isVisible() and chart.legend.items == []
    assert window.charts.batch_plot.getPlotItem().vb.height() > with_legend


def test_the_legend_scales_with_the_chart_in_an_export(window, qtbot):
    """An exported chart is drawn 900 px wide (``gui.export.EXPORT_WIDTH``), about twice its size on screen:
    the legend must grow with the axes (pyqtgraph's floating legend ignores the scale: small, off centre)."""
    from PySide6.QtGui import QTransform

    _settle(window, qtbot, 1)
    window.charts.batch_chart.draw(_memory_series(offloaded=False), window.unit)
    legend = window.charts.batch_chart.legend
    own = legend.boundingRect()
    assert own.width() > 0
    drawn = legend.deviceTransform(QTransform.fromScale(2, 2)).mapRect(own)
    assert drawn.width() == pytest.approx(2 * own.width())


def _inside_view(plot, text_item) -> bool:
    view = plot.getPlotItem().vb.sceneBoundingRect()
    return text_item.isVisible() and view.contains(text_item.mapRectToScene(text_item.boundingRect()))


def test_notes_and_point_labels_stay_inside_a_small_chart(window, qtbot):
    from llmplan.gui.sweeps import Roofline

    window.resize(*SMALL)
    charts = window.charts
    _settle(window, qtbot, 4)
    charts.show_pareto([], [])  # before Auto…: the hint
    qtbot.wait(20)
    assert _inside_view(charts.pareto_plot, charts._pareto_hint)
    _settle(window, qtbot, 3)
    ridge = 989e12 / 3.35e12  # an H100 SXM's dense BF16 peak over its HBM3 bandwidth (datasheet), FLOP/byte
    charts.roof_chart.draw(Roofline(989e12, 3.35e12, (("training step", ridge * 300, 700e12),
                                                      ("decode", 2.0, 6e12))))
    qtbot.wait(20)
    assert all(_inside_view(charts.roof_plot, label) for label in charts.roof_chart.labels[:2])
    _settle(window, qtbot, 0)
    charts.seq_chart.clear("No estimate: the verdict above says what to fix")
    qtbot.wait(20)
    assert _inside_view(charts.seq_plot, charts.seq_chart.note.item)
