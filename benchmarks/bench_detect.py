"""How long ``detect_all()`` takes on this machine (the GUI runs it at start-up, in a thread).

Prints the median and worst of N runs and the report summary. Target on a GPU-less machine:
"no GPU found: <reason>" in well under 1 s.
"""

from __future__ import annotations

import statistics
import sys
import time

from llmplan.hw.detect import detect_all


def measure(runs: int = 5) -> dict[str, object]:
    """Median and worst ms of ``detect_all()`` over ``runs`` runs, and what it found."""
    times, report = [], None
    for _ in range(runs):
        t = time.perf_counter()
        report = detect_all(timeout_s=5.0)
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1000, "worst_ms": max(times) * 1000, "runs": runs,
            "summary": report.summary()}


def main(runs: int = 5) -> int:
    m = measure(runs)
    print(f"detect_all: median {m['median_ms']:.1f} ms, worst {m['worst_ms']:.1f} ms over {runs} runs")
    print(f"summary: {m['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
