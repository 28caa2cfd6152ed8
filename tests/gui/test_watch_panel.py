"""The Watch panel (issue 25), driven as a user would: start, see the charts and the verdict beside the
plan, pause, change the window, attach to a process, export CSV and PNG; and the GUI thread never waits
on a stuck device."""

from __future__ import annotations

import math
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "watch"))
from scripted import GIB, ScriptedHost, ScriptedSource

from llmplan.watch.diagnose import PlanLink
from llmplan.watch.sampler import Sampler


def training(slot, now):
    return {"util_pct": 55.0, "procs": 1, "mem_used_bytes": 71 * GIB, "proc_mem_bytes": 70 * GIB,
            "power_w": 450.0, "power_limit_w": 700.0, "pcie_rx_bps": 2e9, "pcie_tx_bps": 0.5e9}


def prefilled(seconds=60, n=2, script=training, alive=lambda pid: True):
    src = ScriptedSource(script, n=n)
    s = Sampler([(src, src.open())], ScriptedHost(lambda now: {"cpu_busy_pct": 40.0, "iowait_pct": 1.0}),
                capacity=5_000, alive=alive)
    now = time.time()
    for k in range(seconds, 0, -1):
        s.sample(now=now - k)
    return s


@pytest.fixture
def panel(qtbot):
    from llmplan.gui.watch_panel import WatchPanel

    sampler = prefilled()
    p = WatchPanel(open_sampler=lambda: sampler)
    qtbot.addWidget(p)
    p.resize(1100, 700)
    yield p
    p.stop()


def start(qtbot, p):
    p.start()
    qtbot.waitUntil(lambda: p.running, timeout=3000)


def test_start_draws_every_gpu_and_the_host_with_the_plans_lines(qtbot, panel):
    start(qtbot, panel)
    panel.plan = PlanLink(68 * GIB, 79.6 * GIB)
    panel.charts.set_plan(68 * GIB, 79.6 * GIB)
    panel.refresh(force=True)
    assert len(panel.charts.gpu_rows) == 2 and panel.charts.host_row is not None
    x, y = panel.charts.gpu_rows[1].curves["used"].getData()
    assert len(x) >= 60 and y[-1] == pytest.approx(71.0) and x[-1] == pytest.approx(0.0, abs=1.5)
    assert panel.charts.gpu_rows[0].curves["util"].getData()[1][-1] == 55.0
    peak, cap = panel.charts._plan_lines[0]
    assert peak.isVisible() and peak.value() == pytest.approx(68.0) and cap.value() == pytest.approx(79.6)
    assert "Watching: 2 GPUs" in panel.status.text()
    text = panel.diagnosis.text()
    assert "GPU 0 was busy only 55% of the time" in text and "it waits on the CPU or I/O" in text
    assert "Peak memory 71.0 GiB per GPU (all processes); the plan predicted 68.0 GiB: 4.2% under-estimate" in text


def test_outcome_from_the_window_sets_the_plan_lines(qtbot, panel):
    from types import SimpleNamespace

    est = SimpleNamespace(memory=SimpleNamespace(total=SimpleNamespace(value=60 * GIB),
                                                 capacity=SimpleNamespace(value=80 * GIB)))
    panel.set_outcome(SimpleNamespace(estimate=est))
    assert panel.plan.predicted_peak_bytes == 60 * GIB
    panel.set_fit(SimpleNamespace(changes=[SimpleNamespace(sentence="Micro-batch 2 (from 4): fits with 9 GiB free")]))
    assert panel.plan.changes == ("Micro-batch 2 (from 4)",)
    panel.set_outcome(SimpleNamespace(estimate=None))
    assert panel.plan is None


def test_pause_freezes_the_view_while_sampling_goes_on(qtbot, panel):
    start(qtbot, panel)
    panel.refresh(force=True)
    panel.toggle_pause()
    shown = len(panel.charts.gpu_rows[0].curves["util"].getData()[0])
    samples = panel.sampler.samples
    qtbot.waitUntil(lambda: panel.sampler.samples >= samples + 2, timeout=4000)
    panel.refresh()
    assert len(panel.charts.gpu_rows[0].curves["util"].getData()[0]) == shown
    panel.toggle_pause()
    assert len(panel.charts.gpu_rows[0].curves["util"].getData()[0]) > shown
    assert panel.pause_button.text() == "Pause"


def test_the_time_window_control_limits_what_is_drawn(qtbot, panel):
    start(qtbot, panel)
    panel.window_box.setCurrentIndex(0)  # 1 min
    x = panel.charts.gpu_rows[0].curves["util"].getData()[0]
    assert x.min() >= -60.0
    assert panel.charts.gpu_rows[0].plots[0].viewRange()[0] == pytest.approx([-60.0, 0.0])


def test_attach_to_a_typed_pid_and_refuse_a_bad_one(qtbot, panel):
    start(qtbot, panel)
    messages = []
    panel.message.connect(messages.append)
    panel.process_box.setEditText("not-a-pid")
    panel._process_chosen()
    assert messages[-1] == "Watch: 'not-a-pid' is not a process id"
    panel.process_box.setEditText("4242")
    panel._process_chosen()
    assert panel.sampler.pid == 4242
    qtbot.waitUntil(lambda: np.isfinite(panel.sampler.snapshot(1.0).gpus[0].values[-1, 3]), timeout=4000)
    panel.refresh(force=True)
    assert panel.charts.gpu_rows[0].curves["proc"].getData()[1][-1] == pytest.approx(70.0)
    assert "process 4242" in panel.status.text()
    labels = [panel.process_box.itemText(i) for i in range(panel.process_box.count())]
    assert labels[0] == "All processes" and any(t.startswith("1234 ") for t in labels)  # from the GPUs' lists


