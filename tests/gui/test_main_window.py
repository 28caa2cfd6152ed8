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


def _table(window) -> list[tuple[str, str]]:
    t = window.results.table
    return [(t.topLevelItem(i).text(0), t.topLevelItem(i).text(1)) for i in range(t.topLevelItemCount())]


def test_save_close_reopen_same_plan(window, isolated, fake_dialogs, qtbot, settings):
    window.state.edit_many({"training.seq_len": 2048, "system.storage": "nfs-100gbe",
                            "system.price_per_kwh": 0.15}, "edits")
    first = window.state.evaluate_now()
    assert first.ok
    shown = _table(window)
    verdict = window.results.banner.text()
    fake_dialogs.save_result = isolated / "mine.llmplan"
    assert window.save_as()
    assert not window.isWindowModified()
    data = json.loads((isolated / "mine.llmplan").read_text("utf-8"))
    assert data["format"] == "llmplan" and data["system"]["storage"] == "nfs-100gbe"
    assert window.close()  # saved: closes without asking
    assert not fake_dialogs.asked
    from llmplan.gui.main_window import MainWindow

    other = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(other)
    assert other.open_path(isolated / "mine.llmplan")
    doc = other.state.doc  # saved self-contained (model config and GPU spec inline), same settings
    assert (doc.training.seq_len, doc.system.storage, doc.system.price_per_kwh) == (2048, "nfs-100gbe", 0.15)
    again = other.state.evaluate_now()
    assert again.ok and again.estimate.memory.total.value == first.estimate.memory.total.value
    assert again.estimate.system.power.cost_usd.value == first.estimate.system.power.cost_usd.value
    assert other.results.banner.text() == verdict
    assert _table(other) == shown  # every figure in the table, identical


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


def test_step_time_bar_shows_the_breakdown_and_the_framework(window, qtbot):
    """A one-GPU fine-tune is a Hugging Face run by default: the step bar names the profile, its parts add up to
    the step time, and an inference plan hides it (no training step)."""
    from PySide6.QtWidgets import QComboBox

    window.state.edit_many({"workload": "finetune", "training.method": "qlora", "training.seq_len": 2048,
                            "hardware.gpus_per_node": 1, "hardware.nodes": 1}, "fine-tune")
    outcome = window.state.evaluate_now()
    assert outcome.ok
    window.results.show_outcome(outcome)
    bar, label = window.results.step_bar, window.results.step_label
    assert not bar.isHidden() and "Hugging Face Trainer + PEFT profile" in label.text()
    compute = outcome.estimate.compute
    assert sum(v for _, v in bar.parts()) == compute.step_time_s.value or abs(
        sum(v for _, v in bar.parts()) / compute.step_time_s.value - 1) < 1e-9
    assert "NF4 dequantisation" in bar.summary()
    combo = window.findChild(QComboBox, "training.framework")
    combo.setCurrentIndex(combo.findData("megatron"))
    outcome = window.state.evaluate_now()
    window.results.show_outcome(outcome)
    assert "Megatron" in window.results.step_label.text()
    window.state.edit_many({"workload": "inference"}, "serve")
    window.results.show_outcome(window.state.evaluate_now())
    assert window.results.step_bar.isHidden() and window.results.step_label.isHidden()
