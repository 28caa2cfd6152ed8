"""One number style in the results table (issue 18 item 7), through ``report.rows`` (Qt-free).

Before: "Max concurrent sequences 100.0 %" for one sequence, "0.0 %" for none, "1.51e+03" for 1,511;
two rows both labelled "Weights"; "GPU-hours 11,930,512 h"; an Apple GPU showed "Power per GPU 0 W"
and "Copy to the GPUs over PCIe 0 µs" (unified memory has no PCIe copy)."""

from __future__ import annotations

from collections import Counter

import pytest

from llmplan.core.present import MemoryUnit
from llmplan.gui import report
from llmplan.gui.backend import default_plan
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.overrides import apply_overrides


def _shown(*overrides: str) -> dict[str, str]:
    scenario, est = evaluate_plan(apply_overrides(default_plan(), overrides))
    rows = report.rows(est, scenario)
    labels = Counter(r.label for r in rows if r.figure is not None)
    assert all(n == 1 for n in labels.values()), [k for k, n in labels.items() if n > 1]  # distinct labels
    return {r.label: r.shown(MemoryUnit("GiB")) for r in rows}


@pytest.mark.parametrize(("overrides", "sequences"), [
    (("inference.engine=llama.cpp", "inference.weight_format=q4_k_m", "hardware.gpu=nvidia-rtx-4090-24gb",
      "model.id=meta-llama/Meta-Llama-3-70B"), "1"),
    (("inference.weight_format=bf16", "hardware.gpu=nvidia-h100-sxm-80gb",
      "model.id=meta-llama/Meta-Llama-3-8B", "inference.prompt_tokens=512", "inference.output_tokens=128"), None),
])
def test_max_concurrent_sequences_is_a_whole_count(overrides, sequences):
    shown = _shown("workload=inference", *overrides)
    value = shown["Max concurrent sequences"]
    assert "%" not in value and "e+" not in value
    assert value.replace(",", "").isdigit()
    if sequences is not None:
        assert value == sequences
    else:  # vLLM's pool on an H100 holds hundreds of 640-token sequences: thousands separators
        assert int(value.replace(",", "")) >= 100 and ("," in value) == (int(value.replace(",", "")) >= 1000)
    assert "Weights (per GPU)" in shown and "Weights (whole model, all GPUs)" in shown


def test_gpu_hours_use_k_and_m():
    shown = _shown("workload=pretrain", "training.method=full", "model.id=meta-llama/Llama-3.1-70B",
                   "hardware.gpus_per_node=8", "hardware.nodes=4", "hardware.network=ib-ndr-400",
                   "parallelism.tp=8", "parallelism.pp=2", "parallelism.dp=2", "training.tokens=1000000000000")
    assert shown["GPU-hours"].endswith(" k GPU-hours") or shown["GPU-hours"].endswith(" M GPU-hours")
    assert shown["Training time"].endswith(("days", "years"))


def test_rows_that_do_not_apply_to_an_apple_gpu_are_hidden():
    shown = _shown("workload=inference", "hardware.gpu=apple-m1-max-24c-64gb", "inference.engine=llama.cpp",
                   "inference.weight_format=q4_k_m")
    assert "Power per GPU" not in shown  # no power figure for the GPU alone: hidden, not "0 W"
    assert "Copy to the GPUs over PCIe" not in shown  # unified memory: nothing to copy
    assert "Cold start in all" in shown and "Power at the wall (× PUE)" in shown
    nvidia = _shown("workload=inference", "hardware.gpu=nvidia-rtx-4090-24gb")
    assert nvidia["Power per GPU"] == "450 W" and "Copy to the GPUs over PCIe" in nvidia


def test_rows_that_do_not_apply_to_one_node_or_no_pipeline_are_hidden():
    one_node = _shown("workload=pretrain", "training.method=full", "model.id=meta-llama/Meta-Llama-3-8B",
                      "hardware.gpus_per_node=8", "parallelism.tp=8")
    assert "Intra-node bytes per step" in one_node  # TP all-reduces inside the node
    assert "Inter-node bytes per step" not in one_node and "Inter-node bandwidth to hide it" not in one_node
    assert "Pipeline bubble" not in one_node  # PP 1: no bubble, not "0.0 %"
    four_nodes = _shown("workload=pretrain", "training.method=full", "model.id=meta-llama/Llama-3.1-70B",
                        "hardware.gpus_per_node=8", "hardware.nodes=4", "hardware.network=ib-ndr-400",
                        "parallelism.tp=8", "parallelism.pp=2", "parallelism.dp=2")
    assert "Inter-node bytes per step" in four_nodes and "Pipeline bubble" in four_nodes
