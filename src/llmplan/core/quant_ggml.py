"""GGUF weight types and the per-tensor type mix of llama.cpp's quantization presets.

Format constants (elements per block, bytes per block) are those of ggml's block
structs (ggml-common.h, ``block_q4_0`` ... ``block_tq2_0``) and of ``ggml_type_traits``:
a block of ``block_size`` weights takes ``type_size`` bytes, scales included.

The preset mix follows ``llama_tensor_get_type`` in llama.cpp (src/llama-quant.cpp):
each preset ("ftype", e.g. Q4_K_M) has a default type, and a few tensors are bumped up
(the output head to Q6_K, ``attn_v`` and ``ffn_down`` to Q6_K in the layers picked by
``use_more_bits`` for Q4_K_M/Q5_K_M, ...). 1-D tensors (norms, biases) and the MoE
router stay F32. We reproduce the rules for llama-style tensors without an importance
matrix (imatrix) and without user overrides; where a rule depends on a model "type" we
approximate it from the shape, and say so.

MXFP4 (ggml type 39, ``block_mxfp4`` in ggml-common.h: one E8M0 exponent byte ``e`` and 16 bytes ``qs`` of
4-bit E2M1 values = 17 B per 32 weights, 4.25 bits) is the type of gpt-oss's expert weights. Its preset
``MXFP4_MOE`` (llama.h ``LLAMA_FTYPE_MOSTLY_MXFP4_MOE`` = 38) follows ``llama_tensor_get_type_impl`` in
llama.cpp src/llama-quant.cpp (ggml-org/llama.cpp @007dbbf3): the output head (and tied embeddings) Q8_0,
every 3-D expert tensor (``ne[2] > 1``) MXFP4, every other quantisable weight Q8_0; the router
(``ffn_gate_inp``), norms, biases and attention sinks are not quantised and stay F32 as the converter wrote
them (conversion/gpt_oss.py and base.py @2bbcf7fc: 1-D tensors, ``ffn_gate_inp`` and every name not ending in
``.weight`` are F32; the released MXFP4 expert blocks are repacked, not requantised). ``MXFP4_BF16`` is what the
converter writes at ``--outtype bf16`` before any llama-quantize, and what Ollama's library serves for gpt-oss: the
experts MXFP4, every other weight BF16, the same F32 tensors (not a llama.h ftype: Ollama's files say 4).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.errors import InputError


@dataclass(frozen=True, slots=True)
class GgmlType:
    name: str
    block_size: int  # weights per block
    type_size: int  # bytes per block

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.type_size / self.block_size

    def row_bytes(self, row_len: int) -> int:
        """Bytes of one row of ``row_len`` weights (ggml_row_size)."""
        return (row_len // self.block_size) * self.type_size


QK_K = 256  # super-block of the K-quants and i-quants

# (block_size, bytes per block). Sizes as the sum of each block struct's fields:
#   Q4_0: fp16 d + 16 B nibbles = 18        Q4_1: d, m + 16 = 20
#   Q5_0: d + 4 B high bits + 16 = 22        Q5_1: d, m + 4 + 16 = 24
#   Q8_0: d + 32 = 34                        Q8_1: d, s + 32 = 36
#   Q2_K: 16 scales + 64 qs + d, dmin = 84   Q3_K: 32 hmask + 64 qs + 12 scales + d = 110
#   Q4_K: d, dmin + 12 scales + 128 = 144    Q5_K: 4 + 12 + 32 qh + 128 = 176
#   Q6_K: 128 ql + 64 qh + 16 scales + d = 210   Q8_K: f32 d + 256 + 16 int16 bsums = 292
#   IQ2_XXS: d + 32 uint16 = 66   IQ2_XS: d + 64 + 8 scales = 74   IQ2_S: d + 64 + 8 qh + 8 scales = 82
#   IQ3_XXS: d + 96 = 98          IQ3_S: d + 64 + 8 qh + 32 signs + 4 scales = 110
#   IQ1_S: d + 32 qs + 8 uint16 qh = 50    IQ1_M: 32 qs + 16 qh + 8 scales = 56
#   IQ4_NL: d + 16 = 18 (block 32)         IQ4_XS: d + 2 scales_h + 4 scales_l + 128 = 136
#   TQ1_0: 48 qs + 4 qh + d = 54           TQ2_0: 64 qs + d = 66
#   MXFP4: e (E8M0) + 16 B qs = 17 (block 32)
GGML_TYPES: dict[str, GgmlType] = {
    t.name: t
    for t in (
        GgmlType("F32", 1, 4),
        GgmlType("F16", 1, 2),
        GgmlType("BF16", 1, 2),
        GgmlType("Q4_0", 32, 18),
        GgmlType("Q4_1", 32, 20),
        GgmlType("Q5_0", 32, 22),
        GgmlType("Q5_1", 32, 24),
        GgmlType("Q8_0", 32, 34),
        GgmlType("Q8_1", 32, 36),
        GgmlType("Q2_K", QK_K, 84),
        GgmlType("Q3_K", QK_K, 110),
        GgmlType("Q4_K", QK_K, 144),
        GgmlType("Q5_K", QK_K, 176),
        GgmlType("Q6_K", QK_K, 210),
        GgmlType("Q8_K", QK_K, 292),
        GgmlType("IQ2_XXS", QK_K, 66),
        GgmlType("IQ2_XS", QK_K, 74),
        GgmlType("IQ2_S", QK_K, 82),
        GgmlType("IQ3_XXS", QK_K, 98),
        GgmlType("IQ3_S", QK_K, 110),
        GgmlType("IQ1_S", QK_K, 50),
        GgmlType("IQ1_M", QK_K, 56),
        GgmlType("IQ4_NL", 32, 18),
        GgmlType("IQ4_XS", QK_K, 136),
        GgmlType("TQ1_0", QK_K, 54),
        GgmlType("TQ2_0", QK_K, 66),
        GgmlType("MXFP4", 32, 17),
    )
}

# Preset ("ftype") -> default type of its 2-D weights (llama_model_quantize_impl).
GGUF_PRESETS: dict[str, str] = {
    "F32": "F32", "F16": "F16", "BF16": "BF16",
    "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0", "Q5_1": "Q5_1", "Q8_0": "Q8_0",
    "Q2_K": "Q2_K", "Q2_K_S": "Q2_K",
    "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K",
    "Q4_K_S": "Q4_K", "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K",
    "IQ1_S": "IQ1_S", "IQ1_M": "IQ1_M",
    "IQ2_XXS": "IQ2_XXS", "IQ2_XS": "IQ2_XS", "IQ2_S": "IQ2_XS", "IQ2_M": "IQ2_S",
    "IQ3_XXS": "IQ3_XXS", "IQ3_XS": "IQ3_S", "IQ3_S": "IQ3_S", "IQ3_M": "IQ3_S",
    "IQ4_NL": "IQ4_NL", "IQ4_XS": "IQ4_XS",
    "TQ1_0": "TQ1_0", "TQ2_0": "TQ2_0",
    "MXFP4_MOE": "MXFP4", "MXFP4_BF16": "MXFP4",
}

_UNQUANTIZED = {"F32", "F16", "BF16"}
_LOW_IQ = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M"}

# When a row's length is not a multiple of 256, llama.cpp falls back to a 32-block type.
_FALLBACK = {
    **dict.fromkeys(
        ("Q2_K", "Q3_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0",
         "IQ4_XS"),
        "IQ4_NL",
    ),
    "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0",
}


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp's choice of the layers that get more bits: the first and last eighth, and every third between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


@dataclass(frozen=True, slots=True)
class TensorRole:
    """What llama.cpp's rules need to know about one weight tensor."""

    role: str  # "token_embd", "output", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
    #            "ffn_down", "router", "other"; 1-D tensors are "vector"
    row_len: int  # ne[0]: the input width of a Linear (the last dim of the HF shape)
    n_gqa: int  # num_heads / num_kv_heads
    n_expert: int
    has_output: bool  # False: tied embeddings, token_embd doubles as the output head
    is_70b_class: bool  # llama.cpp bumps attn_v for its "70B" model type
    is_expert: bool = False  # a routed expert's weight: one 3-D tensor per layer in a GGUF (ne[2] = experts)


