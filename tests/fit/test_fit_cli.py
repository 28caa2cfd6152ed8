"""``llmplan-cli estimate ... --this-machine`` run the way a user runs it, on a recorded detection."""

from __future__ import annotations

import json

import pytest
from hw_fixtures import data_text

from llmplan.cli import main
from llmplan.cli.fit_report import FIXTURE_ENV, detection_report_from_dict
from llmplan.hw.host import parse_meminfo
from llmplan.hw.nvidia import parse_nvidia_smi_csv
from llmplan.hw.types import DetectionReport, HostInfo

THIS_MACHINE_KEYS = {"status", "fits", "verdict", "machine", "current", "one_gpu", "split", "changes", "limits",
                     "notes", "elapsed_s", "estimated_here"}


@pytest.fixture
def rtx4090_fixture(tmp_path):
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    report = DetectionReport(gpus=parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv")),
                             host=HostInfo("AMD EPYC", 2, 2, total, avail, "Linux"))
    path = tmp_path / "detect.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return path


def test_report_round_trips_through_detect_json(rtx4090_fixture):
    data = json.loads(rtx4090_fixture.read_text())
    data["gpus"][0]["catalog"] = {"id": "nvidia-rtx-4090-24gb"}  # `detect --json` adds this key: ignored
    report = detection_report_from_dict(data)
    assert report.gpus[0].name == "NVIDIA GeForce RTX 4090" and report.host.ram_total_bytes > 0


def test_json_has_the_this_machine_key_with_set_lines(rtx4090_fixture, capsys):
    rc = main(["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
               "--set", "inference.engine=llama.cpp", "--set", "inference.weight_format=bf16", "--this-machine",
               "--detection-fixture", str(rtx4090_fixture), "--json"])  # bf16 stated: kept, and it does not fit
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    tm = data["this_machine"]
    assert set(tm) == THIS_MACHINE_KEYS
    assert tm["status"] == "does_not_fit" and tm["fits"] is False and tm["estimated_here"] is True
    assert tm["machine"]["catalog_id"] == "nvidia-rtx-4090-24gb"
    assert tm["changes"][0]["overrides"] == ["inference.weight_format=q4_k_m"]
    assert tm["changes"][0]["result"]["gpu_layers"] == 48
    assert data["hardware"]["gpu_id"] == "nvidia-rtx-4090-24gb" and data["layout"]["chosen_by"] == "this-machine"


def test_text_prints_the_verdict_and_the_change_applies(rtx4090_fixture, capsys, monkeypatch):
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    base = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
            "--set", "inference.engine=llama.cpp", "--this-machine"]
    assert main([*base, "--set", "inference.weight_format=bf16"]) == 0  # stated, so kept: it does not fit
    out = capsys.readouterr().out
    assert "This machine (NVIDIA GeForce RTX 4090 24GB): does not fit even with offload" in out
    assert "--set inference.weight_format=q4_k_m" in out
    assert main([*base, "--set", "inference.weight_format=q4_k_m", "--json"]) == 0
    tm = json.loads(capsys.readouterr().out)["this_machine"]
    assert tm["status"] == "fits_offload" and tm["current"]["gpu_layers"] == 48


def test_bad_fixture_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{not json", encoding="utf-8")
    rc = main(["estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--this-machine", "--detection-fixture",
               str(bad)])
    err = capsys.readouterr().err
    assert rc != 0 and err.count("\n") == 1 and "x.json" in err and "not valid JSON" in err


def test_a_limit_of_one_reads_in_the_singular(rtx4090_fixture, capsys, monkeypatch):
    # QLoRA on Llama-3.1-8B at 4,096 tokens on an RTX 4090: one sequence per micro-batch is all that fits
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune", "--set",
                 "training.method=qlora", "--this-machine"]) == 0
    out = capsys.readouterr().out
    assert "Largest micro-batch that fits: 1 sequence (now 1)" in out and "1 sequences" not in out


