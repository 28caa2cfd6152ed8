"""GUI test fixtures: isolated settings and data dir, no real dialogs, a ready window.

Dialogs are routed through ``llmplan.gui.dialogs``; here they are replaced by
recorders whose answers a test sets, so no test can block on a modal box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6.QtWidgets")


class FakeDialogs:
    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []
        self.infos: list[tuple[str, str]] = []
        self.asked: list[tuple[str, str]] = []
        self.answer = "Discard"
        self.open_result: list[Path] = []
        self.save_result: Path | None = None
        self.folder_result: Path | None = None


@pytest.fixture
def fake_dialogs(monkeypatch):
    from llmplan.gui import dialogs

    fake = FakeDialogs()
    monkeypatch.setattr(dialogs, "error", lambda parent, title, text: fake.errors.append((title, text)))
    monkeypatch.setattr(dialogs, "inform", lambda parent, title, text: fake.infos.append((title, text)))

    def ask(parent, title, text, buttons=("Save", "Discard", "Cancel")):
        fake.asked.append((title, text))
        return fake.answer

    monkeypatch.setattr(dialogs, "ask", ask)
    monkeypatch.setattr(dialogs, "open_paths", lambda *a, **k: list(fake.open_result))
    monkeypatch.setattr(dialogs, "save_path", lambda *a, **k: fake.save_result)
    monkeypatch.setattr(dialogs, "open_folder", lambda *a, **k: fake.folder_result)
    return fake


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture
def settings(isolated):
    from PySide6.QtCore import QSettings

    return QSettings(str(isolated / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window(qtbot, settings, fake_dialogs):
    from llmplan.gui.main_window import MainWindow

    w = MainWindow(settings=settings, detect=False)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.state.undo_stack.setClean()  # closing must not prompt
    if w.charts is not None:
        w.charts.wait_idle()
    for worker in (w.results.fixes, w.this_machine):  # nothing of this window still computing in a thread
        pool = getattr(worker, "_pool", None)
        if pool is not None:
            pool.waitForDone(60_000)
