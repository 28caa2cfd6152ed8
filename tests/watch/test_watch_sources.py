"""Every metric from every source, replayed from recorded outputs (tests/data/watch/README.md says where
each comes from): NVML through a fake pynvml, amd-smi/rocm-smi JSON, IOKit's ioreg text, /proc."""

from __future__ import annotations

import math
from pathlib import Path

import fake_nvml
import numpy as np
import pytest

from llmplan.hw._run import CommandOutput
from llmplan.watch import amd, apple
from llmplan.watch.amd import AmdSource, parse_amd_smi_metric, parse_rocm_smi_metric
from llmplan.watch.apple import AppleSource, parse_ioreg_accelerator
from llmplan.watch.host import ProcHost, parse_diskstats, parse_proc_stat
from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.metrics import HOST_INDEX as H
from llmplan.watch.metrics import fmt, throttle_names
from llmplan.watch.nvml import NvmlSource
from llmplan.watch.process import pid_alive, process_name
from llmplan.watch.source import DeviceLost, pcie_link_bytes_per_s

DATA = Path(__file__).resolve().parents[1] / "data" / "watch"
MIB = 2**20


def text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture
def nvml():
    return fake_nvml.build()


def test_nvml_open_lists_each_gpu_with_capacity_and_pcie_link(nvml):
    infos = NvmlSource(nvml).open()
    assert [i.name for i in infos] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 3090"]
    assert infos[0].memory_total_bytes == 81559 * MIB
    # PCIe 5.0 x16: 16 lanes x 3.938 GB/s per direction (PCI-SIG, 128b/130b at 32 GT/s)
    assert infos[0].pcie_link_bytes_per_s == pytest.approx(63.0e9, rel=1e-3)
    assert infos[1].pcie_link_bytes_per_s == pytest.approx(31.5e9, rel=1e-3)


def test_nvml_every_metric_in_si_units(nvml):
    src = NvmlSource(nvml)
    src.open()
    first = src.read(0, 4242, now=10.0)
    assert math.isnan(first[G["nvlink_tx_bps"]]) and math.isnan(first[G["pcie_rx_bps"]])  # rates need two samples
    nvml.step = 1
    row = src.read(0, 4242, now=12.0)
    assert row[G["util_pct"]] == 97
    assert row[G["mem_used_bytes"]] == 74088185856 and row[G["mem_total_bytes"]] == 85520809984
    assert row[G["proc_mem_bytes"]] == 73014444032  # pid 4242 alone, not the other process
    assert row[G["procs"]] == 2
    assert row[G["power_w"]] == pytest.approx(688.12) and row[G["power_limit_w"]] == 700.0  # from mW
    assert row[G["sm_clock_mhz"]] == 1980 and row[G["temp_c"]] == 62
    assert row[G["throttle_mask"]] == 4 and throttle_names(row[G["throttle_mask"]]) == ["software power cap"]
    # cumulative counters over 2 s: NVLink (45001000-1000) KiB, PCIe bytes
    assert row[G["nvlink_tx_bps"]] == pytest.approx(45_000_000 * 1024 / 2)
    assert row[G["nvlink_rx_bps"]] == pytest.approx(44_000_000 * 1024 / 2)
    assert row[G["pcie_tx_bps"]] == pytest.approx(1_000_000_000 / 2)
    assert row[G["pcie_rx_bps"]] == pytest.approx(3_000_000_000 / 2)
    assert [p.pid for p in src.processes(0)] == [4242, 777]


def test_nvml_without_pid_leaves_process_memory_na(nvml):
    src = NvmlSource(nvml)
    src.open()
    assert math.isnan(src.read(0, None, now=1.0)[G["proc_mem_bytes"]])


