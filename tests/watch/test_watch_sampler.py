"""The sampler: ring buffers, faults (no driver, a GPU lost mid-run, the process exits), the thread that
keeps the GUI free, and a simulated day of samples without memory growth."""

from __future__ import annotations

import math
import os
import threading
import time

import fake_nvml
import numpy as np
import pytest
from scripted import GIB, ScriptedHost, ScriptedSource, run

from llmplan.errors import InputError
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.ring import Ring
from llmplan.watch.sampler import Sampler, Watcher, check_interval, open_sampler, open_sources


def test_ring_keeps_the_newest_rows_in_order_and_windows_by_time():
    r = Ring(5, 2)
    assert len(r) == 0 and r.window()[0].size == 0 and np.isnan(r.latest()).all()
    for k in range(8):
        r.append(float(k), np.array([k, -k]))
    t, v = r.window()
    assert t.tolist() == [3, 4, 5, 6, 7] and v[:, 0].tolist() == [3, 4, 5, 6, 7]
    assert r.window(2.0)[0].tolist() == [5, 6, 7]
    assert r.window(0.0)[0].tolist() == [7]
    assert r.window(100.0)[0].tolist() == [3, 4, 5, 6, 7]
    for k in range(8, 10):  # wrap again: the window crosses the physical end
        r.append(float(k), np.array([k, -k]))
    assert r.window(3.0)[0].tolist() == [6, 7, 8, 9]
    with pytest.raises(ValueError):
        Ring(1, 1)


def test_ring_window_returns_copies():
    r = Ring(4, 1)
    r.append(1.0, np.array([1.0]))
    _, v = r.window()
    v[0, 0] = 99
    assert r.window()[1][0, 0] == 1.0


@pytest.mark.parametrize("bad", [0.05, 10.5, math.nan, "1"])
def test_interval_outside_the_range_is_a_clear_error(bad):
    with pytest.raises(InputError, match=r"between 0\.1 and 10 s"):
        check_interval(bad)


def test_no_driver_means_host_only_with_the_reason(monkeypatch):
    import llmplan.watch.sampler as sampler_mod

    monkeypatch.setattr(sampler_mod, "_open_amd", lambda: ([], ["amd-smi not installed; rocm-smi not installed"]))
    nvml = fake_nvml.build(init_error=fake_nvml.LIBRARY_NOT_FOUND)
    sources, reasons = open_sources(nvml)
    assert sources == []
    assert reasons[0] == "NVIDIA driver library not found (libnvidia-ml.so.1)"
    s = open_sampler(nvml_module=nvml)
    s.sample()
    snap = s.snapshot()
    assert snap.gpus == () and snap.samples == 1 and len(snap.host_t) == 1


def test_no_gpu_on_a_working_driver(monkeypatch):
    import llmplan.watch.sampler as sampler_mod

    monkeypatch.setattr(sampler_mod, "_open_amd", lambda: ([], []))
    _, reasons = open_sources(fake_nvml.build({"devices": []}))
    assert reasons == ("NVML reports no NVIDIA GPU",)


def test_nvml_sampler_records_every_gpu_and_peaks():
    nvml = fake_nvml.build()
    (src, infos), = open_sources(nvml)[0]
    s = Sampler([(src, infos)], ScriptedHost(), pid=None, capacity=16, alive=lambda pid: True)
    s.set_pid(4242)
    for step, now in enumerate((1.0, 2.0, 3.0)):
        nvml.step = step
        s.sample(now=now)
    snap = s.snapshot()
    h100 = snap.gpus[0]
    assert len(h100.t) == 3 and h100.peak_used_bytes == 75161927680
    assert h100.peak_proc_bytes == 74088185856  # pid 4242's own peak
    assert h100.mean_util_pct == pytest.approx((0 + 97 + 98) / 3)
    assert snap.events[0].kind == "attached"


def test_a_gpu_lost_mid_run_stops_with_its_reason_and_keeps_its_data():
    nvml = fake_nvml.build()
    (src, infos), = open_sources(nvml)[0]
    s = Sampler([(src, infos)], ScriptedHost(), capacity=16)
    s.sample(now=1.0)
    s.sample(now=2.0)
    nvml.fail["util"] = (0, fake_nvml.GPU_IS_LOST, 0)  # GPU 0 only
    s.sample(now=3.0)
    s.sample(now=4.0)
    snap = s.snapshot()
    lost, other = snap.gpus
    assert lost.stopped == "a GPU fell off the bus (NVML_ERROR_GPU_IS_LOST): reboot or reset the GPU"
    assert lost.t.tolist() == [1.0, 2.0]  # data kept
    assert other.stopped is None and other.t.tolist() == [1.0, 2.0, 3.0, 4.0]  # the others go on
    assert [e.kind for e in snap.events] == ["gpu_stopped"] and snap.events[0].gpu == 0
    assert snap.samples == 4 and len(snap.host_t) == 4


def test_a_parser_bug_stops_one_gpu_not_the_watch():
    def boom(slot, now):
        raise RuntimeError("bug")

    s = Sampler([(ScriptedSource(boom), ScriptedSource(boom).open())], ScriptedHost(), capacity=8)
    s.sample(now=1.0)
    assert "sampling failed" in s.snapshot().gpus[0].stopped


def test_the_watched_process_exiting_is_marked():
    alive = {"yes": True}
    src = ScriptedSource(lambda slot, now: {"util_pct": 99})
    s = Sampler([(src, src.open())], ScriptedHost(), pid=555, capacity=8, alive=lambda pid: alive["yes"])
    s.sample(now=1.0)
    alive["yes"] = False
    s.sample(now=2.0)
    s.sample(now=3.0)
    snap = s.snapshot()
    assert s.process_exited and snap.process_exited_at == 2.0
    assert [e.text for e in snap.events if e.kind == "process_exited"] == ["process 555 exited"]


