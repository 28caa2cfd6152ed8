"""Every diagnosis rule, positive and negative, and its minimum duration (no verdict on one spike).

Thresholds and durations are the stated ones in `llmplan.watch.diagnose.RULES` (docs/watch.md); each
test drives the sampler with scripted values on one side of a threshold, then the other."""

from __future__ import annotations

import numpy as np
import pytest
from scripted import GIB, ScriptedHost, ScriptedSource, run

from llmplan.watch.diagnose import RULES, PlanLink, diagnose, plan_comparison, runs, summary_lines
from llmplan.watch.sampler import Sampler


def sampler(script, host=lambda now: {}, link=31.5e9, pid=None):
    src = ScriptedSource(script, link=link)
    return Sampler([(src, src.open())], ScriptedHost(host), pid=pid, capacity=1_000, alive=lambda p: True)


def findings(s, plan=None, rule=None):
    out = diagnose(s.snapshot(), plan)
    return [f for f in out if rule is None or f.rule == rule]


def test_runs_measure_spans_of_consecutive_true_samples():
    t = np.arange(10.0)
    cond = np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 1], dtype=bool)
    trailing, longest, where = runs(t, cond)
    assert (trailing, longest) == (5.0, 5.0) and (where.start, where.stop) == (4, 10)
    assert runs(t, np.zeros(10, dtype=bool))[:2] == (0.0, 0.0)
    assert runs(t, np.array([1] * 5 + [0] * 5, dtype=bool))[:2] == (0.0, 4.0)


# ---- GPU waits on the CPU or I/O ------------------------------------------------------------------------
def busy(util, procs=1):
    return lambda slot, now: {"util_pct": util, "procs": procs, "mem_used_bytes": 30 * GIB}


def test_gpu_waiting_fires_after_its_minimum_duration():
    need = RULES["gpu_waiting"].min_duration_s
    s = sampler(busy(60))
    run(s, need - 1)
    assert findings(s, rule="gpu_waiting") == []  # 29 s under 90%: not yet
    s.sample(now=1000 + need)
    f, = findings(s, rule="gpu_waiting")
    assert f.active and f.longest_s == need and f.gpu == 0
    assert f.sentence.startswith("GPU 0 was busy only 60% of the time for 30 s: it waits on the CPU or I/O")


def test_gpu_waiting_negative_at_or_above_90_percent_or_without_a_job():
    s = sampler(busy(90))
    run(s, 120)
    assert findings(s, rule="gpu_waiting") == []
    idle = sampler(busy(0, procs=0))  # an idle GPU with no process is not "waiting"
    run(idle, 120)
    assert findings(idle, rule="gpu_waiting") == []


def test_gpu_waiting_one_spike_of_high_utilisation_restarts_the_clock():
    s = sampler(lambda slot, now: {"util_pct": 99 if now == 1020 else 50, "procs": 1})
    run(s, 45)  # under 90% from 1000-1019 (19 s) and 1021-1045 (24 s): no run reaches 30 s
    assert findings(s, rule="gpu_waiting") == []


def test_gpu_waiting_names_a_saturated_cpu():
    s = sampler(busy(40), host=lambda now: {"cpu_busy_pct": 97.0})
    run(s, 40)
    f, = findings(s, rule="gpu_waiting")
    assert "the CPU was 97% busy, so more data-loader workers" in f.sentence


def test_na_utilisation_never_makes_a_verdict():
    s = sampler(lambda slot, now: {"procs": 1})  # util n/a
    run(s, 120)
    assert findings(s) == []


# ---- memory at the limit ---------------------------------------------------------------------------------
def full(share):
    return lambda slot, now: {"util_pct": 99, "procs": 1, "mem_used_bytes": share * 80 * GIB}


def test_memory_full_positive_with_the_fits_nearest_changes():
    s = sampler(full(0.97))
    run(s, 10)
    plan = PlanLink(70 * GIB, 80 * GIB, changes=("Recompute activations in full (from selective)",
                                                 "Micro-batch 2 instead of 4"))
    f, = findings(s, plan, rule="memory_full")
    assert f.sentence.startswith("GPU 0 memory at 97% of 80.0 GiB for 10 s: a smaller micro-batch or activation "
                                 "recompute gives it room; nearest changes that fit: Recompute activations in full")


def test_memory_full_negative_below_95_percent_and_before_10_s():
    low = sampler(full(0.94))
    run(low, 60)
    assert findings(low, rule="memory_full") == []
    short = sampler(full(0.99))
    run(short, 9)
    assert findings(short, rule="memory_full") == []


def test_memory_spike_is_no_verdict():
    s = sampler(lambda slot, now: {"util_pct": 99, "procs": 1,
                                   "mem_used_bytes": (0.99 if 1010 <= now < 1015 else 0.6) * 80 * GIB})
    run(s, 60)
    assert findings(s, rule="memory_full") == []


