"""Every performance figure llmplan promises, measured on this machine, in one table (``make bench``).

Each row comes from a function of one of the benchmarks beside this file (each still runs alone:
``.venv/bin/python benchmarks/bench_gui.py``); this script only calls them and prints a Markdown
table with the figure, what was measured, what the docs promise and which script measured it.
Nothing is asserted: timings depend on the machine and on what else runs on it.

    .venv/bin/python benchmarks/run.py [--skip-gui]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

Row = tuple[str, str, str, str]  # figure, measured, promised, measured by


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def gui_rows() -> list[Row]:
    import bench_gui

    starts, ups = bench_gui.startup_seconds(runs=3)
    _, ups_c = bench_gui.startup_seconds(runs=3, compiled=True)
    est, verdict, charts = bench_gui.knob_to_redraw(steps=15)
    rss, peak = bench_gui.memory_bytes()
    fit = bench_gui.knob_to_this_machine()
    per_workload = bench_gui.knob_to_verdict_per_workload()
    src = "bench_gui.py"
    cpu = bench_gui.CPU_S
    rows = [
        ("start-up to first paint with the first estimate (in-process from the `llmplan.gui` package's first line, "
         "PySide6's import included; median of 3; its CPU time)",
         (f"{statistics.median(ups):.2f} s" + (f" (CPU {statistics.median(cpu['start paint']):.2f} s"
                                               + (f"; PySide6's import {statistics.median(cpu['start qt']):.2f} s"
                                                  if cpu.get("start qt") else "") + ")"
                                               if cpu.get("start paint") else "")) if ups else "not reported",
         "≤ 1.5 s", src),
        ("start-up to first paint, llmplan's modules compiled to bytecode beforehand as in an installed app "
         "(pip and the bundle ship .pyc, `make setup` compiles them; the row above compiles again, on every start "
         "where PYTHONDONTWRITEBYTECODE is set, the modules changed since) (median of 3; whole process CPU time)",
         f"{statistics.median(ups_c):.2f} s (CPU {statistics.median(cpu['start compiled']):.2f} s)" if ups_c
         else "not reported", "—", src),
        ("whole `llmplan --self-test` process: Python start, window, estimate, exit (median of 3; its CPU time)",
         f"{statistics.median(starts):.2f} s (CPU {statistics.median(cpu['start']):.2f} s)", "—", src),
        ("estimate() of the GUI's default plan, as the window runs it (median of 15)",
         f"{statistics.median(est):.1f} ms", "well under 10 ms (docs/gui.md)", src),
        ("knob change → verdict shown (median of 15; the UI thread's CPU time)",
         f"{statistics.median(verdict):.1f} ms (CPU {statistics.median(cpu['verdict']) * 1e3:.1f} ms)", "≤ 10 ms", src),
        ("knob change → verdict shown, charts off, per workload's plan (the UI thread's CPU time, median of 30)",
         ", ".join(f"{name} {ms:.1f} ms" for name, ms in per_workload.items()), "≤ 10 ms", src),
        ("knob change → charts redrawn: the work, debounce timers off (the app first waits 30 ms for more knob "
         "changes, the charts 60 ms more) (median of 15)",
         f"{statistics.median(charts):.1f} ms (max {max(charts):.0f} ms)" if charts else "charts never redrew",
         "≤ 50 ms", src),
        ("knob change → 'This machine' verdict and nearest changes shown, in the background "
         "(recorded RTX 4090; median of 8)", f"{statistics.median(fit):.0f} ms (max {max(fit):.0f} ms)", "—", src),
        ("GUI process memory after start + estimate + charts: RSS / peak RSS",
         f"{rss / 2**20:.0f} MiB / {peak / 2**20:.0f} MiB", "—", src),
    ]
    return rows


def engine_rows() -> list[Row]:
    import bench_evaluate
    import bench_inference
    import bench_training

    plans = bench_evaluate.plan_evaluation_ms()
    tr = bench_training.measure()
    fresh = bench_training.measure_new_objects()
    knob = bench_training.measure_changed_knob()
    inf = bench_inference.measure()
    rows = [("one training estimate, Llama-3-8B on 16 H100, TP2 PP2 DP4, the same scenario again (median of 30 × 200)",
             f"{tr['median_ms']:.3f} ms (CPU {tr['cpu_ms']:.3f} ms)", "< 0.2 ms", "bench_training.py"),
            ("the same estimate of a scenario built afresh from its dump (new spec objects: no cache keyed by an "
             "object's identity can answer; what a plan resolved from scratch costs) (median of 15 × 200)",
             f"{fresh['median_ms']:.3f} ms", "—", "bench_training.py"),
            ("the same estimate with training.tokens changed on every call (every cache keyed by the training "
             "settings misses: what an edit of a training knob costs) (median of 15 × 200)",
             f"{knob['median_ms']:.3f} ms", "—", "bench_training.py"),
            ("one inference estimate, Llama-3-8B on an H100 (median of 50)", f"{inf['estimate_ms']:.3f} ms",
             "—", "bench_inference.py"),
            ("serving search: 2 GPU types and their mixes, rate 20/s with SLOs (median of 10)",
             f"{inf['serving_search_ms']:.1f} ms", "—", "bench_inference.py"),
            ("one plan evaluation: resolve, the default policy's estimate, the system report, a new document each "
             "call, Llama-3-8B (median of 15 × 40; CPU time)",
             ", ".join(f"{name} {wall:.2f} ms (CPU {cpu:.2f} ms)" for name, (cpu, wall) in plans.items()), "—",
             "bench_evaluate.py")]
    return rows


def search_rows() -> list[Row]:
    import bench_search

    promised = {("GPT-3 175B on 1,024 A100", "full engine"): "< 1 s",
                ("Llama 3.1 405B on 16,384 H100", "full engine"): "< 1 s"}
    rows: list[Row] = []
    rates = []
    for r in bench_search.measure(repeat=5):
        key = (r["case"], r["scope"])
        if r["scope"] == "full engine":
            what = f"full search, {r['case']}: quick model + full engine refining {r['refined']} (median of 5)"
        else:
            what = f"search, {r['case']}, {r['scope']}: {r['evaluated']:,} layouts (median of 5)"
            rates.append(r["layouts_per_s"])
        rows.append((what, _ms(r["wall_s"]), promised.get(key, "—"), "bench_search.py"))
    rows.insert(0, (f"layouts/s in the search (quick model; range over the {len(rates)} searches)",
                    f"{min(rates) / 1e6:.1f}–{max(rates) / 1e6:.1f} M/s", "—",
                    "bench_search.py"))
    return rows


def detect_rows() -> list[Row]:
    import bench_detect

    d = bench_detect.measure(runs=5)
    return [("hardware detection `detect_all()` (median of 5; worst)",
             f"{d['median_ms']:.1f} ms (worst {d['worst_ms']:.0f} ms)", "well under 1 s", "bench_detect.py")]


def watch_rows(gui: bool) -> list[Row]:
    import bench_watch

    c = bench_watch.sampler_cost()
    rows = [("Watch sampler: cost per sample per GPU, 8 GPUs through the tests' fake NVML (llmplan's own "
             "work; a real driver adds its calls' time) (median of 2,000)", f"{c['per_gpu_us']:.0f} µs", "≤ 1 ms",
             "bench_watch.py"),
            ("Watch sampler: host metrics from /proc, per sample (median of 200)", f"{c['host_us']:.0f} µs", "—",
             "bench_watch.py")]
    if gui:
        p = bench_watch.panel_cost()
        rows += [("Watch panel: update per tick, 8 GPUs + host, 5-min window of 1 s samples (78 curves) "
                  "(median of 60)", f"{p['tick_ms']:.1f} ms (max {p['tick_max_ms']:.0f} ms)", "≤ 5 ms",
                  "bench_watch.py"),
                 ("Watch panel: Qt's repaint of the changed charts after a tick, 1280×1400 px offscreen (median of 60)",
                  f"{p['paint_ms']:.0f} ms", "—", "bench_watch.py")]
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-gui", action="store_true", help="leave out the GUI rows (no PySide6 needed)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rows: list[Row] = []
    if not args.skip_gui:
        rows += gui_rows()
    rows += engine_rows() + search_rows() + detect_rows() + watch_rows(gui=not args.skip_gui)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"llmplan benchmarks — {now}; {platform.machine()} {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{platform.system()} (timings vary with machine load)\n")
    print("| figure | measured | promised | by |")
    print("|---|---:|---:|---|")
    for figure, measured, promised, by in rows:
        print(f"| {figure} | {measured} | {promised} | `benchmarks/{by}` |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{len(rows)} figures in {time.perf_counter() - t0:.0f} s; load average {load:.1f} on {os.cpu_count()} "
          f"cores at the end (far above the cores: the wall times include waiting for one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
