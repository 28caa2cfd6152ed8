"""The GPU drawing asks for the height of its rows of tiles, not a fixed 160 px.

Before (main e4885d2, 2026-11-28): ``GpuGrid.sizeHint`` was 360 × 160 px whatever it drew, so one row of
84-px tiles (82 px painted) asked for 160 px and the layout editor of a training plan was taller than its pane
at 1,024 × 700. Now the hint is the tiles plus the margins (2 px round the drawing, 4 px inside each node box):
one node of 8 GPUs drawn as one row of 84-px tiles is 84 + 8 + 4 = 96 px (tolerance: none, integer pixels).
Large clusters (one tile per node above 256 GPUs) keep the 160 px they fill.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6.QtWidgets")

from test_small_screens import SMALL, settle

from llmplan.core.workload import ParallelLayout
from llmplan.gui.gpu_grid import DETAIL_LIMIT, HINT_HEIGHT, MAX_BOX, GpuGrid


def test_one_row_of_tiles_asks_for_one_row(qtbot):
    g = GpuGrid()
    qtbot.addWidget(g)
    g.set_cluster(ParallelLayout(tp=8), 8, 1)
    g.resize(900, 200)
    assert g.needed_height(900) == MAX_BOX + 8 + 4 == 96
    assert g.sizeHint().height() == 96 < 160
    assert g.hasHeightForWidth() and g.heightForWidth(900) == 96
    g.show()
    g.grab()  # the painted tiles are those of the hint: one row of 8, each 84 px less its 2-px gap
    assert len(g._boxes) == 8 and {round(r.height()) for r, _n, _g in g._boxes} == {MAX_BOX - 2}
    assert max(r.bottom() for r, _n, _g in g._boxes) <= 96
    assert "rank 3" in g.describe_at(0, 3)  # the hover text as before


def test_rows_follow_the_width(qtbot):
    g = GpuGrid()
    qtbot.addWidget(g)
    g.set_cluster(ParallelLayout(tp=8, pp=2), 8, 2)  # 16 GPUs
    narrow, wide = g.needed_height(300), g.needed_height(1400)
    assert wide < narrow <= HINT_HEIGHT  # more rows when narrow, never more than the old fixed hint
    assert g.needed_height(300) >= g.minimumHeight()


def test_large_clusters_keep_their_height(qtbot):
    g = GpuGrid()
    qtbot.addWidget(g)
    g.set_cluster(ParallelLayout(tp=8, pp=4, dp=16), 8, 64)
    assert g.aggregated and DETAIL_LIMIT < 8 * 64
    assert g.needed_height(400) == HINT_HEIGHT == 160


def test_training_editor_scrolls_less_at_1024(window, qtbot):
    """The fine-tune plan the window opens with, at 1,024 × 700: before, the editor (413 px) scrolled 86 px in its
    327-px pane; now its drawing is one row of tiles and it scrolls 22 px (the knobs above the drawing are the
    rest; tolerance: the drawing's hint exactly, the pane's scroll range under 40 px, font metrics aside)."""
    window.resize(*SMALL)
    settle(qtbot, window)
    assert window.state.doc.workload != "inference"
    grid = window.layout_editor.grid
    pane = window.layout_editor.parentWidget().parentWidget()
    assert grid.sizeHint().height() == grid.needed_height(grid.width()) < 160
    assert grid.height() == grid.sizeHint().height()
    assert pane.verticalScrollBar().maximum() < 40
