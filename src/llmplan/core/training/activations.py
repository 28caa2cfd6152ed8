"""Activation memory: what the backward pass needs kept from the forward pass.

Derived tensor by tensor after Korthikanti et al. 2022 §4.1 (2-byte activations, 1-byte
dropout masks): per GPT block 34·sbh + 5·as²b bytes, i.e. norm inputs, the QKV input, Q,
K, V, the softmax output (plus its dropout mask and output when dropout > 0), the output
projection input, the MLP's inputs and intermediates and the dropout masks. The same
derivation is applied to GQA (narrower K/V), gated MLPs (Megatron's fused SwiGLU keeps the
gate and up outputs and their product: 3 tensors of the intermediate width), MoE layers
(router logits in fp32, top-k copies of each token's input, intermediate and output),
MLA (the compressed latents) and sliding windows. FlashAttention keeps no s×s matrix, only
the fp32 log-sum-exp per head and token.

Tensor parallelism splits the tensors inside attention and the MLP by t; sequence
parallelism also splits the "replicated" ones (norms, dropout masks, block inputs); context
parallelism splits the sequence. Selective recompute drops the s×s terms; full recompute
keeps only each block's input (2·sbh, /t with sequence parallelism); torchtitan's operator-level
selective checkpointing keeps what ``selective_op`` lists; Megatron-Core's named modules
(``training.recompute_modules``) drop what ``recompute_modules`` lists.

torchtitan's modules run uncompiled (``ops.titan_eager``) keep more than fused kernels where a block is not
checkpointed, and a recomputed block holds that much meanwhile (``eager_block_extra``).
"""

from __future__ import annotations

from llmplan.core.model import ModelSpec
from llmplan.core.training import recompute_modules, selective_op
from llmplan.core.training.layout import Layout
from llmplan.core.training.stages import warmup_chunks
from llmplan.core.workload import TrainingSettings


def layer_bytes(m: ModelSpec, lay: Layout, tr: TrainingSettings, kind: str = "dense",
                attention: str = "full", recompute: str | None = None, eager: str = "") -> float:
    """Bytes one block keeps for one micro-batch on one GPU (``recompute`` overrides the plan's). ``eager``:
    the norm type of torchtitan's uncompiled modules (``eager_block_extra``), "" for fused kernels."""
    rc = tr.recompute if recompute is None else recompute
    t = lay.tp
    rep = t if lay.sp else 1  # divisor of the tensors TP alone does not split
    s = lay.seq_len / lay.cp
    b = lay.micro_batch
    h = m.hidden_size
    sb = s * b
    if rc == "full":
        return 2 * sb * h / rep
    if rc == "selective_op":
        return selective_op.layer_bytes(m, lay, tr)
    drop = tr.dropout > 0
    replicated = 2 * sb * h * 4 + (2 * sb * h if drop else 0)  # 2 norm inputs, QKV and MLP inputs, 2 masks
    split = 0.0
    # attention
    if m.mla:
        a = m.mla
        k_width = m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim)
        v_width = m.num_heads * a.v_head_dim
        replicated += 2 * sb * (a.kv_lora_rank + a.qk_rope_head_dim + (a.q_lora_rank or 0))
        kv_div = t
    else:
        k_width = v_width = m.kv_width
        kv_div = m.num_kv_heads if lay.kv_replicated else t
    o_width = v_width if m.mla else m.q_width
    split += 2 * sb * m.q_width / t + 2 * sb * (k_width + v_width) / kv_div + 2 * sb * o_width / t
    heads = m.num_heads / t
    if tr.flash_attention:
        split += 4 * heads * sb  # fp32 log-sum-exp per head and token
    elif rc == "none" or (rc == "selective" and "core_attn" not in tr.recompute_modules):
        s_kv = min(lay.seq_len, m.sliding_window) if attention == "sliding" and m.sliding_window else lay.seq_len
        split += heads * sb * s_kv * (5 if drop else 2)  # softmax out (+ dropout mask and output)
    # MLP
    n_tensors = 3 if m.gated_mlp else 2
    if kind == "moe" and m.moe:
        e = m.moe
        k = e.experts_per_token
        replicated += 4 * sb * e.num_experts + 2 * 2 * sb * h * k  # fp32 router logits; dispatched in/out copies
        split += n_tensors * 2 * sb * k * e.expert_intermediate_size / t
        if e.num_shared_experts:
            split += n_tensors * 2 * sb * e.shared_intermediate_size * e.num_shared_experts / t
    else:
        split += n_tensors * 2 * sb * m.intermediate_size / t
    if rc == "selective" and recompute_modules.named(tr):  # Megatron-Core's --recompute-modules
        drop_rep, drop_split = recompute_modules.dropped(m, lay, kind, tr.recompute_modules)
        replicated, split = replicated - drop_rep, split - drop_split
    if eager:
        extra_rep, extra_split = eager_block_extra(m, lay, kind, eager)
        replicated, split = replicated + extra_rep, split + extra_split
    return replicated / rep + split


