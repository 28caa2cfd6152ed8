"""trial33: saving onto a full disk or a folder that refuses the file, and an autosave that fails. The plan stays
open and unsaved, and the message says what went wrong once, in words, and what to do."""

from __future__ import annotations

import errno

from drive import type_into

from llmplan.formats import atomic


def _refuse(number: int, text: str):
    def fail(*_args, **_kwargs):
        raise OSError(number, text)
    return fail


def test_a_failed_save_names_the_file_once_and_keeps_the_plan_unsaved(window, isolated, fake_dialogs, monkeypatch):
    """ENOSPC (simulated inside ``atomic_write``) read "/x/full.llmplan: /x/full.llmplan: cannot save (No space left
    on device)" and did not say what became of the work."""
    type_into(window, "training.seq_len", "2048")
    for number, text in ((errno.ENOSPC, "No space left on device"), (errno.EACCES, "Permission denied")):
        monkeypatch.setattr(atomic.os, "replace", _refuse(number, text))
        target = isolated / "plan.llmplan"
        fake_dialogs.save_result = target
        assert window.save_as() is False
        title, message = fake_dialogs.errors.pop()
        assert title == "Cannot save plan" and message.count(str(target)) == 1, message
        assert f"cannot save ({text})" in message and "still open here, unsaved" in message
        assert not target.exists() and not list(isolated.glob(".plan.llmplan.*.tmp"))  # no half file left behind
        assert window.state.dirty and window.state.path is None


def test_a_failed_autosave_says_where_the_work_is(window, monkeypatch):
    """The status line read "Autosave failed: [Errno 28] No space left on device" for 8 s."""
    type_into(window, "training.seq_len", "2048")
    monkeypatch.setattr(window.autosave_slot, "write", _refuse(errno.ENOSPC, "No space left on device"))
    window.autosave_now()
    shown = window.statusBar().currentMessage()
    assert shown.startswith("Autosave failed (No space left on device): this plan's changes are only in this window")
    assert "Errno" not in shown and "File ▸ Save As…" in shown


def test_a_dropped_folder_without_a_config_says_so_as_the_cli_does(window, isolated):
    """A dropped folder with no config.json read "Could not import models: /full/path/models/config.json: cannot read
    it (no such file)"; ``llmplan-cli params FOLDER`` says what to pick instead, and so does the app now."""
    from test_drops import drop

    folder = isolated / "models"
    folder.mkdir()
    (folder / "README.md").write_text("weights elsewhere")
    drop(window, [folder])
    assert window.notices().lines[-1] == "Could not import models: this folder has no config.json; pick the model's " \
                                         "config.json itself"


def test_many_failed_drops_leave_the_model_list_in_view(window, qtbot, isolated):
    """Ten dropped files that each fail: the banner grew to the eight problems it keeps (~350 px at 1,280 × 800) and
    squeezed the model list to its header. It now shows at most six lines and scrolls to the newest."""
    from test_drops import drop

    from llmplan.gui.notice import SHOWN_LINES

    window.resize(1280, 800)
    for i in range(10):
        bad = isolated / f"broken-{i}.json"
        bad.write_text('{"hidden_size": 4096, "num_hidden_layers": "thirty-two", "note": "' + "x" * 80 + '"}')
        drop(window, [bad])
    qtbot.wait(50)
    banner = window.notices()
    assert len(banner.lines) == 8 and banner.lines[-1].startswith("Could not import broken-9.json")
    line = banner.text.fontMetrics().lineSpacing()
    assert banner.scroll.height() <= SHOWN_LINES * line + 4 < banner.text.height()  # it scrolls
    bar = banner.scroll.verticalScrollBar()
    assert bar.value() == bar.maximum()  # the newest problem is the one in view
    assert window.models.list.viewport().height() > 8 * line  # rows of the list still show
