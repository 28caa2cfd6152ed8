"""``llmplan --screenshot`` and ``scripts/screenshots.py`` wait until the window has settled (``gui.settle``).

The app's ``--screenshot`` grabbed the window 300 ms after start (new-user trial, 2026-11-28): the charts had
not drawn yet, or had drawn and not yet re-laid out their axes, so the PNG showed an empty chart pane or the
y-axis title over the tick labels. Settled: nothing pending, no sweep running, no layout change for 250 ms.
The test of "settled" is that the picture is final: a grab then and a grab a second later are the same pixels.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from llmplan.gui.settle import after_settled, background_work, wait_settled


def _run_events(ms: int) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def test_a_settled_window_has_drawn_its_charts_and_stays_the_same(window):
    window.resize(1280, 800)
    assert wait_settled(QApplication.instance(), window)
    assert not background_work(window) and window.charts.last is not None  # the chart pane has its curves
    first = window.grab().toImage()
    _run_events(1000)
    assert window.grab().toImage() == first


def test_the_screenshot_driver_calls_back_once_settled(window, qtbot):
    called: list[bool] = []
    after_settled(QApplication.instance(), window, called.append)
    qtbot.waitUntil(lambda: bool(called), timeout=30_000)
    assert called == [True] and not background_work(window) and window.charts.last is not None


def test_llmplan_screenshot_writes_the_settled_window(tmp_path):
    out = tmp_path / "window.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LLMPLAN_DATA_DIR": str(tmp_path / "data")}
    run = subprocess.run([sys.executable, "-m", "llmplan.gui", "--screenshot", str(out), "--no-detect"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "still busy" not in run.stderr
    image = QImage(str(out))
    assert not image.isNull() and image.width() >= 800 and image.height() >= 600
