"""LoRA and QLoRA: which parameters train, and how many bytes the frozen base takes.

LoRA (Hu et al. 2022) adds, to each targeted projection W (out × in), A (r × in) and
B (out × r); only A and B get gradients and optimizer states. The count, the tensor-parallel
split of A and B, and which tensors a target set reaches (experts included when their
projections are targeted) live in ``core.bytes_per_param``, shared with the search and the
checkpoint code.

QLoRA (Dettmers et al. 2023, §3) stores every linear weight of the blocks in NF4: 4 bits
plus one absmax per 64 weights; in fp32 that is 32/64 = 0.5 bit/param, and double
quantisation (8-bit absmax, fp32 constant per 256 blocks) brings it to 8/64 + 32/(64·256)
= 0.127 bit/param. Embeddings, norms and the output head stay in bf16.
"""

from __future__ import annotations

from llmplan.core.bytes_per_param import lora_params, nf4_bits_per_param
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training.layout import Layout

__all__ = ["adapter_params", "nf4_bits_per_param"]


def adapter_params(pb: ParamBreakdown, m: ModelSpec, lay: Layout | None, rank: int,
                   targets: tuple[str, ...], layer_share: float = 1.0) -> float:
    """Adapter parameters: on one GPU (``lay`` given, ``layer_share`` of the blocks) or in the whole model."""
    if lay is None:
        return lora_params(pb, rank, targets, layer_share=layer_share)
    return lora_params(pb, rank, targets, lay.tp, lay.ep, layer_share)

