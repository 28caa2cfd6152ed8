"""The charts sweep only the chart on show (issue 18: knob → charts ≤ 50 ms).

A knob change runs the estimates of the showing chart's series alone; a tab opened later sweeps its
own series then, and an export sweeps every series first, even while the knob's sweep is still on its
way to the UI thread. A redraw keeps the legend's entries when they do not change, and paints the chart
once. The expected series are the Qt-free ``sweeps`` functions run on the same scenario, so the tests
hold whatever the engine's numbers are (exact equality: the same code on the same scenario).
"""

from __future__ import annotations

import pytest

from llmplan.gui import sweeps

pytest.importorskip("pyqtgraph")


def _knob(window, qtbot, seq_len: int) -> None:
    window.state.edit("training.seq_len", seq_len)
    window.state.evaluate_now()
    window.charts.wait_idle()
    qtbot.waitUntil(lambda: window.charts.last is not None and not window.charts.busy, timeout=20_000)


def test_a_knob_change_sweeps_the_chart_on_show_only(window, qtbot):
    charts = window.charts
    charts.setCurrentWidget(charts.seq_plot)
    _knob(window, qtbot, 2048)
    last = charts.last
    assert last.memory_vs_seq is not None and last.memory_vs_seq.current_x == 2048
    assert last.memory_vs_batch is None and last.throughput_vs_gpus is None  # not on show: not swept
    assert last.roofline is not None  # no estimates needed: always there


def test_opening_a_tab_sweeps_and_draws_its_series(window, qtbot):
    charts = window.charts
    charts.setCurrentWidget(charts.seq_plot)
    _knob(window, qtbot, 4096)
    charts.setCurrentWidget(charts.batch_plot)
    qtbot.waitUntil(lambda: charts.last.memory_vs_batch is not None and not charts.busy, timeout=20_000)
    expected = sweeps.memory_vs_batch(window.state.outcome.scenario)
    assert charts.last.memory_vs_batch.xs == expected.xs and charts.last.memory_vs_batch.ys == expected.ys
    assert charts.last.memory_vs_seq.current_x == 4096  # the series swept first is kept
    assert list(charts.batch_chart.gpu.xData) == list(expected.xs)  # drawn, not only swept


def test_an_export_right_after_a_knob_change_has_every_series(window, qtbot):
    charts = window.charts
    charts.setCurrentWidget(charts.seq_plot)
    _knob(window, qtbot, 2048)
    window.state.edit("training.seq_len", 8192)
    window.state.evaluate_now()  # the sweep is only requested: no waiting for it before the export
    charts.draw_all()
    scenario = window.state.outcome.scenario
    assert charts.last.memory_vs_seq.current_x == 8192
    assert charts.last.memory_vs_batch.xs == sweeps.memory_vs_batch(scenario).xs
    assert charts.last.throughput_vs_gpus.xs == sweeps.throughput_vs_gpus(scenario).xs
    assert list(charts.gpus_chart.fit.xData) == list(charts.last.throughput_vs_gpus.xs)


def test_a_redraw_with_the_same_legend_keeps_its_entries(window):
    from llmplan.gui.sweeps import Series

    chart = window.charts.batch_chart
    series = Series("Memory vs batch", "concurrent sequences", "memory per GPU", (1.0, 2.0, 4.0),
                    (60 * 2**30, 75 * 2**30, 90 * 2**30), 1.0, 80 * 2**30, fits=(True, True, False))
    chart.draw(series, window.unit)
    entries = list(chart.legend.items)
    assert [label.text for _sample, label in entries] == ["memory per GPU", "does not fit in GPU memory"]
    chart.draw(series, window.unit)
    assert all(a is b for pair in zip(chart.legend.items, entries, strict=True) for a, b in zip(*pair, strict=True))


def test_a_redraw_paints_the_chart_once(window, qtbot):
    """Issue 18's knob → charts cost: each redraw paints the chart once, also when its legend gains or loses
    its row (the view box changes height) and when the new data move the axes. Before, Qt's posted relayout
    and pyqtgraph's axis fit at paint time each asked for a second paint of the whole chart (20 paints for
    16 redraws of a knob's sequence). Counted exactly: paint events reaching the chart's viewport."""
    import dataclasses

    from PySide6.QtCore import QEvent, QObject

    from llmplan.gui.sweeps import Series

    class Paints(QObject):
        count = 0

        def eventFilter(self, _obj, event):  # Qt's name for the hook
            if event.type() == QEvent.Type.Paint:
                self.count += 1
            return False

    charts = window.charts
    charts.setCurrentWidget(charts.seq_plot)
    _knob(window, qtbot, 2048)
    qtbot.wait(50)
    paints = Paints()
    charts.seq_plot.viewport().installEventFilter(paints)
    gib = 2**30
    xs = (1024.0, 2048.0, 4096.0, 8192.0)
    for top, fits in ((70, (True, True, True, False)), (50, (True,) * 4), (120, (True, True, False, False)),
                      (40, (True,) * 4)):  # legend on, off (axes narrower), on (axes wider), off
        series = Series("Memory vs context length", "context (tokens)", "memory per GPU", xs,
                        tuple(top * gib * x / 8192 for x in xs), 2048.0, 80 * gib, fits=fits)
        charts.last = dataclasses.replace(charts.last, memory_vs_seq=series)
        paints.count = 0
        charts.draw(charts.last)
        qtbot.wait(50)
        assert len(charts.seq_chart.legend.items) == (0 if all(fits) else 2)
        assert paints.count == 1
