"""The desktop app's side of packaging (llmplan.gui.app): icon, version, files handed over by the OS."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import llmplan
from tests.packaging.conftest import EXAMPLES, LINUX, REPO

pytest.importorskip("PySide6.QtWidgets")

SERVE = next(p for p in EXAMPLES if p.name == "serve-llama-3.1-70b-tp4-h100.llmplan")


def run_app(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               LLMPLAN_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "llmplan.gui", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=90)


def test_version_flag(capsys):
    from llmplan.gui import app

    with pytest.raises(SystemExit) as stop:
        app.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"llmplan {llmplan.__version__}"


def test_desktop_file_name_is_the_installed_entry():
    from llmplan.gui import app

    assert (LINUX / f"{app.APP_ID}.desktop.in").is_file()  # Wayland matches windows to it by this id


def test_window_icon_comes_from_the_appicon_set(qtbot):
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QApplication, QWidget

    from llmplan.gui import app

    widget = QWidget()
    qtbot.addWidget(widget)
    app._set_icon(QApplication.instance(), widget)
    sizes = widget.windowIcon().availableSizes()
    assert QSize(16, 16) in sizes and QSize(512, 512) in sizes


def test_a_plan_handed_over_as_a_file_open_event_is_opened(qtbot, tmp_path, monkeypatch):
    """macOS Finder sends a double-clicked plan as QFileOpenEvent, not on the command line."""
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtGui import QFileOpenEvent
    from PySide6.QtWidgets import QApplication

    from llmplan.gui import app, dialogs
    from llmplan.gui.main_window import MainWindow

    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "data"))
    errors = []
    monkeypatch.setattr(dialogs, "error", lambda parent, title, text: errors.append(text))
    monkeypatch.setattr(dialogs, "ask", lambda *a, **k: "Discard")
    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), detect=False)
    qtbot.addWidget(window)
    handler = app._install_file_open_handler(QApplication.instance(), window)
    try:
        QCoreApplication.sendEvent(QApplication.instance(), QFileOpenEvent(str(SERVE)))
        assert errors == []
        assert window.state.path == SERVE
    finally:
        QApplication.instance().removeEventFilter(handler)
        window.state.undo_stack.setClean()
        if window.charts is not None:  # chart sweeps run in a worker: let them finish inside this test
            window.charts.wait_idle()


def test_throwaway_runs_print_messages_and_put_the_real_dialogs_back(capsys):
    from llmplan.gui import app, dialogs

    real = dialogs.error, dialogs.inform, dialogs.ask
    with app._messages_on_stderr(True) as errors:
        dialogs.error(None, "Cannot open plan", "x.llmplan: no such file")
        assert dialogs.ask(None, "Unsaved changes", "Save?") == "Discard"
    assert errors == ["Cannot open plan: x.llmplan: no such file"]
    assert "Cannot open plan: x.llmplan: no such file" in capsys.readouterr().err
    assert (dialogs.error, dialogs.inform, dialogs.ask) == real


def test_self_test_with_a_plan_prints_its_verdict(tmp_path):
    result = run_app("--self-test", str(SERVE), tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Fits:" in result.stdout


def test_self_test_with_an_unreadable_plan_fails_instead_of_waiting_on_a_dialog(tmp_path):
    broken = tmp_path / "broken.llmplan"
    broken.write_text("{not json")
    result = run_app("--self-test", str(broken), tmp_path=tmp_path)
    assert result.returncode == 1
    assert "Cannot open plan" in result.stderr and "broken.llmplan" in result.stderr


def test_a_missing_system_library_gets_install_advice_not_pip_advice():
    from llmplan.gui import app

    advice = app._qt_import_advice(ImportError("libGL.so.1: cannot open shared object file: No such file or directory"))
    assert "apt install libgl1 libegl1" in advice and "pip" not in advice
    assert "pip install 'llmplan[gui]'" in app._qt_import_advice(ImportError("No module named 'PySide6'"))
