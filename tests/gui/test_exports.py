"""Issue 18 item 6: exports a colleague can read. Each export is triggered from the window (shortcut or
menu action), written to disk and read back."""

from __future__ import annotations

import base64
import csv
import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtTest import QTest

from llmplan import __version__


def _inference(window, qtbot):
    window.state.edit_many({"workload": "inference", "name": "Llama 3 8B chat on one H100"}, "setup")
    out = window.state.evaluate_now()
    assert out.ok, out.message
    qtbot.waitUntil(lambda: window.charts.last is not None and not window.charts.busy, timeout=20_000)
    return out


def _action(window, text: str):
    from PySide6.QtGui import QAction

    return next(a for a in window.findChildren(QAction) if a.text().replace("&", "") == text)


HEADER_BITS = ("Llama 3 8B chat on one H100", "Meta-Llama-3-8B", "H100", "× 1", "inference", "DP 1", "vLLM",
               __version__, " UTC")


def test_markdown_report_opens_with_what_was_planned(window, qtbot, isolated, fake_dialogs):
    _inference(window, qtbot)
    fake_dialogs.save_result = isolated / "report.md"
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    text = (isolated / "report.md").read_text("utf-8")
    head = text.split("**")[0]
    for bit in HEADER_BITS:
        assert bit in head, bit
    assert "Untitled plan" not in text


def test_csv_has_numbers_and_units_in_the_header(window, qtbot, isolated, fake_dialogs):
    out = _inference(window, qtbot)
    fake_dialogs.save_result = isolated / "figures.csv"
    _action(window, "Figures (CSV)…").trigger()
    with open(isolated / "figures.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 1
    row = table[0]
    i = out.estimate.inference
    assert float(row["inference_weights_whole_model_all_gpus_gib"]) == pytest.approx(i.weight_bytes.value / 2**30, rel=1e-12)
    assert float(row["inference_throughput_all_users_tokens_per_s"]) == pytest.approx(i.tokens_per_s.value,
                                                                                        rel=1e-12)
    assert float(row["inference_time_to_first_token_s"]) == pytest.approx(i.ttft_s.value, rel=1e-12)
    assert int(row["parameters_total_count"]) == out.estimate.params.total
    assert row["plan"] == "Llama 3 8B chat on one H100" and row["llmplan_version"] == __version__
    assert "vLLM" in row["engine"] and "H100" in row["gpus"]
    numeric = {k: v for k, v in row.items() if not k.endswith("_text") and k not in
               ("plan", "model", "gpus", "workload", "layout", "engine", "llmplan_version", "exported")}
    assert len(numeric) > 15
    for key, value in numeric.items():
        assert re.search(r"_(gib|gb|s|h|count|fraction|tokens_per_s|gb_per_s|flop|usd|w|j|kwh|params|tflop_per_s|kg)"
                         r"(_\d+)?$", key), key
        if value:
            float(value)  # a number, never "7.62 B"


@pytest.mark.parametrize("action", ["Report (Markdown)…", "Figures (CSV)…", "Report (HTML, charts included)…",
                                    "Report (PDF)…"])
def test_an_unwritable_target_is_a_dialog_not_a_traceback(window, qtbot, isolated, fake_dialogs, action):
    _inference(window, qtbot)
    blocker = isolated / "a-file"
    blocker.write_text("x", "utf-8")
    fake_dialogs.save_result = blocker / "report.out"  # a folder that is a file: NotADirectoryError
    _action(window, action).trigger()
    assert fake_dialogs.errors and fake_dialogs.errors[-1][0] == "Cannot export"
    assert "report.out" in fake_dialogs.errors[-1][1]


def test_chart_export_to_a_missing_folder_is_a_dialog(window, qtbot, isolated, fake_dialogs):
    _inference(window, qtbot)
    fake_dialogs.folder_result = isolated / "missing" / "deeper"
    _action(window, "Charts (PNG)…").trigger()
    assert fake_dialogs.errors[-1][0] == "Cannot export"


def test_html_report_embeds_the_charts(window, qtbot, isolated, fake_dialogs):
    _inference(window, qtbot)
    fake_dialogs.save_result = isolated / "report.html"
    _action(window, "Report (HTML, charts included)…").trigger()
    page = (isolated / "report.html").read_text("utf-8")
    for bit in HEADER_BITS:
        assert bit in page, bit
    pictures = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    assert len(pictures) == window.charts.count()
    assert all(base64.b64decode(p).startswith(b"\x89PNG\r\n\x1a\n") for p in pictures)
    assert "Throughput vs GPU count" in page


def test_pdf_report_is_printed_by_qt_with_the_charts(window, qtbot, isolated, fake_dialogs):
    _inference(window, qtbot)
    fake_dialogs.save_result = isolated / "report.pdf"
    _action(window, "Report (PDF)…").trigger()
    data = (isolated / "report.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert data.count(b"/Subtype /Image") >= window.charts.count()
    assert b"/Type /Page" in data


def test_exported_axis_titles_clear_their_tick_labels(window, qtbot):
    """The left axis must hold the widest tick label plus its title: the rule pyqtgraph's AxisItem._updateWidth
    lays out (tick text + tickTextOffset + tick length + 0.8 x label height). The widths come from the tick
    strings and the axis font, not from pyqtgraph's cached text size."""
    from llmplan.gui.export import chart_pngs

    window.state.edit_many({"hardware.gpus_per_node": 8}, "eight GPUs")  # 50,000-token/s ticks on "GPUs"
    _inference(window, qtbot)
    chart_pngs(window.charts)
    plot = window.charts.gpus_plot
    axis = plot.getAxis("left")
    (lo, hi) = plot.getViewBox().viewRange()[1]
    labels = [t for v, t in (axis._tickLevels or [[]])[0] if lo <= v <= hi]
    assert labels and max(len(t) for t in labels) >= 5, labels  # "20,000"-wide labels are present
    metrics = QFontMetricsF(axis.style["tickFont"] or axis.font())
    text = max(metrics.horizontalAdvance(t) for t in labels)
    need = text + axis.style["tickTextOffset"][0] + max(0, axis.style["tickLength"]) \
        + 0.8 * axis.label.boundingRect().height()
    assert axis.width() >= need - 1.0


def test_an_unnamed_plan_is_titled_by_what_it_plans():
    from llmplan.gui.report import title_of

    head = [("Plan", "Untitled plan"), ("Model", "Llama 3 8B (meta-llama/Meta-Llama-3-8B)"),
            ("GPUs", "NVIDIA H100 SXM 80GB × 8")]
    assert title_of(head) == "Llama 3 8B on NVIDIA H100 SXM 80GB × 8"
    assert title_of([("Plan", "mine"), *head[1:]]) == "mine"
