"""Issue 18: the text exports (Markdown, CSV, HTML, Copy as text) say the verdict tier the window's banner
says. They used to write "Fits: 23.5 of 24.0 GiB" for a plan that keeps about a third of its layers in
CPU RAM, because the export judged memory alone.

The plan is the issue's: Llama-3-70B Q4_K_M with llama.cpp on one RTX 4090 24GB, which llama.cpp runs with
about 32 of 80 layers in host RAM (tests/fit/test_tiers.py has the figures and their sources). The exports
are triggered with the window's shortcuts and menu actions, written to disk and read back; the check is
exact: the export's verdict sentence is the banner's, word for word.
"""

from __future__ import annotations

import csv

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

OFFLOADED_70B = {"workload": "inference", "model.id": "meta-llama/Meta-Llama-3-70B",
                 "hardware.gpu": "nvidia-rtx-4090-24gb", "inference.engine": "llama.cpp",
                 "inference.weight_format": "q4_k_m", "name": "70B Q4_K_M on a 4090"}


def _offloaded(window, qtbot) -> tuple[str, str]:
    """The plan evaluated and shown; (banner headline, the offload's cost sentence)."""
    window.workload.setCurrentIndex(0)
    window.state.edit_many(OFFLOADED_70B, "70B Q4_K_M on a 4090")
    assert window.state.evaluate_now().ok
    qtbot.waitUntil(lambda: window.charts is None or (window.charts.last is not None and not window.charts.busy),
                    timeout=20_000)
    v = window.results.verdict
    assert v.tier == "offload" and window.results.banner.text().startswith(v.headline)
    assert v.headline.startswith("Fits with offload: ") and " of 80 layers in CPU RAM" in v.headline
    assert v.cost and "Offload costs" in v.cost
    return v.headline, v.cost


def _action(window, text: str) -> QAction:
    return next(a for a in window.findChildren(QAction) if a.text().replace("&", "") == text)


def csv_row(window, folder, fake_dialogs) -> dict[str, str]:
    """The plan's row of "Figures (CSV)…", written to ``folder`` and read back."""
    fake_dialogs.save_result = folder / "figures.csv"
    _action(window, "Figures (CSV)…").trigger()
    with open(folder / "figures.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    return row


def test_markdown_report_says_fits_with_offload(window, qtbot, isolated, fake_dialogs):
    headline, cost = _offloaded(window, qtbot)
    fake_dialogs.save_result = isolated / "report.md"
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    text = (isolated / "report.md").read_text("utf-8")
    assert f"**{headline}**" in text and cost in text
    assert "**Fits:" not in text


def test_csv_has_the_tier_and_its_sentence(window, qtbot, isolated, fake_dialogs):
    headline, cost = _offloaded(window, qtbot)
    row = csv_row(window, isolated, fake_dialogs)
    assert row["verdict_tier_text"] == "offload"
    assert row["verdict_text"] == f"{headline} {cost}"


def test_html_report_and_copied_text_say_the_same(window, qtbot, isolated, fake_dialogs):
    headline, cost = _offloaded(window, qtbot)
    fake_dialogs.save_result = isolated / "report.html"
    _action(window, "Report (HTML, charts included)…").trigger()
    page = (isolated / "report.html").read_text("utf-8")
    import html

    assert f"<p class='verdict'>{html.escape(headline)}</p>" in page and html.escape(cost) in page
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    lines = QApplication.clipboard().text().splitlines()
    assert lines[:3] == ["70B Q4_K_M on a 4090", headline, cost]


def test_a_plan_all_on_the_gpu_still_exports_fits(window, qtbot, isolated, fake_dialogs):
    """Llama-3-8B Q4_K_M (about 5 GB) holds every layer on the 4090: the export says "Fits", no cost."""
    window.workload.setCurrentIndex(0)
    window.state.edit_many({**OFFLOADED_70B, "model.id": "meta-llama/Meta-Llama-3-8B"}, "8B Q4_K_M on a 4090")
    assert window.state.evaluate_now().ok
    assert window.results.verdict.tier == "fits"
    row = csv_row(window, isolated, fake_dialogs)
    assert row["verdict_tier_text"] == "fits" and row["verdict_text"].startswith("Fits: ")
