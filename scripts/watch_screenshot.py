"""The Watch panel's screenshot for docs/watch.md, from a *simulated* run (no GPU was at hand).

    .venv/bin/python scripts/watch_screenshot.py [OUT.png]   (default docs/screenshots/watch-panel-simulated.png)

Five minutes of a scripted two-GPU job are fed through the real sampler, diagnosis and panel: steady
training near 97% utilisation with 71 GiB in use, then 50 s in which the GPUs wait on a slow data
loader (utilisation drops, the CPU saturates), then training again. The numbers are made up to show
what the panel draws; they are not a measurement. Replace the picture with a real run when one is taken.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
GIB = 2**30


def scripted_sampler():
    import numpy as np

    from llmplan.watch.metrics import GPU_INDEX as G
    from llmplan.watch.metrics import HOST_INDEX as H
    from llmplan.watch.metrics import HOST_METRICS
    from llmplan.watch.sampler import Sampler
    from llmplan.watch.source import GpuInfo, GpuProcess, empty_row

    start = time.time() - 300

    def stalled(now):
        return 150 <= now - start < 200

    class Source:
        vendor = "simulated"

        def open(self):
            return [GpuInfo(i, "H100 80GB HBM3 (simulated)", "nvidia", 81559 * 2**20, 63.0e9) for i in range(2)]

        def read(self, slot, pid, now):
            r = empty_row()
            s = now - start
            wave = math.sin(s / 7 + slot)
            r[G["util_pct"]] = 22 + 10 * wave if stalled(now) else 96 + 2 * wave
            r[G["mem_total_bytes"]] = 81559 * 2**20
            r[G["mem_used_bytes"]] = min(71.4, 40 + s * 2) * GIB
            r[G["proc_mem_bytes"]] = min(70.9, 39.5 + s * 2) * GIB
            r[G["procs"]] = 1
            r[G["power_w"]] = 250 + 40 * wave if stalled(now) else 655 + 25 * wave
            r[G["power_limit_w"]] = 700
            r[G["sm_clock_mhz"]] = 1980
            r[G["temp_c"]] = 61
            r[G["pcie_rx_bps"]] = (6e9 if stalled(now) else 1.2e9) + 3e8 * wave
            r[G["pcie_tx_bps"]] = 0.2e9
            r[G["nvlink_rx_bps"]] = 2e9 if stalled(now) else 95e9 + 8e9 * wave
            r[G["nvlink_tx_bps"]] = 2e9 if stalled(now) else 95e9 - 8e9 * wave
            r[G["throttle_mask"]] = 4
            return r

        def processes(self, slot):
            return [GpuProcess(31337, int(70.9 * GIB))]

        def close(self):
            pass

    class Host:
        reason = None

        def read(self, now):
            r = np.full(len(HOST_METRICS), math.nan)
            r[H["cpu_busy_pct"]] = 97 if stalled(now) else 35 + 5 * math.sin(now)
            r[H["iowait_pct"]] = 3.0
            r[H["disk_read_bps"]] = 0.9e9 if stalled(now) else 0.25e9
            r[H["disk_write_bps"]] = 0.01e9
            r[H["ram_used_bytes"]], r[H["ram_total_bytes"]] = 180 * GIB, 2015 * GIB
            r[H["swap_used_bytes"]], r[H["swap_total_bytes"]] = 0, 0
            return r

    src = Source()
    s = Sampler([(src, src.open())], Host(), capacity=5000, alive=lambda pid: True)
    s.set_pid(31337)
    for k in range(301):
        s.sample(now=start + k)
    return s


def main(out: Path) -> Path:
    from PySide6.QtWidgets import QApplication

    from llmplan.gui.theme import apply_theme
    from llmplan.gui.watch_panel import WatchPanel
    from llmplan.watch.diagnose import PlanLink

    app = QApplication.instance() or QApplication([])
    apply_theme(app, "light")
    sampler = scripted_sampler()
    panel = WatchPanel(open_sampler=lambda: sampler)
    panel.resize(1280, 860)
    panel.show()
    panel.plan = PlanLink(68.2 * GIB, 79.6 * GIB, "the plan")
    panel.charts.set_plan(68.2 * GIB, 79.6 * GIB)
    panel.start()
    end = time.time() + 5
    while not panel.running and time.time() < end:
        app.processEvents()
        time.sleep(0.01)
    panel.watcher.stop()  # keep the picture at the scripted five minutes
    panel.window_box.setCurrentIndex(1)
    panel.refresh(force=True)
    app.processEvents()
    out.parent.mkdir(parents=True, exist_ok=True)
    panel.export_png(out)
    panel.stop()
    panel.deleteLater()
    app.processEvents()
    return out


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[1] / "docs" / "screenshots" / "watch-panel-simulated.png"
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else default))
