"""Exact parameter counts, tensor by tensor, from a ``ModelSpec``.

The counts follow the tensor shapes of each family's reference implementation (the
checkpoint's safetensors), so that the totals equal what the real checkpoint holds.
Each tensor group also says how Megatron-style tensor parallelism splits it
(``tp_split``), where it lives in a pipeline (``place``) and whether it is a routed
expert, so the memory engine can shard exactly instead of dividing totals.

Conventions (documented in the README):
- ``embedding``: token embedding, learned position table, and the output head when it
  is not tied (Kaplan et al.'s "non-embedding" count excludes exactly these).
- ``active``: parameters one token touches: everything except the routed experts it
  is not sent to (top-k of n per MoE layer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec

Category = Literal[
    "embedding", "position", "attention", "mlp", "expert", "shared_expert", "router", "norm", "lm_head", "mtp"
]
TpSplit = Literal["column", "row", "vocab", "replicated", "expert"]
Place = Literal["first", "layer", "last"]


@dataclass(frozen=True, slots=True)
class TensorGroup:
    """``count`` identical tensors of ``shape`` (one per layer that has it, or 1)."""

    name: str
    shape: tuple[int, ...]
    count: int
    category: Category
    tp_split: TpSplit
    place: Place
    layer_kind: str = ""  # "dense"/"moe" for MLP tensors, "" otherwise
    copies_per_layer: int = 1  # how many of these one block holds (its routed experts, its norms)
    # the checkpoint's Linear module when it holds this tensor with others (``ModelSpec.fused``: Phi-3's
    # attn.qkv_proj holds q_proj, k_proj and v_proj); "" when the tensor is a module of its own
    module: str = ""
    numel: int = field(init=False)  # elements of one tensor; stored, since every estimate reads it often

    def __post_init__(self) -> None:
        object.__setattr__(self, "numel", math.prod(self.shape))

    @property
    def params(self) -> int:
        return self.numel * self.count


@dataclass(frozen=True, slots=True)
class ParamBreakdown:
    groups: tuple[TensorGroup, ...]
    total: int
    embedding: int
    active: int
    routed_experts: int  # all routed-expert parameters (inactive share is total - active)
    mtp: int  # DeepSeek-V3 multi-token-prediction modules, included in total

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    def by_category(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for g in self.groups:
            out[g.category] = out.get(g.category, 0) + g.params
        return out

    def per_layer(self, layer_kind: str | None = None) -> int:
        """Parameters of one transformer block (of the given MLP kind, if the model mixes): every
        tensor it holds, all its routed experts and norms included."""
        total = 0
        for g in self.groups:
            if g.place != "layer" or g.category == "mtp":
                continue
            if g.layer_kind and layer_kind and g.layer_kind != layer_kind:
                continue
            total += g.numel * g.copies_per_layer
        return total


def _g(groups: list[TensorGroup], name: str, shape: tuple[int, ...], count: int, category: Category,
       tp_split: TpSplit, place: Place = "layer", layer_kind: str = "", copies: int = 1, module: str = "") -> None:
    if count > 0 and all(d > 0 for d in shape):
        groups.append(TensorGroup(name, shape, count, category, tp_split, place, layer_kind, copies, module))


def _attention(m: ModelSpec, groups: list[TensorGroup], n: int, prefix: str = "attn") -> None:
    h = m.hidden_size
    if m.mla:
        a = m.mla
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            _g(groups, f"{prefix}.q_a_proj", (a.q_lora_rank, h), n, "attention", "replicated")
            _g(groups, f"{prefix}.q_a_layernorm", (a.q_lora_rank,), n, "norm", "replicated")
            _g(groups, f"{prefix}.q_b_proj", (m.num_heads * qk, a.q_lora_rank), n, "attention", "column")
        else:
            _g(groups, f"{prefix}.q_proj", (m.num_heads * qk, h), n, "attention", "column")
        _g(groups, f"{prefix}.kv_a_proj_with_mqa", (a.kv_lora_rank + a.qk_rope_head_dim, h), n, "attention",
           "replicated")
        _g(groups, f"{prefix}.kv_a_layernorm", (a.kv_lora_rank,), n, "norm", "replicated")
        _g(groups, f"{prefix}.kv_b_proj", (m.num_heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank), n,
           "attention", "column")
        _g(groups, f"{prefix}.o_proj", (h, m.num_heads * a.v_head_dim), n, "attention", "row")
        if m.attention_out_bias:
            _g(groups, f"{prefix}.o_proj.bias", (h,), n, "attention", "replicated")
        return
    q, kv = m.q_width, m.kv_width
    qkv = f"{prefix}.qkv_proj" if "qkv" in m.fused else ""
    _g(groups, f"{prefix}.q_proj", (q, h), n, "attention", "column", module=qkv)
    _g(groups, f"{prefix}.k_proj", (kv, h), n, "attention", "column", module=qkv)
    _g(groups, f"{prefix}.v_proj", (kv, h), n, "attention", "column", module=qkv)
    if m.attention_bias:
        _g(groups, f"{prefix}.qkv.bias", (q + 2 * kv,), n, "attention", "column")
    _g(groups, f"{prefix}.o_proj", (h, q), n, "attention", "row")
    if m.attention_out_bias:
        _g(groups, f"{prefix}.o_proj.bias", (h,), n, "attention", "replicated")
    if m.attention_sinks:
        _g(groups, f"{prefix}.sinks", (m.num_heads,), n, "attention", "column")
    if m.qk_norm == "per_head":
        _g(groups, f"{prefix}.q_norm", (m.head_dim,), n, "norm", "replicated")
        _g(groups, f"{prefix}.k_norm", (m.head_dim,), n, "norm", "replicated")
    elif m.qk_norm == "full":
        _g(groups, f"{prefix}.q_norm", (q,), n, "norm", "column")
        _g(groups, f"{prefix}.k_norm", (kv,), n, "norm", "column")


def _mlp(groups: list[TensorGroup], prefix: str, h: int, inter: int, gated: bool, bias: bool, count: int,
         category: Category, split_in: TpSplit, split_out: TpSplit, kind: str, copies: int = 1,
         fused: bool = False) -> None:
    """One MLP (or ``count`` identical ones, ``copies`` of them in each block): up (and gate), then down.
    ``fused``: gate and up are one Linear module in the checkpoint (``TensorGroup.module``)."""
    gate_up = f"{prefix}.gate_up_proj" if fused and gated else ""
    for proj in ("gate_proj", "up_proj") if gated else ("up_proj",):
        _g(groups, f"{prefix}.{proj}", (inter, h), count, category, split_in, layer_kind=kind, copies=copies,
           module=gate_up)
        if bias:
            _g(groups, f"{prefix}.{proj}.bias", (inter,), count, category, split_in, layer_kind=kind, copies=copies)
    _g(groups, f"{prefix}.down_proj", (h, inter), count, category, split_out, layer_kind=kind, copies=copies)
    if bias:
        _g(groups, f"{prefix}.down_proj.bias", (h,), count, category,
           "expert" if split_out == "expert" else "replicated", layer_kind=kind, copies=copies)


def _norm_numel(m: ModelSpec) -> int:
    return m.hidden_size * (2 if m.norm == "layernorm" else 1)  # layernorm has weight and bias


def _moe_block(m: ModelSpec, groups: list[TensorGroup], n: int, prefix: str = "moe") -> None:
    e = m.moe
    assert e is not None  # guaranteed by ModelSpec validation when n > 0
    h = m.hidden_size
    _g(groups, f"{prefix}.router", (e.num_experts, h), n, "router", "replicated", layer_kind="moe")
    if e.router_bias:
        _g(groups, f"{prefix}.router.bias", (e.num_experts,), n, "router", "replicated", layer_kind="moe")
    if e.router_score_bias:
        _g(groups, f"{prefix}.router.e_score_correction_bias", (e.num_experts,), n, "router", "replicated",
           layer_kind="moe")
    _mlp(groups, f"{prefix}.experts", h, e.expert_intermediate_size, m.gated_mlp, e.expert_bias,
         n * e.num_experts, "expert", "expert", "expert", "moe", copies=e.num_experts, fused="gate_up" in m.fused)
    if e.num_shared_experts:
        _mlp(groups, f"{prefix}.shared_experts", h, e.shared_intermediate_size * e.num_shared_experts,
             m.gated_mlp, False, n, "shared_expert", "column", "row", "moe", fused="gate_up" in m.fused)
    if e.shared_expert_gate:
        _g(groups, f"{prefix}.shared_expert_gate", (1, h), n, "router", "replicated", layer_kind="moe")


def _build_groups(m: ModelSpec) -> list[TensorGroup]:
    h, v, L = m.hidden_size, m.vocab_size, m.num_layers
    groups: list[TensorGroup] = []
    emb_dim = m.embedding_proj_dim or h
    _g(groups, "embed_tokens", (v, emb_dim), 1, "embedding", "vocab", "first")
    if m.position == "learned":
        _g(groups, "embed_positions", (m.learned_positions, h), 1, "position", "replicated", "first")
    if m.embedding_proj_dim:
        _g(groups, "project_in", (h, emb_dim), 1, "embedding", "replicated", "first")
        _g(groups, "project_out", (emb_dim, h), 1, "embedding", "replicated", "last")
    if m.embedding_norm:
        _g(groups, "embedding_norm", (_norm_numel(m),), 1, "norm", "replicated", "first")

    _attention(m, groups, L)
    _g(groups, "block_norms", (_norm_numel(m),), L * m.norms_per_layer, "norm", "replicated",
       copies=m.norms_per_layer)

    dense, moe = m.dense_layer_count, m.moe_layer_count
    _mlp(groups, "mlp", h, m.intermediate_size, m.gated_mlp, m.mlp_bias, dense, "mlp", "column", "row", "dense",
         fused="gate_up" in m.fused)
    if moe:
        _moe_block(m, groups, moe)

    if m.final_norm:
        _g(groups, "final_norm", (_norm_numel(m),), 1, "norm", "replicated", "last")
    if not m.tie_embeddings:
        _g(groups, "lm_head", (v, emb_dim), 1, "lm_head", "vocab", "last")
    if m.lm_head_bias:
        _g(groups, "lm_head.bias", (v,), 1, "lm_head", "vocab", "last")
    if m.mtp_layers:
        _mtp(m, groups)
    return groups


def _mtp(m: ModelSpec, groups: list[TensorGroup]) -> None:
    """DeepSeek-V3 multi-token prediction: per module a full MoE block, two norms, a 2h->h
    projection, a final norm, and (as stored in the released checkpoint) its own copies of the
    embedding and output head."""
    h, n = m.hidden_size, m.mtp_layers
    sub: list[TensorGroup] = []
    _attention(m, sub, n, "mtp.attn")
    _g(sub, "mtp.block_norms", (_norm_numel(m),), n * m.norms_per_layer, "norm", "replicated")
    if m.moe:
        _moe_block(m, sub, n, "mtp.moe")
    else:
        _mlp(sub, "mtp.mlp", h, m.intermediate_size, m.gated_mlp, m.mlp_bias, n, "mlp", "column", "row", "dense")
    _g(sub, "mtp.enorm_hnorm", (_norm_numel(m),), 2 * n, "norm", "replicated")
    _g(sub, "mtp.eh_proj", (h, 2 * h), n, "mtp", "replicated")
    _g(sub, "mtp.shared_head.norm", (_norm_numel(m),), n, "norm", "replicated")
    _g(sub, "mtp.embed_tokens", (m.vocab_size, h), n, "mtp", "vocab")
    _g(sub, "mtp.shared_head.head", (m.vocab_size, h), n, "mtp", "vocab")
    for g in sub:
        groups.append(TensorGroup(g.name if g.name.startswith("mtp") else f"mtp.{g.name}", g.shape, g.count,
                                  "mtp", g.tp_split, "last", g.layer_kind, g.copies_per_layer))


_BY_SPEC = IdentityCache(64)


def count_params(m: ModelSpec) -> ParamBreakdown:
    """Exact parameter counts of the checkpoint described by ``m`` (cached per spec object, then per equal
    spec: every estimate asks several times, and hashing a ``ModelSpec`` is the slow part of ``lru_cache``).

    Equal specs get the very same ``ParamBreakdown`` object while the ``lru_cache`` holds it, and nothing else
    builds one, so the engine's identity caches (``core.memo``) key per-model facts by this object: an exact
    key for the model's value that costs no hashing of the spec (``shard.stage_params_cached``,
    ``flops.token_flops``)."""
    return _BY_SPEC.get((m,), None) or _BY_SPEC.put((m,), None, _count_params(m))


@lru_cache(maxsize=256)
def _count_params(m: ModelSpec) -> ParamBreakdown:
    groups = tuple(_build_groups(m))
    total = sum(g.params for g in groups)
    mtp = sum(g.params for g in groups if g.category == "mtp")
    embedding = sum(g.params for g in groups if g.category in ("embedding", "position", "lm_head"))
    routed = sum(g.params for g in groups if g.category == "expert" and not g.name.startswith("mtp"))
    inactive = 0
    if m.moe and routed:
        inactive = routed * (m.moe.num_experts - m.moe.experts_per_token) // m.moe.num_experts
    # MTP modules are not used when the model generates normally: not active.
    active = total - inactive - mtp
    return ParamBreakdown(groups, total, embedding, active, routed, mtp)
