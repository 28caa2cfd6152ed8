"""Nothing a person must read is cut off at 1,280 × 800, the window's default size (looked at in grabs, 2026-11-28):
the verdict banners and the lines under them wrap, each fix under the verdict shows every word, and the model
search's hint shows whole.
"""

from __future__ import annotations

from drive import choose, type_into
from test_layer_split_results import settle, shot, two_3090s_q8


def whole(label) -> bool:
    """The label shows all its lines: as tall as its wrapped text needs at its width, and not clipped by the pane."""
    if not label.isVisible():
        return False
    region = label.visibleRegion().boundingRect()
    return label.height() >= label.heightForWidth(label.width()) and region.height() == label.height()


def test_long_verdicts_show_whole_at_1280(window, qtbot, tmp_path):
    """The offload banner and the line under it, and the red "does not fit" banner with the This machine line
    under it (a recorded RTX 4090), wrap and show every line at 1,280 × 800. The banner that issue 24's notes
    saw cut ("Fits with offload: 26 of 80 layers in CPU…") was a picture taken before Qt had laid out the new
    text; the running window wraps it (these checks held before this change; they guard the wrap)."""
    from test_this_machine import rtx4090_report

    two_3090s_q8(window, qtbot)
    results = window.results
    assert whole(results.banner) and whole(results.cost)
    assert results.banner.height() > results.banner.fontMetrics().height() * 2  # two lines at 1,280
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.this_machine.wait_idle()
    type_into(window, "hardware.gpus_per_node", "1")
    choose(window, "inference.engine", "vllm")
    type_into(window, "inference.weight_format", "bf16")
    window.state.evaluate_now()
    settle(qtbot, window)
    window.this_machine.wait_idle()
    qtbot.wait(200)
    assert results.banner.text().startswith("Does not fit: needs ")
    line = window.this_machine.verdict
    assert "short)" in line.text()
    assert whole(results.banner) and whole(line)
    shot(window, "banner32-does-not-fit-1280.png", tmp_path)


def test_a_long_fix_wraps_instead_of_losing_its_end(window, qtbot, tmp_path):
    """The plan's own fixes on 1 × RTX 3090 with bf16 70B on vLLM: the first read "1. Use 4 GPUs (tensor parallel
    4; from 1), and use FP8 weig…" at 1,280 × 800, the change that matters cut off. Every word of each fix now
    shows, on as many lines as it needs, each line within the button."""
    two_3090s_q8(window, qtbot)
    type_into(window, "hardware.gpus_per_node", "1")
    choose(window, "inference.engine", "vllm")
    type_into(window, "inference.weight_format", "bf16")
    window.state.evaluate_now()
    settle(qtbot, window)
    buttons = [b for b in window.results.fixes.buttons if b.isVisible()]
    assert buttons
    long = [b for b in buttons if "\n" in b.text()]
    assert long, [b.text() for b in buttons]  # at least one fix is longer than the pane is wide
    for b in buttons:
        assert b.text().split() == str(b.property("full_text")).split()  # every word, none elided
        fm = b.fontMetrics()
        lines = b.text().split("\n")
        assert all(fm.horizontalAdvance(x) <= b.width() for x in lines)
        assert b.height() >= len(lines) * fm.height()
    shot(window, "banner32-fixes-1280.png", tmp_path)


def test_the_model_search_hint_shows_whole(window, qtbot):
    """It read "Search models, or paste a Hub repo (ORG/NAME, U…" in the left column; the forms of a Hub repo are
    in its tooltip now."""
    settle(qtbot, window)
    search = window.models.search
    room = search.width() - 2 * search.height()  # the frame, the text margins and the clear button
    assert search.fontMetrics().horizontalAdvance(search.placeholderText()) <= room
    assert "ORG/NAME" in search.toolTip() and "huggingface.co" in search.toolTip()


def test_table_labels_take_the_room_the_values_leave(window, qtbot):
    """The default plan (LoRA of Llama-3-8B on one H100): "Goodput (useful share of wall time)" and "Effective
    training time (with failures)" were cut to "Goodput (useful share of wall …" beside values as short as
    "100.0 %", the label column held at 60 % of the width. Now both show whole and every value still fits."""
    settle(qtbot, window)
    table = window.results.table
    fm = table.fontMetrics()
    rows = [table.topLevelItem(i) for i in range(table.topLevelItemCount())]
    figures = [r for r in rows if not r.isFirstColumnSpanned()]
    labels = {r.text(0).strip(): fm.horizontalAdvance(r.text(0)) for r in figures}
    for label in ("Goodput (useful share of wall time)", "Effective training time (with failures)"):
        assert labels[label] + 6 <= table.columnWidth(0), label  # 6 px: the cell's text margins
    room = table.viewport().width() - table.columnWidth(0)
    assert all(fm.horizontalAdvance(r.text(1)) + 6 <= room for r in figures)
