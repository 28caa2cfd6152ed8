"""GUI speed: process start to first paint, knob change to verdict shown, knob change to charts redrawn.

Prints figures, each beside its target (issue 18: medians of knob → verdict ≤ 10 ms and knob → charts
≤ 50 ms, start to first paint ≤ 1.5 s); nothing is asserted, timings depend on the machine and its load.
Run: ``.venv/bin/python benchmarks/bench_gui.py`` (``make bench`` runs it through benchmarks/run.py).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
TARGET_PAINT_S, TARGET_VERDICT_MS, TARGET_CHARTS_MS = 1.5, 10, 50  # issue 18 "Done when"


def _children_cpu_s() -> float:
    try:
        import resource
    except ImportError:  # Windows: no per-child CPU clock; the wall times still print
        return 0.0
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


CPU_S: dict[str, list[float]] = {}  # CPU seconds beside each wall-clock figure: a loaded machine inflates
# the wall times (other jobs take the cores), much less the CPU time the work itself costs


def startup_seconds(runs: int = 3, compiled: bool = False) -> tuple[list[float], list[float]]:
    """(whole process wall time, in-process time from start to the window's first paint with its first
    estimate) of `python -m llmplan.gui --self-test` (start, build window, estimate, paint, exit). The in-process
    time counts from the first line of the ``llmplan.gui`` package (``llmplan.gui.STARTED``), so PySide6's
    import is in it: until 2026-11-28 it counted from ``gui/app.py``'s import, after Qt's.
    The CPU seconds of each whole process go to ``CPU_S["start"]`` (``CPU_S["start compiled"]``).

    ``compiled``: with llmplan's modules compiled to bytecode beforehand, as an installed app has them
    (pip compiles .pyc on install, the bundle ships them). Otherwise the environment decides: with
    PYTHONDONTWRITEBYTECODE set (as on the development VMs) a start compiles the modules that have no
    current bytecode (``make setup`` compiles llmplan's into its ``__pycache__`` folders; a module
    changed since is compiled again on every start)."""
    walls, ups = [], []
    env = dict(os.environ, LLMPLAN_DATA_DIR=tempfile.mkdtemp())
    key = "start compiled" if compiled else "start"
    CPU_S[key + " paint"] = []  # the process's CPU seconds from its clock's start to the first paint (the self-test says)
    CPU_S[key + " qt"] = []  # of them, PySide6's import (the old clock, before 2026-11-28, started after it)
    if compiled:  # the bytecode goes to a folder of its own, never into the source tree
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp()
        subprocess.run([sys.executable, "-m", "llmplan.gui", "--self-test"], check=True, env=env,
                       capture_output=True, text=True)  # this first run writes the bytecode
    CPU_S[key] = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), _children_cpu_s()
        done = subprocess.run([sys.executable, "-m", "llmplan.gui", "--self-test"], check=True, env=env,
                              capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        CPU_S[key].append(_children_cpu_s() - c0)
        found = re.search(r"first paint at ([0-9.]+) s(?: \(CPU ([0-9.]+) s\))?", done.stdout)
        if found:
            ups.append(float(found.group(1)))
            if found.group(2):
                CPU_S[key + " paint"].append(float(found.group(2)))
        qt = re.search(r"PySide6's import [0-9.]+ s \(CPU ([0-9.]+) s\)", done.stdout)
        if qt:
            CPU_S[key + " qt"].append(float(qt.group(1)))
    return walls, ups


def knob_to_redraw(steps: int = 15) -> tuple[list[float], list[float], list[float]]:
    """(estimate ms, knob→verdict ms, knob→charts redrawn ms) for sequence-length changes. The CPU time
    of the UI thread for knob→verdict goes to ``CPU_S["verdict"]``, the process's (UI thread and chart
    worker) for knob→charts to ``CPU_S["charts"]``."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp())
    os.environ["LLMPLAN_DATA_DIR"] = str(tmp / "data")
    w = MainWindow(settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), detect=False)
    w.show()
    app.processEvents()
    est_ms, verdict_ms, charts_ms = [], [], []
    CPU_S["verdict"], CPU_S["charts"] = [], []
    for i in range(steps):
        value = 1024 * (1 + i % 8)
        path = "training.seq_len" if w.state.doc.workload != "inference" else "inference.prompt_tokens"
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        w.state.edit(path, value)
        w.state.evaluate_now()  # the debounce would fire 30 ms later; measure the work itself
        t1 = time.perf_counter()
        CPU_S["verdict"].append(time.thread_time() - c0)
        done = []
        w.charts.redrawn.connect(lambda _s, d=done: d.append(time.perf_counter()))
        w.charts._timer.setInterval(0)
        deadline = time.perf_counter() + 10
        while not done and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        w.charts.redrawn.disconnect()
        est_ms.append((w.state.outcome.elapsed_s) * 1e3)
        verdict_ms.append((t1 - t0) * 1e3)
        if done:
            charts_ms.append((done[0] - t0) * 1e3)
            CPU_S["charts"].append(time.process_time() - p0)  # includes ~1 ms of polling per wall ms waited
    w.state.undo_stack.setClean()
    w.close()
    return est_ms, verdict_ms, charts_ms


