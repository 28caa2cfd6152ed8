"""Issue 18 item 11: Open… starts in a real folder, no GUI message asks for a command line, the recovery
prompt names the plan and its time. Key presses go through QTest."""

from __future__ import annotations

import ast
import os
import time
from datetime import datetime
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

import llmplan
from llmplan.gui import dialogs, files
from llmplan.gui.wording import for_app

SRC = Path(llmplan.__file__).parent


def _cli_hints() -> list[str]:
    """Every string literal in the packages whose messages reach the app that names the command line."""
    found = []
    for pkg in ("core", "catalog", "formats", "plan", "fit", "hw", "gui"):
        for path in (SRC / pkg).rglob("*.py"):
            if path.name == "wording.py":
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" not in node.value.strip() \
                        and ("llmplan-cli" in node.value or "--set " in node.value):
                    # a bare command is an argument of a sentence like catalog.hardware._unknown's
                    found.append(node.value if not node.value.startswith("llmplan-cli") else
                                 f"unknown gpu id 'x' (list them with `{node.value}`)")
    return found


def test_the_unknown_gpu_note_gets_app_words():
    note = ("approximate: Foo GPU is not in the catalog (no match); memory is the device's own figure, speed figures "
            "are unavailable; `llmplan-cli catalog gpus` lists the entries to plan on instead (--set hardware.gpu=ID)")
    text = for_app(note)
    assert "llmplan-cli" not in text and "--set" not in text
    assert text.endswith("speed figures are unavailable; pick a GPU from the catalog in Hardware to plan on instead")
    closest = ("speed figures are unavailable; the closest catalog entries are a, b: plan on one with "
               "--set hardware.gpu=ID (or pick it in the app) to get speed figures")
    assert for_app(closest).endswith("the closest catalog entries are a, b: pick one in Hardware to get speed figures")


def test_no_message_literal_keeps_a_command_line_hint_in_the_app():
    hints = _cli_hints()
    assert len(hints) > 5  # the scan sees the CLI's hints (it would pass vacuously otherwise)
    left = [h for h in hints if "llmplan-cli" in for_app(h)]
    assert not left, left


def test_error_dialogs_say_it_in_app_words(monkeypatch):
    shown = []
    monkeypatch.setattr(dialogs.QMessageBox, "critical", lambda *a: shown.append(a))
    dialogs.error(None, "t", "x: not an llmplan plan; to import a model's config.json use "
                              "'llmplan-cli estimate --model PATH'")
    assert "llmplan-cli" not in shown[0][2] and "Import Model" in shown[0][2]


def test_open_starts_in_documents_then_in_the_last_folder(window, isolated, monkeypatch, qtbot):
    seen = []
    monkeypatch.setattr(dialogs, "open_paths", lambda parent, title, filters, folder="": seen.append(folder) or [])
    docs = isolated / "Documents"
    docs.mkdir()
    monkeypatch.setattr("platformdirs.user_documents_dir", lambda: str(docs))
    window.activateWindow()
    window.setFocus()
    QTest.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert seen == [str(docs)]
    plan = isolated / "plans" / "mine.llmplan"
    plan.parent.mkdir()
    files.save(window.state.doc, plan)
    assert window.open_path(plan)
    QTest.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert seen[-1] == str(plan.parent)
    assert "/" not in {s for s in seen}


def test_start_folder_never_falls_back_to_root(tmp_path, monkeypatch):
    monkeypatch.setattr("platformdirs.user_documents_dir", lambda: str(tmp_path / "missing"))
    assert files.start_folder(str(tmp_path / "gone")) == Path.home()
    assert files.start_folder("relative/path") == Path.home()


def test_recovery_prompt_names_the_plan_and_when_it_was_saved(window, isolated, monkeypatch, fake_dialogs):
    slot = isolated / "slot.llmplan"
    doc = window.state.doc.model_copy(update={"name": "70B on a 4090"})
    files.save(doc, slot)
    at = time.mktime(datetime.now().replace(hour=9, minute=41, second=0).timetuple())
    os.utime(slot, (at, at))
    monkeypatch.setattr(files, "recoverable", lambda problems=None: files.Recovery(doc, isolated / "mine.llmplan",
                                                                                   slot))
    fake_dialogs.answer = "No"
    window.offer_recovery()
    title, text = fake_dialogs.asked[-1]
    assert title == "Recover plan"
    assert "“70B on a 4090” (mine.llmplan), autosaved today at 09:41" in text


@pytest.mark.parametrize("days,expected", [(0, "autosaved today at 18:02"), (1, "autosaved yesterday at 18:02"),
                                           (5, "autosaved on 2026-11-20 at 18:02")])
def test_when_saved(days, expected):
    now = datetime(2026, 11, 25, 20, 0)
    at = datetime(2026, 11, 25 - days, 18, 2).timestamp()
    assert files.when_saved(at, now) == expected


def test_sequence_parallel_is_hidden_on_the_inference_tab(window):
    from PySide6.QtWidgets import QCheckBox

    box = window.findChild(QCheckBox, "parallelism.sequence_parallel")
    window.state.edit("workload", "pretrain")
    assert box.isVisibleTo(window)
    window.state.edit("workload", "inference")
    assert not box.isVisibleTo(window)


@pytest.mark.parametrize("key,stored", [("matmul", "5.0"), ("matmul", "fast"), ("network", "nan"),
                                        ("memory_bandwidth", "-0.2"), ("theme", "purple"), ("memory_unit", "KB")])
def test_a_bad_stored_preference_falls_back_with_a_notice(qtbot, settings, fake_dialogs, key, stored):
    from llmplan.gui.main_window import MainWindow
    from llmplan.gui.preferences import Preferences
    from llmplan.plan.planfile import dumps_plan, loads_plan

    settings.setValue(f"prefs/{key}", stored)
    settings.sync()
    w = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(w)
    w.show()
    assert getattr(w.prefs, key) == getattr(Preferences(), key)
    banner = w.notices()
    assert banner.isVisible() and f"Preference {key}" in banner.text.text() and stored in banner.text.text()
    out = w.state.evaluate_now()
    assert out.ok, out.message
    assert loads_plan(dumps_plan(w.state.doc)) == w.state.doc  # the plan can be saved and reopened
    assert Preferences.load(settings) == w.prefs  # the fallback was stored: the next start is clean
    w.state.undo_stack.setClean()


def test_good_preferences_load_quietly(settings):
    from llmplan.gui.preferences import Preferences

    Preferences("GB", "dark", 0.5, 0.8, 0.0).save(settings)
    problems: list[str] = []
    assert Preferences.load(settings, problems) == Preferences("GB", "dark", 0.5, 0.8, 0.0) and not problems


def test_an_unknown_model_id_reads_as_a_sentence_in_the_app():
    """trial33: a plan naming a model the catalog no longer has read "Cannot estimate: 'x' is not a model in the
    catalog. ... List them with, or pass a path to a config.json." (the command was cut out of the sentence)."""
    from llmplan.catalog.models import load_model_catalog
    from llmplan.errors import CatalogError

    with pytest.raises(CatalogError) as err:
        load_model_catalog().get("meta-llama/Llama-9-8B")
    text = for_app(str(err.value))
    assert "llmplan-cli" not in text and "List them with," not in text
    assert text.endswith("Pick one in the model list, or drop its config.json on the window."), text
