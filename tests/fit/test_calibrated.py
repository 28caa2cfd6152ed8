"""A saved calibration becomes the efficiencies of the GPU it was measured on, and nothing else's.

The calibrations here are written by hand in the format ``llmplan-cli calibrate`` saves (the real
run on a CPU is in test_hw_calibration.py); the expected fractions are measured / datasheet peak,
worked out in each test from the catalog entry's own figures.
"""

from __future__ import annotations

import json

import pytest
from hw_fixtures import data_text

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.cli import main
from llmplan.fit.local import fit_this_machine, local_hardware
from llmplan.hw.host import parse_meminfo
from llmplan.hw.measured import Calibration, MatmulMeasurement, save_calibration
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo
from llmplan.plan.calibrated import apply_calibration, fractions_for, load_calibration_quietly
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.resolve import default_efficiency

RTX_4090 = next(g for g in load_hardware_catalog().gpus if g.id == "nvidia-rtx-4090-24gb")
BF16_MEASURED = 120e12  # FLOP/s
COPY_MEASURED = 900e9  # bytes/s


def calibration(device="cuda", name="NVIDIA GeForce RTX 4090", bf16=BF16_MEASURED, copy=COPY_MEASURED):
    return Calibration(device=device, device_name=name, torch_version="2.13.0", created_utc="2026-11-24T08:00:00Z",
                       matmul=(MatmulMeasurement("bf16", 4096, bf16, 100, 1.0),
                               MatmulMeasurement("bf16", 2048, bf16 / 2, 100, 1.0),
                               MatmulMeasurement("fp32", 4096, 50e12, 50, 1.0)),
                       memory_bandwidth_bytes_per_s=copy, copy_bytes=1 << 30)


def plan(**sets) -> PlanDocument:
    doc = PlanDocument(name="t", model=ModelRef(id="meta-llama/Meta-Llama-3-8B"),
                       hardware=HardwareRef(gpu="nvidia-rtx-4090-24gb"), workload="inference")
    return apply_overrides(doc, [f"{k.replace('__', '.')}={v}" for k, v in sets.items()])


def rtx4090_report() -> DetectionReport:
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    return DetectionReport(gpus=parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv")),
                           host=HostInfo("AMD EPYC", 2, 2, total, avail, "Linux"))


def test_fractions_are_measured_over_the_catalog_peaks():
    spec = RTX_4090.spec
    fr, why = fractions_for(calibration(), spec, RTX_4090.match_names)
    assert why == "" and fr is not None
    assert fr.matmul["bf16"] == pytest.approx(BF16_MEASURED / spec.peak_flops.for_dtype("bf16"))  # best size
    assert fr.memory_bandwidth == pytest.approx(COPY_MEASURED / spec.memory_bandwidth)
    assert fr.measured_on == "NVIDIA GeForce RTX 4090"


@pytest.mark.parametrize("cal, words", [
    (calibration(name="NVIDIA H100 80GB HBM3"), "measured on NVIDIA H100 80GB HBM3, not on the plan's"),
    (calibration(device="cpu", name="AMD EPYC"), "measured on the CPU"),
])
def test_a_calibration_of_another_device_is_not_used_and_says_why(cal, words):
    fr, why = fractions_for(cal, RTX_4090.spec, RTX_4090.match_names)
    assert fr is None and words in why and RTX_4090.spec.name in why


def test_an_apple_calibration_applies_to_an_apple_gpu_only():
    apple = next(g for g in load_hardware_catalog().gpus if g.spec.vendor == "apple")
    assert fractions_for(calibration(device="mps", name="Apple GPU (MPS)"), apple.spec)[0] is not None
    assert fractions_for(calibration(device="mps", name="Apple GPU (MPS)"), RTX_4090.spec)[0] is None


def test_calibration_fills_only_what_the_plan_leaves_empty():
    fr, _ = fractions_for(calibration(), RTX_4090.spec, RTX_4090.match_names)
    doc, note = apply_calibration(plan(), fr)
    assert doc.efficiency.matmul == pytest.approx(fr.matmul["bf16"], abs=1e-4)
    assert doc.efficiency.memory_bandwidth == pytest.approx(fr.memory_bandwidth, abs=1e-4)
    assert "calibrated on NVIDIA GeForce RTX 4090 (2026-11-24)" in note and "matmul (bf16)" in note
    own, note = apply_calibration(plan(efficiency__memory_bandwidth=0.5), fr)
    assert own.efficiency.memory_bandwidth == 0.5 and "the plan's own efficiency.memory_bandwidth 0.5 kept" in note
    assert own.efficiency.matmul == pytest.approx(fr.matmul["bf16"], abs=1e-4)


def test_a_dtype_that_was_not_measured_keeps_the_default():
    fr, _ = fractions_for(calibration(), RTX_4090.spec, RTX_4090.match_names)
    doc, note = apply_calibration(plan(inference__weight_format="fp8"), fr)  # fp8 matmuls: not measured
    assert doc.efficiency.matmul is None and doc.efficiency.memory_bandwidth is not None
    assert "fp8 matmuls were not measured" in note


def test_fractions_beyond_the_datasheet_are_clamped_and_said():
    fr, _ = fractions_for(calibration(copy=2 * RTX_4090.spec.memory_bandwidth), RTX_4090.spec,
                          RTX_4090.match_names)
    assert fr.memory_bandwidth == 1.0 and fr.clamped == ("bandwidth 200%",)
    assert "clamped" in apply_calibration(plan(), fr)[1]


