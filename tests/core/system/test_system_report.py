"""system_report on small hand-made cases, and its place in Estimate."""

import dataclasses

import pytest
from system_fixtures import TINY, count_params, inference_estimate, scenario_tiny, settings, training_estimate

from llmplan.core.system.report import evaluation, system_report
from llmplan.core.system.settings import CheckpointOptions, PipelineProfile


def test_an_evaluation_holds_the_estimate_and_the_system_report_side_by_side():
    est = training_estimate(TINY, tokens_per_s=1e5, step_time_s=1.0, mfu=0.3)
    assert not hasattr(est, "system")  # the engine's result is never patched afterwards
    ev = evaluation(scenario_tiny(), est, settings())
    assert ev.estimate is est and ev.system == system_report(scenario_tiny(), est, settings())
    assert ev.bottleneck == ev.system.bottleneck  # ranked over GPU and system
    assert (ev.memory, ev.params, ev.compute, ev.fits, ev.warnings) == (
        est.memory, est.params, est.compute, est.fits, est.warnings)


def test_training_report_effective_days():
    s = scenario_tiny(tokens=1e10)
    rep = system_report(s, training_estimate(TINY, tokens_per_s=1e5, step_time_s=1.0, mfu=0.3), settings())
    assert rep.goodput.ideal_time_s.value == pytest.approx(1e5)
    assert rep.effective_days == pytest.approx(rep.goodput.wall_time_s.value / 86400)
    assert rep.cold_start is None


def test_cpu_bound_tokenisation_becomes_the_bottleneck():
    slow = PipelineProfile(text_bytes_per_token=4.0, tokenizer_bytes_per_s_per_core=1e6, cpu_cores_per_node=8,
                           pretokenized=False, source="test")
    est = training_estimate(TINY, tokens_per_s=1e7, step_time_s=1.0, mfu=0.3)
    rep = system_report(scenario_tiny(), est, settings(pipeline=slow))
    # 1e7 tokens/s × 4 B / 1e6 B/s per core = 40 cores on an 8-core node.
    assert rep.data.cpu_load.value == pytest.approx(5.0)
    assert rep.bottleneck.kind == "cpu"


def test_async_save_warns_when_the_background_write_outlasts_the_interval():
    # a step shorter than the interval: an interval under one step is taken as one step (the test below)
    est = training_estimate(TINY, tokens_per_s=1e5, step_time_s=0.001, mfu=0.3)
    opts = CheckpointOptions(async_save=True, restart_overhead_s=0, interval_s=0.01, source="test")
    rep = system_report(scenario_tiny(), est, settings(checkpoint=opts))
    assert any("background checkpoint write" in w for w in rep.warnings)
    assert rep.host.pinned_per_node.value == pytest.approx(8 * rep.checkpoint.per_gpu.value)


def test_inference_report_has_cold_start_and_no_training_parts():
    s = scenario_tiny(workload="inference")
    weights = 2 * count_params(TINY).total
    rep = system_report(s, inference_estimate(TINY, weights), settings())
    assert rep.goodput is None and rep.data is None and rep.host is None
    assert rep.cold_start.total_s.value == pytest.approx(weights / 10e9 + weights / 8 / 64e9)
    assert rep.bottleneck.kind == "memory bandwidth"
    assert rep.power.energy_kwh.value == pytest.approx(8 * (700 + 300) * 1.5 / 1000)  # one hour at full load


def test_json_export_is_plain_numbers():
    import json

    from llmplan.core.system.export import system_json

    est = training_estimate(TINY, tokens_per_s=1e5, step_time_s=1.0, mfu=0.3)
    rep = system_report(scenario_tiny(), est, settings())
    out = system_json(rep)
    json.dumps(out)  # serialisable
    assert out["checkpoint"]["total_bytes"] == rep.checkpoint.total.value
    assert out["goodput"]["effective_days"] == pytest.approx(rep.effective_days)
    assert out["cold_start"] is None


def test_slow_offload_drives_become_the_bottleneck():
    from system_fixtures import STORE

    s = scenario_tiny(offload="nvme", zero_stage=3)
    est = training_estimate(TINY, tokens_per_s=1e5, step_time_s=0.001, mfu=0.3, nvme=1e11)
    rep = system_report(s, est, settings(offload_storage=STORE))
    assert rep.host.nvme_load.value > 1
    assert rep.bottleneck.kind == "storage"
    assert "NVMe offload" in rep.bottleneck.statement


def test_missing_throughput_is_warned_about():
    est = dataclasses.replace(training_estimate(TINY, tokens_per_s=1e5, step_time_s=1.0, mfu=0.3), compute=None)
    rep = system_report(scenario_tiny(), est, settings())
    assert any("no training throughput" in w for w in rep.warnings)


def _every(interval_s: float) -> CheckpointOptions:
    return CheckpointOptions(async_save=False, restart_overhead_s=0, interval_s=interval_s, source="test")


def test_an_interval_shorter_than_a_step_is_one_step_and_says_so():
    """trial33: a checkpoint interval of 1 ns (a plan's system.interval_s; the app's field takes any seconds) read
    "goodput 0.0 %, effective training time 180,357,738 years, 41,966,487 GWh". Checkpoints are saved between
    steps, so the interval is at least one step: the report uses one step and warns, naming the field."""
    est = training_estimate(TINY, tokens_per_s=1e5, step_time_s=2.0, mfu=0.3)
    rep = system_report(scenario_tiny(), est, settings(checkpoint=_every(1e-9)))
    one_step = system_report(scenario_tiny(), est, settings(checkpoint=_every(2.0)))
    assert rep.goodput.interval_s.value == 2.0 and rep.goodput == one_step.goodput
    assert rep.goodput.goodput.value > 0.5
    assert any(w.startswith("The checkpoint interval (system.interval_s = 1e-09 s) is shorter than one training "
                            "step (2 s)") for w in rep.warnings)
