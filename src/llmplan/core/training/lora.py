"""LoRA and QLoRA: which parameters train, and how many bytes the frozen base takes.

LoRA (Hu et al. 2022) adds, to each targeted module W (out × in), A (r × in) and
B (out × r); only A and B get gradients and optimizer states. PEFT adapts whole modules, so a checkpoint
that fuses q, k and v into one Linear gets one adapter there (``core.lora_modules``). The count, the tensor-parallel
split of A and B, and which tensors a target set reaches live in ``core.bytes_per_param`` and
``core.lora_modules``, shared with the search and the checkpoint code; a mixture of experts' routed experts
as ``training.lora_experts`` says (``lora_modules.expert_adapters``), with what transformers 5's stacked expert
parameters cost beyond their adapters (``merged_expert_bytes``, ``unquantised_expert_share``).

QLoRA (Dettmers et al. 2023, §3) stores every linear weight of the blocks in NF4: 4 bits
plus one absmax per 64 weights; in fp32 that is 32/64 = 0.5 bit/param, and double
quantisation (8-bit absmax, fp32 constant per 256 blocks) brings it to 8/64 + 32/(64·256)
= 0.127 bit/param. Embeddings, norms and the output head stay in bf16.
"""

from __future__ import annotations

from llmplan.core.bytes_per_param import frozen_weight_bytes, lora_params, nf4_bits_per_param
from llmplan.core.framework_profile import FrameworkProfile, kbit_upcast
from llmplan.core.lora_modules import expert_adapters, stacked_expert_params
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.quant import NF4_BLOCK
from llmplan.core.training.layout import Layout
from llmplan.core.workload import TrainingSettings

__all__ = ["adapter_params", "base_bits_per_param", "dequant_bytes_per_weight", "merged_expert_bytes",
           "nf4_bits_per_param", "nf4_dequant_bytes", "nf4_dequant_launches", "unquantised_expert_share"]


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


def nf4_dequant_bytes(double_quant: bool) -> float:
    """Bytes one bitsandbytes NF4 dequantisation to bf16 moves per weight, kernel by kernel as bitsandbytes
    0.50 runs it (``backends/cuda/ops.py``: ``_dequant_linear_fallback`` for the forward of more than 1,536
    tokens, ``functional.dequantize_4bit`` in ``MatMul4Bit.backward``):

    - double quantisation (the nested absmax): ``dequantize_blockwise`` turns the 8-bit absmax into fp32
      (read 1, write 4 B per 64 weights), then ``absmax + offset`` (read 4, write 4);
    - ``cdequantize_blockwise_bf16_nf4``: read the 4-bit codes (0.5 B) and the fp32 absmax (4 B per 64),
      write bf16 (2 B).

    2.5 + 17/64 = 2.766 B nested, 2.5 + 4/64 = 2.563 B plain. The second-level constants (one fp32 per 256
    blocks) and the 256-entry code table are below 0.001 B per weight and left out."""
    absmax = (1 + 4 + 4 + 4) / NF4_BLOCK if double_quant else 0.0
    return 0.5 + 2.0 + 4 / NF4_BLOCK + absmax


def nf4_dequant_launches(double_quant: bool) -> int:
    """Kernels one NF4 dequantisation launches: three with the nested absmax (8-bit absmax dequantisation,
    the offset add, the 4-bit dequantisation: bitsandbytes PR #2051 describes the same three launches),
    one without."""
    return 3 if double_quant else 1


def adapter_params(pb: ParamBreakdown, m: ModelSpec, lay: Layout | None, tr: TrainingSettings,
                   layer_share: float = 1.0) -> float:
    """Adapter parameters of ``tr``'s LoRA (its rank, targets, and ``lora_experts`` resolved for ``m``:
    ``core.lora_modules.expert_adapters``): on one GPU (``lay`` given, ``layer_share`` of the blocks) or in the
    whole model."""
    experts = expert_adapters(m, tr.lora_experts)
    if lay is None:
        return lora_params(pb, tr.lora_rank, tr.lora_targets, layer_share=layer_share, experts=experts)
    return lora_params(pb, tr.lora_rank, tr.lora_targets, lay.tp, lay.ep, layer_share, experts)