WORKLOAD_EDITS = {  # the plan the Workload tabs make of the default fine-tune plan, and the knob turned
    "fine-tune": ({}, "training.seq_len"),
    "pre-train": ({"workload": "pretrain", "training.method": "full", "training.tokens": 1e12}, "training.seq_len"),
    "inference": ({"workload": "inference"}, "inference.prompt_tokens"),
}


def knob_to_verdict_per_workload(steps: int = 40) -> dict[str, float]:
    """UI-thread CPU ms (median) from a knob change to the verdict shown, the charts off, for a plan of each
    workload (``WORKLOAD_EDITS``): each has its own tab of editors and its own results rows."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    out = {}
    for name, (changes, path) in WORKLOAD_EDITS.items():
        tmp = Path(tempfile.mkdtemp())
        w = MainWindow(settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), detect=False,
                       charts=False)
        w.show()
        if changes:
            w.state.edit_many(changes, name)
        if not w.state.evaluate_now().ok:
            raise RuntimeError(f"the {name} plan gives no estimate: {w.state.outcome.message}")
        app.processEvents()
        cpu = []
        for i in range(steps):
            c0 = time.thread_time()
            w.state.edit(path, 1024 * (1 + i % 8))
            w.state.evaluate_now()
            cpu.append(time.thread_time() - c0)
            app.processEvents()  # the repaint and whatever was posted, before the next knob change
        out[name] = statistics.median(cpu[steps // 4:]) * 1e3  # the first quarter warms up
        w.state.undo_stack.setClean()
        w.close()
        app.processEvents()
    return out


def chart_redraws(cycles: int = 30) -> tuple[list[float], list[float], float]:
    """(CPU ms of the redraws that add or drop the legend's entries, CPU ms of those that keep them, paints
    per redraw) for the memory chart drawn and painted on the UI thread, over a cycle of eight knob values
    whose series (made up here, shaped as a context-length sweep) move the axes each time and show the
    legend on six of them ("does not fit" points), off on two, as the default plan's context sweep does
    over ``knob_to_redraw``'s eight values. The sweep is left out: this is the part of knob → charts that
    the legend and the axes cost. Each redraw's CPU time runs until the paint and what it posts are done."""
    import dataclasses

    from PySide6.QtCore import QEvent, QObject, QSettings
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.main_window import MainWindow
    from llmplan.gui.sweeps import Series

    class Paints(QObject):
        count = 0

        def eventFilter(self, _obj, event):  # Qt's name for the hook
            self.count += event.type() == QEvent.Type.Paint
            return False

    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp())
    w = MainWindow(settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), detect=False)
    w.show()
    w.state.evaluate_now()
    w.charts.wait_idle()
    deadline = time.perf_counter() + 10
    while w.charts.last is None and time.perf_counter() < deadline:  # the first sweep's result, queued
        app.processEvents()
    if w.charts.last is None:
        raise RuntimeError("the charts never drew: the default plan gave no estimate")
    charts, gib, xs = w.charts, 2**30, (1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
    charts.setCurrentWidget(charts.seq_plot)
    series = [Series("Memory vs context length", "context (tokens)", "memory per GPU", xs,
                     tuple((20 + 10 * k) * gib * x / 8192 for x in xs), 4096.0, 35 * gib,
                     fits=tuple((20 + 10 * k) * x / 8192 <= 35 or k >= 6 for x in xs))
              for k in range(8)]
    paints = Paints()
    charts.seq_plot.viewport().installEventFilter(paints)
    changed, same, shown = [], [], None
    for i in range(8 * (cycles + 1)):
        charts.last = dataclasses.replace(charts.last, memory_vs_seq=series[i % 8])
        c0 = time.process_time()
        charts.draw(charts.last)
        for _ in range(4):  # the paint and whatever it posts (a second paint, a relayout), before the next knob
            app.processEvents()
            time.sleep(0.005)
        ms = (time.process_time() - c0) * 1e3
        entries = len(charts.seq_chart.legend.items)
        if i >= 8:  # the first cycle warms up
            (changed if entries != shown else same).append(ms)
        else:
            paints.count = 0
        shown = entries
    per_redraw = paints.count / (8 * cycles)
    w.state.undo_stack.setClean()
    w.close()
    app.processEvents()
    return changed, same, per_redraw


MEMORY_PROBE = r'''
import os, sys, tempfile, time
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from llmplan.gui.main_window import MainWindow
app = QApplication([])
tmp = tempfile.mkdtemp()
w = MainWindow(settings=QSettings(tmp + "/s.ini", QSettings.Format.IniFormat), detect=False)
w.show()
app.processEvents()
w.state.evaluate_now()
if w.charts is not None:
    w.charts.wait_idle()
for _ in range(20):
    app.processEvents()
    time.sleep(0.01)
try:
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    rss, peak = (int(status[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM"))
except OSError:  # not Linux: the peak only (ru_maxrss is KiB on Linux, bytes on macOS)
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    rss = peak
print("MEMORY", rss, peak)
w.state.undo_stack.setClean()
w.close()
'''


def memory_bytes() -> tuple[int, int]:
    """(RSS now, peak RSS) of a GUI process after start-up, one estimate and the charts drawn."""
    env = dict(os.environ, LLMPLAN_DATA_DIR=tempfile.mkdtemp())
    done = subprocess.run([sys.executable, "-c", MEMORY_PROBE], check=True, env=env, capture_output=True, text=True)
    found = re.search(r"MEMORY (\d+) (\d+)", done.stdout)
    if not found:
        raise RuntimeError(f"memory probe printed nothing: {done.stderr[-500:]}")
    return int(found.group(1)), int(found.group(2))


def knob_to_this_machine(steps: int = 8) -> list[float]:
    """ms from a knob change to the "This machine" verdict shown (background ``fit_this_machine``
    with its nearest-change search), on the recorded RTX 4090 of tests/data/hw/."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.main_window import MainWindow
    from llmplan.hw.host import parse_meminfo
    from llmplan.hw.nvidia import parse_nvidia_smi_csv
    from llmplan.hw.types import DetectionReport, HostInfo

    hw = Path(__file__).resolve().parents[1] / "tests" / "data" / "hw"
    total, available = parse_meminfo((hw / "proc_meminfo.txt").read_text(encoding="utf-8"))
    report = DetectionReport(gpus=parse_nvidia_smi_csv((hw / "nvidia_smi_rtx4090.csv").read_text(encoding="utf-8")),
                             host=HostInfo("recorded host", 2, 2, total, available, "Linux"))
    app = QApplication.instance() or QApplication([])
    tmp = Path(tempfile.mkdtemp())
    w = MainWindow(settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), detect=False, charts=False)
    w.show()
    w.hardware.detector.finished.emit(report, "")
    w.this_machine.wait_idle()
    out = []
    for i in range(steps):
        t0 = time.perf_counter()
        w.state.edit("training.seq_len", 1024 * (2 + i % 4))
        w.this_machine._timer.setInterval(0)  # measure the work, not the debounce
        w.this_machine.request()
        w.this_machine.wait_idle()
        out.append((time.perf_counter() - t0) * 1e3)
    w.state.undo_stack.setClean()
    w.close()
    app.processEvents()
    return out


def _load() -> str:
    """The 1-minute load average and the core count: a load far above the cores means the wall times
    above include waiting for a core."""
    try:
        return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return "unknown"


def main() -> None:
    starts, ups = startup_seconds()
    if ups:
        print(f"start-up to first paint with the first estimate (in-process, after Python start), "
              f"{len(ups)} runs: median {statistics.median(ups):.2f} s (target <= {TARGET_PAINT_S} s)"
              + (f", CPU {statistics.median(CPU_S['start paint']):.2f} s" if CPU_S["start paint"] else "")
              + (f" (PySide6's import {statistics.median(CPU_S['start qt']):.2f} s of it)" if CPU_S["start qt"] else ""))
    print(f"whole --self-test process (Python start, window, estimate, exit), {len(starts)} runs: "
          f"median {statistics.median(starts):.2f} s, min {min(starts):.2f} s; "
          f"CPU {statistics.median(CPU_S['start']):.2f} s")
    starts_c, ups_c = startup_seconds(compiled=True)
    if ups_c:
        print(f"the same with llmplan's bytecode compiled beforehand (as installed): first paint median "
              f"{statistics.median(ups_c):.2f} s; whole process {statistics.median(starts_c):.2f} s, "
              f"CPU {statistics.median(CPU_S['start compiled']):.2f} s")
    est, verdict, charts = knob_to_redraw()
    print(f"estimate() of the plan: median {statistics.median(est):.1f} ms")
    print(f"knob change -> verdict shown: median {statistics.median(verdict):.1f} ms "
          f"(target <= {TARGET_VERDICT_MS} ms), max {max(verdict):.1f} ms over {len(verdict)} changes; "
          f"UI-thread CPU {statistics.median(CPU_S['verdict']) * 1e3:.1f} ms")
    if charts:
        print(f"knob change -> charts redrawn (sweeps off the UI thread): median {statistics.median(charts):.1f} ms "
              f"(target <= {TARGET_CHARTS_MS} ms), max {max(charts):.1f} ms over {len(charts)} changes; "
              f"process CPU {statistics.median(CPU_S['charts']) * 1e3:.1f} ms")
    else:
        print("charts never redrew: the default plan gave no estimate")
    per_workload = knob_to_verdict_per_workload()
    print("knob change -> verdict shown, charts off, UI-thread CPU median per workload: "
          + ", ".join(f"{name} {ms:.1f} ms" for name, ms in per_workload.items()))
    changed, same, paints = chart_redraws()
    print(f"memory chart redrawn and painted (UI thread, no sweep): CPU median {statistics.median(same):.1f} ms "
          f"with the legend unchanged, {statistics.median(changed):.1f} ms where its entries change; "
          f"{paints:.2f} paints per redraw")
    print(f"load average while measuring: {_load()}")
    rss, peak = memory_bytes()
    print(f"GUI process after start + estimate + charts: RSS {rss / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB")
    fit = knob_to_this_machine()
    print(f"knob change -> 'This machine' verdict and nearest changes shown (background): "
          f"median {statistics.median(fit):.0f} ms, max {max(fit):.0f} ms over {len(fit)} changes")


if __name__ == "__main__":
    main()