def test_attach_refuses_a_process_that_is_not_running():
    s = Sampler([], ScriptedHost(), capacity=4, alive=lambda pid: False)
    with pytest.raises(InputError, match="no running process with id 99"):
        s.set_pid(99)
    with pytest.raises(InputError, match="positive whole number"):
        s.set_pid(-3)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to read the process's RSS")
def test_a_day_of_samples_stays_in_the_preallocated_rings():
    """86,400 one-second samples of 2 GPUs and the host at the default capacity: the rings are the
    arrays allocated at the start, and the process's resident memory does not grow over the day."""
    src = ScriptedSource(lambda slot, now: {"util_pct": 50.0 + slot, "mem_used_bytes": 40 * GIB}, n=2)
    s = Sampler([(src, src.open())], ScriptedHost(lambda now: {"cpu_busy_pct": 30.0}))
    arrays = [id(g.ring._v) for g in s.gpus] + [id(s.host_ring._v)]
    s.sample(now=0.0)
    before = _rss_bytes()
    run(s, 86_400 - 2, start=1.0)  # samples at 1 s ... 86,399 s: 86,400 in all
    grown = _rss_bytes() - before
    assert grown < 2 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MiB over a simulated day"
    assert [id(g.ring._v) for g in s.gpus] + [id(s.host_ring._v)] == arrays
    snap = s.snapshot(window_s=3_600)
    assert snap.samples == 86_400 and len(snap.gpus[1].t) == 3_601 and snap.gpus[1].t[-1] == 86_399.0
    assert len(s.gpus[0].ring) == 86_400 == s.gpus[0].ring.capacity
    # preallocated: (1 time + 14 metrics) x 8 bytes x 86,400 rows per GPU, (1 + 8) x 8 x 86,400 for the host
    assert sum(g.ring.nbytes for g in s.gpus) + s.host_ring.nbytes == 86_400 * 8 * (2 * 15 + 9)


def test_a_hanging_read_never_blocks_a_snapshot():
    """The GUI thread only takes snapshots; a driver call stuck in the sampler thread must not hold the lock."""
    release = threading.Event()

    def slow(slot, now):
        release.wait(5)
        return {"util_pct": 1.0}

    src = ScriptedSource(slow)
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=8)
    w = Watcher(s, 0.1)
    w.start()
    time.sleep(0.1)  # the sampler thread is now inside the stuck read
    t0 = time.perf_counter()
    s.snapshot()
    assert time.perf_counter() - t0 < 0.05
    release.set()
    w.stop()
    assert not w.running


def test_watcher_samples_at_its_interval_and_stops():
    src = ScriptedSource(lambda slot, now: {"util_pct": 5.0})
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=64)
    w = Watcher(s, 0.1)
    w.start()
    time.sleep(0.55)
    w.stop()
    n = s.samples
    assert 4 <= n <= 8
    time.sleep(0.25)
    assert s.samples == n and not w.running
    s.close()
    assert src.closed


def test_a_failing_host_reader_costs_its_row_not_the_watch():
    def broken(now):
        raise RuntimeError("psutil exploded")

    src = ScriptedSource(lambda slot, now: {"util_pct": 5.0})
    s = Sampler([(src, src.open())], ScriptedHost(broken), capacity=8)
    s.sample(now=1.0)
    snap = s.snapshot()
    assert np.isnan(snap.host).all() and snap.gpus[0].values[0, G["util_pct"]] == 5.0
    assert snap.host_reason == "host metrics failed: RuntimeError('psutil exploded')"


def test_watcher_reports_an_unexpected_failure_instead_of_dying_silently():
    class Broken(Sampler):
        def sample(self, now=None):
            raise RuntimeError("bug")

    w = Watcher(Broken([], ScriptedHost(), capacity=4), 0.1)
    w.start()
    deadline = time.time() + 2
    while w.running and time.time() < deadline:
        time.sleep(0.02)
    assert w.error == "sampling stopped: RuntimeError('bug')"


def test_psutil_host_where_there_is_no_proc():
    from types import SimpleNamespace

    from llmplan.watch.host import NoHost, PsutilHost
    from llmplan.watch.metrics import HOST_INDEX as H

    counters = iter([SimpleNamespace(read_bytes=1000, write_bytes=0), SimpleNamespace(read_bytes=3000, write_bytes=500)])
    fake = SimpleNamespace(
        cpu_percent=lambda interval=None: 42.0,
        virtual_memory=lambda: SimpleNamespace(total=16 * GIB, available=6 * GIB),
        swap_memory=lambda: SimpleNamespace(total=2 * GIB, used=GIB),
        disk_io_counters=lambda: next(counters))
    host = PsutilHost(fake)
    first = host.read(10.0)
    assert first[H["cpu_busy_pct"]] == 42.0 and first[H["ram_used_bytes"]] == 10 * GIB
    assert math.isnan(first[H["disk_read_bps"]]) and math.isnan(first[H["iowait_pct"]])  # no I/O wait there
    second = host.read(12.0)
    assert second[H["disk_read_bps"]] == 1000.0 and second[H["disk_write_bps"]] == 250.0
    assert second[H["swap_used_bytes"]] == GIB
    none = NoHost("host metrics need /proc (Linux) or psutil (pip install psutil)")
    assert np.isnan(none.read(1.0)).all() and "psutil" in none.reason
