"""The target scan (``search --days/--budget``, the app's Auto… "finish in D days") and the search's smaller
slices (its Pareto front) search each node count as the plan runs on that many nodes: ``training.framework =
auto`` is chosen per count (issue 26, one truth).

Before: the framework was resolved once, from the plan's own node count. A one-node full fine-tune of
Llama-3.1-8B scanned onto 2 nodes of H100 stayed on the Hugging Face Trainer (ZeRO-3, 163,558 tokens/s), while
the same plan estimated on 2 nodes runs Megatron-Core (``catalog.frameworks.auto_choice``: multi-node full
fine-tunes) at 192.5k tokens/s with ZeRO-2. Both sides are the engine's own figures (nothing is fitted), so the
row and the direct search must agree exactly (relative 1e-9).
"""

from __future__ import annotations

import json

import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve
from llmplan.plan.target import target_table

H100, A100 = "nvidia-h100-sxm-80gb", "nvidia-a100-sxm4-40gb"
TOKENS = 2e10  # 20B tokens of fine-tuning: 2 days need 2 nodes of H100, 5 days one


def _doc(**training) -> PlanDocument:
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), workload="finetune",
                        hardware=HardwareRef(gpu=H100), training={"tokens": TOKENS, **training})


def _direct(doc: PlanDocument, nodes: int):
    """The auto-planner's best layout for ``doc`` on exactly ``nodes`` DGX H100 nodes, as ``search`` gives it."""
    hw = doc.hardware.model_copy(update={"gpus_per_node": 8, "nodes": nodes, "network": "ib-ndr-400"})
    sc = resolve(doc.model_copy(update={"hardware": hw}))
    return sc.framework.id, search(sc, top=1, refine=estimate, use_fewer_gpus=False).best[0]


def test_a_full_fine_tune_scanned_onto_two_nodes_runs_megatron_as_its_estimate_does():
    row = target_table(_doc(), [H100], days=2, refine=estimate)[0].row
    assert row.meets and row.nodes == 2
    framework, best = _direct(_doc(), 2)
    assert framework == "megatron" and row.framework == framework
    assert row.scenario.framework.id == framework
    assert row.layout.label() == best.label()
    assert row.layout.tokens_per_s == pytest.approx(best.tokens_per_s, rel=1e-9)


def test_one_node_stays_on_the_hugging_face_trainer_and_a_stated_framework_is_kept():
    row = target_table(_doc(), [H100], days=5, refine=estimate)[0].row
    assert row.meets and row.nodes == 1 and row.framework == "hf-trainer"
    stated = target_table(_doc(framework="hf-trainer"), [H100], days=2, refine=estimate)[0].row
    assert stated.meets and stated.nodes >= 2 and stated.framework == "hf-trainer"  # never overridden
    assert stated.layout.parallelism.tp == stated.layout.parallelism.pp == 1  # the Trainer has no TP/PP


def test_the_cli_names_each_rows_framework(capsys):
    from llmplan.cli import main

    args = ["search", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune", "--tokens", str(TOKENS),
            "--days", "5", "--gpu", f"{H100},{A100}"]
    assert main([*args, "--json"]) == 0
    rows = {r["gpu"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert (rows[H100]["nodes"], rows[H100]["framework"]) == (1, "hf-trainer")
    assert rows[A100]["nodes"] > 1 and rows[A100]["framework"] == "megatron"
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "framework" in lines[1].split()
    assert " hf-trainer " in next(line for line in lines if line.startswith("NVIDIA H100"))
    assert " megatron " in next(line for line in lines if line.startswith("NVIDIA A100"))


def test_the_front_of_a_two_node_plan_searches_one_node_as_the_plan_on_one_node_runs(capsys):
    """``search`` on 2 nodes also ranks layouts on fewer GPUs (the Pareto front). Those within one node ran under
    the 2-node plan's Megatron-Core (97,286 tokens/s on 8 GPUs), while the plan on one node runs the Hugging Face
    Trainer (80,973 tokens/s): the front's 8-GPU point is now the one-node plan's own search."""
    from llmplan.cli import main

    args = ["search", "--model", "meta-llama/Llama-3.1-8B", "--workload", "finetune", "--gpu", H100, "--gpus", "8",
            "--json"]
    assert main([*args, "--nodes", "2", "--network", "ib-ndr-400"]) == 0
    front = {p["gpus"]: p for p in json.loads(capsys.readouterr().out)["pareto_gpus"]}
    assert main([*args, "--exact-gpus"]) == 0
    one_node = json.loads(capsys.readouterr().out)["best"][0]
    assert front[8]["label"] == one_node["label"]
    assert front[8]["tokens_per_s"] == pytest.approx(one_node["tokens_per_s"], rel=1e-9)
    framework, best = _direct(_doc(), 2)  # the full cluster stays the 2-node plan's
    assert framework == "megatron" and front[16]["label"] == best.label()
