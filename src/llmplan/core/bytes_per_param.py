"""Per-parameter facts, in one place: bytes per weight, gradient, master copy and optimizer state
for each training precision and optimizer; bits per weight of each deployment format; the
trainable parameters of LoRA/QLoRA for a target set.

The training engine (``core.training``), the search's quick model (``core.search``), the serving
search and the checkpoint code all call these functions; none keeps its own table, so the
numbers cannot drift apart (issue 16: fp8 weights were 2 B in one place and 3 B in another,
Adafactor's state 0.1 B, per matrix and 0 B in three places).

Sources:
- mixed-precision model states (ZeRO, Rajbhandari et al. 2020 §3.1): 2 B weights, 2 B gradients
  (4 B with Megatron's fp32 gradient accumulation), 4 B fp32 master copy, Adam's two fp32
  moments 8 B: 16 B/param (18 B with fp32 gradients);
- fp8 training (NVIDIA Transformer Engine): the bf16 weight plus a cached fp8 copy for the GEMMs,
  3 B on the GPU; a checkpoint saves the bf16 weight only (2 B);
- 8-bit Adam (Dettmers et al. 2022, bitsandbytes): two 1-byte moments plus one fp32 absmax per
  block of 2,048 values per state;
- Adafactor (Shazeer & Stern 2018): no first moment, a factored second moment of rows + cols per
  matrix (numel per vector); SGD none; momentum and Lion one fp32 buffer;
- Muon (Jordan et al. 2024): one fp32 momentum for the block matrices, AdamW for the rest;
- weight formats: ``core.quant`` prices every tensor under the format's own rules (GGUF presets,
  GPTQ/AWQ groups, NF4 blocks ...); ``weight_format_bits`` is its bits per weight;
- LoRA (Hu et al. 2022 §4.1): r·(in + out) parameters per adapted module (``core.lora_modules``).
"""

from __future__ import annotations

from llmplan.core.lora_modules import lora_modules
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup
from llmplan.core.quant import NF4_BLOCK, NF4_DQ_BLOCKS, quantized_weights

# Bytes of one trainable weight on the GPU while training, by precision (fp8: bf16 + fp8 GEMM copy).
_TRAIN_WEIGHT = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 3.0}
# Bytes of one weight in a training checkpoint: fp8 training saves its bf16 weights.
_SAVED_WEIGHT = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 2.0}
FP32_COPY_BYTES = 4.0  # the fp32 copy an optimizer updates: the master in mixed precision, the weights in fp32
ADAM8_BLOCK = 2048  # bitsandbytes blockwise 8-bit optimizers: one fp32 absmax per 2048 values per state
# Optimizer-state bytes per parameter where they do not depend on tensor shapes.
_FLAT_STATE = {"sgd": 0.0, "momentum": 4.0, "lion": 4.0, "adamw": 8.0, "adam8bit": 2.0 + 2 * 4.0 / ADAM8_BLOCK}
OPTIMIZERS = ("sgd", "momentum", "adamw", "adam8bit", "adafactor", "lion", "muon")


def weight_bytes(precision: str, params_are_master: bool = False, regime: str = "amp") -> float:
    """Bytes of one trainable weight on the GPU (fp8: a bf16 weight and its cached fp8 copy). Under AMP with
    fp32 parameters (``params_are_master``: PyTorch autocast, FSDP2 mixed precision) the stored weight is
    the fp32 master itself."""
    if params_are_master and regime == "amp" and precision != "fp8":
        return 4.0
    return _TRAIN_WEIGHT[precision]


def saved_weight_bytes(precision: str) -> float:
    """Bytes of one weight in a training checkpoint (fp8 training saves the bf16 weight)."""
    return _SAVED_WEIGHT[precision]


def frozen_weight_bytes(precision: str) -> float:
    """Bytes of one frozen base weight under LoRA: fp32 in fp32 training, else 16-bit."""
    return 4.0 if precision == "fp32" else 2.0


def grad_bytes(precision: str, fp32_grad_accumulation: bool | None, regime: str = "amp") -> float:
    """Bytes of one gradient: 4 in fp32 training or with fp32 accumulation (Megatron; ``None``: the
    framework's default, which the caller resolves, else yes), 2 in pure 16-bit training or without."""
    if precision == "fp32":
        return 4.0
    if regime == "pure":
        return 2.0
    return 4.0 if fp32_grad_accumulation is None or fp32_grad_accumulation else 2.0


def gathered_weight_bytes(precision: str) -> float:
    """Bytes of one weight a ZeRO-3/FSDP all-gather moves: the compute dtype, 16-bit unless fp32. FSDP's
    MixedPrecision (FSDP1) and MixedPrecisionPolicy (FSDP2) cast the local fp32 shard to ``param_dtype``
    before the all-gather; DeepSpeed stage 3 keeps 16-bit weights (an fp8 run gathers its bf16 weights)."""
    return 4.0 if precision == "fp32" else 2.0


def gathered_grad_bytes(precision: str) -> float:
    """Bytes of one gradient of a ZeRO-3 gathered block before its reduce-scatter (16-bit unless fp32)."""
    return 4.0 if precision == "fp32" else 2.0


def master_bytes(precision: str, params_are_master: bool = False, regime: str = "amp") -> float:
    """Bytes of the separate fp32 master copy the optimizer updates: 4 in mixed precision with 16-bit
    weights; 0 in fp32 training, in pure 16-bit training, and where the fp32 parameters are the master."""
    if precision == "fp32" or regime == "pure" or (params_are_master and precision != "fp8"):
        return 0.0
    return FP32_COPY_BYTES


