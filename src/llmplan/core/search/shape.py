"""The few numbers of a model the quick search model needs, derived once per search.

Parameter counts come per tensor from ``count_params`` (so GQA, SwiGLU, MoE and untied
embeddings are exact), split by how Megatron shards them: column/row/vocab tensors
divide by the tensor-parallel size, routed experts by the expert-parallel size times
the tensor-parallel size, replicated tensors (norms, routers) not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from llmplan.core.bytes_per_param import shape_states, trainable_params
from llmplan.core.lora_modules import expert_adapters
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.workload import TrainingSettings


@dataclass(frozen=True, slots=True)
class ModelShape:
    spec: ModelSpec  # the model itself, for the engine's functions (search/quick_memory.py)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    q_width: int
    kv_width: int
    vocab: int
    mlp_act_width: float  # activation bytes-per-token factor of one MLP (see activation model)
    layer_split: float  # params per layer that TP splits (average over layers)
    layer_replicated: float
    layer_expert: float  # routed-expert params per layer (average), split by EP·TP
    layer_active_matmul: float  # params per layer a token multiplies with (top-k experts only)
    first_split: float  # embedding (vocab-split) params on the first stage
    first_replicated: float
    last_split: float  # LM head (vocab-split) params on the last stage
    last_replicated: float
    tied: bool
    num_experts: int
    experts_per_token: int
    moe_layer_fraction: float
    sliding_window: int  # 0: every layer attends to the whole sequence
    sliding_fraction: float  # share of layers with a sliding window
    total_params: int
    trainable_params: float  # all params, or the LoRA adapters' for lora/qlora
    factored_share: float  # Adafactor's second-moment entries per parameter (full training)
    matrix_share: float  # share of parameters in block matrices (Muon's momentum-only part)


@lru_cache(maxsize=64)  # the GUI searches again on every knob change; specs are frozen and hashable
def model_shape(m: ModelSpec, training: TrainingSettings) -> ModelShape:
    pc = count_params(m)
    L = m.num_layers
    sums = {"layer_split": 0.0, "layer_repl": 0.0, "layer_expert": 0.0,
            "first_split": 0.0, "first_repl": 0.0, "last_split": 0.0, "last_repl": 0.0}
    for g in pc.groups:
        if g.category == "mtp":
            sums["last_repl"] += g.params  # MTP modules sit with the LM head on the last stage
            continue
        if g.place == "layer":
            key = {"expert": "layer_expert", "replicated": "layer_repl"}.get(g.tp_split, "layer_split")
        else:
            key = f"{g.place}_{'repl' if g.tp_split == 'replicated' else 'split'}"
        sums[key] += g.params
    moe = m.moe
    k_over_n = moe.experts_per_token / moe.num_experts if moe else 0.0
    layer_matmul = (sums["layer_split"] + sums["layer_expert"] * k_over_n) / L
    h, f = m.hidden_size, m.intermediate_size
    per_mlp = 3.0 if m.gated_mlp else 2.0  # gate+up+product, or fc1 out + activation out
    dense_act = per_mlp * f
    if moe:
        moe_act = per_mlp * (moe.expert_intermediate_size * moe.experts_per_token
                             + moe.shared_intermediate_size * moe.num_shared_experts)
        frac = m.moe_layer_count / L
        mlp_act = (1 - frac) * dense_act + frac * moe_act
    else:
        frac, mlp_act = 0.0, dense_act
    window = m.sliding_window or 0
    factored, matrices = shape_states(pc)
    return ModelShape(
        spec=m, layers=L, hidden=h, heads=m.num_heads, kv_heads=m.num_kv_heads, q_width=m.q_width,
        kv_width=m.kv_width, vocab=m.vocab_size, mlp_act_width=mlp_act,
        layer_split=sums["layer_split"] / L, layer_replicated=sums["layer_repl"] / L,
        layer_expert=sums["layer_expert"] / L, layer_active_matmul=layer_matmul,
        first_split=sums["first_split"], first_replicated=sums["first_repl"],
        last_split=sums["last_split"], last_replicated=sums["last_repl"], tied=m.tie_embeddings,
        num_experts=moe.num_experts if moe else 1, experts_per_token=moe.experts_per_token if moe else 1,
        moe_layer_fraction=frac,
        sliding_window=window, sliding_fraction=m.sliding_layer_count / L,
        total_params=pc.total,
        trainable_params=trainable_params(pc, training.method, training.lora_rank, training.lora_targets,
                                          expert_adapters(m, training.lora_experts)),
        factored_share=factored / pc.total, matrix_share=matrices / pc.total,
    )

