"""How many parameters one GPU holds, tensor group by tensor group.

Megatron-style tensor parallelism splits column/row/vocab tensors by tp and keeps norms and
biases of the output replicated; routed experts are spread over the expert-parallel group
(and split by tp inside each expert, Megatron's default expert-tensor-parallel = tp); a
pipeline stage holds its share of the blocks plus the embedding (first stage) or the final
norm and head (last stage). Counting per group instead of dividing totals keeps the
replicated parts and the embedding imbalance visible, which is what decides whether the
worst-loaded rank fits.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training.layout import Layout

_MUON_EXCLUDED = ("embedding", "position", "lm_head", "norm")


@dataclass(frozen=True, slots=True)
class StageParams:
    """Parameters on one GPU of one pipeline stage."""

    stage: str  # "first", "middle", "last" or "only"
    total: float
    expert: float  # routed-expert share of ``total`` (sharded by ZeRO over the smaller expert-DP group)
    matrices: float  # 2-D weights outside embedding/head (Muon's orthogonalised momentum)
    factored: float  # Adafactor's second moment: rows+cols per matrix, numel per vector
    largest_layer: float  # one block's parameters on this GPU (ZeRO-3 gathers one at a time)
    has_embedding: bool
    has_head: bool


def _on_rank(numel: int, name: str, split: str, lay: Layout, m: ModelSpec) -> float:
    if split == "replicated":
        return float(numel)
    if lay.kv_replicated and (name.endswith("k_proj") or name.endswith("v_proj")):
        return numel / m.num_kv_heads
    return numel / lay.tp


def stage_params(pb: ParamBreakdown, m: ModelSpec, lay: Layout, stage: str, layers: int) -> StageParams:
    """Parameters on one GPU of a ``stage`` ("first", "middle", "last" or "only" when pp = 1)
    holding ``layers`` of the model's blocks."""
    layer_share = layers / m.num_layers
    total = expert = matrices = factored = one_layer = 0.0
    has_emb = has_head = False
    for g in pb.groups:
        if g.place == "layer":
            count = g.count * layer_share
        elif stage == "only" or g.place == stage:
            count = float(g.count)
        elif stage == "last" and g.name == "embed_tokens" and m.tie_embeddings:
            count = 1.0  # Megatron keeps a copy of a tied embedding on the last stage as the head
        else:
            continue
        if g.category == "embedding" and g.place == "first":
            has_emb = True
        if g.category == "lm_head" or (g.name == "embed_tokens" and m.tie_embeddings and stage != "first"):
            has_head = True
        per = _on_rank(g.numel, g.name, g.tp_split, lay, m)
        if g.tp_split == "expert":
            count /= lay.ep
        n = per * count
        total += n
        if g.tp_split == "expert":
            expert += n
        if len(g.shape) == 2:
            rows, cols = g.shape
            if g.tp_split == "replicated":
                factored += (rows + cols) * count
            elif g.tp_split == "row":
                factored += (rows + cols / lay.tp) * count
            else:  # column, vocab and expert tensors are split along their rows
                factored += (rows / lay.tp + cols) * count
            if g.category not in _MUON_EXCLUDED and not g.name.endswith(("embed_tokens", "head")):
                matrices += n
        else:
            factored += n
        if g.place == "layer" and layers:
            one_layer += n / layers
    return StageParams(stage, total, expert, matrices, factored, one_layer, has_emb, has_head)


def role(stage: int, pp: int) -> str:
    """What a stage holds besides its blocks: "only" (pp = 1), "first" (embedding), "last" (head)."""
    if pp == 1:
        return "only"
    return "first" if stage == 0 else "last" if stage == pp - 1 else "middle"
