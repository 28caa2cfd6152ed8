"""The layout editor's colour key is in sight at 1,024 × 700 without scrolling its pane.

Before (seen on branch chart33, 2026-11-28): the key sat under the GPU drawing, just below the fold of the
pane's scroll area. Checked in pixels: the key's whole rectangle lies in the pane's viewport while the pane is
scrolled to its top (tolerance: none), and the drawing starts in sight (at 1,024 × 700 the bottom ~10 px of
its first row of GPUs is still under the fold; the editor's knobs above it are another helper's area).
"""

from __future__ import annotations

import pytest
from test_small_screens import SMALL, settle

pytest.importorskip("PySide6.QtWidgets")


@pytest.mark.parametrize("size", [SMALL, (1280, 800)])
def test_colour_key_in_sight_without_scrolling(window, qtbot, size):
    window.resize(*size)
    settle(qtbot, window)
    editor = window.layout_editor
    pane = editor.parentWidget().parentWidget()  # viewport, then the PaneScroll
    assert pane.verticalScrollBar().value() == 0
    viewport = pane.viewport()
    from PySide6.QtWidgets import QLabel

    key, = [w for w in editor.findChildren(QLabel) if w.text().startswith("Hue: pipeline stage")]
    top_left = key.mapTo(viewport, key.rect().topLeft())
    bottom_right = key.mapTo(viewport, key.rect().bottomRight())
    assert key.isVisible()
    assert viewport.rect().contains(top_left) and viewport.rect().contains(bottom_right), (top_left, bottom_right,
                                                                                           viewport.rect())
    assert key.height() >= key.heightForWidth(key.width()) - 1  # its wrapped text whole
    grid = editor.grid  # the drawing it explains starts in sight: two thirds of its minimum height at least
    assert viewport.height() - grid.mapTo(viewport, grid.rect().topLeft()).y() >= grid.minimumHeight() * 2 // 3
    assert "hover a GPU" in key.toolTip()  # the long form