def test_nvml_unsupported_calls_are_na_not_zero_and_not_asked_again(nvml):
    src = NvmlSource(nvml)
    src.open()
    row = src.read(1, 4242, now=1.0)
    assert row[G["util_pct"]] == 12
    assert math.isnan(row[G["throttle_mask"]])  # NOT_SUPPORTED
    assert math.isnan(row[G["nvlink_tx_bps"]]) and math.isnan(row[G["nvlink_rx_bps"]])  # no field counters
    assert math.isnan(row[G["proc_mem_bytes"]])  # the driver hides per-process memory (WDDM-style None)
    # no PCIe counters on this driver: the 20 ms nvmlDeviceGetPcieThroughput fallback, KB/s -> bytes/s
    assert row[G["pcie_rx_bps"]] == 2048 * 1024 and row[G["pcie_tx_bps"]] == 1024 * 1024
    nvml.calls.clear()
    src.read(1, 4242, now=2.0)
    assert "throttle" not in nvml.calls and "fields" not in nvml.calls


@pytest.mark.parametrize("code", [fake_nvml.GPU_IS_LOST, fake_nvml.UNKNOWN, 9, 16, 18])
def test_nvml_fatal_error_stops_the_gpu_with_a_reason(nvml, code):
    src = NvmlSource(nvml)
    src.open()
    nvml.fail["util"] = (0, code)
    with pytest.raises(DeviceLost) as err:
        src.read(0, None, now=1.0)
    assert str(err.value)
    if code == fake_nvml.GPU_IS_LOST:
        assert "fell off the bus" in str(err.value)


def test_nvml_transient_error_is_na_for_that_sample_only(nvml):
    src = NvmlSource(nvml)
    src.open()
    nvml.fail["power_mw"] = (0, 10)  # NVML_ERROR_TIMEOUT
    assert math.isnan(src.read(0, None, now=1.0)[G["power_w"]])
    del nvml.fail["power_mw"]
    assert src.read(0, None, now=2.0)[G["power_w"]] == pytest.approx(71.234)


def test_nvml_counter_reset_gives_na_not_a_negative_rate(nvml):
    src = NvmlSource(nvml)
    src.open()
    nvml.step = 2
    src.read(0, None, now=1.0)
    nvml.step = 0  # counters went back (driver reload)
    row = src.read(0, None, now=2.0)
    assert math.isnan(row[G["nvlink_tx_bps"]]) and math.isnan(row[G["pcie_rx_bps"]])


def test_pcie_link_bandwidth_unknown_without_gen_or_width():
    assert pcie_link_bytes_per_s(None, 16) is None and pcie_link_bytes_per_s(4, None) is None
    assert pcie_link_bytes_per_s(3, 16) == pytest.approx(15.76e9)


# ---- AMD ------------------------------------------------------------------------------------------------
def test_amd_smi_metric_every_metric_and_na():
    rows = parse_amd_smi_metric(text("amd_smi_metric_mi300x.json"))
    r = rows[0]
    assert r[G["util_pct"]] == 93 and r[G["power_w"]] == 642 and r[G["sm_clock_mhz"]] == 2089
    assert r[G["temp_c"]] == 71  # hotspot, edge is N/A on MI300X
    assert r[G["mem_total_bytes"]] == 196288 * MIB and r[G["mem_used_bytes"]] == 171520 * MIB  # amd-smi MB = MiB
    for key in ("power_limit_w", "pcie_rx_bps", "nvlink_tx_bps", "proc_mem_bytes", "throttle_mask"):
        assert math.isnan(r[G[key]])
    idle = rows[1]
    assert math.isnan(idle[G["util_pct"]]) and math.isnan(idle[G["power_w"]]) and math.isnan(idle[G["temp_c"]])
    assert idle[G["mem_used_bytes"]] == 283 * MIB


def test_amd_smi_metric_accepts_the_gpu_data_wrapper():
    import json

    wrapped = json.dumps({"gpu_data": json.loads(text("amd_smi_metric_mi300x.json"))})
    assert sorted(parse_amd_smi_metric(wrapped)) == [0, 1]


def test_rocm_smi_metric_every_metric_and_na():
    rows = parse_rocm_smi_metric(text("rocm_smi_metric_mi250.json"))  # a WARNING line precedes the JSON
    r = rows[0]
    assert r[G["util_pct"]] == 100 and r[G["power_w"]] == 128.0 and r[G["sm_clock_mhz"]] == 1700
    assert r[G["temp_c"]] == 52.0  # junction before edge
    assert r[G["mem_total_bytes"]] == 68702699520 and r[G["mem_used_bytes"]] == 61203283968
    assert math.isnan(rows[1][G["power_w"]]) and rows[1][G["util_pct"]] == 0


