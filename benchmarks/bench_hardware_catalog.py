"""How long the hardware catalog takes to load: cold (parse + validate every TOML file) and cached.

Run: .venv/bin/python benchmarks/bench_hardware_catalog.py  (prints figures; asserts nothing).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from llmplan.catalog import hardware


def main() -> None:
    os.environ.setdefault("LLMPLAN_DATA_DIR", tempfile.mkdtemp(prefix="llmplan-bench-"))
    cold = []
    for _ in range(5):
        hardware._cached.cache_clear()
        t0 = time.perf_counter()
        cat = hardware.load_hardware_catalog()
        cold.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(1000):
        hardware.load_hardware_catalog()
    warm = (time.perf_counter() - t0) / 1000
    print(f"hardware catalog: {len(cat.gpus)} GPUs, {len(cat.nodes)} nodes, {len(cat.networks)} networks")
    print(f"cold load (median of 5): {statistics.median(cold) * 1e3:.1f} ms")
    print(f"cached load: {warm * 1e6:.1f} us")


if __name__ == "__main__":
    main()
