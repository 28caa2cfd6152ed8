"""``llmplan-cli measure``: what a plan runs as on one GPU, and a run file that --compare-run reads.

The torch part needs a GPU and the optional packages; here the plan -> settings mapping, the refusals and
the run file's compatibility are tested (the harness itself is the same code a user runs on a GPU)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.errors import InputError
from llmplan.hw.measure_run import RUN_FORMAT, dumps_run, run_settings
from llmplan.hw.measured import import_measured_run
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument


def _doc(**training) -> PlanDocument:
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), hardware=HardwareRef(), workload="finetune",
                        training=TrainingSettings(**training), parallelism=ParallelLayout())


def test_a_qlora_plan_runs_as_qlora_with_checkpointing_and_its_targets():
    rs = run_settings(_doc(method="qlora", recompute="full", micro_batch=2, seq_len=1024, lora_rank=8,
                           lora_targets=("q", "v")))
    assert (rs.workload, rs.method, rs.checkpointing, rs.micro_batch, rs.seq_len) == ("train", "qlora", True, 2, 1024)
    assert rs.lora_targets == ("self_attn.q_proj", "self_attn.v_proj") and rs.lora_rank == 8
    assert rs.lora_dropout == 0.05


def test_pure_bf16_and_inference_plans():
    assert run_settings(_doc(regime="pure")).regime == "pure"
    inf = _doc().model_copy(update={"workload": "inference"})
    rs = run_settings(inf)
    assert rs.workload == "generate" and rs.prompt_tokens == inf.inference.prompt_tokens


@pytest.mark.parametrize(("change", "words"), [
    ({"hardware": HardwareRef(gpus_per_node=8)}, "this one GPU"),
    ({"parallelism": ParallelLayout(tp=2)}, "this one GPU"),
    ({"training": TrainingSettings(precision="fp8")}, "bf16, fp16 or fp32"),
    ({"training": TrainingSettings(optimizer="lion")}, "adamw, adam8bit or sgd"),
])
def test_what_one_process_cannot_run_is_refused_with_the_fix(change, words):
    with pytest.raises(InputError, match=words):
        run_settings(_doc().model_copy(update=change))


def test_the_run_file_is_what_compare_run_reads(tmp_path):
    run = {"format": RUN_FORMAT, "schema_version": 1, "peak_memory_bytes": 20_354_714_624,
           "peak_reserved_bytes": 21_812_477_952, "step_time_s": 0.448, "device_name": "NVIDIA H100 80GB HBM3"}
    path = tmp_path / "run.json"
    path.write_text(dumps_run(run), encoding="utf-8")
    back = import_measured_run(path)
    assert back.peak_memory_bytes == 20_354_714_624 and back.step_time_s == 0.448
    assert json.loads(path.read_text())["format"] == RUN_FORMAT


def test_cli_without_torch_says_what_to_install():
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here: the missing-package message cannot be seen")
    except ImportError:
        pass
    p = subprocess.run([sys.executable, "-m", "llmplan", "measure", "--model", "meta-llama/Llama-3.2-1B",
                        "--gpu", "nvidia-h100-sxm-80gb", "--workload", "finetune"], capture_output=True, text=True)
    assert p.returncode != 0 and "pip install 'llmplan[measure]'" in p.stderr and "Traceback" not in p.stderr