@pytest.mark.parametrize("parser", [parse_amd_smi_metric, parse_rocm_smi_metric])
def test_amd_parsers_refuse_garbage(parser):
    with pytest.raises(ValueError):
        parser("Segmentation fault")


def _fake_run(monkeypatch, module, table):
    def run(argv, timeout_s):
        out = table.get(argv[0])
        return out() if callable(out) else out or CommandOutput(-1, "", "", reason=f"{argv[0]} not installed")

    monkeypatch.setattr(module, "run_command", run)


def test_amd_source_reads_all_gpus_with_one_command_per_sample(monkeypatch):
    calls = []

    def amd_smi():
        calls.append(1)
        return CommandOutput(0, text("amd_smi_metric_mi300x.json"), "")

    _fake_run(monkeypatch, amd, {"amd-smi": amd_smi})
    src = AmdSource()
    infos = src.open()
    assert [i.index for i in infos] == [0, 1] and infos[0].memory_total_bytes == 196288 * MIB
    calls.clear()
    src.read(0, None, 5.0)
    src.read(1, None, 5.0)
    assert len(calls) == 1


def test_amd_source_falls_back_to_rocm_smi_and_stops_when_the_tool_fails(monkeypatch):
    state = {"ok": True}

    def rocm():
        return CommandOutput(0, text("rocm_smi_metric_mi250.json"), "") if state["ok"] else \
            CommandOutput(1, "", "ERROR: GPU[0] : Unable to read metrics")

    _fake_run(monkeypatch, amd, {"rocm-smi": rocm})
    src = AmdSource()
    assert len(src.open()) == 2
    assert src.read(0, None, 1.0)[G["util_pct"]] == 100
    state["ok"] = False
    with pytest.raises(DeviceLost, match="rocm-smi failed"):
        src.read(0, None, 2.0)


def test_amd_source_without_tools_says_why(monkeypatch):
    _fake_run(monkeypatch, amd, {})
    with pytest.raises(LookupError, match="amd-smi not installed; rocm-smi not installed"):
        AmdSource().open()


# ---- Apple ----------------------------------------------------------------------------------------------
def test_ioreg_statistics_give_utilisation_and_memory_without_root(monkeypatch):
    stats = parse_ioreg_accelerator(text("ioreg_accelerator_m2_max.txt"))
    assert stats["Device Utilization %"] == 94 and stats["In use system memory"] == 20 * 2**30
    _fake_run(monkeypatch, apple, {"ioreg": CommandOutput(0, text("ioreg_accelerator_m2_max.txt"), "")})
    src = AppleSource("Apple M2 Max", usable_bytes=72 * 2**30)
    assert src.open()[0].memory_total_bytes == 72 * 2**30
    row = src.read(0, None, 1.0)
    assert row[G["util_pct"]] == 94 and row[G["mem_used_bytes"]] == 20 * 2**30 and row[G["mem_total_bytes"]] == 72 * 2**30
    for key in ("power_w", "sm_clock_mhz", "temp_c", "pcie_rx_bps", "proc_mem_bytes"):
        assert math.isnan(row[G[key]])


def test_ioreg_without_statistics_is_a_reason(monkeypatch):
    with pytest.raises(ValueError):
        parse_ioreg_accelerator("+-o Root  <class IORegistryEntry>")
    _fake_run(monkeypatch, apple, {"ioreg": CommandOutput(0, "", "")})
    with pytest.raises(LookupError, match="PerformanceStatistics"):
        AppleSource().open()


