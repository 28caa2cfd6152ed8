"""``llmplan-cli detect`` / ``calibrate`` driven the way a user runs them, on recorded probe outputs."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import pytest

from llmplan.cli import cmd_detect, main
from llmplan.hw.measured import Calibration, MatmulMeasurement
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo

CSV_H100 = "\n".join(
    f"{i}, GPU-{i:08d}-0000-0000-0000-000000000000, NVIDIA H100 80GB HBM3, 81559, 0, 81008, 535.129.03, 9.0, 5, 16, "
    "Disabled" for i in range(2))
HOST = HostInfo("AMD EPYC 9654", 192, 96, 1536 * 2**30, 1400 * 2**30, "Linux 6.8", 3 * 2**40)


@dataclass(frozen=True)
class Spec:
    memory_bytes: int


@dataclass(frozen=True)
class Cand:
    id: str
    match_names: tuple[str, ...]
    spec: Spec


@pytest.fixture
def h100_node(monkeypatch):
    report = DetectionReport(gpus=parse_nvidia_smi_csv(CSV_H100), host=HOST,
                             reasons=("NVIDIA: NVML: NVIDIA driver library not found (libnvidia-ml.so.1)",
                                      "AMD: amd-smi not installed"), elapsed_s=0.02)
    monkeypatch.setattr(cmd_detect, "detect_all", lambda timeout_s: report)
    return report


def test_detect_text_lists_gpus_and_catalog_matches(h100_node, monkeypatch, capsys):
    monkeypatch.setattr(cmd_detect, "_catalog_gpus",
                        lambda: [Cand("nvidia-h100-sxm-80gb", ("NVIDIA H100 80GB HBM3",), Spec(80 * 2**30))])
    assert main(["detect"]) == 0
    out = capsys.readouterr().out
    assert "GPUs: 2× NVIDIA H100 80GB HBM3 (79.6 GiB)" in out
    assert "catalog: nvidia-h100-sxm-80gb (exact match)" in out
    assert "Notes: NVIDIA: NVML: NVIDIA driver library not found" in out and "amd-smi" not in out
    assert "PCIe max gen5 x16" in out and "Host: AMD EPYC 9654, 96 cores / 192 threads" in out


def test_detect_json_without_catalog(h100_node, monkeypatch, capsys):
    monkeypatch.setattr(cmd_detect, "_catalog_gpus", lambda: None)
    assert main(["detect", "--json", "--timeout", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [g["memory_total_bytes"] for g in data["gpus"]] == [81559 * 2**20] * 2
    assert data["gpus"][0]["catalog"] is None and data["host"]["ram_total_bytes"] == 1536 * 2**30
    assert data["reasons"] and data["summary"].startswith("2×")


def test_detect_no_gpu_says_why(monkeypatch, capsys):
    report = DetectionReport(gpus=(), host=HOST, reasons=("NVIDIA: nvidia-smi not installed",))
    monkeypatch.setattr(cmd_detect, "detect_all", lambda timeout_s: report)
    assert main(["detect"]) == 0
    assert capsys.readouterr().out.startswith("no GPU found: NVIDIA: nvidia-smi not installed\n")


def test_detect_bad_timeout_is_one_clear_line(capsys):
    assert main(["detect", "--timeout", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmplan-cli: error: --timeout must be between") and "Traceback" not in err


def test_calibrate_without_torch_explains(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    assert main(["calibrate", "--device", "cpu"]) == 2
    assert "needs PyTorch" in capsys.readouterr().err


def test_calibrate_saves_and_prints(monkeypatch, tmp_path, capsys):
    import llmplan.hw.calibrate as calib

    cal = Calibration("cpu", "AMD EPYC", "2.13.0", "2026-11-22T03:00:00Z",
                      (MatmulMeasurement("fp32", 1024, 1.5e11, 16, 0.2),), 3.5e10, 64 << 20)
    monkeypatch.setattr(calib, "calibrate", lambda device, seconds: cal)
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    assert main(["calibrate", "--device", "cpu", "--seconds", "1"]) == 0
    out = capsys.readouterr().out
    assert "0.150 TFLOP/s" in out and "35.0 GB/s" in out and str(tmp_path / "calibration.json") in out
    assert json.loads((tmp_path / "calibration.json").read_text())["device"] == "cpu"
