"""Operator-level selective activation checkpointing, as torchtitan runs it (``training.recompute =
"selective_op"``).

torchtitan wraps each transformer block in ``torch.utils.checkpoint`` (non-reentrant) with a
selective-checkpoint policy (pytorch/torchtitan ``parallelize_llama.py``, ``checkpoint_wrapper`` with
``mode = "selective"``, ``selective_ac_option = "op"``; commit 1ea476e9 of 2024-04-24, and the same
rule in ``_apply_ac_to_transformer_block`` at 9dec370a of 2024-12-26):

- the outputs of the ops in its save list are kept from the forward: ``aten.mm``, both fused SDPA
  kernels (flash and memory-efficient attention) and the TP reduce-scatter;
- except every second ``aten.mm``: a counter, fresh for each block's forward (and again for its
  recompute), counts the matmuls, and those with an even count are recomputed;
- every other op (norms, rotary, residual adds, SiLU and the product with the up projection,
  all-gathers) is recomputed in the backward from the block's input and the saved outputs.

A Llama block's matmuls run in the order q, k, v, o, gate (w1), up (w3), down (w2), so the policy keeps
q, v, gate and down and recomputes k, o and up: for Llama 3 8B, 37% of the block's matmul FLOPs are done
twice, against 100% under full checkpointing. What a block keeps: its input (the checkpoint's input), the
outputs of the saved matmuls, the attention output with its fp32 log-sum-exp, and, under tensor
parallelism with sequence parallelism, the two reduce-scatter outputs. SDPA's math fallback (no
FlashAttention) is not in the save list: the attention core is recomputed and keeps no s×s matrix.

The rule is applied to the model's matmuls in their forward order (``ops.layer_gemms``, which lists
a block's projections as the modeling code calls them); routers and experts (MoE) and latent attention
(MLA) are not modelled, nor LoRA adapters, whose matmuls would shift the count (``workload``
refuses those plans).
"""

from __future__ import annotations

from collections.abc import Sequence

from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup, count_params
from llmplan.core.training.layout import Layout
from llmplan.core.training.ops import Gemm, layer_gemms
from llmplan.core.workload import TrainingSettings

ACT_BYTES = 2.0  # bf16 activations, as ``activations`` counts them


def saved(names: Sequence[str]) -> tuple[bool, ...]:
    """For a block's matmuls in forward order: whether the policy keeps each one's output (the 1st, 3rd,
    5th ... matmul; the counter starts at 0 and a matmul is recomputed when its count is even)."""
    return tuple(i % 2 == 0 for i in range(len(names)))


def block_matmuls(pb: ParamBreakdown) -> list[TensorGroup]:
    """The weight groups of a block that run as one ``aten.mm`` each, in forward order."""
    return [g for g in pb.groups if len(g.shape) == 2 and g.place == "layer" and g.category != "norm"]


def recomputed_flops_per_token(pb: ParamBreakdown) -> float:
    """Forward FLOPs per token of the matmuls the policy recomputes, over all blocks (2 per weight)."""
    groups = block_matmuls(pb)
    return sum(2.0 * g.params for g, keep in zip(groups, saved([g.name for g in groups]), strict=True)
               if not keep)


def layer_bytes(m: ModelSpec, lay: Layout, tr: TrainingSettings) -> float:
    """Bytes one block keeps for one micro-batch on one GPU (module doc)."""
    t = lay.tp
    rep = t if lay.sp else 1
    sb = lay.seq_len / lay.cp * lay.micro_batch
    h = m.hidden_size
    kept = ACT_BYTES * sb * h / rep  # the checkpointed block's input
    gemms = layer_gemms(m, count_params(m), lay, tr)
    for g, keep in zip(gemms, saved([g.name for g in gemms]), strict=True):
        if keep:
            kept += ACT_BYTES * g.m * g.n * g.count  # the matmul's output on this GPU (row-parallel: full width)
    if tr.flash_attention:
        heads = m.num_heads / t
        kept += ACT_BYTES * sb * m.q_width / t + 4 * heads * sb  # SDPA output and its fp32 log-sum-exp
    if lay.sp:  # reduce-scatter outputs after the o and down projections ((t > 1): also on the search's arrays)
        kept += 2 * ACT_BYTES * sb * h / t * (t > 1)
    return kept


def recomputed_gemms(gemms: Sequence[Gemm]) -> tuple[Gemm, ...]:
    """The matmuls of ``gemms`` (a block, forward order) the backward runs again."""
    return tuple(g for g, keep in zip(gemms, saved([g.name for g in gemms]), strict=True) if not keep)
