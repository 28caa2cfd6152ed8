"""One line per weight format saying what it is and how many bits a weight takes, for the app's format list.

Read from ``core.quant``'s own definitions (``parse_weight_format``: kind, bits, group size, variant) and the ggml
block sizes of ``core.quant_ggml`` (``GGML_TYPES``), so a tooltip says exactly what the estimate prices and nothing
is written twice. The bits are the nominal ones of the quantised Linear weights (scales and zero points included);
what a whole model takes, with the tensors kept wider (embeddings, head, norms), is the "bits per weight" figure of
its estimate. Sources per format: docs/inference.md, "Weight formats".
"""

from __future__ import annotations

from llmplan.core.quant import MX_BLOCK, NF4_BLOCK, NF4_DQ_BLOCKS, WeightFormat, parse_weight_format
from llmplan.core.quant_ggml import GGML_TYPES, GGUF_PRESETS

_FLOAT_WORDS = {"fp32": "32-bit IEEE float", "fp16": "16-bit IEEE half precision", "bf16": "bfloat16"}
_KEPT_WIDE = "embeddings, output head and norms stay 16-bit"


def nominal_bits(fmt: WeightFormat) -> float:
    """Bits per quantised weight, its scales and zero points included (per ``core.quant``'s layout)."""
    if fmt.kind == "float":
        return float(fmt.bits)
    if fmt.kind in ("fp8", "int8"):
        return 8.0  # plus one fp32 scale per tensor or per output row: under 0.01 bit for any real row length
    if fmt.kind in ("gptq", "awq"):
        return fmt.bits + (16 + fmt.bits) / fmt.group_size  # fp16 scale + packed zero point per group
    if fmt.kind == "bnb":
        absmax = 8 / NF4_BLOCK + 32 / (NF4_BLOCK * NF4_DQ_BLOCKS) if fmt.double_quant else 32 / NF4_BLOCK
        return 4 + absmax
    if fmt.kind == "mlx":
        return fmt.bits + 32 / fmt.group_size  # fp16 scale and bias per group
    if fmt.kind == "mxfp4":
        return 4 + 8 / MX_BLOCK
    return GGML_TYPES[_gguf_main_type(fmt)].bits_per_weight


def _gguf_main_type(fmt: WeightFormat) -> str:
    name = fmt.variant.upper()
    if name in ("MXFP4_MOE", "MXFP4_BF16"):
        return "MXFP4"
    return GGUF_PRESETS.get(name, name)


def format_words(name: str) -> str:
    """Two lines, what it is and its bits, e.g. 'GPTQ 4-bit: packed weights, an fp16 scale and a 4-bit zero point per
    group of 128 (AutoGPTQ, with g_idx); embeddings and head fp16.' / '4.16 bits per quantised weight, scales
    included'. Raises ``InputError`` for an unknown name."""
    fmt = parse_weight_format(name)
    k = fmt.kind
    per = "per weight" if k == "float" else "per quantised weight, scales included" + (
        " (its main type)" if k == "gguf" and fmt.gguf_is_preset else "")
    bits = f"{nominal_bits(fmt):.3g} bits {per}"
    if k == "float":
        what = f"{_FLOAT_WORDS[fmt.name]}: every weight in {fmt.bits // 8} bytes"
    elif k == "fp8":
        scale = "one fp32 scale per output row" if fmt.variant == "channel" else "one fp32 scale per tensor"
        what = f"FP8 e4m3 weights of the blocks' linear layers, {scale}; {_KEPT_WIDE} (vLLM / llm-compressor)"
        if fmt.variant == "online":
            what = ("a bf16 checkpoint converted to FP8 e4m3 as the engine loads it (TGI --quantize fp8), one fp32 "
                    f"scale per output row; {_KEPT_WIDE}, and TGI keeps Llama's attention and first and last "
                    "layers bf16")
    elif k == "int8":
        what = ("SmoothQuant W8A8: int8 weights and activations" if fmt.variant == "w8a8" else
                "bitsandbytes LLM.int8(): int8 weights") + ", one fp32 scale per output row"
    elif k in ("gptq", "awq"):
        tool = "AutoGPTQ, with g_idx" if k == "gptq" else "AutoAWQ"
        what = (f"{k.upper()} {fmt.bits}-bit: packed weights, an fp16 scale and a {fmt.bits}-bit zero point per "
                f"group of {fmt.group_size} ({tool}); embeddings and head fp16")
    elif k == "bnb":
        dq = "an 8-bit absmax, double-quantised" if fmt.double_quant else "an fp32 absmax (no double quantisation)"
        what = f"bitsandbytes {fmt.variant.upper()} (QLoRA): 4-bit weights, {dq}, per block of {NF4_BLOCK}"
    elif k == "mlx":
        what = (f"MLX {fmt.bits}-bit: an fp16 scale and bias per group of {fmt.group_size}; the embedding and head "
                "are quantised too")
    elif k == "mxfp4":
        what = f"OCP MXFP4 (FP4 E2M1, an E8M0 scale per {MX_BLOCK}) on the routed experts, the rest bf16 (gpt-oss)"
    elif fmt.variant.upper() in ("MXFP4_MOE", "MXFP4_BF16"):
        rest = "Q8_0" if fmt.variant.upper() == "MXFP4_MOE" else "BF16"
        what = f"llama.cpp GGUF of gpt-oss: the experts MXFP4, the other weights {rest}"
    elif fmt.gguf_is_preset:
        main = _gguf_main_type(fmt)
        what = (f"llama.cpp preset: mostly {main} blocks ({GGML_TYPES[main].block_size} weights in "
                f"{GGML_TYPES[main].type_size} bytes), some tensors in more bits by llama.cpp's per-tensor rules")
    else:
        t = GGML_TYPES[fmt.variant.upper()]
        what = f"GGUF type {t.name}: blocks of {t.block_size} weights in {t.type_size} bytes"
    return f"{what}.\n{bits}"
