"""What applying a ranked layout does to a plan: the search's rows (the app's Auto… list) and a target's answer.

A row is estimated on the GPUs its layout uses (``core.search.planner.scenario_for``: part of one node, or
fewer whole nodes than the plan's), and a plan on ``training.framework = auto`` chooses its framework by that node
count (``plan.resolve.resolve_framework_profile``; a search slices within one node under the one-node plan's
framework: ``resolve_within_node``). Applying a row used to keep the plan's own node count, so a 2-node plan given
an 8-GPU row ran a layout of 8 GPUs on 16 (a layout error) or, on auto, under another framework than the row's.
The edits here give the plan the row's cluster too, so the estimate after Apply is the row's.
"""

from __future__ import annotations

from typing import Any

from llmplan.core.search.planner import nodes_for
from llmplan.core.search.results import RankedLayout
from llmplan.plan.document import PlanDocument


def row_edits(doc: PlanDocument, row: RankedLayout, nodes: int = 0, gpus_per_node: int = 0) -> dict[str, Any]:
    """The plan edits (dotted paths, as ``--set`` and the app's undo records use) that make ``doc`` the ranked
    ``row``: its layout and training knobs (inference: the weight format the search chose where the plan left it
    open) and the cluster it ran on. ``nodes`` / ``gpus_per_node``: a target's answer, which names its cluster
    (0: the row's own, ``nodes_for``). An inference row is one replica: the plan's cluster stays, holding as many
    replicas as fit (the search's note), unless the row needs more GPUs than the plan has."""
    from llmplan.plan.target import DEFAULT_NETWORK

    changes: dict[str, Any] = {"parallelism": row.parallelism}
    if doc.workload != "inference":
        changes["training"] = row.training
    elif row.estimate is not None and row.estimate.inference.weight_format != doc.inference.weight_format:
        changes["inference.weight_format"] = row.estimate.inference.weight_format  # the plan left it open
    hw = doc.hardware
    total = hw.gpus_per_node * hw.nodes
    if nodes:
        per_node = gpus_per_node or hw.gpus_per_node
    elif row.gpus > total:
        nodes, per_node = -(-row.gpus // hw.gpus_per_node), hw.gpus_per_node
    elif row.gpus < total and doc.workload != "inference":
        nodes, per_node = nodes_for(row.gpus, hw.gpus_per_node)
    else:
        return changes
    if nodes != hw.nodes:
        changes["hardware.nodes"] = nodes
    if per_node != hw.gpus_per_node:
        changes["hardware.gpus_per_node"] = per_node
    if hw.network == "none" and nodes > 1:
        changes["hardware.network"] = DEFAULT_NETWORK
    return changes
