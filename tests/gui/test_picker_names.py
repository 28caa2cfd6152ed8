"""At 1,024 × 700 the pickers' names tell their rows apart in what is drawn.

Before (int at 3608003, 2026-11-28, offscreen): the model list's name column had 90 px of text beside Params,
Context and Layers, and Qt elided at the right end: "Mistral Small 3 24B" and "Mistral Small 3.2 24B Instruct"
both read "Mistral Sm…"; the GPU list drew "H100 SXM 96GB HBM2e (5…" (its "Grand Teton" variant's name lost).
Now Layers gives way while the names need the room (the architecture line under the list says the chosen model's
layers), and a name still too wide is elided in the middle, keeping both ends.

What is drawn is computed independently of the code under test, the way Qt's item views draw a cell's one line
of text (qcommonstyle.cpp ``viewItemDrawText``, Qt 6.x): ``QFontMetrics.elidedText`` with the view's elide mode in
the cell's width less PM_FocusFrameHMargin + 1 on each side. Tolerance: none (exact strings).
"""

from __future__ import annotations

import pytest
from test_small_screens import SMALL, settle

from llmplan.gui.picker_models import walk

pytest.importorskip("PySide6.QtWidgets")

WIDE = (1920, 1080)


def drawn(view) -> dict[str, str]:
    """Each row's name as the view draws it in its column 0."""
    from PySide6.QtWidgets import QStyle

    margin = view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
    fm = view.fontMetrics()
    out = {}
    for index in walk(view.model()):
        name = index.data()
        out[name] = fm.elidedText(name, view.textElideMode(), view.visualRect(index).width() - 2 * margin)
    return out


@pytest.mark.parametrize("which", ["models", "GPUs"])
def test_every_name_tells_its_row_apart_at_1024x700(window, qtbot, which):
    window.resize(*SMALL)
    settle(qtbot, window)
    view = window.models.list if which == "models" else window.hardware.tree
    view.expandAll()
    qtbot.wait(20)
    shown = drawn(view)
    assert len(shown) > 30
    assert len(set(shown.values())) == len(shown), "two rows draw the same text"
    for name, text in shown.items():
        if text != name:  # elided: the family at the start and the variant at the end both stay
            assert text[:6] == name[:6] and text[-6:] == name[-6:], (name, text)


def test_two_h100_variants_stay_apart(window, qtbot):
    window.resize(*SMALL)
    settle(qtbot, window)
    tree = window.hardware.tree
    tree.expandAll()
    qtbot.wait(20)
    shown = drawn(tree)
    sxm80, sxm96 = shown["H100 SXM 80GB"], shown["H100 SXM 96GB HBM2e (500 W, Grand Teton)"]
    assert "80GB" in sxm80 and "96GB" in sxm96 and sxm96.endswith("Grand Teton)"), (sxm80, sxm96)


def test_layers_give_way_only_while_names_need_the_room(window, qtbot):
    header = window.models.list.header()
    window.resize(*SMALL)
    settle(qtbot, window)
    assert header.isSectionHidden(3)
    window.resize(*WIDE)
    settle(qtbot, window)
    assert not header.isSectionHidden(3)  # a wide window shows Layers again, and every name whole
    assert all(text == name for name, text in drawn(window.models.list).items())
