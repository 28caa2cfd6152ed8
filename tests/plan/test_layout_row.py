"""Applying a ranked layout gives the plan the row's cluster, so the estimate after Apply is the row's.

Llama-3.1-8B full fine-tune, 4,096 tokens, global batch 8, on 2 nodes of 8 H100 with ``training.framework`` on
auto: the search (cost objective, fewer GPUs allowed) ranks a 4-GPU and an 8-GPU row among its first, both sliced
within one node under the one-node plan's framework (the Hugging Face Trainer; the 2-node plan runs Megatron-Core).
Applying such a row kept 2 nodes: a layout of 4 or 8 GPUs on 16 (a layout error), and on auto another framework
than the row's. ``plan.layout_row.row_edits`` now sets the row's nodes (and GPUs per node for part of one), as the
search estimated it (``core.search.planner.scenario_for``). Tolerance: tokens/s rel 1e-9 (the same engine on the
same scenario).
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.workload import TrainingSettings
from llmplan.gui.commands import set_path
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.layout_row import row_edits
from llmplan.plan.resolve import resolve, resolve_within_node


def two_node_plan() -> PlanDocument:
    return PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), workload="finetune",
                        hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, nodes=2,
                                             network="ib-ndr-400"),
                        training=TrainingSettings(method="full", seq_len=4096, global_batch=8))


def applied(doc: PlanDocument, changes: dict) -> PlanDocument:
    for path, value in changes.items():
        doc = set_path(doc, path, value)
    return doc


def test_a_row_on_fewer_gpus_applies_with_its_cluster_and_framework():
    doc = two_node_plan()
    assert resolve(doc).framework_profile.id == "megatron"
    result = search(resolve(doc), top=8, objective="cost", refine=estimate, use_fewer_gpus=True,
                    within_node=resolve_within_node(doc))
    fewer = {r.gpus: r for r in result.best if r.gpus < 16}
    assert set(fewer) == {4, 8}
    for gpus, (nodes, per_node) in ((4, (1, 4)), (8, (1, 8))):
        row = fewer[gpus]
        changes = row_edits(doc, row)
        assert changes.get("hardware.nodes") == nodes and changes.get("hardware.gpus_per_node", 8) == per_node
        scenario, ev = evaluate_plan(applied(doc, changes))
        assert scenario.framework_profile.id == "hf-trainer"  # the one-node plan's framework, as the row's
        assert ev.estimate.compute.tokens_per_s.value == pytest.approx(row.tokens_per_s, rel=1e-9)
    full = next(r for r in result.best if r.gpus == 16)
    assert not any(k.startswith("hardware.") for k in row_edits(doc, full))  # the plan's own cluster: unchanged


def test_a_target_answer_and_a_larger_row_set_their_clusters():
    doc = two_node_plan()
    row = search(resolve(doc), top=1, refine=estimate).best[0]
    assert row_edits(doc, row, nodes=4)["hardware.nodes"] == 4  # a target's answer names its cluster
    one = doc.model_copy(update={"hardware": doc.hardware.model_copy(update={"nodes": 1, "network": "none"})})
    grown = row_edits(one, row)  # 16 GPUs on a 1-node plan: two nodes, and a network between them
    assert grown["hardware.nodes"] == 2 and grown["hardware.network"] != "none"
