"""Screenshots of the desktop app for the docs: the main window (light and dark) and each tab.

    .venv/bin/python scripts/screenshots.py [OUT_DIR] [--sizes-only]   (default docs/screenshots)

The window at 1,024 × 700, 1,440 × 900 and 2,560 × 1,440 in light and dark (window-THEME-WxH.png),
then (unless --sizes-only) the tabs, panes, charts and dialogs the docs show.

Runs offscreen unless a display is set (under Xvfb: QT_QPA_PLATFORM=xcb xvfb-run -a ...).
Uses a throw-away settings file and data dir so the person's own state is untouched.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LLMPLAN_DATA_DIR", tempfile.mkdtemp(prefix="llmplan-shots-"))


def _settle(app, window, ms: int = 400) -> None:
    """At least ``ms``, then until the estimate, the chart sweep and the layout have settled (``gui.settle``, as
    ``llmplan --screenshot`` waits; up to 20 s)."""
    from llmplan.gui.settle import wait_settled

    wait_settled(app, window, at_least_ms=ms)


SIZES = ((1024, 700), (1440, 900), (2560, 1440))  # a small laptop, a common laptop, a large desktop (issue 18)


def _fresh_window(app, width: int, height: int):
    """A new window on the default plan with throw-away settings, shown at this size and settled."""
    from PySide6.QtCore import QSettings

    from llmplan.gui.main_window import MainWindow

    settings = QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, detect=False)
    w.resize(width, height)
    w.show()
    w.state.evaluate_now()
    _settle(app, w)
    _settle(app, w, 200)  # the columns are re-shared once the first charts are drawn
    return w


def window_sizes(out: Path) -> list[Path]:
    """The main window at each of ``SIZES`` in light and dark: ``window-{theme}-{W}x{H}.png``."""
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.theme import apply_theme

    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    written: list[Path] = []
    for theme in ("light", "dark"):
        apply_theme(app, theme)
        for width, height in SIZES:
            w = _fresh_window(app, width, height)
            path = out / f"window-{theme}-{width}x{height}.png"
            w.grab().save(str(path))
            written.append(path)
            w.state.undo_stack.setClean()
            w.close()
    return written


def main(out: Path) -> list[Path]:
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.theme import apply_theme

    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    written: list[Path] = []
    for theme in ("light", "dark"):
        apply_theme(app, theme)
        w = _fresh_window(app, 1280, 800)

        def shot(name: str, widget=None, w=w) -> None:
            _settle(app, w, 150)
            path = out / f"{name}.png"
            (widget or w).grab().save(str(path))
            written.append(path)

        shot(f"main-{theme}")
        if theme == "dark":
            w.state.undo_stack.setClean()
            w.close()
            continue
        w.workload.setCurrentIndex(0)
        shot("tab-inference")
        _scroll_to(w.workload.currentWidget(), "Cluster and power")
        shot("tab-inference-cluster-power", w.workload)
        _scroll_table_to(w.results.table, "Serving start-up (cold start)")
        shot("results-inference-beyond-gpu", w.right)  # verdict, figures table (scrolled) and charts
        w.workload.setCurrentIndex(2)
        w.state.edit_many({"hardware.gpus_per_node": 8, "hardware.nodes": 4, "hardware.network":
                           _first_network(), "model.id": "meta-llama/Llama-3.1-70B",
                           "parallelism.tp": 8, "parallelism.pp": 2, "parallelism.dp": 2,
                           "training.zero_stage": 1}, "70B on 32 GPUs")
        w.state.evaluate_now()
        shot("tab-pretrain-32gpus")
        shot("layout-editor-32gpus", w.layout_editor)
        _scroll_to(w.workload.currentWidget(), "Cluster and power")
        shot("tab-pretrain-cluster-power", w.workload)
        _scroll_table_to(w.results.table, "Checkpoints and failures")
        shot("results-pretrain-beyond-gpu", w.right)
        w.workload.currentWidget().verticalScrollBar().setValue(0)
        _scroll_table_to(w.results.table, "Model")
        w.state.edit("parallelism.tp", 3)
        w.state.evaluate_now()
        shot("invalid-layout")
        w.state.undo_stack.undo()
        w.state.evaluate_now()
        w.auto_search()
        dlg = w.auto_dialog
        for _ in range(600):
            if not dlg.running:
                break
            _settle(app, w, 100)
        dlg.resize(900, 420)
        shot("auto-search", dlg)
        dlg.close()
        for i in range(w.charts.count()):  # after Auto, so the Pareto chart has the planner's layouts
            w.charts.setCurrentIndex(i)
            shot(f"chart-{i + 1}", w.charts)
        w.charts.setCurrentIndex(0)
        w.workload.setCurrentIndex(1)
        _scroll_table_to(w.results.table, "Model")
        shot("tab-finetune")
        _this_machine(w)  # a recorded RTX 4090 machine, as background detection would report it
        _settle(app, w)
        w.this_machine.wait_idle()
        shot("this-machine")
        shot("results-this-machine", w.right)  # the first start on a 24 GB card: what was chosen, and why
        w.state.edit("training.seq_len", 8192)  # too long for 24 GB: one list of fixes, under "This machine"
        w.state.evaluate_now()
        _settle(app, w)
        w.this_machine.wait_idle()
        w.results.fixes.wait_idle()
        shot("results-this-machine-fixes", w.right)
        w.state.undo_stack.setClean()
        w.close()
    written.append(verdict_offload(app, out))
    return written


def verdict_offload(app, out: Path) -> Path:
    """The right-hand column (verdict, bars, figures, memory vs context chart) of an amber plan: a 70B
    Q4_K_M with llama.cpp on an RTX 4090 keeps 32 of 80 layers in CPU RAM (docs/gui.md), light theme."""
    from llmplan.gui.theme import apply_theme

    apply_theme(app, "light")
    w = _fresh_window(app, 1640, 900)  # the right-hand column about 575 px wide
    w.state.edit_many({"workload": "inference", "model.id": "meta-llama/Meta-Llama-3-70B",
                       "hardware.gpu": "nvidia-rtx-4090-24gb", "inference.engine": "llama.cpp",
                       "inference.weight_format": "q4_k_m"}, "70B Q4_K_M on a 4090")
    w.state.evaluate_now()
    _settle(app, w)
    w.results.fixes.wait_idle()
    _settle(app, w, 300)
    path = out / "verdict-offload.png"
    w.right.grab().save(str(path))
    w.state.undo_stack.setClean()
    w.close()
    return path


def _this_machine(w) -> None:
    """Start over on a new default plan (File ▸ New) and let "detection" find the recorded RTX 4090 of
    tests/data/hw (the real parsers read it), so the window shows its first start on that card."""
    from llmplan.hw.host import parse_meminfo
    from llmplan.hw.nvidia import parse_nvidia_smi_csv
    from llmplan.hw.types import DetectionReport, HostInfo

    hw = Path(__file__).resolve().parents[1] / "tests" / "data" / "hw"
    total, available = parse_meminfo((hw / "proc_meminfo.txt").read_text(encoding="utf-8"))
    report = DetectionReport(gpus=parse_nvidia_smi_csv((hw / "nvidia_smi_rtx4090.csv").read_text(encoding="utf-8")),
                             host=HostInfo("recorded host", 2, 2, total, available, "Linux"))
    w.state.undo_stack.setClean()  # File ▸ New asks nothing
    w.new_plan()
    w.charts.setCurrentIndex(0)
    w.hardware.detector.finished.emit(report, "")


def _scroll_to(area, accessible_name: str) -> None:
    """Scroll a workload form so the group with this accessible name is in view."""
    from PySide6.QtWidgets import QGroupBox

    for box in area.findChildren(QGroupBox):
        if box.accessibleName() == accessible_name:
            area.ensureWidgetVisible(box, 0, 0)
            bar = area.verticalScrollBar()
            bar.setValue(min(bar.maximum(), box.mapTo(area.widget(), box.rect().topLeft()).y()))
            return


def _scroll_table_to(table, section: str) -> None:
    from PySide6.QtWidgets import QAbstractItemView

    for i in range(table.topLevelItemCount()):
        if table.topLevelItem(i).text(0).strip() == section:
            table.scrollToItem(table.topLevelItem(i), QAbstractItemView.ScrollHint.PositionAtTop)
            return


def _first_network() -> str:
    from llmplan.gui import backend

    nets = [e.id for e in backend.network_entries() if getattr(e, "gbit_per_port", 0) > 0]
    return nets[0] if nets else "none"


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    target = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "docs" / "screenshots"
    shots = window_sizes(target)
    if "--sizes-only" not in sys.argv:  # --sizes-only: just the window at the three screen sizes
        shots += main(target)
    for p in shots:
        print(p)
