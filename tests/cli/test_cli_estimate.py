"""``estimate`` wiring: plan -> overrides -> auto layout -> engine -> report -> --save.

The engine is replaced by a stand-in returning a fixed Estimate (the formatter's test
fixture), so these tests check the command's plumbing, not the engine's numbers.
"""

import json

import pytest

from llmplan.cli import main
from llmplan.plan.planfile import load_plan
from llmplan.resources_path import resources_dir

from .test_report import _estimate

EXAMPLES = resources_dir() / "examples"
PRETRAIN = EXAMPLES / "pretrain-llama-3.1-405b-16k-h100.llmplan"
@pytest.fixture
def stand_in_engine(monkeypatch):
    seen = []

    def fake(scenario):
        seen.append(scenario)
        return _estimate(scenario, inference=scenario.workload == "inference")

    monkeypatch.setattr("llmplan.core.engine.estimate", fake)
    return seen


def test_plan_layout_is_used_as_given(stand_in_engine, capsys):
    assert main(["estimate", str(PRETRAIN), "--json", "--set", "parallelism.virtual_stages=4"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["layout"] == {"tp": 8, "pp": 16, "dp": 128, "cp": 1, "ep": 1, "sequence_parallel": True,
                              "virtual_stages": 4, "gpus": 16384, "chosen_by": "plan"}
    assert stand_in_engine[0].cluster.total_gpus == 16384


def test_auto_layout_when_none_is_given_and_save_keeps_it(stand_in_engine, capsys, tmp_path):
    # A model given as a config.json path; GPU spec set inline through --set (no catalog needed).
    from tests.core.search.specs import H100_80GB
    from tests.plan.test_planfile import LLAMA_CONFIG

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(LLAMA_CONFIG))
    out = tmp_path / "auto.llmplan"
    argv = ["estimate", "--model", str(cfg), "--gpus", "8", "--set",
            f"hardware.gpu_spec={H100_80GB.model_dump_json()}", "--set", "training.global_batch=512",
            "--save", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "layout (chosen automatically)" in text and "FITS" in text
    saved = load_plan(out)
    assert saved.parallelism.gpus == 8 and saved.hardware.gpu_spec == H100_80GB
    assert saved.parallelism == stand_in_engine[0].parallelism


def test_auto_flag_replans_a_plan_file(stand_in_engine, capsys):
    assert main(["estimate", str(PRETRAIN), "--auto", "--set", "hardware.nodes=4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["layout"]["chosen_by"] == "auto" and data["layout"]["gpus"] == 32


def test_auto_layout_keeps_the_training_knobs_the_user_set(capsys, tmp_path):
    """Without a layout the auto-planner chooses one, but what the user set with --set stays as set
    (it once came back as micro-batch 1, ZeRO-2, no recompute, and --save wrote those)."""
    args = ["estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--gpus", "8",
            "--set", "training.zero_stage=3", "--set", "training.recompute=full", "--set", "training.micro_batch=4",
            "--set", "training.global_batch=256", "--json", "--save", str(tmp_path / "p.llmplan")]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    t = data["training"]
    assert (t["zero_stage"], t["recompute"], t["micro_batch"], t["global_batch"]) == (3, "full", 4, 256)
    assert data["layout"]["chosen_by"] == "auto"
    saved = load_plan(tmp_path / "p.llmplan").training
    assert (saved.zero_stage, saved.recompute, saved.micro_batch) == (3, "full", 4)


def test_json_explains_each_collective_and_takes_an_inline_network(capsys):
    # 4 x 200 Gb/s for 8 GPUs, given inline: the two DP rings of each GPU pair share the node's 100 GB/s
    spec = '{"id": "hdr-x4", "name": "4 x HDR 200", "nics_per_node": 4, "nic_bandwidth": 25e9}'
    rc = main(["estimate", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-a100-sxm4-80gb", "--gpus", "8",
               "--nodes", "2", "--set", "parallelism.tp=8", "--set", "parallelism.dp=2",
               "--set", f"hardware.network_spec={spec}", "--json"])
    assert rc == 0
    colls = json.loads(capsys.readouterr().out)["communication"]["collectives"]
    dp = next(c for c in colls if c["group"] == "dp")
    assert dp["span"] == "2 nodes × 1 GPU" and dp["nodes"] == 2 and dp["algorithm"].startswith("ring/")
    assert dp["bus_bandwidth"] <= 100e9 / 8 * 0.94 * 1.0001  # one eighth of the node's NICs
    tp = next(c for c in colls if c["group"] == "tp")
    assert tp["span"] == "1 node, 8 GPUs" and tp["limit"] == "NVLink" and tp["calls"] > 0
    assert all(c["latency_s"] >= 0 and c["message_bytes"] > 0 for c in colls)


def test_an_offloaded_plan_says_fits_with_offload(capsys):
    """Issue 18: Llama-3-70B Q4_K_M with llama.cpp on one RTX 4090 keeps about 32 of its 80 layers in CPU
    RAM (tests/fit/test_tiers.py has the figures and their sources; tolerance there: 45–52 layers on the
    GPU). The CLI printed a plain "FITS"; it now says the app's tier, and --json carries it."""
    args = ["estimate", "--model", "meta-llama/Meta-Llama-3-70B", "--gpu", "nvidia-rtx-4090-24gb", "--workload",
            "inference", "--set", "inference.engine=llama.cpp", "--set", "inference.weight_format=q4_k_m"]
    assert main(args) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "FITS" in ln)
    assert line.startswith("FITS WITH OFFLOAD (") and " of 80 layers in CPU RAM, ~" in line, line
    assert main([*args, "--json"]) == 0
    v = json.loads(capsys.readouterr().out)["verdict"]
    assert v["tier"] == "offload" and 28 <= v["layers_in_cpu_ram"] <= 35
    assert v["headline"].startswith("Fits with offload: ") and "Offload costs" in v["offload_cost"]
    assert 12 <= v["tokens_per_s_all_on_gpu"] <= 25


@pytest.mark.parametrize("flag,value,said", [("--gpus", "0", "--gpus: input should be greater than or equal to 1"),
                                             ("--gpus", "100000", "--gpus: input should be less than or equal to "
                                                                  "1024"),
                                             ("--nodes", "0", "--nodes: input should be greater than or equal to 1")])
def test_a_bad_count_flag_is_named_as_typed(capsys, flag, value, said):
    """trial33: ``--gpus 0`` read "--set: hardware.gpus_per_node: ..." though no --set was typed."""
    assert main(["estimate", "--model", "meta-llama/Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", flag, value]) == 2
    err = capsys.readouterr().err
    assert said in err and "--set" not in err, err