def eager_block_extra(m: ModelSpec, lay: Layout, kind: str = "dense",
                      norm: str = "rmsnorm") -> tuple[float, float]:
    """(bytes before the sequence-parallel split, bytes after the TP split) that one block of torchtitan's
    uncompiled modules keeps beyond what fused kernels keep (``layer_bytes``), for one micro-batch, read from
    pytorch/torchtitan torchtitan/models/norms.py and models/llama/model.py at 9dec370a (2024-12-26), with
    autograd's saved tensors (a product saves each factor only for the other's gradient):

    - ``RMSNorm``: ``_norm(x.float()).type_as(x) * weight`` keeps the fp32 copy of its input (saved by ``pow``
      and by the product with the rsqrt), the fp32 rsqrt per token and its bf16 normalised output (the
      weight product's factor) beside its output, which the projections keep: 4·h + 4 B more per token and
      norm than a fused norm's input (two per block); ``norm`` fused_rmsnorm (a Triton kernel saving its input
      and the rsqrt) keeps 4 B per token and norm more;
    - ``repeat_kv``: SDPA keeps K and V copied to the query heads' width: 2·(2·q − k − v) B more than fused
      attention's K and V (0 without grouped-query attention; latent attention is not torchtitan's);
    - ``FeedForward``: ``w2(silu(w1(x)) * w3(x))`` keeps SiLU's input, its output, the up projection and the
      product: one intermediate-wide bf16 tensor (2·I B, the routed experts' k·I in MoE layers) more than a
      fused SwiGLU's three;
    - rotary keeps nothing (the complex multiply's factor is the constant ``freqs_cis``), and the SDPA
      output is the output projection's input, as fused attention counts them.
    Without flash attention the fused s×s terms stand (SDPA's math path is not modelled further)."""
    s = lay.seq_len / lay.cp
    sb = s * lay.micro_batch
    t = lay.tp
    h = m.hidden_size
    replicated = 2 * ((4 * h if norm == "rmsnorm" else 0.0) + 4) * sb
    split = 0.0
    if m.mla is None:
        kv_div = m.num_kv_heads if lay.kv_replicated else t
        split += 2 * sb * (2 * m.q_width / t - 2 * m.kv_width / kv_div)
    if m.gated_mlp:
        if kind == "moe" and m.moe:
            e = m.moe
            split += 2 * sb * (e.experts_per_token * e.expert_intermediate_size
                               + e.shared_intermediate_size * e.num_shared_experts) / t
        else:
            split += 2 * sb * m.intermediate_size / t
    return replicated, split


def final_norm_extra(m: ModelSpec, lay: Layout, norm: str = "rmsnorm") -> float:
    """Last stage: what torchtitan's uncompiled final norm keeps beyond a fused norm's input (its fp32 input copy
    and rsqrt, ``eager_block_extra``): (4·h + 4) B per token, 4 B for ``fused_rmsnorm``."""
    rep = lay.tp if lay.sp else 1
    return ((4 * m.hidden_size if norm == "rmsnorm" else 0.0) + 4) * lay.seq_len / lay.cp * lay.micro_batch / rep


