"""FLOPs per training step, from the tensor shapes.

Forward: 2 FLOPs per multiply-add of every weight matrix a token passes through (MoE: the
top-k routed experts and the shared ones; the output head; not the embedding lookup) plus
the attention matmuls QKᵀ and AV, 2·s·(d_qk + d_v) per head and token, counted over the full
(non-causal) s×s square as Narayanan et al. and Korthikanti et al. do (window-wide for
sliding layers). Backward: twice the forward for trained weights (input and weight
gradients); frozen weights (LoRA/QLoRA) need only the input gradient (1×).

Model FLOPs exclude recomputation (PaLM App. B, Korthikanti §5); hardware FLOPs add the
recomputed forward (full: every block; selective: QKᵀ and AV again; selective_op: every second
matmul of each block, ``selective_op``; Megatron-Core's named modules: their matmuls,
``recompute_modules``; FlashAttention's backward recomputes QKᵀ, half the attention forward).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training import recompute_modules
from llmplan.core.training import selective_op as sop
from llmplan.core.workload import TrainingSettings


@dataclass(frozen=True, slots=True)
class TokenFlops:
    """Forward FLOPs per token, split by what the backward and recompute treat differently."""

    block_matmul: float  # weight matmuls inside the blocks (and MTP modules)
    head: float  # output projection
    attention: float  # QKᵀ and AV
    adapters: float  # LoRA adapters (2·r·(in+out) per adapted module: core.lora_modules)
    op_recomputed: float = 0.0  # block matmuls torchtitan's operator-level checkpointing runs again
    module_recomputed: float = 0.0  # block matmuls Megatron-Core's named modules run again (recompute_modules)

    @property
    def forward(self) -> float:
        return self.block_matmul + self.head + self.attention + self.adapters


_TOKEN_FLOPS = IdentityCache(64)  # parameter counts object + the rest -> TokenFlops


def token_flops(m: ModelSpec, pb: ParamBreakdown, seq_len: int, adapter_params: float = 0.0,
                selective_op: bool = False, modules: tuple[str, ...] = ()) -> TokenFlops:
    """``modules``: Megatron-Core's named recompute modules (``recompute_modules.named``), whose matmuls count again.
    ``selective_op``: also count what operator-level checkpointing recomputes (only then: it walks the
    parameter groups again, and an estimate's budget is a fraction of a millisecond). Cached per (parameter
    counts object, arguments) (``core.memo``): it walks every tensor group of the model. ``pb`` must be
    ``count_params(m)``, which is one object per model value, so it alone keys the model, also for a plan
    resolved afresh with a new but equal ``ModelSpec``."""
    objs, rest = (pb,), (seq_len, adapter_params, selective_op, modules)
    return _TOKEN_FLOPS.get(objs, rest) or _TOKEN_FLOPS.put(objs, rest, _token_flops(m, pb, *rest))


def _token_flops(m: ModelSpec, pb: ParamBreakdown, seq_len: int, adapter_params: float,
                 selective_op: bool, modules: tuple[str, ...]) -> TokenFlops:
    block = head = 0.0
    ratio = m.moe.experts_per_token / m.moe.num_experts if m.moe else 1.0
    for g in pb.groups:
        if len(g.shape) != 2 or g.category in ("embedding", "position") or g.name.endswith("embed_tokens"):
            continue
        n = 2.0 * g.params * (ratio if g.category == "expert" or (g.category == "mtp" and g.tp_split == "expert")
                              else 1.0)
        if g.category == "lm_head" or g.name.endswith("shared_head.head"):
            head += n
        else:
            block += n
    if m.tie_embeddings:
        head += 2.0 * m.vocab_size * (m.embedding_proj_dim or m.hidden_size)
    if m.mla:
        d_qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim
        d_v = m.mla.v_head_dim
    else:
        d_qk = d_v = m.head_dim
    full = m.full_attention_layer_count
    window = min(seq_len, m.sliding_window or seq_len)
    attn = 2.0 * m.num_heads * (d_qk + d_v) * (full * seq_len + m.sliding_layer_count * window)
    op = sop.recomputed_flops_per_token(pb) if selective_op else 0.0
    named = recompute_modules.recomputed_flops_per_token(m, pb, modules) if modules else 0.0
    return TokenFlops(block, head, attn, 2.0 * adapter_params, op, named)


@dataclass(frozen=True, slots=True)
class StepFlops:
    model: float  # per step, all GPUs, no recompute
    hardware: float  # with recompute
    recompute: float
    multiplier: str  # the formula, for explanations


def step_flops(tf: TokenFlops, tokens: float, tr: TrainingSettings,
               prof: FrameworkProfile | None = None) -> StepFlops:
    """Model and hardware FLOPs of a step; ``prof`` says whether selective recompute re-runs a fused attention
    core (``recompute_modules.reruns_core_attention``)."""
    full = tr.method == "full"
    base_bwd = 2.0 if full else 1.0  # frozen base: input gradients only
    model = tokens * ((tf.block_matmul + tf.head) * (1 + base_bwd) + tf.attention * 3 + tf.adapters * 3)
    if tr.recompute == "full":
        extra = tf.block_matmul + tf.attention + tf.adapters
        how = "+1 forward of every block (full recompute)"
    elif tr.recompute == "selective" and tr.recompute_modules != ("core_attn",):  # Megatron-Core's named modules
        extra = tf.module_recomputed + (tf.attention if recompute_modules.reruns_core_attention(tr, prof) else 0.0)
        how = f"+ the forward of {', '.join(tr.recompute_modules)} again (selective recompute of named modules)"
    elif recompute_modules.reruns_core_attention(tr, prof):
        extra = tf.attention
        how = ("+ the fused attention forward again (Megatron-Core checkpoints the attention core)" if tr.flash_attention
               else "+ QKᵀ and AV again (selective recompute)")
    elif tr.recompute == "selective_op":
        extra = tf.op_recomputed + (0.0 if tr.flash_attention else tf.attention)
        how = "+ every second block matmul again (operator-level selective checkpointing)"
    else:
        extra = 0.0
        how = "no recompute"
    if tr.flash_attention:
        extra += tf.attention / 2
        how += "; FlashAttention recomputes QKᵀ in its backward"
    rec = tokens * extra
    return StepFlops(model, model + rec, rec, how)
