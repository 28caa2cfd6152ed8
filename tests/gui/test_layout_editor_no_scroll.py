"""The layout editor shows whole, with no vertical scroll bar, on the default plan's three workload tabs at
1,024 × 700, and on a 70B pre-train over 4 nodes at 1,280 × 800.

Before (main at 51fb291, 2026-11-28): the editor's pane scrolled by 22 px on the Fine-tune tab and by 51 px on the
Pre-train tab at 1,024 × 700 (the centre column split evenly, 328 / 327 px), and by 131 px on the 70B pre-train at
1,280 × 800. Checked on the pane's own scroll bar (its range must be 0: tolerance none) and in pixels: the GPU
drawing's bottom edge lies inside the pane's viewport. The workload tabs above keep ``WORKLOAD_KEPT`` px at least;
on a roomy window, where the editor fits half the column, the column keeps (or gets back) its even split; a divider
the person dragged stays while the editor still fits below it.
"""

from __future__ import annotations

import pytest
from drive import click_tab
from test_labels_whole_small import PLANS
from test_small_screens import SMALL, settle

pytest.importorskip("PySide6.QtWidgets")


def editor_pane(window):
    return window.layout_editor.parentWidget().parentWidget()  # viewport, then the PaneScroll


def assert_whole(window) -> None:
    pane = editor_pane(window)
    bar = pane.verticalScrollBar()
    assert bar.maximum() == 0 and not bar.isVisible(), (bar.maximum(), window.centre.sizes())
    grid = window.layout_editor.grid
    bottom = grid.mapTo(pane.viewport(), grid.rect().bottomLeft()).y()
    assert grid.isVisible() and bottom < pane.viewport().height(), (bottom, pane.viewport().height())


@pytest.mark.parametrize("tab", [1, 0, 2])  # Fine-tune (the window's first plan), Inference, Pre-train
def test_editor_whole_at_1024x700(window, qtbot, tab):
    from llmplan.gui.main_window import WORKLOAD_KEPT

    window.resize(*SMALL)
    settle(qtbot, window)
    click_tab(window, tab)
    window.state.evaluate_now()
    settle(qtbot, window)
    assert window.state.doc.workload == ("inference", "finetune", "pretrain")[tab]
    assert_whole(window)
    assert window.centre.sizes()[0] >= WORKLOAD_KEPT  # the workload tabs gave way, not below their floor


def test_editor_whole_on_a_pretrain_over_nodes_at_1280x800(window, qtbot):
    window.resize(1280, 800)
    window.state.edit_many(PLANS["pretrain 70B on 32 H100"], "70B on 32 GPUs")
    click_tab(window, 2)
    window.state.evaluate_now()
    settle(qtbot, window)
    assert window.layout_editor.recompute_modules.isVisible()  # the tallest editor: Megatron's modules too
    assert_whole(window)
    window.state.undo_stack.undo()  # back to the default plan: the workload tabs get their room back
    window.state.evaluate_now()
    settle(qtbot, window)
    top, bottom = window.centre.sizes()
    assert abs(top - bottom) <= 2, (top, bottom)


def test_a_dragged_divider_stays_while_the_editor_fits(window, qtbot):
    window.resize(1280, 800)
    settle(qtbot, window)
    centre = window.centre
    total = sum(centre.sizes())
    centre.setSizes([total - 500, 500])  # the person drags the editor taller than it needs
    centre.splitterMoved.emit(total - 500, 1)
    window.state.edit("training.seq_len", 2048)
    window.state.evaluate_now()
    settle(qtbot, window)
    assert centre.sizes()[1] == 500
    centre.setSizes([total - 200, 200])  # and then shorter than it needs: it gets its need back
    centre.splitterMoved.emit(total - 200, 1)
    window.state.edit("training.seq_len", 4096)
    window.state.evaluate_now()
    settle(qtbot, window)
    assert_whole(window)


def test_roomy_window_keeps_the_even_split(window, qtbot):
    window.resize(1280, 800)
    settle(qtbot, window)
    top, bottom = window.centre.sizes()
    assert abs(top - bottom) <= 2, (top, bottom)
    assert_whole(window)
