"""Megatron-Core's selective recompute of named modules (``training.recompute = "selective"`` with
``training.recompute_modules``; ``--recompute-granularity selective --recompute-modules ...``).

Read in NVIDIA/Megatron-LM at core_r0.13.0 (73a28a10, 2025-08-12; the option came with core_r0.12), with
``shared_experts`` from the main branch at d98e8a64 (2026-08-22), under the Transformer Engine layer spec
(megatron/core/models/gpt/gpt_layer_specs.py) that the performance recipes run:

- ``core_attn`` (the default, transformer_block.py / attention.py ``checkpoint_core_attention``): the attention
  core is checkpointed; Korthikanti et al. 2022's selective recompute, the engine's "selective" before these
  modules: the s×s scores and their softmax/dropout are not kept and QKᵀ, softmax and AV run again. With
  flash attention nothing s×s is kept anyway, but Megatron-Core still checkpoints the core
  (``_checkpointed_attention_forward`` whatever the backend), so its fused attention forward runs a second time
  in the backward; legacy Megatron-LM and Megatron-DeepSpeed skip the checkpoint under ``--use-flash-attn``
  (``ParallelAttention.forward`` checkpoints only the non-flash core), so other profiles charge nothing there.
- ``layernorm`` (transformer_layer.py, ``CheckpointWithoutOutput``): the input norm and the pre-MLP norm run
  under a checkpoint that keeps their input and *discards their output* once the next module has run
  (``discard_output_and_register_recompute``); the output's storage is freed and refilled just before the
  backward that needs it. Under the Transformer Engine spec a dense attention's input norm and a dense MLP's
  norm are fused into their linears (``TELayerNormColumnParallelLinear``; the layer holds an ``IdentityOp``), so
  this reaches the pre-MLP norm of MoE layers and the input norm of MLA layers only: each drops its 2·s·b·h-byte
  output (/t under sequence parallelism) and runs the norm's forward again.
- ``mla_up_proj`` (multi_latent_attention.py ``qkv_up_proj_and_rope_apply``, output-discarding): the latents'
  norms, the q and kv up-projections and rotary run again; Q, K and V are not kept (the latents are).
- ``mlp`` (transformer_layer.py ``recompute_mlp``, plain checkpoint): a dense layer's MLP keeps its input only:
  the fused norm's output and the intermediates are dropped; the norm, fc1, the activation and fc2 run again,
  and fc2's tensor-parallel collective with them.
- ``moe`` (moe_layer.py ``moe_layer_recompute``, plain checkpoint over route → dispatch → experts → combine):
  the layer keeps its input; router logits, the dispatched token copies, the experts' and shared experts'
  intermediates are dropped, and the router, the permutations, both all-to-alls and every expert run again.
- ``moe_act`` (moe/experts.py ``TEGroupedMLP``, output-discarding): the experts' activation (with the routing
  probabilities' product) keeps fc1's output and drops its own, fc2's input: one intermediate-wide tensor per
  routed token copy. Needs ``--moe-grouped-gemm``.
- ``shared_experts`` (moe/shared_experts.py, plain checkpoint): the shared experts' intermediates.

A module that another one covers (``moe_act`` and ``shared_experts`` inside ``moe``) adds nothing more. While a
module is recomputed its dropped tensors exist again until its backward has used them: the stage's peak holds
the largest one module drops for one layer (``working_bytes``), as full recompute holds one block.
"""

from __future__ import annotations

from collections.abc import Iterable

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training import op_time as ot
from llmplan.core.training.ops import LayerOps
from llmplan.core.workload import DEFAULT_RECOMPUTE_MODULES, TrainingSettings


def named(tr: TrainingSettings) -> tuple[str, ...]:
    """The modules a plan recomputes beyond the classic attention core (``()`` for every plan that is not
    named-module selective recompute: those mean what they always meant)."""
    if tr.recompute != "selective" or tr.recompute_modules == DEFAULT_RECOMPUTE_MODULES:
        return ()
    return tr.recompute_modules


def recomputes_core_attention(tr: TrainingSettings) -> bool:
    """Whether the attention core is recomputed (classic selective recompute: ``core_attn``)."""
    return tr.recompute == "selective" and "core_attn" in tr.recompute_modules