def average_layer_bytes(m: ModelSpec, lay: Layout, tr: TrainingSettings, recompute: str | None = None,
                        eager: str = "") -> float:
    """Mean over the model's blocks (dense/MoE and full/sliding mixes weighted by their counts); ``eager`` as
    ``layer_bytes``."""
    L = m.num_layers
    moe_share = m.moe_layer_count / L
    slide_share = m.sliding_layer_count / L
    total = 0.0
    for kind, ks in (("dense", 1 - moe_share), ("moe", moe_share)):
        if ks <= 0:
            continue
        for att, a_s in (("full", 1 - slide_share), ("sliding", slide_share)):
            if a_s > 0:
                total += ks * a_s * layer_bytes(m, lay, tr, kind, att, recompute, eager)
    return total


def logits_bytes(m: ModelSpec, lay: Layout) -> float:
    """Last stage: final-norm and head inputs (2·2·sbh) and 4 B per logit (4·sbV/t): the fp32 logits the loss
    reads, or under ``fused_ce`` the 16-bit logits and the 16-bit gradient its backward writes beside them
    (``loss_peak_bytes``)."""
    s = lay.seq_len / lay.cp
    rep = lay.tp if lay.sp else 1
    return 4 * s * lay.micro_batch * m.hidden_size / rep + 4 * s * lay.micro_batch * m.vocab_size / lay.tp


def loss_peak_bytes(m: ModelSpec, lay: Layout, loss: str) -> float:
    """Last stage: what the loss holds at its backward beyond ``logits_bytes``' fp32 logits. An upcast loss
    (torchtitan's ``cross_entropy(pred.flatten(0, 1).float(), labels)``, pytorch/torchtitan train.py at
    9dec370a) runs log_softmax on an fp32 copy and keeps its fp32 output; log_softmax's backward then holds
    that output, its incoming gradient and the input gradient at once: 12 B per logit, 8 more than counted.
    It is not at the same moment as a recomputed block's working set (the caller takes the larger).

    ``fused_ce`` (flash-attn's ``CrossEntropyLoss``, llm-foundry's default ``loss_fn: fused_crossentropy``,
    mosaicml/llm-foundry modeling_mpt.py at 5e85bd62) saves the logits in their own 16-bit dtype and its backward
    writes a gradient of the same dtype (``torch.empty_like(logits)``, Dao-AILab/flash-attention
    ops/triton/cross_entropy.py at v2.4.2; ``at::empty_like(logits_)`` in csrc/xentropy at v1.0.9); the
    loss itself is fp32 per token only. Composer keeps the logits in ``state.outputs`` through the backward
    (mosaicml/composer trainer.py ``_train_microbatch`` at 2deccf2c): 2 + 2 B per logit, nothing beyond the
    4 B. Other losses: nothing beyond the 4 B either."""
    if loss != "upcast":
        return 0.0
    return 8 * lay.seq_len / lay.cp * lay.micro_batch * m.vocab_size / lay.tp


def embedding_bytes(m: ModelSpec, lay: Layout, tr: TrainingSettings) -> float:
    """First stage: int64 token ids (8·sb) and the embedding dropout mask when dropout > 0."""
    s = lay.seq_len / lay.cp
    rep = lay.tp if lay.sp else 1
    return 8 * s * lay.micro_batch + (s * lay.micro_batch * m.hidden_size / rep if tr.dropout > 0 else 0.0)


def in_flight(lay: Layout, stage: int = 0) -> float:
    """Micro-batches whose activations ``stage`` holds at once (Korthikanti §4.2.3 for the first).

    1F1B: min(m, p - s). Interleaved with v chunks: (2·(p-s-1) + (v-1)·p + 1) chunk passes / v,
    which on the first stage is p · (1 + (p-1)/(p·v)). See ``stages.warmup_chunks``.
    """
    return warmup_chunks(lay.pp, lay.vp, stage, lay.accumulation) / lay.vp
