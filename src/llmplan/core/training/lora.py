"""LoRA and QLoRA: which parameters train, and how many bytes the frozen base takes.

LoRA (Hu et al. 2022) adds, to each targeted projection W (out × in), A (r × in) and
B (out × r); only A and B get gradients and optimizer states. Under Megatron-style tensor
parallelism a column-parallel W keeps A whole and splits B's rows; a row-parallel W splits
A's columns and keeps B whole. Routed experts are not targeted (PEFT's default target names
match attention and dense/shared MLP projections only).

QLoRA (Dettmers et al. 2023, §3) stores every linear weight of the blocks in NF4: 4 bits
plus one absmax per 64 weights; in fp32 that is 32/64 = 0.5 bit/param, and double
quantisation (8-bit absmax, fp32 constant per 256 blocks) brings it to 8/64 + 32/(64·256)
= 0.127 bit/param. Embeddings, norms and the output head stay in bf16.
"""

from __future__ import annotations

from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training.layout import Layout

# the last component of a tensor name -> the LoRA target name people use
_TARGET_OF = {
    "q_proj": "q", "q_b_proj": "q", "k_proj": "k", "kv_b_proj": "k", "v_proj": "v", "o_proj": "o",
    "gate_proj": "gate", "up_proj": "up", "down_proj": "down",
}


def nf4_bits_per_param(double_quant: bool) -> float:
    """4 bits + quantisation constants (Dettmers et al. §3): 4.127 with double quantisation, else 4.5."""
    return 4.0 + (8 / 64 + 32 / (64 * 256) if double_quant else 32 / 64)


# Quantised LoRA bases other than NF4: bits per weight of the stored format, and bytes one dequantisation
# to bf16 moves per weight (read the codes and constants, write 2 B).
# - gptq / awq: 4-bit codes packed in int32, one fp16 scale and one 4-bit zero point per group of 128
#   input channels (AutoGPTQ QuantLinear qweight/qzeros/scales, AutoAWQ WQLinear_GEMM; group_size 128):
#   4 + 16/128 + 4/128 bits.
# - int8: LLM.int8 (bitsandbytes Int8Params): int8 codes and one fp32 scale per output row (SCB), ~8 bits.
# - mxfp4: OCP Microscaling v1.0, FP4 (E2M1) elements with one 8-bit E8M0 scale per block of 32: 4.25 bits.
QUANT_BITS = {"gptq": 4 + 16 / 128 + 4 / 128, "awq": 4 + 16 / 128 + 4 / 128, "int8": 8.0, "mxfp4": 4 + 8 / 32}


def base_bits_per_param(quant_base: str, double_quant: bool) -> float:
    """Bits per weight of a quantised LoRA base (``quant_base``): NF4 per QLoRA §3, the others above."""
    if quant_base == "nf4":
        return nf4_bits_per_param(double_quant)
    return QUANT_BITS[quant_base]


def dequant_bytes_per_weight(quant_base: str, double_quant: bool) -> float:
    """Bytes one dequantisation to bf16 moves per weight: the stored bits read + 2 B written."""
    return base_bits_per_param(quant_base, double_quant) / 8 + 2.0


def is_targeted(name: str, category: str, targets: tuple[str, ...]) -> bool:
    """Whether LoRA adapts the tensor group ``name`` (of ``category``) for these target names."""
    if category in ("expert", "mtp") or name.endswith(".bias"):
        return False
    return _TARGET_OF.get(name.rsplit(".", 1)[-1], "") in targets


def adapter_params(pb: ParamBreakdown, m: ModelSpec, lay: Layout | None, rank: int,
                   targets: tuple[str, ...], layer_share: float = 1.0) -> float:
    """Adapter parameters: on one GPU (``lay`` given, ``layer_share`` of the blocks) or in the whole model."""
    total = 0.0
    for g in pb.groups:
        if g.place != "layer" or len(g.shape) != 2 or not is_targeted(g.name, g.category, targets):
            continue
        out, inp = g.shape
        if lay is None or lay.tp == 1:
            per = rank * (out + inp)
        elif g.tp_split == "column":
            per = rank * inp + rank * out / lay.tp
        elif g.tp_split == "row":
            per = rank * inp / lay.tp + rank * out
        else:
            per = rank * (out + inp)
        total += per * g.count * layer_share
    return total


def quantisable_share(pb: ParamBreakdown) -> float:
    """Share of all parameters that QLoRA stores in NF4 (2-D weights inside the blocks)."""
    q = sum(g.params for g in pb.groups if g.place == "layer" and len(g.shape) == 2 and g.category != "mtp")
    return q / pb.total if pb.total else 0.0
