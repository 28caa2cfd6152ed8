"""``--this-machine`` with llama.cpp's row split (``inference.split_mode = row``): on two identical detected cards it
is the same row split as ``estimate --gpu X --gpus 2 --split-mode row`` (``core.inference.row_estimate``, one function:
relative tolerance 1e-12) and says "rows split"; on one card the field is refused in one line, never "no layout
fits". The machines are recorded detection output (tests/hw/data)."""

import dataclasses
import json

import pytest
from hw_fixtures import build_fake_pynvml, data_text

from llmplan.cli import main
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv, read_nvml
from llmplan.hw.types import DetectionReport, HostInfo

G = "nvidia-rtx-3090-24gb"
PLAN = ["--model", "meta-llama/Llama-3.1-70B", "--workload", "inference", "--set", "inference.weight_format=q4_k_m"]


def run_json(capsys, *args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _detection(tmp_path, report: DetectionReport) -> str:
    path = tmp_path / "detect.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return str(path)


def _host() -> HostInfo:
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    return HostInfo("AMD EPYC", 2, 2, total, avail, "Linux")


def test_this_machine_with_two_identical_cards_is_the_cli_row_split(tmp_path, capsys):
    # two RTX 3090s recorded through NVML (tests/hw/data/nvml_2xrtx3090_nvlink.json)
    nvml = build_fake_pynvml(json.loads(data_text("nvml_2xrtx3090_nvlink.json")))
    fixture = _detection(tmp_path, DetectionReport(gpus=tuple(read_nvml(nvml)), host=_host()))
    here = run_json(capsys, "estimate", *PLAN, "--split-mode", "row", "--this-machine", "--no-calibration",
                    "--detection-fixture", fixture)
    flags = run_json(capsys, "estimate", *PLAN, "--gpu", G, "--gpus", "2", "--split-mode", "row")
    assert here["inference"]["tokens_per_s"] == pytest.approx(flags["inference"]["tokens_per_s"], rel=1e-12)
    tm = here["this_machine"]
    assert tm["estimated_here"] and tm["fits"] and "rows split over 2 GPUs" in tm["verdict"]
    assert not any("split_mode=row" in n for n in tm.get("notes", []))  # no one-GPU trial of a row split


def test_this_machine_with_one_card_refuses_the_row_split_by_the_field(tmp_path, capsys):
    gpu = parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv"))
    fixture = _detection(tmp_path, DetectionReport(gpus=tuple(dataclasses.replace(g) for g in gpu), host=_host()))
    assert main(["estimate", *PLAN, "--split-mode", "row", "--this-machine", "--no-calibration",
                 "--detection-fixture", fixture]) != 0
    err = capsys.readouterr().err
    assert "inference.split_mode=row splits each matrix over several cards" in err and "no layout" not in err
