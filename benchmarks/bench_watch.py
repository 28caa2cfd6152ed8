"""The Watch feature's two costs (issue 25): the sampler's cost per sample per GPU (goal <= 1 ms) and the
panel's update cost per tick with 8 GPUs (goal <= 5 ms).

- sampler: `Sampler.sample()` over 8 GPUs through the fake NVML module of the tests (recorded H100
  values, tests/watch/fake_nvml.py), so this is llmplan's own cost per GPU: the NVML calls of a real
  driver add their time (each is a few microseconds to tens of microseconds on a local GPU). The host's
  /proc reads are measured on their own, once per sample whatever the GPU count.
- panel: `WatchCharts.update_from()` with 8 GPUs and a 5-minute window of 1-second samples (300 points
  per curve, 78 curves): the work done on the GUI thread per tick (snapshot copy + new paths). Qt paints
  the changed charts afterwards in its event loop; that repaint is timed separately.

Run: .venv/bin/python benchmarks/bench_watch.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "watch"))

GPUS = 8


def _eight_gpu_nvml(samples: int = 2):
    """8 H100s replaying the recorded busy sample with counters that grow as a running job's do."""
    import fake_nvml

    h100 = fake_nvml.load_recording()["devices"][0]
    busy = h100["samples"][1]
    rows = []
    for k in range(samples):
        row = dict(busy, util=90 + k % 10)
        for key, per_s in (("nvlink_tx_kib", 90e6), ("nvlink_rx_kib", 88e6), ("pcie_tx_bytes", 1e9),
                           ("pcie_rx_bytes", 3e9)):
            row[key] = int(busy[key] + k * per_s)
        rows.append(row)
    return fake_nvml.build({"devices": [dict(h100, samples=rows)] * GPUS})


def sampler_cost(samples: int = 2000) -> dict[str, float]:
    """Median µs per sample per GPU (fake NVML) and µs per host read (/proc), over ``samples`` samples."""
    import numpy as np

    from llmplan.watch.host import open_host
    from llmplan.watch.sampler import Sampler, open_sources

    class NoHost:
        reason = None

        def read(self, now):
            return np.full(8, np.nan)

    nvml = _eight_gpu_nvml(samples)
    sources, _ = open_sources(nvml)
    s = Sampler(sources, NoHost(), capacity=samples + 10, alive=lambda pid: True)
    s.set_pid(4242)
    times = []
    for k in range(samples):
        nvml.step = k
        t = time.perf_counter()
        s.sample(now=float(k))
        times.append(time.perf_counter() - t)
    host = open_host()
    host_times = []
    for k in range(200):
        t = time.perf_counter()
        host.read(float(k))
        host_times.append(time.perf_counter() - t)
    return {"per_gpu_us": statistics.median(times) / GPUS * 1e6, "per_sample_us": statistics.median(times) * 1e6,
            "host_us": statistics.median(host_times) * 1e6}


def panel_cost(ticks: int = 60) -> dict[str, float]:
    """Median ms of one panel tick (snapshot + setData for 8 GPUs and the host), and of a full paint."""
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.watch_charts import WatchCharts
    from llmplan.watch.sampler import Sampler, open_sources

    app = QApplication.instance() or QApplication([])
    from llmplan.watch.host import open_host

    nvml = _eight_gpu_nvml(600 + ticks)
    sources, _ = open_sources(nvml)
    s = Sampler(sources, open_host(), capacity=86_400, alive=lambda pid: True)
    now = time.time()
    for k in range(600):
        nvml.step = k
        s.sample(now=now - 600 + k)
    now = time.time()
    charts = WatchCharts()
    charts.resize(1280, 1400)
    charts.show()
    charts.update_from(s.snapshot(300.0), 300.0)
    app.processEvents()
    work, paint = [], []
    for k in range(ticks):
        nvml.step = 600 + k
        s.sample(now=now + k)  # one second apart, as the counters in the recording advance
        t = time.perf_counter()
        charts.update_from(s.snapshot(300.0), 300.0)
        work.append(time.perf_counter() - t)
        t = time.perf_counter()
        app.processEvents()  # Qt repaints what the tick changed: every curve of the 35 charts
        paint.append(time.perf_counter() - t)
    return {"tick_ms": statistics.median(work) * 1e3, "tick_max_ms": max(work) * 1e3,
            "paint_ms": statistics.median(paint) * 1e3}


def main() -> int:
    c = sampler_cost()
    print(f"sampler, fake NVML, {GPUS} GPUs: {c['per_gpu_us']:.0f} µs per sample per GPU "
          f"({c['per_sample_us']:.0f} µs per sample); host /proc read {c['host_us']:.0f} µs per sample")
    p = panel_cost()
    print(f"panel tick, {GPUS} GPUs, 5-min window: {p['tick_ms']:.2f} ms median (max {p['tick_max_ms']:.1f} ms); "
          f"then Qt's repaint of the changed charts {p['paint_ms']:.1f} ms (1280x1400 px, offscreen raster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
