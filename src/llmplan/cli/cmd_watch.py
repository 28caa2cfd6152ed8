"""``llmplan-cli watch``: live GPU and host telemetry beside a plan, the bottleneck named, a run file left behind.

On a terminal it redraws a compact table each sample; piped (or with ``--json``) it prints one JSON
object a line. It stops on Ctrl-C (or SIGTERM), after ``--duration``, or when the ``--pid`` process
exits, then prints the diagnosis and writes the run file ``estimate --compare-run`` reads.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from llmplan.errors import InputError
from llmplan.watch import fmt
from llmplan.watch.diagnose import PlanLink, diagnose, summary_lines
from llmplan.watch.metrics import GPU_METRICS, HOST_METRICS
from llmplan.watch.runfile import run_record, write_csv, write_run_file
from llmplan.watch.sampler import (
    DEFAULT_INTERVAL_S,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
    Sampler,
    Snapshot,
    check_interval,
)

LIVE_WINDOW_S = 120.0  # the live verdicts look at the last two minutes (every rule's minimum fits in it)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("watch", help="watch a running job: GPU and host telemetry, the bottleneck, a run file")
    p.add_argument("--plan", metavar="FILE", help="a .llmplan file: show its predicted peak and compare the run")
    p.add_argument("--pid", type=int, metavar="N", help="watch this process: its GPU memory alone; stop when it exits")
    p.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S, metavar="S",
                   help=f"seconds between samples, {MIN_INTERVAL_S:g}–{MAX_INTERVAL_S:g} (default {DEFAULT_INTERVAL_S:g})")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: Ctrl-C or --pid exit)")
    p.add_argument("--csv", metavar="FILE", help="also write every sample to FILE as CSV")
    p.add_argument("--json", action="store_true", help="print JSON lines even on a terminal")
    p.add_argument("--run-file", metavar="FILE",
                   help="where to write the run file (default: llmplan-run-<UTC time>.json here)")
    p.add_argument("--no-run-file", action="store_true", help="do not write a run file")
    steps = p.add_mutually_exclusive_group()
    steps.add_argument("--steps", type=int, metavar="N", help="steps the job ran while watched: the run file gets "
                       "step_time_s = duration / N")
    steps.add_argument("--steps-per-s", type=float, metavar="R", help="the job's step rate: step_time_s = 1 / R")
    p.set_defaults(handler=run_watch)


def _check(args: argparse.Namespace) -> None:
    check_interval(args.interval)
    if args.duration is not None and not (math.isfinite(args.duration) and args.duration > 0):
        raise InputError(f"--duration must be a positive number of seconds, got {args.duration:g}")
    if args.steps is not None and args.steps <= 0:
        raise InputError(f"--steps must be a positive whole number, got {args.steps}")
    if args.steps_per_s is not None and not (math.isfinite(args.steps_per_s) and args.steps_per_s > 0):
        raise InputError(f"--steps-per-s must be a positive number, got {args.steps_per_s:g}")
    for flag, path in (("--run-file", None if args.no_run_file else args.run_file), ("--csv", args.csv)):
        if path:
            _check_writable(flag, Path(path))


def _check_writable(flag: str, path: Path) -> None:
    """Before the watch starts: the files are written when it stops, so a path that cannot be written lost the whole
    watch ("File exists (bad.pdf)" after an hour of samples, trial33). Its folder (made if missing) must be one."""
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a folder; give a file name")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{flag} {path}: {folder} is a file, not a folder; give a path in a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: the folder {folder} cannot be written to; give a path you can write")


def _plan(path: str | None) -> PlanLink | None:
    if not path:
        return None
    from llmplan.plan.planfile import load_plan
    from llmplan.watch.plan import plan_link

    return plan_link(load_plan(path), label=f"the plan ({Path(path).name})", with_changes=True)


def _value(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def json_line(snap: Snapshot, plan: PlanLink | None) -> dict:
    """The newest sample of every GPU and the host, with the verdicts active now (null = n/a)."""
    t = snap.now - snap.started if math.isfinite(snap.now) else 0.0
    gpus = []
    for g in snap.gpus:
        row = {"index": g.info.index, "name": g.info.name, "stopped": g.stopped}
        if len(g.t) and g.t[-1] == snap.now:
            row.update({m.key: _value(g.values[-1, i]) for i, m in enumerate(GPU_METRICS)})
        gpus.append(row)
    host = {m.key: _value(snap.host[-1, i]) for i, m in enumerate(HOST_METRICS)} if len(snap.host) else {}
    return {"t_s": round(t, 3), "gpus": gpus, "host": host, "pid": snap.pid,
            "process_exited": snap.process_exited_at is not None,
            "diagnosis": [f.sentence for f in diagnose(snap, plan) if f.active]}


def _pair(a: float, b: float, unit: str) -> str:
    if not (math.isfinite(a) or math.isfinite(b)):
        return "n/a"
    return f"{fmt(a, unit).split()[0]} / {fmt(b, unit)}"


def table_lines(snap: Snapshot, plan: PlanLink | None) -> list[str]:
    """The live table: one line per GPU, one for the host, one status line, the active verdicts."""
    head = f"{'GPU':<4}{'util':>6}  {'memory used / total':<22}{'process':>10}  {'power / limit':<15}" \
           f"{'SM clock':>9}{'temp':>7}  {'PCIe rx / tx':<20}{'NVLink rx / tx':<20}throttle"
    lines = [head]
    for g in snap.gpus:
        if g.stopped or not len(g.t):
            lines.append(f"{g.info.index:<4}stopped: {g.stopped}" if g.stopped else f"{g.info.index:<4}no sample yet")
            continue
        v = dict(zip((m.key for m in GPU_METRICS), g.values[-1], strict=True))
        lines.append(
            f"{g.info.index:<4}{fmt(v['util_pct'], '%'):>6}  {_pair(v['mem_used_bytes'], v['mem_total_bytes'], 'B'):<22}"
            f"{fmt(v['proc_mem_bytes'], 'B'):>10}  {_pair(v['power_w'], v['power_limit_w'], 'W'):<15}"
            f"{fmt(v['sm_clock_mhz'], 'MHz'):>9}{fmt(v['temp_c'], 'C'):>7}  "
            f"{_pair(v['pcie_rx_bps'], v['pcie_tx_bps'], 'B/s'):<20}{_pair(v['nvlink_rx_bps'], v['nvlink_tx_bps'], 'B/s'):<20}"
            f"{fmt(v['throttle_mask'], 'mask')}")
    if len(snap.host):
        h = dict(zip((m.key for m in HOST_METRICS), snap.host[-1], strict=True))
        lines.append(f"host  CPU {fmt(h['cpu_busy_pct'], '%')}  I/O wait {fmt(h['iowait_pct'], '%')}  "
                     f"disk read / write {_pair(h['disk_read_bps'], h['disk_write_bps'], 'B/s')}  "
                     f"RAM {_pair(h['ram_used_bytes'], h['ram_total_bytes'], 'B')}  "
                     f"swap {_pair(h['swap_used_bytes'], h['swap_total_bytes'], 'B')}")
    elapsed = snap.now - snap.started if math.isfinite(snap.now) else 0.0
    status = f"{time.strftime('%H:%M:%S', time.gmtime(elapsed))}  {snap.samples} samples"
    if plan is not None:
        status += f"  plan peak {fmt(plan.predicted_peak_bytes, 'B')} of {fmt(plan.capacity_bytes, 'B')}"
    if snap.pid is not None:
        status += f"  pid {snap.pid}" + (" (exited)" if snap.process_exited_at else "")
    lines.append(status + "  (Ctrl-C stops)")
    lines += [f"! {f.sentence}" for f in diagnose(snap, plan) if f.active]
    return lines


class _Live:
    """Redraws the table in place on a terminal (cursor up, clear line); never scrolls."""

    def __init__(self, out):
        self.out, self.shown = out, 0

    def draw(self, lines: list[str]) -> None:
        if self.shown:
            self.out.write(f"\x1b[{self.shown}F")
        for line in lines:
            self.out.write("\x1b[2K" + line + "\n")
        for _ in range(max(self.shown - len(lines), 0)):
            self.out.write("\x1b[2K\n")
        self.shown = max(self.shown, len(lines))
        self.out.flush()


def watch_loop(sampler: Sampler, args: argparse.Namespace, plan: PlanLink | None, out=None,
               sleep=None, clock=time.monotonic) -> str:
    """Sample until a stop condition; returns why it stopped."""
    out, sleep = out or sys.stdout, sleep or time.sleep
    as_json = args.json or not out.isatty()
    live = None if as_json else _Live(out)
    stop = {"why": ""}

    def on_term(_signo, _frame):
        stop["why"] = "stopped (SIGTERM)"

    previous = signal.signal(signal.SIGTERM, on_term) if _main_thread() else None
    start = due = clock()
    try:
        while not stop["why"]:
            sampler.sample()
            snap = sampler.snapshot(LIVE_WINDOW_S)
            if as_json:
                out.write(json.dumps(json_line(snap, plan)) + "\n")
                out.flush()
            else:
                live.draw(table_lines(snap, plan))
            if sampler.process_exited:
                stop["why"] = f"process {sampler.pid} exited"
            elif args.duration is not None and clock() - start >= args.duration:
                stop["why"] = f"{args.duration:g} s elapsed"
            else:
                due += args.interval
                sleep(max(due - clock(), 0.0))
    except KeyboardInterrupt:
        stop["why"] = "stopped (Ctrl-C)"
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return stop["why"]


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run_watch(args: argparse.Namespace) -> int:
    from llmplan.watch.sampler import open_sampler

    _check(args)
    plan = _plan(args.plan)
    sampler = open_sampler(pid=args.pid)
    if not sampler.gpus:
        reasons = "; ".join(sampler.reasons) or "no GPU source answered"
        sys.stderr.write(f"llmplan-cli watch: no GPU found ({reasons}); watching host metrics only\n")
    return finish(sampler, args, plan, watch_loop(sampler, args, plan))


def _written(write, wanted: str | None, fallback: str, err) -> Path | None:
    """``write(path)`` to the path asked for, else (it failed when the watch ended: the disk filled, the folder went)
    to ``fallback`` in the current folder, saying so: the samples of a long watch are not lost to one bad path."""
    for path in dict.fromkeys(p for p in (wanted, fallback) if p):
        try:
            return write(path)
        except OSError as exc:
            err.write(f"llmplan-cli watch: cannot write {path} ({exc.strerror or exc})"
                      + (f"; writing {fallback} instead\n" if path != fallback else "\n"))
    return None


def finish(sampler: Sampler, args: argparse.Namespace, plan: PlanLink | None, why: str, out=None,
           err=None) -> int:
    """The diagnosis, the run file and the CSV once the watch stopped."""
    out, err = out or sys.stdout, err or sys.stderr
    as_json = args.json or not out.isatty()
    snap = sampler.snapshot()
    sampler.close()
    record = run_record(snap, interval_s=args.interval, plan=plan, steps=args.steps, steps_per_s=args.steps_per_s)
    record["stopped"] = why
    if snap.host_reason:
        record["host_reason"] = snap.host_reason
        err.write(f"llmplan-cli watch: {snap.host_reason}\n")
    written = []
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    if not args.no_run_file:
        path = _written(lambda p: write_run_file(p, record), args.run_file, f"llmplan-run-{stamp}.json", err)
        if path is not None:
            written.append(f"run file: {path}" + (f" (compare: llmplan-cli estimate {args.plan} --compare-run {path})"
                                                  if args.plan else ""))
    if args.csv:
        path = _written(lambda p: write_csv(snap, p), args.csv, f"llmplan-samples-{stamp}.csv", err)
        if path is not None:
            written.append(f"samples: {path}")
    if as_json:
        out.write(json.dumps({"summary": record}) + "\n")
        for line in written:
            err.write(line + "\n")
    else:
        out.write(f"\n{why}; {snap.samples} samples\n")
        for line in summary_lines(snap, plan):
            out.write(f"- {line}\n")
        for line in written:
            out.write(line + "\n")
    out.flush()
    return 0
