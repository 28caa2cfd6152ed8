"""No lost work: SIGKILL in the middle of a save leaves the old plan or the new one, never a broken file;
SIGKILL after an edit leaves an autosave that the next start offers to recover, edit included.

Both kill real processes (subprocesses), not mocks. The number of kills is ``LLMPLAN_KILL_RUNS``
(default 8, about 4 s here); docs/trust.md quotes a longer run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmplan.plan.planfile import load_plan, loads_plan, save_plan
from llmplan.resources_path import resources_dir

ROOT = Path(__file__).resolve().parents[2]
KILL_RUNS = int(os.environ.get("LLMPLAN_KILL_RUNS", "8"))
EXAMPLE = resources_dir() / "examples" / "finetune-llama-3.1-70b-zero3-8xh100.llmplan"

SAVER = r"""
import sys
from pathlib import Path
from llmplan.plan.planfile import loads_plan, save_plan
target, old, new = sys.argv[1:4]
docs = [loads_plan(Path(old).read_text("utf-8")), loads_plan(Path(new).read_text("utf-8"))]
print("ready", flush=True)
i = 0
while True:  # save the two versions in turn until killed
    save_plan(docs[i % 2], target, inline=False)
    i += 1
"""


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(ROOT / "src"), LLMPLAN_DATA_DIR=str(tmp / "data"), XDG_CONFIG_HOME=str(tmp / "config"),
               QT_QPA_PLATFORM="offscreen", HOME=str(tmp))
    return env


def _big_plan_texts(tmp: Path) -> tuple[Path, Path]:
    """Two versions of a plan with 99,000 characters of notes (the field allows 100,000): ~100 KB a save."""
    base = loads_plan(EXAMPLE.read_text("utf-8"))
    paths = []
    for tag in ("OLD", "NEW"):
        doc = base.model_copy(update={"notes": f"{tag}:" + (tag.lower() * 33_000)})
        path = tmp / f"{tag.lower()}.src.llmplan"
        save_plan(doc, path, inline=False)
        paths.append(path)
    return paths[0], paths[1]


def test_sigkill_during_saves_leaves_the_old_or_the_new_plan(tmp_path):
    old, new = _big_plan_texts(tmp_path)
    target = tmp_path / "plan.llmplan"
    versions = {load_plan(old).notes[:4], load_plan(new).notes[:4]}
    rng = random.Random(20261122)
    torn_writes = 0
    for _ in range(KILL_RUNS):
        save_plan(load_plan(old), target, inline=False)
        child = subprocess.Popen([sys.executable, "-c", SAVER, str(target), str(old), str(new)],
                                 stdout=subprocess.PIPE, env=_env(tmp_path))
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.02, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        doc = load_plan(target)  # raises PlanFileError on a torn or empty file
        assert doc.notes[:4] in versions and len(doc.notes) == 4 + 99_000
        leftovers = list(tmp_path.glob(".plan.llmplan.*.tmp"))
        torn_writes += bool(leftovers)  # killed between mkstemp and rename: the target was untouched
        for p in leftovers:
            p.unlink()
    print(f"\n{KILL_RUNS} SIGKILLs during saves, {torn_writes} mid-write; the plan was old or new every time")


WRAPPER = r"""
import sys
from llmplan.gui import files
files.AUTOSAVE_S = 0.3  # the GUI has no setting for the autosave interval (60 s): shorten it here
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])

def edit():
    from llmplan.gui.main_window import MainWindow
    window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))
    assert window.state.edit("notes", sys.argv[2], "Edit notes")  # the command every widget edit goes through
    assert window.state.edit("training.micro_batch", 3, "Micro-batch")
    print("edited", flush=True)

QTimer.singleShot(500, edit)
from llmplan.gui.app import main
sys.exit(main([sys.argv[1], "--no-detect"]))
"""


NEXT_START = r"""
import json, sys
from llmplan.gui import dialogs
asked = []
dialogs.ask = lambda parent, title, text, buttons=(): asked.append([title, text]) or "Yes"
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])

def report():
    from llmplan.gui.main_window import MainWindow
    window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))
    doc = window.state.doc
    print(json.dumps({"asked": asked, "notes": doc.notes, "micro_batch": doc.training.micro_batch,
                      "path": str(window.state.path), "dirty": window.state.dirty}), flush=True)
    window.state.undo_stack.setClean()
    window.close()
    app.quit()

QTimer.singleShot(1500, report)
from llmplan.gui.app import main
sys.exit(main([sys.argv[1], "--no-detect"]))
"""


def _slots(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "data" / "autosave").glob("*.llmplan"))


def test_sigkill_after_an_edit_offers_the_edit_on_next_start(tmp_path):
    """Edit, SIGKILL, then start again the way a double-click does (``llmplan mine.llmplan``): the
    recovery question comes although a file was given, and answering Yes restores the edit."""
    pytest.importorskip("PySide6.QtWidgets")
    plan = tmp_path / "mine.llmplan"
    plan.write_bytes(EXAMPLE.read_bytes())
    marker = "unsaved edit 7f3a"
    child = subprocess.Popen([sys.executable, "-c", WRAPPER, str(plan), marker], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=_env(tmp_path))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if any(marker in s.read_text("utf-8", errors="replace") for s in _slots(tmp_path)):
                break
            time.sleep(0.1)
        assert child.poll() is None, child.stderr.read().decode()
        assert _slots(tmp_path), "no autosave written within 60 s"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert plan.read_bytes() == EXAMPLE.read_bytes(), "the plan file itself was not saved: it is unchanged"

    out = subprocess.run([sys.executable, "-c", NEXT_START, str(plan)], capture_output=True, text=True,
                         env=_env(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["asked"] and seen["asked"][0][0] == "Recover plan" and "mine.llmplan" in seen["asked"][0][1]
    assert seen["notes"] == marker and seen["micro_batch"] == 3
    assert seen["dirty"] and seen["path"] == str(plan)  # recovered, unsaved, tied to its file
    assert not _slots(tmp_path)  # offered once


def test_a_second_window_keeps_its_autosave_when_the_first_closes(tmp_path, qtbot, monkeypatch):
    """Two llmplan windows at once: closing one cleanly must not delete the other's recovery copy, and
    a start while the other still runs must not offer its (live) plan as a crash to recover."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "data"))
    from PySide6.QtCore import QSettings

    from llmplan.gui import files
    from llmplan.gui.main_window import MainWindow

    def window(name: str) -> MainWindow:
        w = MainWindow(settings=QSettings(str(tmp_path / f"{name}.ini"), QSettings.Format.IniFormat), detect=False,
                       charts=False)
        qtbot.addWidget(w)
        return w

    first, second = window("a"), window("b")
    first.state.edit("notes", "first's work")
    second.state.edit("notes", "second's work")
    first.autosave_now()
    second.autosave_now()
    assert len(_slots(tmp_path)) == 2
    assert files.recoverable() is None  # both owners are alive: nothing crashed
    first.state.undo_stack.setClean()
    first.close()
    assert [p.name for p in _slots(tmp_path)] == [second.autosave_slot.path.name]
    second.state.undo_stack.setClean()
    second.close()
    assert not _slots(tmp_path)