def gguf_tensor_type(preset: str, t: TensorRole, i_layer: int, n_layers: int) -> str:
    """The GGML type llama.cpp picks for one tensor of one layer under ``preset`` (no imatrix)."""
    if t.role in ("vector", "router"):
        return "F32"
    default = GGUF_PRESETS[preset]
    if default in _UNQUANTIZED:
        return default
    if preset in ("MXFP4_MOE", "MXFP4_BF16"):  # 3-D experts MXFP4; the rest (head, embeddings too) Q8_0 or BF16
        new = "MXFP4" if t.is_expert and t.role not in ("output", "token_embd") else \
            "Q8_0" if preset == "MXFP4_MOE" else "BF16"
    else:
        new = _pick(preset, default, t, i_layer, n_layers)
    ggml = GGML_TYPES[new]
    if t.row_len % ggml.block_size:
        new = _FALLBACK.get(new, "F16")
        if t.row_len % GGML_TYPES[new].block_size:
            new = "F16"
    return new


def _pick(ft: str, new: str, t: TensorRole, i: int, n: int) -> str:
    """The body of llama_tensor_get_type, for the tensor roles llama-style models have."""
    role = t.role
    if role == "output" or (role == "token_embd" and not t.has_output):
        if t.row_len % QK_K:
            return "Q8_0"
        if ft in _LOW_IQ or ft == "IQ3_XXS":
            return "Q5_K"
        return new if new == "Q8_0" else "Q6_K"
    if role == "token_embd":
        if ft in ("IQ2_XXS", "IQ2_XS", "IQ1_S", "IQ1_M"):
            return "Q2_K"
        if ft in ("IQ2_S", "IQ2_M"):
            return "IQ3_S"
        if ft in ("TQ1_0", "TQ2_0"):
            return "Q4_K"
        return new
    if ft in _LOW_IQ:
        if role == "attn_v":
            if t.n_gqa >= 4 or t.n_expert >= 4:
                return "Q4_K"
            return "IQ3_S" if ft in ("IQ2_S", "IQ2_M") else "Q2_K"
        if role == "ffn_down" and i < n // 8:
            return "IQ3_S" if ft in ("IQ2_S", "IQ2_M") else "Q2_K"
        if role == "attn_output":
            if t.n_expert >= 4:
                return "Q5_K"
            if ft in ("IQ1_S", "IQ1_M"):
                return "IQ2_XXS"
            if ft in ("IQ2_S", "IQ2_M"):
                return "IQ3_S"
        return new
    if role == "attn_v":
        if ft == "Q2_K":
            new = "Q4_K" if t.n_gqa >= 4 else "Q3_K"
        elif ft == "Q2_K_S" and t.n_gqa >= 4:
            new = "Q4_K"
        elif ft == "IQ3_XXS":
            new = "Q4_K" if t.n_gqa >= 4 else "IQ3_S"
        elif (ft in ("IQ3_XS", "IQ3_S") and t.n_gqa >= 4) or ft == "IQ3_M":
            new = "Q4_K"
        elif ft == "Q3_K_M":
            new = "Q5_K" if i < 2 else "Q4_K"
        elif ft == "Q3_K_L" or (ft in ("IQ4_NL", "IQ4_XS") and t.n_gqa >= 4):
            new = "Q5_K"
        elif ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
            new = "Q6_K"
        elif ft == "Q4_K_S" and i < 4:
            new = "Q5_K"
        if t.is_70b_class and new in ("Q3_K", "Q4_K"):
            new = "Q5_K"
        if t.n_expert == 8:
            new = "Q8_0"
        return new
    if role == "attn_k":
        if t.n_expert == 8:
            return "Q8_0"
        if ft == "IQ3_XS":
            return "IQ3_XXS"
        return new
    if role == "attn_q":
        if ft == "IQ3_XS":
            return "IQ3_XXS"
        return new
    if role == "ffn_down":
        if ft == "Q2_K":
            return "Q3_K"
        if ft == "Q2_K_S":
            return "Q4_K" if i < n // 8 else new
        if ft == "IQ3_XXS":
            return "Q4_K" if i < n // 8 else "IQ3_S"
        if ft == "Q3_K_M":
            return "Q5_K" if i < n // 16 else "Q4_K"
        if ft == "IQ3_M" and i < n // 8:
            return "Q4_K"
        if ft == "Q3_K_L":
            return "Q5_K"
        if ft in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
            return "Q6_K"
        if ft in ("IQ4_NL", "IQ4_XS") and i < n // 8:
            return "Q5_K"
        if ft == "Q4_K_S" and i < n // 8:
            return "Q5_K"
        return new
    if role == "attn_output":
        if t.n_expert == 8:
            if ft in ("Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
                      "IQ3_M", "IQ4_XS"):
                return "Q5_K"
            return new
        if ft == "Q2_K":
            return "Q3_K"
        if ft in ("Q3_K_M", "IQ3_M"):
            return "Q4_K"
        if ft == "Q3_K_L":
            return "Q5_K"
        return new
    if role in ("ffn_gate", "ffn_up"):
        if ft == "IQ3_XS" and n // 8 <= i < 7 * n // 8:
            return "IQ3_XXS"
        return new
    return new


def parse_gguf_name(name: str) -> tuple[str, str] | None:
    """("preset", PRESET) or ("type", TYPE) for a GGUF name in any case, else None."""
    key = name.strip().upper()
    if key in GGUF_PRESETS:
        return ("preset", key)
    if key in GGML_TYPES:
        return ("type", key)
    return None


def require_gguf_name(name: str) -> tuple[str, str]:
    parsed = parse_gguf_name(name)
    if parsed is None:
        known = ", ".join(sorted(k.lower() for k in GGUF_PRESETS))
        raise InputError(f"'{name}' is not a GGUF type or preset; use one of {known}")
    return parsed