# ---- host -----------------------------------------------------------------------------------------------
def test_proc_stat_and_diskstats_parsers():
    cpu = parse_proc_stat(text("proc_stat_1.txt"))
    assert cpu.total == 53390 + 7275 + 60701 + 796 + 312 + 363 and cpu.iowait == 796
    read, written = parse_diskstats(text("proc_diskstats_1.txt"))
    assert (read, written) == (3425506, 10432288)  # vda only: loop and zram devices are not disks
    extra = "   8       0 sda 10 0 100 0 5 0 50 0 0 0 0\n   8       1 sda1 10 0 100 0 5 0 50 0 0 0 0\n" \
            " 253       1 dm-0 10 0 100 0 5 0 50 0 0 0 0\n 259       0 nvme0n1 1 0 8 0 1 0 16 0 0 0 0\n" \
            " 259       1 nvme0n1p1 1 0 8 0 1 0 16 0 0 0 0\n"
    assert parse_diskstats(extra) == (108, 66)  # partitions and dm devices are not counted twice
    with pytest.raises(ValueError):
        parse_proc_stat("intr 0")


def test_host_metrics_from_two_recorded_proc_snapshots(tmp_path):
    for n in (1, 2):
        d = tmp_path / str(n)
        d.mkdir()
        for name in ("stat", "diskstats", "meminfo"):
            (d / name).write_text(text(f"proc_{name}_{n}.txt"))
    host = ProcHost(tmp_path / "1")
    first = host.read(100.0)
    assert math.isnan(first[H["cpu_busy_pct"]]) and math.isnan(first[H["disk_write_bps"]])  # needs two readings
    assert first[H["ram_total_bytes"]] == 24683656 * 1024
    host.root = tmp_path / "2"
    row = host.read(100.5)
    ticks = (53548 + 7305 + 60707 + 796 + 312 + 368) - (53390 + 7275 + 60701 + 796 + 312 + 363)
    assert row[H["cpu_busy_pct"]] == pytest.approx(100 * (ticks - 6) / ticks)  # idle rose by 6 ticks
    assert row[H["iowait_pct"]] == 0.0
    assert row[H["disk_write_bps"]] == pytest.approx((10563720 - 10432288) * 512 / 0.5)  # the 64 MiB dd write
    assert row[H["disk_read_bps"]] == pytest.approx((3426138 - 3425506) * 512 / 0.5)
    assert row[H["swap_total_bytes"]] == 0 and row[H["swap_used_bytes"]] == 0  # no swap is 0, measured
    mem = dict(line.split(":") for line in text("proc_meminfo_2.txt").splitlines())
    total, avail = (int(mem[k].split()[0]) * 1024 for k in ("MemTotal", "MemAvailable"))
    assert row[H["ram_used_bytes"]] == total - avail


def test_host_without_proc_is_na_with_a_reason(tmp_path):
    host = ProcHost(tmp_path / "missing")
    assert np.isnan(host.read(1.0)).all() and "unavailable" in host.reason


def test_process_alive_and_exited(tmp_path):
    import os
    import subprocess
    import sys

    assert pid_alive(os.getpid()) is True
    assert process_name(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert pid_alive(child.pid) is False
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "stat").write_text("77 (my (odd) name) Z 1 77 77 0 -1")
    if sys.platform.startswith("linux"):
        assert pid_alive(77, proc=tmp_path) is False  # a zombie has exited
    assert pid_alive(0) is False


def test_fmt_says_na_never_zero():
    assert fmt(math.nan, "B") == "n/a" and fmt(math.nan, "%") == "n/a"
    assert fmt(0.0, "%") == "0%" and fmt(80 * 2**30, "B") == "80.0 GiB" and fmt(31.5e9, "B/s") == "31.50 GB/s"
    assert fmt(68, "mask") == "software power cap, hardware thermal slowdown"


def test_amd_gpus_get_their_names_from_amd_smi_static(monkeypatch):
    import llmplan.hw.amd as hw_amd
    from llmplan.watch.sampler import _open_amd

    table = {"amd-smi": lambda argv: CommandOutput(0, text("amd_smi_metric_mi300x.json") if argv[1] == "metric" else
                                                   (DATA.parent / "hw" / "amd_smi_static_mi300x.json").read_text(), "")}

    def run(argv, timeout_s):
        fn = table.get(argv[0])
        return fn(argv) if fn else CommandOutput(-1, "", "", reason=f"{argv[0]} not installed")

    monkeypatch.setattr(amd, "run_command", run)
    monkeypatch.setattr(hw_amd, "run_command", run)
    (_src, infos), = _open_amd()[0]
    assert infos[0].name == "AMD Instinct MI300X"