def test_a_change_that_fits_only_within_the_margin_is_marked_and_ranked_after_roomy_ones(rtx4090_fixture, capsys,
                                                                                          monkeypatch):
    # LoRA on Llama-3.1-8B at 4,096 tokens on a 24 GB card is 0.2 GiB short. 8-bit Adam saves 0.24 GiB and was
    # offered first, "fits with 0.0 GiB free": inside the caching allocator's fragmentation margin, where a real
    # run may still run out of memory. It is now said so, and QLoRA (5.6 GiB free) comes first.
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune", "--set",
                 "training.method=lora", "--this-machine", "--json"]) == 0
    changes = json.loads(capsys.readouterr().out)["this_machine"]["changes"]
    kinds = [c["kind"] for c in changes]
    assert kinds.index("method_q") < kinds.index("optimizer")
    adam = changes[kinds.index("optimizer")]
    assert "fits, tight:" in adam["sentence"] and "within the allocator's fragmentation margin" in adam["sentence"]


def test_qlora_limits_here_agree_with_the_estimate(rtx4090_fixture, capsys, monkeypatch):
    # QLoRA on Llama-3.1-8B, 4,096 tokens, on the recorded RTX 4090. Two answers were wrong:
    # - the header printed the plan's defaults ("recompute selective") beside figures made with full recompute;
    # - "Largest sequence length that fits: 4,608" where 6,144 tokens fit at 22.6 of 24.0 GiB: past the limit
    #   the policy offloads the optimizer (0.5 GiB of LoRA states), and those bytes were read as the shortfall.
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    base = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune", "--set",
            "training.method=qlora", "--this-machine"]
    assert main([*base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["training"]["recompute"] == "full" and data["automatic"] == "auto: full recompute"
    longest = next(x for x in data["this_machine"]["limits"] if x["name"] == "context")["maximum"]
    exact = data["training"]["longest_seq_len_tokens"]  # the memory search of core.training.limits
    assert exact - 512 <= longest <= exact  # within two of the search's 256-token granules
    assert main([*base, "--set", f"training.seq_len={longest}", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["this_machine"]["fits"]


def test_this_machine_and_the_gpu_flag_walk_the_same_settings(rtx4090_fixture, capsys, monkeypatch):
    # LoRA on Llama-3.1-8B, 4,096 tokens, one RTX 4090 (new-user trial, round 31, row 10): `estimate --gpu` let the
    # auto-planner find ZeRO-3 + CPU offload (23.7 of 24.0 GiB) while `--this-machine` said "does not fit"
    # (24.2 GiB): its ladder had no ZeRO-3 on one GPU, a setting the search's layouts include whenever they
    # offload. Both now end on the same settings, so the same verdict (exact: the same engine on the same plan).
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    plan = ["estimate", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune",
            "--set", "training.method=lora", "--json"]
    assert main([*plan, "--this-machine"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert main([*plan, "--gpu", "nvidia-rtx-4090-24gb"]) == 0
    listed = json.loads(capsys.readouterr().out)
    knobs = ("zero_stage", "offload", "recompute", "micro_batch")
    assert here["this_machine"]["fits"] and here["fits"] == listed["fits"]
    assert {k: here["training"][k] for k in knobs} == {k: listed["training"][k] for k in knobs}
    assert here["memory_per_gpu"]["total"] == listed["memory_per_gpu"]["total"]


def test_an_open_format_on_two_4090s_is_the_same_answer_from_the_gpu_flags_and_this_machine(tmp_path, capsys):
    # Llama-3.1-70B, llama.cpp, no format named, two RTX 4090 (the nvidia-smi line recorded twice): `estimate --gpu
    # ... --gpus 2` and `--this-machine` both go down llama.cpp's ladder to Q4_K_M split by layers over both cards
    # (20.8 GiB a card) instead of bf16 with 66 of 80 layers in host RAM on one (core.search.policy).
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    line = data_text("nvidia_smi_rtx4090.csv").strip()
    second = line.replace("0, GPU-5e8d", "1, GPU-6e8d", 1)
    report = DetectionReport(gpus=parse_nvidia_smi_csv(f"{line}\n{second}"),
                             host=HostInfo("AMD EPYC", 2, 2, total, avail, "Linux"))
    fixture = tmp_path / "detect.json"
    fixture.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    base = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
            "--set", "inference.engine=llama.cpp", "--json"]
    assert main([*base, "--gpu", "nvidia-rtx-4090-24gb", "--gpus", "2"]) == 0
    flags = json.loads(capsys.readouterr().out)
    assert main([*base, "--this-machine", "--detection-fixture", str(fixture)]) == 0
    here = json.loads(capsys.readouterr().out)
    for data in (flags, here):
        assert data["inference"]["weight_format"] == "q4_k_m" and data["automatic"] == "auto: weight format q4_k_m"
        assert (data["layout"]["tp"], data["layout"]["pp"]) == (1, 2) and data["verdict"]["tier"] == "fits"
    assert here["this_machine"]["status"] == "fits_split"
    assert here["memory_per_gpu"]["total"] == flags["memory_per_gpu"]["total"]  # the same plan: exact


def test_an_open_format_on_one_4090_offloads_llama_cpps_usual_q4_k_m(rtx4090_fixture, capsys):
    # Llama-3.1-70B, llama.cpp, no format named, one RTX 4090 (the recorded nvidia-smi line): no format of the ladder
    # fits on the card (even Q2_K leaves layers in host RAM), so the answer offloads. It used to offload the plan's
    # bf16 (66 of 80 layers in host RAM, 0.596 tokens/s, 109 GiB of host RAM); nobody runs a bf16 70B GGUF there.
    # It now offloads llama.cpp's usual file, Q4_K_M (the quantize tool's "*recommended*" type, catalogs/engines.toml
    # default_format): 32 of 80 layers in host RAM, in `estimate --gpu` and `--this-machine` alike (same bytes, exact).
    base = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
            "--set", "inference.engine=llama.cpp", "--json"]
    assert main([*base, "--gpu", "nvidia-rtx-4090-24gb"]) == 0
    flags = json.loads(capsys.readouterr().out)
    assert main([*base, "--this-machine", "--detection-fixture", str(rtx4090_fixture)]) == 0
    here = json.loads(capsys.readouterr().out)
    words = "the plan leaves the format open; llama.cpp's usual Q4_K_M with 32 of 80 layers in host RAM"
    assert flags["automatic"] == here["automatic"] == f"auto: weight format q4_k_m ({words})"
    for data in (flags, here):
        assert data["inference"]["weight_format"] == "q4_k_m" and data["verdict"]["tier"] == "offload"
    assert here["this_machine"]["status"] == "fits_offload" and words in here["this_machine"]["verdict"]
    assert here["memory_per_gpu"]["total"] == flags["memory_per_gpu"]["total"]
    # a stated format is kept: bf16 offloaded as asked
    assert main([*base, "--gpu", "nvidia-rtx-4090-24gb", "--set", "inference.weight_format=bf16"]) == 0
    stated = json.loads(capsys.readouterr().out)
    assert stated["inference"]["weight_format"] == "bf16" and not stated.get("automatic")


def test_gpt_oss_120b_here_keeps_experts_in_host_ram(rtx4090_fixture, capsys, monkeypatch):
    """gpt-oss-120b with llama.cpp on the recorded RTX 4090 (23.1 GiB of host RAM available): every layer on the
    card with the first layers' experts in host RAM (--n-cpu-moe, docs/inference.md "Experts in host RAM"); those
    experts count against host RAM, and 38 GiB of them do not fit in 23.1 GiB, so the verdict says so."""
    monkeypatch.setenv(FIXTURE_ENV, str(rtx4090_fixture))
    assert main(["estimate", "--model", "openai/gpt-oss-120b", "--workload", "inference",
                 "--set", "inference.engine=llama.cpp", "--this-machine"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("This machine"))
    assert "every layer on the GPU, experts of" in line and "layers in host RAM (--n-cpu-moe" in line, line
    assert "does not fit even with offload" in line and "23.1 GiB available" in line, line
