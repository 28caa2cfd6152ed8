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
from functools import lru_cache
from typing import NamedTuple

from llmplan.core.bytes_per_param import factored_entries, muon_matrix
from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, count_params
from llmplan.core.training.layout import Layout


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


class _Group(NamedTuple):
    """What ``stage_params`` needs of one tensor group, worked out once per model."""

    place: str  # "first", "layer" or "last"
    first_only_embedding: bool  # the input embedding (marks the first stage)
    tied_embedding: bool  # a tied embed_tokens: the last stage keeps a copy as the head
    head: bool  # an untied output head
    numel: int
    count: int
    split: str  # how tensor parallelism splits it (TensorGroup.tp_split)
    kv: bool  # a k/v projection (replicated per KV head when tp > KV heads)
    shape2: tuple[int, int] | None  # (rows, cols) of a 2-D tensor, else None
    muon: bool  # a block matrix Muon orthogonalises (not embedding, head, norm or position)


@lru_cache(maxsize=256)
def _groups(m: ModelSpec) -> tuple[_Group, ...]:
    rows = []
    for g in count_params(m).groups:
        two_d = len(g.shape) == 2
        rows.append(_Group(
            place=g.place,
            first_only_embedding=g.category == "embedding" and g.place == "first",
            tied_embedding=g.name == "embed_tokens" and m.tie_embeddings,
            head=g.category == "lm_head",
            numel=g.numel,
            count=g.count,
            split=g.tp_split,
            kv=g.name.endswith(("k_proj", "v_proj")),
            shape2=(g.shape[0], g.shape[1]) if two_d else None,
            muon=muon_matrix(g),
        ))
    return tuple(rows)


def stage_params(m: ModelSpec, lay: Layout, stage: str, layers: int) -> StageParams:
    """Parameters on one GPU of a ``stage`` ("first", "middle", "last" or "only" when pp = 1)
    holding ``layers`` of the model's blocks. The tensor groups are read from a per-model table
    (``_groups``) so that this, run for every candidate stage of every estimate, stays cheap."""
    tp, ep = lay.tp, lay.ep
    kv_div = m.num_kv_heads if lay.kv_replicated else tp
    layer_share = layers / m.num_layers
    total = expert = matrices = factored = one_layer = 0.0
    has_emb = has_head = False
    for g in _groups(m):
        if g.place == "layer":
            count = g.count * layer_share
        elif stage == "only" or g.place == stage:
            count = float(g.count)
        elif stage == "last" and g.tied_embedding:
            count = 1.0  # Megatron keeps a copy of a tied embedding on the last stage as the head
        else:
            continue
        if g.first_only_embedding:
            has_emb = True
        if g.head or (g.tied_embedding and stage != "first"):
            has_head = True
        split = g.split
        if split == "replicated":
            per = float(g.numel)
        elif g.kv:
            per = g.numel / kv_div
        else:
            per = g.numel / tp
        if split == "expert":
            count /= ep
        n = per * count
        total += n
        if split == "expert":
            expert += n
        if g.shape2 is not None:
            factored += factored_entries(*g.shape2, split, tp) * count
            if g.muon:
                matrices += n
        else:
            factored += n
        if g.place == "layer" and layers:
            one_layer += n / layers
    return StageParams(stage, total, expert, matrices, factored, one_layer, has_emb, has_head)


_BY_COUNTS = IdentityCache(256)  # parameter counts object + (tp, ep, KV replicated, stage, layers) -> StageParams


def stage_params_cached(m: ModelSpec, pb: ParamBreakdown, lay: Layout, stage: str, layers: int) -> StageParams:
    """``stage_params``, cached by the identity of ``pb = count_params(m)``: ``count_params`` hands out one
    object per model *value* (``params.count_params``), so that object is a free exact key for the model, also
    when the plan was resolved afresh with a new but equal ``ModelSpec`` (the app does this on every edit).
    The rest of the key is all ``stage_params`` reads of the layout."""
    rest = (lay.tp, lay.ep, lay.kv_replicated, stage, layers)
    hit = _BY_COUNTS.get((pb,), rest)
    return hit if hit is not None else _BY_COUNTS.put((pb,), rest, stage_params(m, lay, stage, layers))


def role(stage: int, pp: int) -> str:
    """What a stage holds besides its blocks: "only" (pp = 1), "first" (embedding), "last" (head)."""
    if pp == 1:
        return "only"
    return "first" if stage == 0 else "last" if stage == pp - 1 else "middle"