def merged_expert_bytes(m: ModelSpec, lay: Layout, tr: TrainingSettings, largest: bool = False,
                        prof: FrameworkProfile | None = None):
    """Bytes per average block on one GPU of the expert weights PEFT's ``ParamWrapper`` rebuilds each forward when
    the routed experts are adapted as stacked parameters (``core.lora_modules``: "target_parameters",
    "peft_converted"): W + s·B·A for the whole stack of this GPU's experts (peft v0.21.2 ``tuners/lora/layer.py``
    ``_LoraFactorsProxy.forward``, one ``baddbmm``), in the base weight's dtype. The experts' matmuls
    (transformers v5.24.0 ``integrations/moe.py`` ``grouped_mm_experts_forward``) keep it for their backward, so it
    is held like an activation until the block's backward; that backward then writes its gradient, the same size,
    before the adapters' own (``largest``: that transient, the larger stacked parameter's, gate_up_proj's when it is
    adapted). Column/row split over ``lay.tp`` as the experts are; the share of the blocks that are MoE layers.
    The base weight's dtype: 16-bit (fp32 in fp32 training), and fp32 under QLoRA where ``prof`` runs
    ``prepare_model_for_kbit_training``, which upcasts the unquantised stacks (``unquantised_expert_share``).
    0 for a full fine-tune, a dense model, or experts reached another way. Floats or arrays (``lay``'s fields)."""
    if tr.method == "full" or m.moe is None:
        return 0.0
    experts = expert_adapters(m, tr.lora_experts)
    if not stacked_expert_params(m, tr.lora_targets, experts):
        return 0.0
    e = m.moe
    h, f = m.hidden_size, e.expert_intermediate_size
    gate_up = (2 if m.gated_mlp else 1) * f * h if ("gate" in tr.lora_targets or "up" in tr.lora_targets) else 0
    down = f * h if "down" in tr.lora_targets else 0
    per_expert = max(gate_up, down) if largest else gate_up + down
    dtype = 4.0 if kbit_upcast(tr.method, tr.quant_base, prof, tr.zero_stage) else frozen_weight_bytes(tr.precision)
    return per_expert * e.num_experts / lay.ep / lay.tp * m.moe_layer_count / m.num_layers * dtype


def unquantised_expert_share(m: ModelSpec, pb: ParamBreakdown, tr: TrainingSettings) -> float:
    """The share of the routed experts' parameters (``StageParams.expert``) that are block matrices QLoRA leaves
    unquantised: under transformers 5 (``lora_experts`` other than "per_expert_modules") the experts are 3-D
    nn.Parameters, and bitsandbytes quantises nn.Linear weights only (transformers v5.24.0
    ``integrations/bitsandbytes.py`` ``replace_with_bnb_linear``: ``type(module) is nn.Linear``;
    ``quantizers/quantizer_bnb_4bit.py`` ``param_needs_quantization``: Linear4bit weights), so they stay in the
    load dtype, and PEFT's ``prepare_model_for_kbit_training`` casts every 16-bit parameter that is not a
    ``Params4bit`` to fp32 (peft v0.21.2 ``utils/other.py``), as ``memory.frozen_bytes`` prices the non-matrix rest
    (``framework_profile.kbit_upcast``). 0 outside QLoRA on a mixture of experts or with the transformers 4 layout;
    else the 2-D share of the expert tensors (gpt-oss's expert biases are the rest)."""
    if tr.method != "qlora" or not m.is_moe or expert_adapters(m, tr.lora_experts) == "per_expert_modules":
        return 0.0
    experts = [g for g in pb.groups if g.category == "expert" and g.place == "layer"]
    every = sum(g.params for g in experts)
    return sum(g.params for g in experts if len(g.shape) == 2) / every if every else 0.0