def host_update_bytes(optimizer: str) -> float:
    """Bytes per parameter an offloaded optimizer keeps on the host (ZeRO-Offload, Ren et al. 2021):
    the fp32 copy it updates (the master in mixed precision, the weights in fp32) and its states."""
    return FP32_COPY_BYTES + optimizer_state_bytes(optimizer, 1.0)


def optimizer_state_bytes(optimizer: str, trainable, factored=None, matrices=None):
    """Optimizer-state bytes (master weights excluded) of ``trainable`` parameters. Works on
    floats and NumPy arrays alike.

    ``factored``: Adafactor's second-moment entries (rows + cols per matrix, numel per vector);
    ``matrices``: the block matrices Muon orthogonalises. Without them (LoRA's small adapters, whose
    shapes the caller does not track) each counts one fp32 state per parameter, an upper bound.
    """
    if optimizer in _FLAT_STATE:
        return _FLAT_STATE[optimizer] * trainable
    if optimizer == "adafactor":
        return 4.0 * (trainable if factored is None else factored)
    if optimizer == "muon":
        if matrices is None:
            return 4.0 * trainable
        return 4.0 * matrices + 8.0 * (trainable - matrices)
    raise ValueError(f"unknown optimizer '{optimizer}'; use one of {', '.join(OPTIMIZERS)}")


# Tensors Muon leaves to AdamW: embeddings, positions, the output head and norms (Jordan et al. 2024)
MUON_EXCLUDED = ("embedding", "position", "lm_head", "norm")


def muon_matrix(g: TensorGroup) -> bool:
    """A block matrix Muon orthogonalises (2-D, not an embedding, head, position table or norm)."""
    return (len(g.shape) == 2 and g.category not in MUON_EXCLUDED
            and not g.name.endswith(("embed_tokens", "head")))


def factored_entries(rows: int, cols: int, split: str, tp: int = 1) -> float:
    """Adafactor's second-moment entries of one (rows × cols) matrix on one of ``tp`` GPUs:
    rows + cols, with the split dimension divided by tp (row-parallel splits the columns)."""
    if split == "replicated":
        return float(rows + cols)
    if split == "row":
        return rows + cols / tp
    return rows / tp + cols  # column, vocab and expert tensors are split along their rows


def shape_states(pb: ParamBreakdown) -> tuple[float, float]:
    """(Adafactor's second-moment entries, Muon's matrix parameters) of a whole model, one copy."""
    factored = matrices = 0.0
    for g in pb.groups:
        if len(g.shape) == 2:
            factored += factored_entries(g.shape[0], g.shape[1], "replicated") * g.count
            if muon_matrix(g):
                matrices += g.params
        else:
            factored += g.params
    return factored, matrices


def nf4_bits_per_param(double_quant: bool) -> float:
    """QLoRA's NF4 (Dettmers et al. 2023 §3): 4 bits + one absmax per block of 64 weights, fp32
    (0.5 bit) or, double-quantised, 8-bit with one fp32 constant per 256 blocks (0.127 bit)."""
    absmax = 8 / NF4_BLOCK + 32 / (NF4_BLOCK * NF4_DQ_BLOCKS) if double_quant else 32 / NF4_BLOCK
    return 4.0 + absmax


def weight_format_bits(spec: ModelSpec, weight_format: str) -> float:
    """Bits per weight of ``spec`` stored in ``weight_format`` (``core.quant``, tensor by tensor)."""
    return quantized_weights(spec, weight_format).bits_per_weight


def weight_format_bytes(spec: ModelSpec, weight_format: str) -> int:
    """Stored weight bytes of ``spec`` in ``weight_format`` (``core.quant``; MTP modules excluded)."""
    return quantized_weights(spec, weight_format).total_bytes


# ---- LoRA -----------------------------------------------------------------------------------

def lora_params(pb: ParamBreakdown, rank: int, targets: tuple[str, ...], tp: int = 1, ep: int = 1,
                layer_share: float = 1.0, experts: str = "per_expert_modules") -> float:
    """LoRA's trainable parameters: A (r × in) and B (out × r) per adapted module (``core.lora_modules``: one
    per fused module, as PEFT adds them; ``experts``: how the routed experts are reached, ``expert_adapters``).

    Whole model with the defaults; on one GPU with ``tp``/``ep`` and ``layer_share`` (the share of
    the blocks on this pipeline stage). Under Megatron tensor parallelism a column-parallel weight
    keeps A whole and splits B's rows, a row-parallel one splits A's columns and keeps B whole;
    experts are spread over ``ep`` (their down projection is row-parallel, gate/up column-parallel).
    """
    total = 0.0
    for g in lora_modules(pb, targets, experts):
        out, inp = g.shape
        count = g.count * layer_share
        split = g.tp_split
        if split == "expert":
            count /= ep
            split = "row" if g.name.endswith("down_proj") else "column"
        if tp == 1 or split not in ("column", "row"):
            per = rank * (out + inp)
        elif split == "column":
            per = rank * inp + rank * out / tp
        else:
            per = rank * inp / tp + rank * out
        total += per * count
    return total


def trainable_params(pb: ParamBreakdown, method: str, rank: int, targets: tuple[str, ...],
                     experts: str = "per_expert_modules") -> float:
    """Parameters that get gradients and optimizer states: all of them, or LoRA/QLoRA's adapters."""
    return float(pb.total) if method == "full" else lora_params(pb, rank, targets, experts=experts)
