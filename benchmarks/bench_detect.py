"""How long ``detect_all()`` takes on this machine (the GUI runs it at start-up, in a thread).

Prints the median and worst of N runs and the report summary. Target on a GPU-less machine:
"no GPU found: <reason>" in well under 1 s.
"""

from __future__ import annotations

import statistics
import sys
import time

from llmplan.hw.detect import detect_all


def main(runs: int = 5) -> int:
    times, report = [], None
    for _ in range(runs):
        t = time.perf_counter()
        report = detect_all(timeout_s=5.0)
        times.append(time.perf_counter() - t)
    print(f"detect_all: median {statistics.median(times) * 1000:.1f} ms, worst {max(times) * 1000:.1f} ms "
          f"over {runs} runs")
    print(f"summary: {report.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