# ---- PCIe traffic with low utilisation -------------------------------------------------------------------
def pcie(rate, util):
    return lambda slot, now: {"util_pct": util, "procs": 1, "pcie_rx_bps": rate, "pcie_tx_bps": 1e9}


def test_pcie_busy_positive():
    s = sampler(pcie(20e9, 30))
    run(s, 30)
    f, = findings(s, rule="pcie_busy")
    assert "moved 20.0 GB/s over PCIe (63% of its 31.5 GB/s link) while busy 30%" in f.sentence


@pytest.mark.parametrize("rate,util,seconds", [(10e9, 30, 60), (20e9, 70, 60), (20e9, 30, 29)])
def test_pcie_busy_negative(rate, util, seconds):
    s = sampler(pcie(rate, util))
    run(s, seconds)
    assert findings(s, rule="pcie_busy") == []


def test_pcie_rule_needs_a_known_link():
    s = sampler(pcie(60e9, 10), link=None)
    run(s, 60)
    assert findings(s, rule="pcie_busy") == []


# ---- storage ---------------------------------------------------------------------------------------------
def test_io_wait_positive_and_negative():
    s = sampler(busy(95), host=lambda now: {"iowait_pct": 25.0})
    run(s, 30)
    f, = findings(s, rule="io_wait")
    assert f.gpu is None and f.sentence.startswith("The CPUs spent 25% of their time waiting on I/O for 30 s")
    for value, secs in ((9.0, 120), (40.0, 29)):
        n = sampler(busy(95), host=lambda now, v=value: {"iowait_pct": v})
        run(n, secs)
        assert findings(n, rule="io_wait") == []


# ---- clocks held down ------------------------------------------------------------------------------------
def test_throttled_positive_names_the_reason_and_ignores_the_power_cap():
    s = sampler(lambda slot, now: {"util_pct": 99, "procs": 1, "throttle_mask": 0x40 | 0x4})
    run(s, 30)
    f, = findings(s, rule="throttled")
    assert "held down by hardware thermal slowdown for 30 s" in f.sentence
    cap = sampler(lambda slot, now: {"util_pct": 99, "procs": 1, "throttle_mask": 0x4 | 0x1})
    run(cap, 120)
    assert findings(cap, rule="throttled") == []  # at the power cap under full load is normal
    idle = sampler(lambda slot, now: {"util_pct": 20, "procs": 1, "throttle_mask": 0x40})
    run(idle, 120)
    assert findings(idle, rule="throttled") == []


# ---- active now versus earlier; the plan beside the run -------------------------------------------------
def test_a_verdict_from_earlier_in_the_run_is_not_active():
    s = sampler(lambda slot, now: {"util_pct": 50 if now < 1040 else 99, "procs": 1})
    run(s, 100)
    f, = findings(s, rule="gpu_waiting")
    assert not f.active and f.longest_s == 39
    assert summary_lines(s.snapshot())[0].endswith("(earlier in the run)")


def test_measured_peak_against_the_plan_in_percent():
    s = sampler(lambda slot, now: {"util_pct": 99, "procs": 1, "mem_used_bytes": 50 * GIB,
                                   "proc_mem_bytes": 40 * GIB}, pid=4242)
    run(s, 3)
    text = plan_comparison(s.snapshot(), PlanLink(42 * GIB, 80 * GIB, label="the plan"))
    assert text == "Peak memory 40.0 GiB per GPU (process 4242); the plan predicted 42.0 GiB: 5.0% over-estimate"
    s.set_pid(None)
    run(s, 3, start=2000)
    assert "(all processes)" in plan_comparison(s.snapshot(), PlanLink(42 * GIB, 80 * GIB))


def test_no_samples_no_comparison_and_quiet_run_says_so():
    s = sampler(busy(99))
    assert plan_comparison(s.snapshot(), PlanLink(1.0, 2.0)) is None
    run(s, 60)
    assert summary_lines(s.snapshot()) == [
        "No bottleneck seen: every rule's threshold was below its minimum duration or not reached."]


def test_faults_appear_in_the_summary():
    src = ScriptedSource(busy(99), lost_at=1005)
    alive = {"yes": True}
    s = Sampler([(src, src.open())], ScriptedHost(), pid=7, capacity=100, alive=lambda pid: alive["yes"])
    run(s, 6)
    alive["yes"] = False
    run(s, 2, start=1010)
    lines = summary_lines(s.snapshot())
    assert "GPU 0 stopped: a GPU fell off the bus (NVML_ERROR_GPU_IS_LOST): reboot or reset the GPU." in lines
    assert "Process 7 exited." in lines


def test_a_rule_on_several_gpus_is_said_once_naming_the_others():
    src = ScriptedSource(busy(50), n=3)
    s = Sampler([(src, src.open())], ScriptedHost(), capacity=200)
    run(s, 40)
    assert len(findings(s, rule="gpu_waiting")) == 3
    line, = summary_lines(s.snapshot())
    assert line.startswith("GPU 0 was busy only 50%") and line.endswith("(also GPUs 1, 2)")
