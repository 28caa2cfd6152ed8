"""Picker speed: one key typed into the model or GPU search box → the list shown again.

Types each character of a search with QTest into the window's pickers (offscreen) and prints the median
and the slowest keystroke. The pickers filter a proxy over rows built once (issue 18); a keystroke's
cost is the filter, the view's relayout and the plan's row being found again. Nothing is asserted:
timings depend on the machine and its load.
Run: ``.venv/bin/python benchmarks/bench_pickers.py``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SEARCHES = {"models": ("qwen3 8b", "llama 70", "mistral"), "GPUs": ("h100 sxm", "rtx 4090", "mi300x")}


def keystroke_ms(rounds: int = 5) -> dict[str, tuple[list[float], list[float]]]:
    """(wall, CPU) milliseconds per typed key (and per Ctrl+A, Delete to clear), per picker. The CPU time
    is the process's (all threads): on a loaded machine it moves less than the wall time."""
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LLMPLAN_DATA_DIR"] = os.path.join(tmp, "data")
        from llmplan.gui.main_window import MainWindow

        w = MainWindow(settings=QSettings(os.path.join(tmp, "s.ini"), QSettings.Format.IniFormat), detect=False)
        w.show()
        app.processEvents()
        for _ in range(20):  # let the first estimate and chart sweeps finish before timing
            app.processEvents()
            time.sleep(0.05)
        out: dict[str, tuple[list[float], list[float]]] = {}
        for name, search in (("models", w.models.search), ("GPUs", w.hardware.search)):
            times, cpu = out.setdefault(name, ([], []))
            search.setFocus()
            for _ in range(rounds):
                for words in SEARCHES[name]:
                    for key in [*words, None]:
                        t0, c0 = time.perf_counter(), time.process_time()
                        if key is None:  # clear the box: every row comes back
                            QTest.keyClick(search, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
                            QTest.keyClick(search, Qt.Key.Key_Delete)
                        else:
                            QTest.keyClicks(search, key)
                        app.processEvents()
                        times.append((time.perf_counter() - t0) * 1e3)
                        cpu.append((time.process_time() - c0) * 1e3)
        w.state.undo_stack.setClean()
        w.close()
    return out


def main() -> None:
    for name, (times, cpu) in keystroke_ms().items():
        print(f"{name} picker: one key → list shown: median {statistics.median(times):.2f} ms "
              f"(CPU {statistics.median(cpu):.2f} ms), slowest {max(times):.1f} ms ({len(times)} keys)")


if __name__ == "__main__":
    main()
