"""At 1,024 × 700 the figures table shows about ten rows and every chart tab is in sight, whole.

Before (seen on branch chart33, 2026-11-28): the table kept 5 text lines of height (about 5 rows; the
communication rows were out of sight) and the chart tab bar hid "Pareto" behind scroll arrows. The table's
rows are counted whole in its viewport (tolerance: none, a cut row does not count); the tabs are checked in
pixels against the bar's own rectangle and each title's advance in the bar's font.
"""

from __future__ import annotations

import pytest
from test_small_screens import SMALL, settle

pytest.importorskip("PySide6.QtWidgets")

ROOMY = (1280, 800)


def rows_shown(table) -> int:
    viewport = table.viewport().rect()
    return sum(viewport.contains(table.visualItemRect(table.topLevelItem(i)))
               for i in range(table.topLevelItemCount()))


@pytest.mark.parametrize("size", [SMALL, ROOMY])
def test_figures_table_shows_ten_rows(window, qtbot, size):
    window.resize(*size)
    settle(qtbot, window)
    assert rows_shown(window.results.table) >= 10
    if size == ROOMY:  # the verdict pane still gets all it needs: the roomy window is no worse
        need = window.right_needs()
        assert window.right.sizes()[0] >= need[0], (window.right.sizes(), need)
    plot = window.charts.currentWidget()  # the charts gave up their spare room, not their axes
    from PySide6.QtCore import Qt

    assert plot.height() >= plot.plotItem.effectiveSizeHint(Qt.SizeHint.MinimumSize).height()


def test_every_chart_tab_in_sight_at_1024x700(window, qtbot):
    window.resize(*SMALL)
    settle(qtbot, window)
    bar = window.charts.tabBar()
    for i in range(bar.count()):
        rect = bar.tabRect(i)
        assert bar.rect().contains(rect), (bar.tabText(i), rect, bar.rect())
        assert rect.width() >= bar.fontMetrics().horizontalAdvance(bar.tabText(i)) + 8, bar.tabText(i)
        assert bar.tabToolTip(i)  # the full chart name
    window.charts.setCurrentIndex(bar.count() - 1)  # the Pareto tab is reachable with a click
    assert bar.tabText(bar.currentIndex()) == "Pareto"
