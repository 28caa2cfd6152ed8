"""``make fuzz``: every issue 17 hostile-input family, at least 10,000 generated inputs each, through every
parser it applies to; prints family x parser x inputs x failures x worst time x peak RSS and exits
non-zero on any failure (a traceback, a broken rule, an input over 10 s, a family over 1 GiB RSS).

The families and parsers are the property suite's (tests/property/_families.py, _families_io.py,
_targets.py): CI runs a few examples of each through hypothesis; this runs many, from seeded
``random.Random`` generators, so a run is repeatable (``--seed``). Each family runs in a fresh worker
process, so its peak RSS is its own; the worker caps its address space at 4 GiB, so a memory blow-up
ends as a failure instead of swapping the machine. Tool families run inputs on threads (they mostly
wait for a timeout). Inputs are spread over a family's parsers by weight: a user catalog file reloads
the shipped catalog (~0.1 s), so it gets a fifth of the inputs a plain parser gets.

    .venv/bin/python scripts/fuzz.py [--n 10000] [--families "deep nesting,GGUF totals"] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_SECONDS = 10.0
MAX_RSS = 1 << 30


def _plan(family, n: int) -> list[str]:
    """The target of each of ``n`` inputs, by weight, interleaved."""
    from tests.property._families_io import ALL_TARGETS

    weights = {t: (1 if ALL_TARGETS[t].user_data else 5) for t in family.targets}
    total = sum(weights.values())
    counts = {t: max(1, math.ceil(n * w / total)) for t, w in weights.items()}
    order = [t for t, c in counts.items() for _ in range(c)]
    random.Random(0).shuffle(order)
    return order


def worker(name: str, n: int, seed: int, threads: int) -> dict:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    from tests.property._families_io import ALL_FAMILIES, ALL_TARGETS

    family = ALL_FAMILIES[name]
    stats: dict[str, dict] = {t: {"inputs": 0, "failures": 0, "worst_s": 0.0, "examples": []}
                              for t in family.targets}

    def one(i: int, target_name: str) -> None:
        rng = random.Random(f"{seed}:{name}:{i}")
        s = stats[target_name]
        with tempfile.TemporaryDirectory(prefix="fz") as tmp:
            t0 = time.perf_counter()
            failure = None
            try:
                family.make(rng, ALL_TARGETS[target_name], Path(tmp))
            except Exception as exc:  # a traceback or a broken rule: counted, shown, never fatal here
                failure = f"input {i}: {type(exc).__name__}: {str(exc)[:300]}"
                if not isinstance(exc, AssertionError):
                    failure += " | " + " / ".join(traceback.format_exc().strip().splitlines()[-3:])[:400]
            took = time.perf_counter() - t0
        s["inputs"] += 1
        s["worst_s"] = max(s["worst_s"], took)
        if failure is None and took > MAX_SECONDS:
            failure = f"input {i}: took {took:.1f} s"
        if failure:
            s["failures"] += 1
            if len(s["examples"]) < 3:
                s["examples"].append(failure)

    order = _plan(family, n)
    start = time.perf_counter()
    if threads > 1 and family.targets == ("detection tool runner",):
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(len(order)), order))
    else:
        for i, t in enumerate(order):
            one(i, t)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"family": name, "targets": stats, "rss": rss, "wall_s": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="inputs per family (default 10,000)")
    ap.add_argument("--families", default="", help="comma-separated family names (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="families run at once")
    ap.add_argument("--threads", type=int, default=8, help="threads for the tool families")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.seed, args.threads)))
        return 0

    from tests.property._families_io import ALL_FAMILIES, TOOLS_AVAILABLE

    names = [f.strip() for f in args.families.split(",") if f.strip()] or list(ALL_FAMILIES)
    unknown = [f for f in names if f not in ALL_FAMILIES]
    if unknown:
        print(f"fuzz: unknown family {unknown[0]!r}; known: {', '.join(ALL_FAMILIES)}", file=sys.stderr)
        return 2
    if not TOOLS_AVAILABLE:
        names = [f for f in names if "tools" not in f]
        print("fuzz: no /proc or POSIX tools here: the tool families are skipped", file=sys.stderr)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}", HF_HUB_OFFLINE="1",
               QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    pending = list(names)
    running: list[tuple[str, subprocess.Popen, float]] = []
    results: list[dict] = []
    t_start = time.perf_counter()
    while pending or running:
        while pending and len(running) < max(args.jobs, 1):
            name = pending.pop(0)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--n", str(args.n),
                   "--seed", str(args.seed), "--threads", str(args.threads)]
            running.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                                   text=True), time.perf_counter()))
        time.sleep(0.2)
        for item in list(running):
            name, proc, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            out, err = proc.communicate()
            try:
                results.append(json.loads(out.strip().splitlines()[-1]))
            except (json.JSONDecodeError, IndexError):
                results.append({"family": name, "rss": 0, "wall_s": time.perf_counter() - t0, "targets": {
                    "(worker)": {"inputs": 0, "failures": 1, "worst_s": 0.0,
                                 "examples": [f"worker died (exit {proc.returncode}): {err.strip()[-500:]}"]}}})
            print(f"fuzz: {name} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    return report(sorted(results, key=lambda r: names.index(r["family"])), time.perf_counter() - t_start, args)


def report(results: list[dict], wall: float, args) -> int:
    print("| family | parser | inputs | failures | worst time | peak RSS (family) |")
    print("|---|---|---:|---:|---:|---:|")
    bad = 0
    for r in results:
        rss_mib = r["rss"] / 2**20
        over_rss = r["rss"] > MAX_RSS
        total_in = sum(s["inputs"] for s in r["targets"].values())
        total_fail = sum(s["failures"] for s in r["targets"].values()) + over_rss
        worst = max((s["worst_s"] for s in r["targets"].values()), default=0.0)
        for t, s in r["targets"].items():
            print(f"| {r['family']} | {t} | {s['inputs']:,} | {s['failures']} | {s['worst_s']:.2f} s | |")
        print(f"| **{r['family']}** | **all** | **{total_in:,}** | **{total_fail}** | **{worst:.2f} s** | "
              f"**{rss_mib:,.0f} MiB**{' (over 1 GiB)' if over_rss else ''} |")
        bad += total_fail
        if total_in < args.n:
            print(f"fuzz: {r['family']}: only {total_in:,} of {args.n:,} inputs ran", file=sys.stderr)
            bad += 1
    print(f"\n{sum(sum(s['inputs'] for s in r['targets'].values()) for r in results):,} inputs, "
          f"{len(results)} families, seed {args.seed}, {wall:.0f} s wall")
    for r in results:
        for t, s in r["targets"].items():
            for ex in s["examples"]:
                print(f"FAILED {r['family']} / {t}: {ex}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