def test_a_damaged_saved_calibration_is_a_note_not_an_error(tmp_path):
    bad = tmp_path / "calibration.json"
    bad.write_text("{not json", encoding="utf-8")
    cal, note = load_calibration_quietly(bad)
    assert cal is None and note.startswith("calibration not used:") and "not valid JSON" in note
    assert load_calibration_quietly(tmp_path / "missing.json") == (None, None)


def test_this_machine_uses_the_calibration_of_its_gpu():
    """Decode is bandwidth-bound, so its speed scales with the bandwidth fraction: the calibrated
    fraction over the catalog default, within 2 % (the rest of the step is compute and overhead)."""
    doc = plan(inference__batch=1)
    plain = fit_this_machine(doc, local_hardware(rtx4090_report()))
    fr, _ = fractions_for(calibration(), RTX_4090.spec, RTX_4090.match_names)
    machine = local_hardware(rtx4090_report(), calibration())
    assert machine.calibration == fr
    calibrated = fit_this_machine(doc, machine)
    assert calibrated.local_plan.efficiency.memory_bandwidth == pytest.approx(fr.memory_bandwidth, abs=1e-4)
    assert any(n.startswith("calibrated on NVIDIA GeForce RTX 4090") for n in calibrated.notes)
    ratio = calibrated.current.tokens_per_s / plain.current.tokens_per_s
    default_bw = default_efficiency(RTX_4090.spec).memory_bandwidth
    assert fr.memory_bandwidth != pytest.approx(default_bw, rel=0.05)  # else the test shows nothing
    assert ratio == pytest.approx(fr.memory_bandwidth / default_bw, rel=0.02)


def test_this_machine_ignores_a_calibration_of_another_gpu():
    machine = local_hardware(rtx4090_report(), calibration(name="NVIDIA H100 80GB HBM3"))
    assert machine.calibration is None
    assert any("measured on NVIDIA H100 80GB HBM3" in n for n in machine.notes)


# ---- the command line -------------------------------------------------------------------------------

@pytest.fixture
def detection(tmp_path):
    path = tmp_path / "detect.json"
    path.write_text(json.dumps(rtx4090_report().to_dict()), encoding="utf-8")
    return path


ARGS = ["estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-rtx-4090-24gb",
        "--workload", "inference", "--json"]


def test_cli_calibration_file_sets_the_efficiencies(tmp_path, capsys):
    path = save_calibration(calibration(), tmp_path / "cal.json")
    assert main([*ARGS, "--calibration", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    fr, _ = fractions_for(calibration(), RTX_4090.spec, RTX_4090.match_names)
    assert data["calibration"]["efficiency"]["memory_bandwidth"] == pytest.approx(fr.memory_bandwidth, abs=1e-4)
    assert data["calibration"]["note"].startswith("calibrated on NVIDIA GeForce RTX 4090")


def test_cli_calibration_of_another_gpu_is_reported_not_applied(tmp_path, capsys):
    path = save_calibration(calibration(name="NVIDIA H100 80GB HBM3"), tmp_path / "cal.json")
    assert main([*ARGS, "--calibration", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["calibration"]["efficiency"] == {} and "not on the plan's" in data["calibration"]["note"]


def test_cli_calibration_asked_for_but_missing_is_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    assert main([*ARGS, "--calibration"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no calibration at" in err and "llmplan-cli calibrate" in err


def test_cli_this_machine_uses_the_saved_calibration_unless_told_not_to(tmp_path, capsys, monkeypatch, detection):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    save_calibration(calibration())
    assert main([*ARGS, "--this-machine", "--detection-fixture", str(detection)]) == 0
    tm = json.loads(capsys.readouterr().out)["this_machine"]
    assert tm["machine"]["calibration"]["measured_on"] == "NVIDIA GeForce RTX 4090"
    assert main([*ARGS, "--this-machine", "--detection-fixture", str(detection), "--no-calibration"]) == 0
    assert json.loads(capsys.readouterr().out)["this_machine"]["machine"]["calibration"] is None


def test_cli_this_machine_survives_a_damaged_saved_calibration(tmp_path, capsys, monkeypatch, detection):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "calibration.json").write_text("[]", encoding="utf-8")
    assert main([*ARGS[:-1], "--this-machine", "--detection-fixture", str(detection)]) == 0
    out = capsys.readouterr().out
    assert "Note: calibration not used:" in out and "is not an llmplan calibration file" in out


def test_cli_compare_run_prints_the_error_of_each_figure(tmp_path, capsys):
    assert main([*ARGS]) == 0
    est = json.loads(capsys.readouterr().out)
    allocated = est["memory_per_gpu"]["total"] - est["memory_per_gpu"]["overhead"]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"peak_memory_bytes": int(allocated / 1.25), "step_time_s": 0.02}), encoding="utf-8")
    assert main([*ARGS, "--compare-run", str(run)]) == 0
    rows = json.loads(capsys.readouterr().out)["measured_run"]
    mem, step = rows
    assert mem["estimated"] == pytest.approx(allocated) and mem["relative_error"] == pytest.approx(0.25, abs=1e-6)
    assert step["estimated"] == pytest.approx(est["inference"]["tpot_s"])
    assert step["relative_error"] == pytest.approx(est["inference"]["tpot_s"] / 0.02 - 1)
    assert main([*ARGS[:-1], "--compare-run", str(run)]) == 0
    assert "25.0 % over-estimate" in capsys.readouterr().out


def test_cli_compare_run_with_a_bad_file_is_one_line_error(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"peak_memory_bytes": -5}), encoding="utf-8")
    assert main([*ARGS, "--compare-run", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "peak_memory_bytes must be a positive number" in err