def reruns_core_attention(tr: TrainingSettings, prof: FrameworkProfile | None) -> bool:
    """Whether the backward runs the attention core's forward again (module doc, ``core_attn``): always without
    flash attention; with it only under Megatron-Core (the profiles that run its selective path,
    ``FrameworkProfile.recompute_modules``), which checkpoints the fused kernel too."""
    if not recomputes_core_attention(tr):
        return False
    return not tr.flash_attention or bool(prof is not None and prof.recompute_modules)


def _effective(modules: Iterable[str]) -> tuple[str, ...]:
    mods = tuple(modules)
    if "moe" in mods:  # the whole MoE layer is checkpointed: its activation and shared experts with it
        mods = tuple(x for x in mods if x not in ("moe_act", "shared_experts"))
    return mods


def dropped(m: ModelSpec, lay, kind: str, modules: Iterable[str]):
    """(bytes before the sequence-parallel split, bytes after the TP split) that one block of ``kind`` ("dense" or
    "moe") no longer keeps for one micro-batch, in ``activations.layer_bytes``' terms (Korthikanti et al. 2022
    §4.1, 2-byte activations). ``lay``: a ``Layout`` or the search's rows (arrays)."""
    t = lay.tp
    sb = lay.seq_len / lay.cp * lay.micro_batch
    h = m.hidden_size
    n_tensors = 3 if m.gated_mlp else 2
    e = m.moe if kind == "moe" and m.is_moe else None
    rep = 0.0 * t
    split = 0.0 * t
    for name in _effective(modules):
        if name == "layernorm":
            rep = rep + 2 * sb * h * ((e is not None) + (m.mla is not None))
        elif name == "mla_up_proj" and m.mla:
            a = m.mla
            k_width = m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
            split = split + 2 * sb * (m.q_width + k_width + m.num_heads * a.v_head_dim) / t
        elif name == "mlp" and e is None:
            rep = rep + 2 * sb * h
            split = split + n_tensors * 2 * sb * m.intermediate_size / t
        elif name == "moe" and e is not None:
            rep = rep + 4 * sb * e.num_experts + 2 * 2 * sb * h * e.experts_per_token
            split = split + n_tensors * 2 * sb * (e.experts_per_token * e.expert_intermediate_size
                                                  + e.shared_intermediate_size * e.num_shared_experts) / t
        elif name == "moe_act" and e is not None:
            split = split + 2 * sb * e.experts_per_token * e.expert_intermediate_size / t
        elif name == "shared_experts" and e is not None:
            split = split + n_tensors * 2 * sb * e.shared_intermediate_size * e.num_shared_experts / t
    return rep, split


def dropped_bytes(m: ModelSpec, lay, kind: str, modules: Iterable[str]):
    """``dropped`` after the sequence-parallel split: bytes per block and micro-batch on one GPU."""
    rep, split = dropped(m, lay, kind, modules)
    return rep / (lay.tp if lay.sp else 1) + split


def working_bytes(m: ModelSpec, lay, tr: TrainingSettings):
    """What the stage holds while one module is recomputed: the most one module drops in one block (module doc).
    0 for plans without named modules."""
    mods = _effective(named(tr))
    if not mods:
        return 0.0
    kinds = (("moe",) if m.moe_layer_count else ()) + (("dense",) if m.dense_layer_count else ())
    best = 0.0
    for name in mods:
        for kind in kinds:
            b = dropped_bytes(m, lay, kind, (name,))
            best = b if isinstance(best, float) and best == 0.0 else _larger(best, b)
    return best


