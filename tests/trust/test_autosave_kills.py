"""Issue 17: SIGKILL in the middle of autosaves, again and again: 0 corrupt metadata, 0 lost originals, and
no temp file survives the next start.

A child process autosaves like a window does (``llmplan.gui.files.AutosaveSlot.write``: the note naming the
original file, then the plan copy, each with ``atomic_write``), alternating two versions of a ~100 KB plan,
and is SIGKILLed after a random 0-300 ms. After every kill, before anything is cleaned: the note beside the
copy must parse and still name the original (an earlier build lost that link in 12 of 100 kills). Then the
next start (``files.recoverable``) must offer the copy (the old or the new version, never torn) with its
original, the original file must be untouched, and no ``.*.tmp`` a killed write left may remain.

``make test`` does ``LLMPLAN_AUTOSAVE_KILLS`` (default 5) kills; ``make fuzz`` does 100 and docs/trust.md
quotes that run.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmplan.formats.bounded import load_json
from llmplan.plan.planfile import load_plan, loads_plan, save_plan
from llmplan.resources_path import resources_dir

pytest.importorskip("PySide6.QtCore")

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("LLMPLAN_AUTOSAVE_KILLS", "5"))
EXAMPLE = resources_dir() / "examples" / "finetune-llama-3.1-70b-zero3-8xh100.llmplan"

AUTOSAVER = r"""
import sys
from pathlib import Path
from llmplan.gui import files
from llmplan.plan.planfile import loads_plan
origin, old, new = sys.argv[1:4]
docs = [loads_plan(Path(p).read_text("utf-8")) for p in (old, new)]
slot = files.AutosaveSlot()
slot.write(docs[0], Path(origin))
print("ready", flush=True)
i = 1
while True:  # autosave the two versions in turn until killed
    slot.write(docs[i % 2], Path(origin))
    i += 1
"""


def _versions(tmp: Path) -> tuple[Path, Path]:
    base = loads_plan(EXAMPLE.read_text("utf-8"))
    paths = []
    for tag in ("OLD", "NEW"):
        path = tmp / f"{tag.lower()}.src.llmplan"
        save_plan(base.model_copy(update={"notes": f"{tag}:" + tag.lower() * 33_000}), path, inline=False)
        paths.append(path)
    return paths[0], paths[1]


def test_sigkill_during_autosaves_keeps_metadata_originals_and_leaves_no_temp(tmp_path, monkeypatch):
    from llmplan.gui import files

    data = tmp_path / "data"
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(data))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), LLMPLAN_DATA_DIR=str(data), QT_QPA_PLATFORM="offscreen")
    old, new = _versions(tmp_path)
    original = tmp_path / "mine.llmplan"
    original.write_bytes(EXAMPLE.read_bytes())
    before = original.read_bytes()
    folder = data / "autosave"
    rng = random.Random(20261125)
    mid_write = temps_removed = 0
    for kill in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", AUTOSAVER, str(original), str(old), str(new)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        ready = child.stdout.readline().strip()
        assert ready == b"ready", child.stderr.read().decode()[-2000:]
        time.sleep(rng.uniform(0, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)

        notes = sorted(folder.glob("*.json"))
        assert len(notes) == 1, notes
        meta = load_json(notes[0], 64 * 1024)  # raises on a torn or empty note: corrupt metadata
        assert meta == {"origin": str(original)}, f"kill {kill}: the note lost its original: {meta!r}"
        temps = list(folder.glob(".*.tmp"))
        mid_write += bool(temps)

        problems: list[str] = []
        found = files.recoverable(problems)  # the next start
        assert found is not None and not problems, (kill, problems)
        assert found.origin == original, f"kill {kill}: the original is no longer offered: {found.origin}"
        assert found.doc.notes[:4] in ("OLD:", "NEW:") and len(found.doc.notes) == 4 + 99_000
        assert original.read_bytes() == before and load_plan(original)
        left = list(folder.glob(".*.tmp"))
        assert not left, f"kill {kill}: temp files survived the next start: {left}"
        temps_removed += len(temps)
        found.discard()
    print(f"\n{KILLS} SIGKILLs during autosaves, {mid_write} mid-write ({temps_removed} temp files, all removed "
          "at the next start); 0 corrupt notes, 0 lost originals, every copy the old or the new version")
    assert not list(folder.glob("*.llmplan")), "a recovered copy was not removed"
