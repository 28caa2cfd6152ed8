"""Calibration save/load/compare (no torch needed) and one short real run when torch is installed."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import pytest

from llmplan.errors import InputError
from llmplan.hw.measured import (
    Calibration,
    MatmulMeasurement,
    MeasuredRun,
    achieved_fractions,
    compare,
    compare_run,
    import_measured_run,
    load_calibration,
    save_calibration,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None


def sample() -> Calibration:
    return Calibration(
        device="cuda:0", device_name="NVIDIA H100 80GB HBM3", torch_version="2.13.0",
        created_utc="2026-11-22T03:00:00Z",
        matmul=(MatmulMeasurement("bf16", 4096, 6.0e14, 500, 0.12), MatmulMeasurement("bf16", 8192, 7.0e14, 60, 0.1),
                MatmulMeasurement("fp32", 8192, 5.0e13, 6, 0.13)),
        memory_bandwidth_bytes_per_s=2.8e12, copy_bytes=1 << 30, notes=("made-up numbers for the file format",),
    )


def test_save_then_load_round_trips_in_user_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path / "data"))
    path = save_calibration(sample())
    assert path == tmp_path / "data" / "calibration.json"
    assert [p.name for p in path.parent.iterdir()] == ["calibration.json"]  # no temp file left behind
    assert load_calibration() == sample()
    assert json.loads(path.read_text())["best_flops_per_s"] == {"bf16": 7.0e14, "fp32": 5.0e13}


def test_load_missing_is_none_and_damaged_is_clear(tmp_path):
    assert load_calibration(tmp_path / "none.json") is None
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_calibration(bad)
    bad.write_text(json.dumps({"format": "llmplan-calibration", "schema_version": 99}))
    with pytest.raises(InputError, match="schema_version 99"):
        load_calibration(bad)
    bad.write_text(json.dumps({"format": "llmplan-calibration", "schema_version": 1, "device": "cpu"}))
    with pytest.raises(InputError, match="damaged"):
        load_calibration(bad)


def test_achieved_fractions_against_a_spec():
    # H100 SXM dense peaks (NVIDIA H100 datasheet: 989.4 TFLOP/s bf16 dense, 67 TFLOP/s fp32,
    # 3.35 TB/s HBM3); the measured values are the sample's, so this checks the arithmetic only.
    peaks = {"bf16": 989.4e12, "fp32": 67e12}
    spec = SimpleNamespace(peak_flops=SimpleNamespace(for_dtype=lambda d: peaks.get(d, 0.0)),
                           memory_bandwidth=3.35e12)
    f = achieved_fractions(sample(), spec)
    assert f.matmul["bf16"] == pytest.approx(7.0e14 / 989.4e12)
    assert f.matmul["fp32"] == pytest.approx(5.0e13 / 67e12)
    assert f.memory_bandwidth == pytest.approx(2.8e12 / 3.35e12)


def test_import_measured_run_and_compare(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"peak_memory_bytes": 60 * 2**30, "step_time_s": 1.25}))
    run = import_measured_run(p)
    assert run == MeasuredRun(60 * 2**30, 1.25, str(p))
    figure = SimpleNamespace(value=66 * 2**30, unit="B")  # a core Figure has .value
    (mem, step) = compare_run(run, peak_memory=figure, step_time=1.0)
    assert mem.relative_error == pytest.approx(0.1) and "over-estimate" in mem.describe()
    assert step.relative_error == pytest.approx(-0.2) and "under-estimate" in step.describe()
    assert compare_run(MeasuredRun(None, 2.0), peak_memory=1.0) == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [("[1, 2]", "JSON object"), ("{}", "at least one"), ('{"peak_memory_bytes": -5}', "positive"),
     ('{"peak_memory_bytes": 1.5}', "whole number"), ('{"step_time_s": "fast"}', "positive"),
     ("{oops", "not valid JSON")],
)
def test_import_measured_run_rejects_bad_files(tmp_path, content, message):
    p = tmp_path / "run.json"
    p.write_text(content)
    with pytest.raises(InputError, match=message):
        import_measured_run(p)
    with pytest.raises(InputError, match="does not exist"):
        import_measured_run(tmp_path / "missing.json")


def test_compare_needs_a_positive_measurement():
    with pytest.raises(InputError, match="positive"):
        compare("step time (s)", 0.0, 1.0)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed (optional extra llmplan[bench])")
def test_short_cpu_calibration_measures_something_plausible():
    from llmplan.hw.calibrate import calibrate

    cal = calibrate("cpu", seconds=0.5)
    best = cal.best_flops_per_s()
    # Loose on purpose (the CI box is shared and may be busy): the bounds catch a unit error
    # (a factor 1e3 or 1e9 in FLOP/s or B/s), not a speed claim.
    assert 1e7 < best["fp32"] < 1e14
    assert 1e6 < cal.memory_bandwidth_bytes_per_s < 1e13
    assert cal.device == "cpu" and cal.matmul[0].iterations >= 1


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed (optional extra llmplan[bench])")
def test_calibrate_rejects_bad_arguments():
    from llmplan.hw.calibrate import calibrate, pick_device

    with pytest.raises(InputError, match="--seconds"):
        calibrate("cpu", seconds=0.0)
    with pytest.raises(InputError, match="cuda, mps or cpu"):
        pick_device("tpu")