def _larger(a, b):
    if hasattr(a, "shape") or hasattr(b, "shape"):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def recompute_time(m: ModelSpec, ops: LayerOps, r: ot.Rates, tr: TrainingSettings) -> ot.PartTimes:
    """The forward work named-module recompute runs again in one average block's backward, at the engine's own
    per-operation prices (``op_time``): the recomputed GEMMs at their shapes, the recomputed elementwise kernels
    at their bytes. Used by the estimate (``timing``) and the search (``search.quick``) alike. ``mla_up_proj``'s
    latent norms are not in the engine's op list (a few percent of one norm's bytes) and are not added."""
    mods = _effective(named(tr))
    if not mods:
        return ot.PartTimes()
    L = m.num_layers
    moe_share = m.moe_layer_count / L
    dense_share = 1 - moe_share
    prefixes: list[str] = []
    ew_bytes = kernels = 0.0
    norm = next((x for x in ops.elementwise if x.name == "fused norms"), None)
    one_norm = norm.bytes / 2 if norm else 0.0  # a block's two fused norms: one of them, one launch
    act = next((x for x in ops.elementwise if x.name in ("fused SwiGLU", "activation")), None)
    e = m.moe if m.is_moe else None
    inter_all = _inter(m)
    for name in mods:
        if name == "layernorm":
            n = moe_share + (1.0 if m.mla else 0.0)
            ew_bytes += n * one_norm
            kernels += n
        elif name == "mla_up_proj":
            prefixes += _mla_up(m)
            rot = next((x for x in ops.elementwise if "rotary" in x.name), None)
            if rot:
                ew_bytes += rot.bytes
                kernels += rot.kernels
        elif name == "mlp":
            prefixes.append("mlp.")
            ew_bytes += dense_share * one_norm
            kernels += dense_share
            if act and inter_all:
                ew_bytes += act.bytes * dense_share * m.intermediate_size / inter_all
                kernels += dense_share * act.kernels
        elif name == "moe" and e:
            prefixes += ["moe."]
            for x in ops.elementwise:  # the permutations and the experts' eager extras, already MoE-layer shares
                if x.name.startswith(("MoE token permutation", "clamped GLU", "expert output bias")):
                    ew_bytes += x.bytes
                    kernels += x.kernels
            if act and inter_all:
                ew_bytes += act.bytes * moe_share * _moe_inter(m) / inter_all
                kernels += moe_share * act.kernels
        elif name == "moe_act" and e:
            if act and inter_all:
                ew_bytes += act.bytes * moe_share * e.experts_per_token * e.expert_intermediate_size / inter_all
                kernels += moe_share * act.kernels
            clamp = next((x for x in ops.elementwise if x.name.startswith("clamped GLU")), None)
            if clamp:
                ew_bytes += clamp.bytes
                kernels += clamp.kernels
        elif name == "shared_experts" and e:
            prefixes.append("moe.shared_experts.")
            if act and inter_all:
                ew_bytes += act.bytes * moe_share * e.shared_intermediate_size * e.num_shared_experts / inter_all
                kernels += moe_share * act.kernels
    gemms = tuple(g for g in ops.gemms if g.name.startswith(tuple(prefixes))) if prefixes else ()
    gemm, calls = ot.forward_gemms(ops, r, gemms) if gemms else (0.0, 0.0)
    return ot.PartTimes(gemm=gemm, elementwise=ew_bytes / r.bandwidth, kernels=kernels, gemm_calls=calls)


def _mla_up(m: ModelSpec) -> list[str]:
    """MLA's up-projections: q's (``q_b_proj``, or without a q latent the one ``q_proj``, which the fused-projection
    profile names ``qkv_proj``) and kv's (``kv_b_proj``)."""
    if m.mla is None:
        return []
    return ["attn.kv_b_proj"] + (["attn.q_b_proj"] if m.mla.q_lora_rank else ["attn.q_proj", "attn.qkv_proj"])


def _moe_inter(m: ModelSpec) -> float:
    e = m.moe
    return (e.experts_per_token * e.expert_intermediate_size + e.shared_intermediate_size * e.num_shared_experts
            if e else 0.0)


def _inter(m: ModelSpec) -> float:
    """The intermediate width ``ops.layer_ops`` prices an average block's activation kernel at (before /t)."""
    return _moe_inter(m) if m.is_moe and m.moe else float(m.intermediate_size)


def recomputed_flops_per_token(m: ModelSpec, pb: ParamBreakdown, modules: Iterable[str]) -> float:
    """Forward FLOPs per token, over all blocks, of the weight matmuls the named modules run again (2 per weight;
    a routed expert's weights k/E of the time), for the hardware FLOPs (HFU)."""
    mods = _effective(modules)
    prefixes = []
    if "mla_up_proj" in mods:
        prefixes += _mla_up(m)
    if "mlp" in mods:
        prefixes.append("mlp.")
    if "moe" in mods:
        prefixes.append("moe.")
    if "shared_experts" in mods:
        prefixes.append("moe.shared_experts.")
    if not prefixes:
        return 0.0
    ratio = m.moe.experts_per_token / m.moe.num_experts if m.moe else 1.0
    total = 0.0
    for g in pb.groups:
        if len(g.shape) == 2 and g.place == "layer" and g.name.startswith(tuple(prefixes)):
            total += 2.0 * g.params * (ratio if g.category == "expert" else 1.0)
    return total
