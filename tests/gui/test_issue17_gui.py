"""Issue 17 in the app: export errors are dialogs (#10), crash recovery is robust (#11), and the lasting
notice lists every skipped user file (#1)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from llmplan.resources_path import resources_dir

EXAMPLE = resources_dir() / "examples" / "serve-llama-3.1-70b-tp4-h100.llmplan"
posix_only = pytest.mark.skipif(os.name != "posix", reason="modes and symlinks")


# ---- #10 export to an unwritable folder ------------------------------------------------------------

@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_export_to_an_unwritable_folder_is_a_dialog(window, isolated, fake_dialogs):
    locked = isolated / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        for export, name in ((window.export_markdown, "r.md"), (window.export_csv, "r.csv")):
            fake_dialogs.save_result = locked / name
            export()
        fake_dialogs.folder_result = locked
        window.charts.wait_idle()
        window.export_charts()
    finally:
        locked.chmod(0o700)
    assert [t for t, _ in fake_dialogs.errors] == ["Cannot export"] * 3


def test_export_into_a_missing_folder_is_a_dialog(window, isolated, fake_dialogs):
    """Also as root: a folder that does not exist cannot be written to by anybody."""
    fake_dialogs.save_result = isolated / "no" / "such" / "r.md"
    window.export_markdown()
    fake_dialogs.save_result = isolated / "no" / "such" / "r.csv"
    window.export_csv()
    fake_dialogs.folder_result = isolated / "no-such-folder"
    window.charts.wait_idle()
    window.export_charts()
    assert [t for t, _ in fake_dialogs.errors] == ["Cannot export"] * 3
    assert "r.md" in fake_dialogs.errors[0][1]


# ---- #11 crash recovery ------------------------------------------------------------------------------

def _crash_copy(folder, name="111-deadbeef", origin=None):
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE, folder / f"{name}.llmplan")
    (folder / f"{name}.json").write_text(json.dumps({"origin": str(origin) if origin else None}))
    return folder / f"{name}.llmplan"


@posix_only
def test_a_dangling_link_and_an_unreadable_slot_do_not_hide_the_crash_copy(isolated):
    from llmplan.gui import files

    folder = files.autosave_folder()
    copy = _crash_copy(folder)
    (folder / "222-00000000.llmplan").symlink_to(folder / "gone.llmplan")  # dangling
    (folder / "333-11111111.llmplan").write_text("{not a plan")
    os.utime(copy, (1, 1))  # the oldest: the broken ones are looked at first
    problems: list[str] = []
    found = files.recoverable(problems)
    assert found is not None and found.path == copy
    found.discard()
    assert len(problems) == 2, problems
    assert any("222-00000000" in p for p in problems) and any("333-11111111" in p for p in problems)
    assert (folder / "333-11111111.llmplan.unreadable").exists()


def test_origin_is_trusted_only_when_it_is_a_plan(isolated):
    from llmplan.gui import files

    victim = isolated / "notes.txt"
    victim.write_text("precious")
    for origin in (victim, isolated / "not-a-plan.llmplan", "relative/path.llmplan", isolated / "no" / "x.llmplan"):
        if str(origin).endswith("not-a-plan.llmplan"):
            (isolated / "not-a-plan.llmplan").write_text("precious too")
        _crash_copy(files.autosave_folder(), origin=origin)
        found = files.recoverable()
        assert found is not None and found.origin is None, origin
        found.discard()
    real = isolated / "mine.llmplan"
    shutil.copy(EXAMPLE, real)
    _crash_copy(files.autosave_folder(), origin=real)
    found = files.recoverable()
    assert found.origin == real
    found.discard()


def test_stale_temp_files_are_removed_at_start(isolated):
    from llmplan.gui import files

    folder = files.autosave_folder()
    folder.mkdir(parents=True)
    stale = [folder / ".111-deadbeef.llmplan.abc123.tmp", folder / ".111-deadbeef.json.zz9.tmp"]
    for p in stale:
        p.write_text("half a save")
    other = folder / ".not-ours.tmp"
    other.write_text("x")
    assert files.recoverable() is None
    assert not any(p.exists() for p in stale) and other.exists()


def test_a_live_windows_temp_file_is_left_alone(isolated):
    from llmplan.gui import files

    slot = files.AutosaveSlot()
    slot.write(__import__("llmplan.plan.planfile", fromlist=["load_plan"]).load_plan(EXAMPLE), None)
    tmp = slot.path.parent / f".{slot.path.name}.inflight.tmp"
    tmp.write_text("a save in progress")
    assert files.recoverable() is None  # the slot's owner (this process) is alive
    assert tmp.exists()
    slot.release()


def test_autosave_writes_the_metadata_atomically(isolated, monkeypatch):
    from llmplan.gui import files
    from llmplan.plan.planfile import load_plan

    writes: list[str] = []
    real = files.atomic_write
    monkeypatch.setattr(files, "atomic_write", lambda p, b: writes.append(p.name) or real(p, b))
    slot = files.AutosaveSlot()
    slot.write(load_plan(EXAMPLE), isolated / "mine.llmplan")
    assert writes[0] == slot.path.with_suffix(".json").name  # the link to the original first, then the copy
    assert json.loads(slot.path.with_suffix(".json").read_text()) == {"origin": str(isolated / "mine.llmplan")}
    slot.release()


# ---- #1 the lasting notice --------------------------------------------------------------------------

def test_the_notice_lists_every_kind_of_skipped_user_file(qtbot, settings, fake_dialogs, isolated):
    data = isolated / "data"
    (data / "system").mkdir(parents=True)
    (data / "engines.toml").write_text("[vllm\n")
    (data / "system" / "mine.toml").write_text("[[storage]\n")
    (data / "calibration.json").write_text("{")
    from llmplan.gui.main_window import MainWindow

    w = MainWindow(settings=settings, detect=False)
    qtbot.addWidget(w)
    assert w.state.outcome is not None and w.state.outcome.estimate is not None  # estimates still work
    w.show()  # the notice comes right after the window's first paint (gui/after_paint.py)
    qtbot.waitUntil(lambda: w.catalog_notice.text() != "", timeout=10_000)
    assert w.catalog_notice.text().startswith("⚠ 3 catalog files skipped")
    tip = w.catalog_notice.toolTip()
    assert "engines.toml" in tip and "mine.toml" in tip and "calibration" in tip
    w.state.undo_stack.setClean()
