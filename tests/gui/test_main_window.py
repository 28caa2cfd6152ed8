"""The main window driven as a user would (offscreen, pytest-qt)."""

from __future__ import annotations

import json

from PySide6.QtWidgets import QSpinBox


def test_window_opens_with_verdict_and_undo_redo(window, qtbot):
    banner = window.results.banner
    assert banner.text()  # a verdict or the reason there is none, never empty
    before = window.state.doc.parallelism.tp
    spin = window.findChild(QSpinBox, "parallelism.tp")
    spin.setValue(2)
    assert window.state.doc.parallelism.tp == 2
    assert window.isWindowModified()
    window.undo_action.trigger()
    assert window.state.doc.parallelism.tp == before and spin.value() == before
    window.redo_action.trigger()
    assert spin.value() == 2


def test_corrupt_plan_gives_dialog_not_crash(window, isolated, fake_dialogs):
    bad = isolated / "broken.llmplan"
    bad.write_text("{ this is not json", "utf-8")
    assert window.open_path(bad) is False
    assert fake_dialogs.errors and "broken.llmplan" in fake_dialogs.errors[0][1]


def test_save_close_reopen_same_plan(window, isolated, fake_dialogs, qtbot, settings):
    window.state.edit("training.seq_len", 2048)
    fake_dialogs.save_result = isolated / "mine.llmplan"
    assert window.save_as()
    assert not window.isWindowModified()
    data = json.loads((isolated / "mine.llmplan").read_text("utf-8"))
    assert data["format"] == "llmplan"
    from llmplan.gui.main_window import MainWindow

    other = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(other)
    assert other.open_path(isolated / "mine.llmplan")
    assert other.state.doc.training.seq_len == 2048
    a, b = window.state.evaluate_now(), other.state.evaluate_now()
    assert (a.kind, a.message) == (b.kind, b.message)
    if a.ok:
        assert a.estimate.memory.total.value == b.estimate.memory.total.value


def test_unsaved_changes_prompt_can_cancel_close(window, fake_dialogs):
    window.state.edit("training.seq_len", 1024)
    fake_dialogs.answer = "Cancel"
    assert window.maybe_save() is False
    fake_dialogs.answer = "Discard"
    assert window.maybe_save() is True


def test_verdict_follows_model_and_gpu(window):
    text = window.results.banner.text()
    assert text.startswith("Fits:") or text.startswith("Does not fit:")
    assert window.hardware.select("nvidia-a100-sxm4-40gb") or window.hardware.select("nvidia-a100-pcie-40gb")
    window.state.evaluate_now()
    assert window.results.banner.text() != text
