"""The architecture of a decoder-only transformer, as the engine needs it.

``ModelSpec`` is built from a Hugging Face ``config.json`` by ``llmplan.formats.hf_config``
(or edited by hand in the GUI). It describes the real checkpoint tensor by tensor:
GQA/MQA, gated or plain MLPs, biases, norms, tied or untied embeddings, learned or
rotary positions, MoE (routed and shared experts, which layers are sparse), DeepSeek's
multi-head latent attention (MLA) and sliding-window layers. Counting parameters from
these fields (``llmplan.core.params``) must reproduce the checkpoint exactly.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from llmplan.core.frozen import FrozenModel

# Sanity bounds, so an inline spec in a plan cannot skip the limits a config.json gets (io/hf_config.py):
# the deepest released models have a few hundred layers, the widest tensors ~10^6 elements a side. Beyond
# these the engine's float arithmetic overflows (a spec with numbers near 2^1000 gave OverflowError).
MAX_LAYERS = 10_000
MAX_DIM = 1 << 40

LayerMlp = Literal["dense", "moe"]
LayerAttention = Literal["full", "sliding"]
FusedLinear = Literal["qkv", "gate_up"]

# Projections a family's checkpoint stores as one Linear module, by model_type, read from each family's modeling
# code (huggingface/transformers src/transformers/models/<family>/, and Qwen's remote modeling_qwen.py):
# - qwen (Qwen-1): ``c_attn`` = nn.Linear(h, 3·h) for q, k and v (QWenAttention); w1, w2 (gate, up) apart;
# - phi3 (Phi-3, Phi-3.5, Phi-4-mini, Phi-4): ``qkv_proj`` = nn.Linear(h, q + 2·kv) (Phi3Attention) and
#   ``gate_up_proj`` = nn.Linear(h, 2·intermediate) (Phi3MLP);
# - gpt2: ``c_attn`` = Conv1D(3·h, h) (GPT2Attention); gpt_bigcode (StarCoder): ``c_attn`` =
#   nn.Linear(h, h + 2·kv) (GPTBigCodeAttention, multi-query);
# - gpt_neox (Pythia): ``query_key_value`` = nn.Linear(h, 3·h) (GPTNeoXAttention); bloom: the same
#   (BloomAttention); falcon: ``query_key_value`` = FalconLinear(h, (heads + 2·kv heads)·head_dim) (FalconAttention).
# Every other family here keeps q, k, v, gate and up as separate Linear modules (GPT-J's q_proj, k_proj, v_proj
# too). PEFT adapts whole modules, so this is what ``core.bytes_per_param.adapted_modules`` counts adapters by.
FUSED_LINEARS: dict[str, tuple[FusedLinear, ...]] = {
    "qwen": ("qkv",), "phi3": ("qkv", "gate_up"), "gpt2": ("qkv",), "gpt_bigcode": ("qkv",),
    "gpt_neox": ("qkv",), "bloom": ("qkv",), "falcon": ("qkv",),
}


class MoESpec(FrozenModel):
    """Mixture-of-experts feed-forward: routed experts (top-k of n) plus optional shared experts."""

    num_experts: int = Field(gt=0, le=MAX_DIM, description="routed experts per MoE layer")
    experts_per_token: int = Field(gt=0, le=MAX_DIM, description="top-k routed experts each token uses")
    expert_intermediate_size: int = Field(gt=0, le=MAX_DIM, description="hidden width of one routed expert's MLP")
    num_shared_experts: int = Field(0, ge=0, le=MAX_DIM, description="experts every token always uses")
    shared_intermediate_size: int = Field(
        0, ge=0, le=MAX_DIM, description="hidden width of ONE shared expert (0 when there are none)"
    )
    shared_expert_gate: bool = Field(False, description="Qwen-MoE: a sigmoid gate Linear(h, 1) on the shared expert")
    router_bias: bool = Field(False, description="router Linear has a bias (gpt-oss)")
    router_score_bias: bool = Field(
        False, description="DeepSeek-V3's e_score_correction_bias: one float per expert"
    )
    expert_bias: bool = Field(False, description="expert MLP projections have biases (gpt-oss)")
    expert_activation_clamp: float | None = Field(
        None, gt=0, le=1e6, description="gpt-oss's swiglu_limit: before the gated activation the gate half is "
        "clamped to at most this and the linear half to ±this; None: no clamp"
    )

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) cannot exceed num_experts ({self.num_experts})"
            )
        if self.num_shared_experts and not self.shared_intermediate_size:
            raise ValueError("shared_intermediate_size must be set when num_shared_experts > 0")
        return self


class MLASpec(FrozenModel):
    """DeepSeek-V2/V3 multi-head latent attention: low-rank compressed queries and keys/values."""

    q_lora_rank: int | None = Field(None, gt=0, le=MAX_DIM, description="None: queries are projected directly (V2-Lite)")
    kv_lora_rank: int = Field(gt=0, le=MAX_DIM, description="width of the compressed KV latent that is cached")
    qk_nope_head_dim: int = Field(gt=0, le=MAX_DIM)
    qk_rope_head_dim: int = Field(gt=0, le=MAX_DIM, description="decoupled rotary key width, shared by all heads and cached")
    v_head_dim: int = Field(gt=0, le=MAX_DIM)


class ModelSpec(FrozenModel):
    """A decoder-only transformer described tensor by tensor (see module docstring)."""

    name: str = Field(min_length=1)
    model_type: str = Field("llama", description="Hugging Face model_type this came from")
    vocab_size: int = Field(gt=0, le=MAX_DIM)
    hidden_size: int = Field(gt=0, le=MAX_DIM)
    num_layers: int = Field(gt=0, le=MAX_LAYERS)
    num_heads: int = Field(gt=0, le=MAX_DIM)
    num_kv_heads: int = Field(gt=0, le=MAX_DIM)
    head_dim: int = Field(gt=0, le=MAX_DIM)
    intermediate_size: int = Field(gt=0, le=MAX_DIM, description="hidden width of a dense MLP layer")
    gated_mlp: bool = Field(True, description="SwiGLU/GeGLU: gate, up and down projections (3 matrices)")
    activation: str = "silu"
    attention_bias: bool = Field(False, description="bias on the q, k and v projections")
    attention_out_bias: bool = Field(False, description="bias on the attention output projection")
    mlp_bias: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: int = Field(2, ge=0, le=4, description="norms of width hidden_size in each block")
    qk_norm: Literal["none", "per_head", "full"] = Field(
        "none", description="per_head: RMSNorm(head_dim) (Qwen3, Gemma3); full: over all heads (OLMo2)"
    )
    final_norm: bool = True
    embedding_norm: bool = Field(False, description="a norm right after the token embedding (BLOOM)")
    tie_embeddings: bool = False
    lm_head_bias: bool = False
    attention_sinks: bool = Field(False, description="gpt-oss: one learned sink logit per query head and layer")
    position: Literal["rope", "learned", "alibi", "none"] = "rope"
    learned_positions: int = Field(0, ge=0, le=MAX_DIM, description="rows of the learned position table (0 unless learned)")
    embedding_proj_dim: int | None = Field(
        None, gt=0, le=MAX_DIM, description="OPT-350m: embeddings of this width projected in/out of hidden_size"
    )
    parallel_block: bool = Field(False, description="attention and MLP read the same input (GPT-J, Falcon)")
    max_position_embeddings: int = Field(2048, gt=0, le=MAX_DIM, description="longest context the model was trained for")
    layer_mlp: tuple[LayerMlp, ...] = Field(default=(), description="'dense' or 'moe' per layer; () = all dense")
    layer_attention: tuple[LayerAttention, ...] = Field(
        default=(), description="'full' or 'sliding' per layer; () = all full"
    )
    sliding_window: int | None = Field(None, gt=0, le=MAX_DIM)
    moe: MoESpec | None = None
    mla: MLASpec | None = None
    mtp_layers: int = Field(0, ge=0, le=MAX_LAYERS, description="DeepSeek-V3 multi-token-prediction modules in the checkpoint")
    fused_linears: tuple[FusedLinear, ...] | None = Field(
        None, description="projections the checkpoint stores as one Linear module: 'qkv' (q, k and v), 'gate_up' "
        "(gate and up); None: as the model_type's modeling code has them (FUSED_LINEARS)"
    )
    approximate: bool = Field(False, description="built by the generic path for an unknown model_type")
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})"
            )
        for name, seq in (("layer_mlp", self.layer_mlp), ("layer_attention", self.layer_attention)):
            if seq and len(seq) != self.num_layers:
                raise ValueError(f"{name} has {len(seq)} entries but the model has {self.num_layers} layers")
        if "moe" in self.layer_mlp and self.moe is None:
            raise ValueError("layer_mlp marks MoE layers but no moe block is given")
        if "sliding" in self.layer_attention and not self.sliding_window:
            raise ValueError("layer_attention marks sliding layers but sliding_window is not set")
        if self.position == "learned" and not self.learned_positions:
            raise ValueError("learned positions need learned_positions (the table's row count)")
        if self.fused_linears and "qkv" in self.fused_linears and self.mla:
            raise ValueError("fused_linears 'qkv': latent attention (mla) has no q, k and v projections to fuse")
        if self.fused_linears and "gate_up" in self.fused_linears and not self.gated_mlp:
            raise ValueError("fused_linears 'gate_up': the MLP is not gated, it has no gate projection")
        return self

    # ---- derived, cheap helpers the engine uses everywhere ------------------------------
    @property
    def moe_layer_count(self) -> int:
        return sum(1 for k in self.layer_mlp if k == "moe") if self.moe else 0

    @property
    def dense_layer_count(self) -> int:
        return self.num_layers - self.moe_layer_count

    @property
    def sliding_layer_count(self) -> int:
        return sum(1 for k in self.layer_attention if k == "sliding")

    @property
    def full_attention_layer_count(self) -> int:
        return self.num_layers - self.sliding_layer_count

    @property
    def fused(self) -> tuple[FusedLinear, ...]:
        """The projections stored as one Linear module: ``fused_linears`` when given, else the model_type's."""
        if self.fused_linears is not None:
            return self.fused_linears
        fused = FUSED_LINEARS.get(self.model_type, ())
        return tuple(f for f in fused if not (f == "qkv" and self.mla) and not (f == "gate_up" and not self.gated_mlp))

    @property
    def q_width(self) -> int:
        """Width of all query heads together (num_heads · head_dim; MLA: heads · (nope + rope))."""
        if self.mla:
            return self.num_heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.num_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Width of one of K or V over all KV heads (num_kv_heads · head_dim)."""
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.moe is not None and self.moe_layer_count > 0
