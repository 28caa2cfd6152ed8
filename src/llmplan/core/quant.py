"""Weight bytes of a model in every format people deploy, tensor by tensor.

A deployed checkpoint is not "params × bits / 8": quantizers keep some tensors wide
(embeddings, the output head, norms), add scales and zero points per group of weights,
and llama.cpp's presets mix types per tensor and per layer. We therefore price each
tensor group of ``count_params(spec).groups`` under the format's own rules:

- ``fp32``, ``fp16``, ``bf16``: 4 / 2 / 2 bytes per weight.
- ``fp8`` (e4m3, one fp32 scale per tensor) and ``fp8-channel`` (one fp32 scale per output
  row): the Linear layers of the blocks at 1 byte; embeddings, output head and norms
  stay bf16 (vLLM / llm-compressor FP8 checkpoints leave ``lm_head`` unquantized).
- ``fp8-online``: a bf16 checkpoint the engine converts to fp8 as it loads it (TGI ``--quantize fp8``), one fp32
  scale per output row; priced here as every block Linear converted, and ``core.inference.fp8_online`` keeps in
  bf16 what the engine leaves unconverted (TGI's Llama family: attention, first and last layers).
- ``int8`` (bitsandbytes LLM.int8(), Dettmers et al. 2022) and ``w8a8`` (SmoothQuant,
  Xiao et al. 2023): 1 byte per weight plus one fp32 scale per output row.
- ``gptq-<b>bit`` and ``awq-<b>bit`` (optionally ``-g<group>``, default 128): packed
  b-bit weights, one fp16 scale and one packed b-bit zero point per group of ``group``
  input weights per output row; GPTQ also stores ``g_idx`` (one int32 per input column).
  Embeddings and the output head stay fp16 (AutoGPTQ / AutoAWQ checkpoints).
- ``nf4`` / ``fp4`` (bitsandbytes, QLoRA §3): 4-bit weights, one absmax per block of 64;
  with double quantization (default) the absmax is 8-bit with one fp32 second-level
  scale per 256 blocks (0.127 bits per weight), without it an fp32 absmax (0.5 bits).
  Suffix ``-nodq`` turns double quantization off.
- ``mlx-4bit`` / ``mlx-8bit`` (MLX ``nn.quantize``, group 64): b bits plus an fp16 scale
  and bias per group; MLX quantizes the embedding and output head too.
- ``mxfp4`` (OCP Microscaling Formats v1.0: FP4 E2M1 elements, one E8M0 scale byte per block of 32, 4.25
  bits per weight) on the routed experts, everything else bf16: the layout gpt-oss is released in (its
  config's ``quantization_config`` leaves attention, router, embeddings and ``lm_head`` unconverted).
- every GGUF type and llama.cpp preset (``q4_k_m``, ``iq4_xs``, ``q8_0`` ...), ``mxfp4_moe`` (llama.cpp's MXFP4
  GGUF of gpt-oss: experts MXFP4, other weights Q8_0) and ``mxfp4_bf16`` (the same with the other weights BF16:
  the converter's output, Ollama's library): see ``llmplan.core.quant_ggml``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from llmplan.core.model import ModelSpec
from llmplan.core.params import TensorGroup, count_params
from llmplan.core.quant_ggml import GGML_TYPES, GGUF_PRESETS, TensorRole, gguf_tensor_type, parse_gguf_name
from llmplan.errors import InputError

_FLOAT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
NF4_BLOCK = 64  # bitsandbytes nf4/fp4: one absmax per 64 weights (QLoRA §3)
NF4_DQ_BLOCKS = 256  # double quantisation: one fp32 second-level constant per 256 absmax values
_LINEAR_CATEGORIES = ("attention", "mlp", "expert", "shared_expert")

SOURCE_QUANT = {
    "float": "IEEE 754 / bfloat16 storage: 4 or 2 bytes per weight",
    "fp8": "Micikevicius et al., FP8 Formats for Deep Learning, 2022 (e4m3); vLLM FP8 W8A8 checkpoints keep lm_head in bf16",
    "int8": "Dettmers et al., LLM.int8(), NeurIPS 2022; Xiao et al., SmoothQuant, ICML 2023 (W8A8)",
    "gptq": "Frantar et al., GPTQ, ICLR 2023; AutoGPTQ checkpoint layout (qweight, qzeros, scales, g_idx)",
    "awq": "Lin et al., AWQ, MLSys 2024; AutoAWQ checkpoint layout (qweight, qzeros, scales)",
    "bnb": "qlora",
    "mlx": "MLX nn.quantize: affine quantization, group size 64, fp16 scale and bias per group",
    "gguf": "llama.cpp",
    "mxfp4": "OCP Microscaling Formats (MX) v1.0 (FP4 E2M1, E8M0 scale per 32); openai/gpt-oss config.json "
             "quantization_config: routed experts only",
}
MX_BLOCK = 32  # OCP MX v1.0: one shared E8M0 scale per 32 elements
# The GGUF that llama.cpp's converter makes of a checkpoint released in a format llama.cpp cannot load as it is:
# gpt-oss's MXFP4 experts are repacked into ggml's MXFP4 blocks, bit for bit (conversion/gpt_oss.py,
# ggml-org/llama.cpp @2bbcf7fc), and the published files (ggml-org/gpt-oss-*-GGUF, "MXFP4 MoE") hold the other
# weights in Q8_0: the ``mxfp4_moe`` preset. Ollama's library serves gpt-oss with the other weights in BF16
# (``mxfp4_bf16``: ollama/ollama issue #16416 prints gpt-oss:120b's model buffers, 61,223 MiB on the GPU and
# 1,104 MiB, the input embedding, on the host: this layout to the MiB).
RELEASED_AS_GGUF = {"mxfp4": "mxfp4_moe"}
RELEASED_AS_GGUF_BY_ENGINE = {("ollama", "mxfp4"): "mxfp4_bf16"}


def released_as_gguf(fmt: str, engine_id: str = "") -> str | None:
    """The GGUF an engine that loads GGUF only runs a checkpoint released in ``fmt`` as (None: no such GGUF)."""
    return RELEASED_AS_GGUF_BY_ENGINE.get((engine_id, fmt)) or RELEASED_AS_GGUF.get(fmt)


@dataclass(frozen=True, slots=True)
class WeightFormat:
    """A parsed ``inference.weight_format``."""

    name: str  # as the user wrote it, normalised to lower case
    kind: str  # "float", "fp8", "int8", "gptq", "awq", "bnb", "mlx", "gguf"
    bits: int = 16
    group_size: int = 0
    variant: str = ""  # fp8: "tensor"/"channel"; int8: "llm.int8"/"w8a8"; bnb: "nf4"/"fp4"; gguf: preset/type
    double_quant: bool = True
    gguf_is_preset: bool = True

    @property
    def compute_dtype(self) -> str:
        """The dtype the matmuls run in (weight-only formats dequantize to fp16/bf16)."""
        if self.kind == "float":
            return self.name
        if self.kind == "fp8":
            return "fp8"
        if self.kind == "int8" and self.variant == "w8a8":
            return "int8"
        return "fp16"

    @property
    def source(self) -> str:
        return SOURCE_QUANT[self.kind]


_QUANT_RE = re.compile(r"^(gptq|awq|mlx)-(\d)bit(?:-g(\d+))?$")


@lru_cache(maxsize=512)
def parse_weight_format(name: str) -> WeightFormat:
    """Parse a format name; unknown names raise an InputError listing what is accepted."""
    key = name.strip().lower()
    if key in _FLOAT_BYTES:
        return WeightFormat(key, "float", bits=8 * _FLOAT_BYTES[key])
    if key in ("fp8", "fp8-tensor", "fp8-e4m3"):
        return WeightFormat(key, "fp8", 8, variant="tensor")
    if key in ("fp8-channel", "fp8-per-channel"):
        return WeightFormat(key, "fp8", 8, variant="channel")
    if key in ("fp8-online", "fp8-on-load"):  # a bf16 checkpoint the engine converts as it loads it
        return WeightFormat(key, "fp8", 8, variant="online")
    if key in ("int8", "llm.int8", "bnb-int8"):
        return WeightFormat(key, "int8", 8, variant="llm.int8")
    if key in ("w8a8", "smoothquant", "int8-w8a8"):
        return WeightFormat(key, "int8", 8, variant="w8a8")
    if key == "mxfp4":
        return WeightFormat(key, "mxfp4", 4, group_size=MX_BLOCK)
    m = re.fullmatch(r"(nf4|fp4)(-nodq)?", key)
    if m:
        return WeightFormat(key, "bnb", 4, group_size=64, variant=m.group(1), double_quant=not m.group(2))
    m = _QUANT_RE.match(key)
    if m:
        kind, bits = m.group(1), int(m.group(2))
        group = int(m.group(3)) if m.group(3) else (64 if kind == "mlx" else 128)
        allowed = {"gptq": (2, 3, 4, 8), "awq": (4,), "mlx": (2, 3, 4, 6, 8)}[kind]
        if bits not in allowed:
            raise InputError(f"weight_format '{name}': {kind} supports {', '.join(map(str, allowed))} bits")
        return WeightFormat(key, kind, bits, group_size=group)
    gg = parse_gguf_name(key)
    if gg:
        return WeightFormat(key, "gguf", variant=gg[1], gguf_is_preset=gg[0] == "preset")
    raise InputError(
        f"unknown inference.weight_format '{name}'; use fp32, fp16, bf16, fp8, fp8-channel, fp8-online, int8, w8a8, "
        "gptq-4bit, awq-4bit, nf4, fp4, mxfp4, mlx-4bit, mlx-8bit, or a GGUF preset such as q4_k_m, q8_0, iq4_xs"
    )


@dataclass(frozen=True, slots=True)
class GroupBytes:
    """The stored bytes of one tensor group under a format."""

    group: TensorGroup
    bytes: int
    dtype: str  # e.g. "Q4_K", "Q6_K x16 + Q4_K x16", "int4+fp16 scales", "bf16"


@dataclass(frozen=True, slots=True)
class QuantizedWeights:
    format: WeightFormat
    groups: tuple[GroupBytes, ...]
    total_bytes: int
    params: int  # parameters counted (MTP modules excluded: not loaded for normal generation)

    @property
    def bits_per_weight(self) -> float:
        return 8.0 * self.total_bytes / self.params if self.params else 0.0

    def bytes_where(self, predicate) -> int:
        return sum(g.bytes for g in self.groups if predicate(g.group))


def _is_block_linear(g: TensorGroup) -> bool:
    return g.category in _LINEAR_CATEGORIES and len(g.shape) == 2


def _rows_cols(g: TensorGroup) -> tuple[int, int]:
    cols = g.shape[-1]
    return g.numel // cols, cols


def _plain_group_bytes(fmt: WeightFormat, g: TensorGroup) -> GroupBytes:
    """Bytes of one group for the non-GGUF formats."""
    n = g.params
    if fmt.kind == "float":
        return GroupBytes(g, n * _FLOAT_BYTES[fmt.name], fmt.name)
    quantize = _is_block_linear(g)
    if fmt.kind == "mxfp4":  # the routed experts only (gpt-oss: modules_to_not_convert holds everything else)
        quantize = quantize and g.category == "expert"
    if fmt.kind == "mlx":  # MLX quantizes every Linear and Embedding whose width divides the group
        quantize = len(g.shape) == 2 and g.category != "router" and g.shape[-1] % fmt.group_size == 0
    if not quantize:
        return GroupBytes(g, n * 2, "bf16")
    rows, cols = _rows_cols(g)
    rows_total = rows * g.count
    if fmt.kind == "fp8":
        per_row = fmt.variant in ("channel", "online")  # online: TGI's Fp8Linear.from_unquant, one scale a row
        scales = 4 * (rows_total if per_row else g.count)
        return GroupBytes(g, n + scales, f"fp8 e4m3 + fp32 scale per {'channel' if per_row else 'tensor'}")
    if fmt.kind == "int8":
        return GroupBytes(g, n + 4 * rows_total, "int8 + fp32 scale per row")
    if fmt.kind in ("gptq", "awq"):
        groups_per_row = math.ceil(cols / fmt.group_size)
        packed = math.ceil(n * fmt.bits / 8)
        scales = rows_total * groups_per_row * 2
        zeros = math.ceil(rows_total * groups_per_row * fmt.bits / 8)
        g_idx = 4 * cols * g.count if fmt.kind == "gptq" else 0
        return GroupBytes(g, packed + scales + zeros + g_idx, f"int{fmt.bits} g{fmt.group_size} + fp16 scales")
    if fmt.kind == "mxfp4":
        return GroupBytes(g, math.ceil(n / 2) + math.ceil(n / MX_BLOCK), "mxfp4 (e2m1 + e8m0 scale per 32)")
    if fmt.kind == "bnb":
        blocks = math.ceil(n / NF4_BLOCK)
        absmax = blocks + 4 * math.ceil(blocks / NF4_DQ_BLOCKS) if fmt.double_quant else 4 * blocks
        return GroupBytes(g, math.ceil(n / 2) + absmax,
                          f"{fmt.variant} block {NF4_BLOCK}" + (" + DQ" if fmt.double_quant else ""))
    # mlx
    groups = math.ceil(n / fmt.group_size)
    return GroupBytes(g, math.ceil(n * fmt.bits / 8) + 4 * groups, f"mlx {fmt.bits}-bit g{fmt.group_size}")


_GGUF_ROLES = {
    "attn.q_proj": "attn_q", "attn.k_proj": "attn_k", "attn.v_proj": "attn_v", "attn.o_proj": "attn_output",
    "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down",
}


def _gguf_role(g: TensorGroup) -> str:
    if len(g.shape) < 2:
        return "vector"
    if g.category == "router":
        return "router"
    if g.name == "embed_tokens":
        return "token_embd"
    if g.name == "lm_head":
        return "output"
    if g.name in _GGUF_ROLES:
        return _GGUF_ROLES[g.name]
    return _GGUF_ROLES.get(g.name.rsplit(".", 1)[-1], "other")


def _layer_indices(spec: ModelSpec, g: TensorGroup) -> list[int]:
    """The model layer index of each instance of a per-layer group (experts repeat their layer)."""
    L = spec.num_layers
    if g.layer_kind in ("dense", "moe") and spec.layer_mlp:
        layers = [i for i, k in enumerate(spec.layer_mlp) if k == g.layer_kind]
    elif g.layer_kind == "moe":
        layers = list(range(L))
    else:
        layers = list(range(L)) if g.count % L == 0 else list(range(g.count))
    per = max(1, g.count // max(1, len(layers)))
    return [i for i in layers for _ in range(per)][: g.count]


def _gguf_group_bytes(spec: ModelSpec, fmt: WeightFormat, g: TensorGroup, has_output: bool) -> GroupBytes:
    role = _gguf_role(g)
    rows, cols = _rows_cols(g)
    if not fmt.gguf_is_preset:  # a single type for every 2-D weight; 1-D tensors stay F32
        t = "F32" if role in ("vector", "router") else fmt.variant
        return GroupBytes(g, g.count * rows * GGML_TYPES[t].row_bytes(cols), t)
    info = TensorRole(
        role=role, row_len=cols, n_gqa=spec.num_heads // spec.num_kv_heads,
        n_expert=spec.moe.num_experts if spec.moe else 0, has_output=has_output,
        is_70b_class=spec.num_layers == 80 and spec.hidden_size == 8192, is_expert=g.category == "expert",
    )
    if g.place != "layer":
        t = gguf_tensor_type(fmt.variant, info, 0, spec.num_layers)
        return GroupBytes(g, g.count * rows * GGML_TYPES[t].row_bytes(cols), t)
    counts: dict[str, int] = {}
    for i in _layer_indices(spec, g):
        t = gguf_tensor_type(fmt.variant, info, i, spec.num_layers)
        counts[t] = counts.get(t, 0) + 1
    total = sum(c * rows * GGML_TYPES[t].row_bytes(cols) for t, c in counts.items())
    label = " + ".join(f"{t} x{c}" for t, c in sorted(counts.items())) if len(counts) > 1 else next(iter(counts))
    return GroupBytes(g, total, label)


@lru_cache(maxsize=512)
def quantized_weights(spec: ModelSpec, weight_format: str) -> QuantizedWeights:
    """Stored weight bytes of ``spec`` in ``weight_format`` (MTP modules excluded)."""
    fmt = parse_weight_format(weight_format)
    groups = [g for g in count_params(spec).groups if g.category != "mtp"]
    has_output = any(g.name == "lm_head" for g in groups)
    if fmt.kind == "gguf":
        out = tuple(_gguf_group_bytes(spec, fmt, g, has_output) for g in groups)
    else:
        out = tuple(_plain_group_bytes(fmt, g) for g in groups)
    return QuantizedWeights(fmt, out, sum(g.bytes for g in out), sum(g.params for g in groups))


def stored_as(q: QuantizedWeights, stored_bytes: int) -> QuantizedWeights:
    """``q`` with its total replaced by what the files really hold (``inference.weight_file_bytes``).

    A downloaded GGUF file is the truth for its own size: its per-tensor type mix can differ from
    llama.cpp's preset rules (imatrix "UD" mixes, requantised repos) and it carries its header. Each
    group keeps its share of the format's computed bytes (so tensor-parallel and pipeline splits
    stay proportionate); the groups sum exactly to ``stored_bytes``.
    """
    if q.total_bytes <= 0 or not q.groups:
        return q
    scaled = [GroupBytes(g.group, g.bytes * stored_bytes // q.total_bytes, g.dtype) for g in q.groups]
    rest = stored_bytes - sum(g.bytes for g in scaled)
    i = max(range(len(scaled)), key=lambda k: scaled[k].bytes)
    scaled[i] = GroupBytes(scaled[i].group, scaled[i].bytes + rest, scaled[i].dtype)
    return QuantizedWeights(q.format, tuple(scaled), stored_bytes, q.params)


def gguf_metadata_bytes(spec: ModelSpec) -> int:
    """Rough size of a GGUF file's header: the tokenizer dominates it.

    Assumption (llmplan): ~32 bytes per vocabulary entry (the token string with its
    length prefix, an f32 score and an i32 token type, plus BPE merges), padded to the
    32-byte alignment. It is <0.3% of any file above 1 GB.
    """
    return 32 * spec.vocab_size + 4096


def known_formats() -> tuple[str, ...]:
    """Every accepted weight_format name, for menus and error messages."""
    base = ("fp32", "fp16", "bf16", "fp8", "fp8-channel", "fp8-online", "int8", "w8a8", "gptq-4bit", "gptq-3bit", "gptq-8bit",
            "awq-4bit", "nf4", "nf4-nodq", "fp4", "mxfp4", "mlx-4bit", "mlx-8bit")
    return base + tuple(p.lower() for p in GGUF_PRESETS if p not in ("F32", "F16", "BF16"))
