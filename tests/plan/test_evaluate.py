"""The one evaluation pipeline (plan -> scenario -> estimate -> system report) the CLI and GUI share."""

import json

import pytest

from llmplan.cli import main
from llmplan.errors import CatalogError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan
from llmplan.resources_path import resources_dir

EXAMPLES = resources_dir() / "examples"
FINETUNE = EXAMPLES / "finetune-llama-3.1-70b-zero3-8xh100.llmplan"
SERVE = EXAMPLES / "serve-llama-3.1-70b-tp4-h100.llmplan"
LAPTOP = EXAMPLES / "laptop-llama-3.1-8b-q4_k_m.llmplan"


def test_training_plan_gets_a_system_report_and_a_combined_bottleneck():
    doc = load_plan(FINETUNE)
    _, est = evaluate_plan(doc)
    assert est.system is not None
    # 70B params (70,553,706,496) x 14 B/param (bf16 weights + fp32 master + 2 fp32 Adam moments), ZeRO paper §3
    assert est.system.checkpoint.total.value == pytest.approx(70_553_706_496 * 14, rel=1e-9)
    assert est.system.goodput is not None and 0 < est.system.goodput.goodput.value <= 1
    assert est.bottleneck == est.system.bottleneck


def test_inference_plan_uses_its_engine_profile_and_reports_cold_start():
    doc = load_plan(LAPTOP)
    scenario, est = evaluate_plan(doc)
    assert scenario.engine_profile is not None and scenario.engine_profile.name == "llama.cpp"
    assert est.system.cold_start is not None and est.system.goodput is None
    vllm = doc.model_copy(update={"inference": doc.inference.model_copy(update={"engine": "vllm"})})
    other, est_vllm = evaluate_plan(vllm)
    assert other.engine_profile.id == "vllm"
    # different engines reserve different runtime memory: the profile is not ignored
    assert est_vllm.memory.overhead.value != est.memory.overhead.value or \
        est_vllm.memory.buffers.value != est.memory.buffers.value


def test_unknown_engine_is_a_catalog_error_naming_the_choices():
    doc = load_plan(SERVE)
    bad = doc.model_copy(update={"inference": doc.inference.model_copy(update={"engine": "nosuch"})})
    with pytest.raises(CatalogError, match="nosuch"):
        evaluate_plan(bad)


def test_cli_json_has_system_keys_and_set_changes_them(capsys):
    assert main(["estimate", str(FINETUNE), "--json"]) == 0
    base = json.loads(capsys.readouterr().out)["system"]
    assert set(base) >= {"checkpoint", "goodput", "data", "host", "power", "cold_start", "bottleneck", "warnings"}
    assert main(["estimate", str(FINETUNE), "--json", "--set", "system.price_per_kwh=0.30"]) == 0
    dearer = json.loads(capsys.readouterr().out)["system"]
    kwh = base["power"]["energy_kwh"]
    assert dearer["power"]["cost_usd"] == pytest.approx(kwh * 0.30, rel=1e-9)


def test_cli_unknown_storage_preset_is_a_one_line_error(capsys):
    rc = main(["estimate", str(FINETUNE), "--set", "system.storage=floppy"])
    err = capsys.readouterr().err
    assert rc == 2 and "floppy" in err and "Traceback" not in err


def test_quantised_inference_checkpoint_is_consistent_in_every_part():
    """A Q4_K_M checkpoint: total, per-shard, per-GPU and bytes/param all from the engine's weight bytes."""
    doc = load_plan(LAPTOP)
    _, est = evaluate_plan(doc)
    ck = est.system.checkpoint
    weight_bytes = est.inference.weight_bytes.value
    assert ck.total.value == weight_bytes
    assert ck.per_gpu.value == pytest.approx(weight_bytes / 1)
    assert ck.bytes_per_param.value == pytest.approx(weight_bytes / est.params.total)
    assert 0.5 < ck.bytes_per_param.value < 0.7  # Q4_K_M is ~4.9 bits per weight with its 6-bit tensors


def test_a_run_that_never_finishes_says_so_instead_of_printing_inf(capsys):
    """Goodput 0 (a checkpoint save longer than the MTBF) makes the run time unbounded."""
    rc = main(["estimate", str(FINETUNE), "--set", "model.config.hidden_size=14242432"])
    out = capsys.readouterr().out
    assert rc == 0 and "never finishes" in out
    assert "inf" not in out.replace("infer", "")
    assert main(["estimate", str(FINETUNE), "--set", "model.config.hidden_size=14242432", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["system"]["power"]["energy_kwh"] is None


@pytest.mark.parametrize(("gpu", "nodes", "personal"), [
    ("nvidia-rtx-4090-24gb", 1, True),  # a gaming PC
    ("apple-m2-ultra-76c-192gb", 1, True),  # a Mac Studio
    ("nvidia-rtx-6000-ada-48gb", 1, True),  # a workstation
    ("nvidia-rtx-4090-24gb", 2, False),  # two boxes on a network: a (small) cluster
    ("nvidia-h100-sxm-80gb", 1, False),  # a data-centre GPU, even alone
])
def test_beyond_the_gpu_defaults_follow_the_kind_of_machine(gpu, nodes, personal):
    """A personal machine's defaults (catalogs/system [personal_defaults], power.toml): its own NVMe
    drive, PUE 1.0, a desktop's 120.1 W host draw (hwbusters RTX 4090 measurement), residential power."""
    from llmplan.plan.evaluate import system_settings

    doc = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"),
                       hardware=HardwareRef(gpu=gpu, nodes=nodes, network="eth-100" if nodes > 1 else "none"),
                       workload="inference")
    scenario, _ = evaluate_plan(doc)
    s = system_settings(doc.system, scenario)
    assert scenario.cluster.is_personal_machine is personal
    if personal:
        assert (s.storage.id, s.power.pue, s.power.node_overhead_watts_per_gpu, s.grid.price_per_kwh) == (
            "local-nvme-gen4", 1.0, 120.1, 0.16)
    else:
        assert (s.storage.id, s.power.pue, s.power.node_overhead_watts_per_gpu, s.grid.price_per_kwh) == (
            "parallel-fs-tectonic", 1.58, 350.0, 0.0806)
    mine = system_settings(doc.system.model_copy(update={"pue": "uptime-2023-average"}), scenario)
    assert mine.power.pue == 1.58  # what the plan sets wins over either default