def test_a_process_exit_is_marked_on_the_charts(qtbot):
    from llmplan.gui.watch_panel import WatchPanel

    alive = {"yes": True}
    sampler = prefilled(alive=lambda pid: alive["yes"])
    sampler.set_pid(4242)
    alive["yes"] = False
    sampler.sample(now=time.time())
    p = WatchPanel(open_sampler=lambda: sampler)
    qtbot.addWidget(p)
    start(qtbot, p)
    p.refresh(force=True)
    assert p.charts.gpu_rows[0].exit_lines and p.charts.gpu_rows[0].exit_lines[0].item.isVisible()
    assert "process 4242 exited" in p.status.text() and "Process 4242 exited." in p.diagnosis.text()
    p.stop()


def test_export_csv_and_png(qtbot, panel, tmp_path):
    from llmplan.errors import LlmplanError
    from llmplan.gui.watch_panel import WatchPanel

    fresh = WatchPanel(open_sampler=lambda: None)
    qtbot.addWidget(fresh)
    with pytest.raises(LlmplanError, match="start watching first"):
        fresh.export_csv(tmp_path / "none.csv")
    start(qtbot, panel)
    csv = panel.export_csv(tmp_path / "w.csv").read_text().splitlines()
    assert csv[0].startswith("time_s,gpu0_util_pct") and len(csv) >= 61
    png = panel.export_png(tmp_path / "w.png")
    assert png.stat().st_size > 10_000


def test_no_gpu_shows_the_reason_and_host_charts(qtbot):
    from llmplan.gui.watch_panel import WatchPanel

    s = Sampler([], ScriptedHost(lambda now: {"cpu_busy_pct": 5.0}), capacity=100,
                reasons=("NVIDIA driver library not found (libnvidia-ml.so.1)",))
    p = WatchPanel(open_sampler=lambda: s)
    qtbot.addWidget(p)
    start(qtbot, p)
    assert "no GPU (NVIDIA driver library not found (libnvidia-ml.so.1)): host metrics only" in p.status.text()
    assert p.charts.gpu_rows == [] and p.charts.host_row is not None
    p.stop()
    assert not p.running and p.start_button.text() == "Start watching"


def test_a_probe_that_crashes_is_a_sentence(qtbot):
    from llmplan.gui.watch_panel import WatchPanel

    def broken():
        raise RuntimeError("bug in a probe")

    p = WatchPanel(open_sampler=broken)
    qtbot.addWidget(p)
    p.start()
    qtbot.waitUntil(lambda: "Could not start watching" in p.status.text(), timeout=3000)
    assert "bug in a probe" in p.status.text() and p.start_button.isEnabled()


def test_a_stuck_device_never_blocks_the_gui_thread(qtbot):
    from llmplan.gui.watch_panel import WatchPanel

    release = threading.Event()

    def stuck(slot, now):
        release.wait(10)
        return {"util_pct": 1.0}

    src = ScriptedSource(stuck)
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=100)
    p = WatchPanel(open_sampler=lambda: s)
    qtbot.addWidget(p)
    start(qtbot, p)
    time.sleep(0.2)  # the sampler thread is now stuck inside the device read
    t0 = time.perf_counter()
    p.refresh(force=True)
    qtbot.wait(50)
    assert time.perf_counter() - t0 < 0.5
    release.set()
    p.stop()


def test_the_main_window_opens_the_panel_from_the_view_menu(window, monkeypatch):
    from llmplan.gui import watch_panel

    monkeypatch.setattr(watch_panel.WatchPanel, "start", lambda self: setattr(self, "started", True))
    w = window
    menus = [a.text() for a in w.menuBar().actions()]
    assert menus[-2:] == ["&View", "&Help"]
    assert w.watch.panel is None  # built on first use: the window starts as fast as before
    w.watch_action.trigger()
    panel = w.watch.panel
    assert w.watch_dock.isVisible() and panel.started
    # knobs stated, so the default policy does not re-choose them when the micro-batch grows
    w.state.edit_many({"training.recompute": "full", "training.offload": "none", "training.zero_stage": 1}, "knobs")
    w.state.evaluate_now()
    first = panel.plan.predicted_peak_bytes  # the window's estimate: per-GPU total with overhead
    assert first == w.state.outcome.estimate.memory.total.value
    w.state.edit("training.micro_batch", 2 * w.state.get("training.micro_batch"))
    w.state.evaluate_now()
    assert panel.plan.predicted_peak_bytes > first  # follows the plan
    w.this_machine.watch_requested.emit()  # the "Watch a running job" link
    assert w.watch_dock.isVisible()


def test_nice_axis_tops():
    from llmplan.gui.watch_charts import nice_top

    assert [nice_top(v) for v in (0.0, math.nan, 0.7, 1.0, 1.2, 3.1, 7.0, 640.0)] == pytest.approx(
        [1, 1, 0.8, 1, 1.5, 4, 8, 800])
