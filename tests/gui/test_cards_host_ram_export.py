"""Exports of a plan on different cards carry the split's host RAM, as the memory bar's legend does.

Llama-3.1-70B Q8_0 with llama.cpp on an RTX 5090 32GB + an RTX 3090 24GB (the Inference tab's "Cards in this
machine"): the cards hold part of the layers, the rest stay in host RAM. Before (main e4885d2, 2026-11-28) the
Markdown, CSV, HTML and copied-text reports said nothing of that host RAM, and their headline was one card's
memory verdict, not the banner's split verdict. Now each carries the legend's entry word for word,
"Host RAM per node (offload, not on a GPU) …" (``theme.off_gpu_entry``, one function for both), with the bytes
of the CLI's layer split (``cli.mixed_cards.mixed_json``, ``mixed_gpus.host_bytes``), exact (tolerance: none),
and the banner's headline.
"""

from __future__ import annotations

import html

import pytest

pytest.importorskip("PySide6.QtWidgets")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from test_cards_host_ram_bar import two_cards_plan
from test_export_tiers import _action, csv_row

from llmplan.cli.mixed_cards import mixed_json
from llmplan.plan.evaluate import estimate_cards


def _cards_plan(window, qtbot) -> tuple[str, float]:
    """The plan evaluated and shown; (the bar's host RAM legend entry, the CLI's host bytes)."""
    two_cards_plan(window, qtbot, "70B on two cards")
    plan, scenario = estimate_cards(window.state.doc)
    host = mixed_json(plan, scenario)["mixed_gpus"]["host_bytes"]
    assert plan.fits and plan.host_layers > 0
    entry = window.results.bar.legend()[-1][0]
    assert entry == f"Host RAM per node (offload, not on a GPU) {window.unit.fmt_any(host)}"
    return entry, host


def test_markdown_html_and_text_carry_the_host_ram(window, qtbot, isolated, fake_dialogs):
    entry, _host = _cards_plan(window, qtbot)
    headline = window.results.verdict.headline
    assert headline.startswith("Fits with offload on 2 cards") and window.results.banner.text() == headline
    fake_dialogs.save_result = isolated / "report.md"
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    text = (isolated / "report.md").read_text("utf-8")
    assert f"**{headline}**" in text and f"\n{entry}\n" in text
    assert "layers the cards leave there" in text  # which figure is the split's: the rest are one card's
    fake_dialogs.save_result = isolated / "report.html"
    _action(window, "Report (HTML, charts included)…").trigger()
    page = (isolated / "report.html").read_text("utf-8")
    assert f"<p class='verdict'>{html.escape(headline)}</p>" in page and f"<p>{html.escape(entry)}</p>" in page
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    lines = QApplication.clipboard().text().splitlines()
    assert lines[1] == headline and entry in lines[2:4]


def test_csv_has_the_host_ram_column(window, qtbot, isolated, fake_dialogs):
    _entry, host = _cards_plan(window, qtbot)
    row = csv_row(window, isolated, fake_dialogs)
    column = f"host_ram_per_node_offload_not_on_a_gpu_{window.unit.name.lower()}"
    assert float(row[column]) == window.unit.value(host)
    assert row["verdict_tier_text"] == "offload"
