"""The verdict banner wraps between words, never inside "tokens/s" nor between a number and its unit.

The headline "Fits with offload: 32 of 80 layers in CPU RAM, ~3.55 tokens/s" (Llama-3-70B Q4_K_M, llama.cpp,
RTX 4090) wrapped as "… ~3.55 tokens/" and "s" in the results pane 585 px wide (``make screenshots``,
verdict-offload.png, looked at 2026-11-28): Qt's line breaking allows a break after a slash. Checked with
Qt's own text layout (QTextLayout, word wrap, the banner's font) at every width from 250 to 700 px, exactly.
"""

from __future__ import annotations

from PySide6.QtGui import QTextLayout, QTextOption
from PySide6.QtWidgets import QLabel
from test_verdict_tiers import OFFLOADED_70B, _settle


def _lines(text: str, width: int, font) -> list[str]:
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)
    layout.setTextOption(option)
    layout.beginLayout()
    out = []
    while (line := layout.createLine()).isValid():
        line.setLineWidth(width)
        out.append(text[line.textStart():line.textStart() + line.textLength()])
    layout.endLayout()
    return out


def test_the_banner_keeps_units_whole(window, qtbot):
    window.workload.setCurrentIndex(0)
    window.state.edit_many(OFFLOADED_70B, "70B Q4_K_M on a 4090")
    _settle(window, qtbot)
    banner = window.results.banner
    text = banner.text()
    assert text.startswith("Fits with offload: ") and text.endswith(" tokens/s"), text
    shown = QLabel.text(banner)  # what Qt lays out
    assert shown != text and shown.replace("\u00a0", " ").replace("\u2060", "") == text
    broke_before = False
    for width in range(250, 701, 5):
        lines = [line.replace("\u2060", "").strip() for line in _lines(shown, width, banner.font())]
        assert not any(line.endswith("/") for line in lines), (width, lines)
        assert not any(line.split()[0] in ("tokens/s", "layers", "GiB") for line in lines[1:]), (width, lines)
        naive = _lines(text, width, banner.font())  # the plain text does break there at some widths
        if any(line.endswith("/") for line in naive):
            broke_before = True
    assert broke_before
