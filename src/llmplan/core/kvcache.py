"""The KV cache: bytes per token and per sequence, for every attention variant.

Per layer and token an attention layer caches:
- MHA / GQA / MQA: a key and a value per KV head: ``2 · num_kv_heads · head_dim`` elements
  (Kwon et al., vLLM §2: OPT-13B caches 2 · 5120 · 40 layers · 2 B = 800 KB per token).
- MLA (DeepSeek-V2 §2.1.4): only the compressed latent and the decoupled rotary key,
  ``kv_lora_rank + qk_rope_head_dim`` elements, shared by all heads -- when the engine caches the latent
  (``mla_cache = "latent"``: vLLM, SGLang, MLX-LM, current llama.cpp). An engine that decompresses the latent
  before caching keeps a key of ``qk_nope + qk_rope`` and a value of ``v_head_dim`` per attention head
  (``"heads"``: llama.cpp before its MLA path, or with a GGUF converted before it), or both padded to the larger
  size (``"heads_padded"``: TGI, 192 + 192 for DeepSeek-V3); those caches are split over TP by heads.
Sliding-window layers keep at most ``sliding_window`` tokens, so their share stops
growing at the window (Mistral-7B v0.1, Gemma-2's local layers, gpt-oss).

Element sizes: bf16/fp16 2 bytes, fp8 and TensorRT-LLM's int8 1 byte, fp32 4 bytes; llama.cpp's quantized cache
types carry their ggml block overheads (q8_0: 34 bytes per 32, q4_0: 18 bytes per 32 ...); the group-quantised
caches of SGLang (fp4_e2m1), mlx-lm (mlx-4bit ...) and Transformers (quanto-int4, hqq-4bit ...) their scales
(core.kv_quant), and, where the engine keeps some tokens plain (mlx-lm's quantised-KV start, Transformers'
residual window), those tokens at the model's 2 bytes.

PagedAttention allocates the cache in blocks of ``block_tokens`` tokens (16 in vLLM), so a
sequence occupies a whole number of blocks; sequences that share a prompt prefix can
share its blocks (vLLM §4.4, SGLang's RadixAttention).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from llmplan.core.kv_quant import PLAIN_BYTES, QUANT_KV_EXAMPLES, KvQuant, kv_quant
from llmplan.core.model import ModelSpec
from llmplan.core.quant_ggml import GGML_TYPES
from llmplan.errors import InputError

# int8: TensorRT-LLM's INT8 cache, one byte a value with one scale per layer's K and V (kv_cache_scaling_factor,
# held with the weights, not per token): NVIDIA/TensorRT-LLM docs, "Numerical Precision", INT8 KV cache.
_KV_ELEMENT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0,
                     "int8": 1.0}
_GGML_KV = ("q8_0", "q5_0", "q5_1", "q4_0", "q4_1", "iq4_nl")


def kv_element_bytes(kv_dtype: str) -> float:
    """Bytes per cached element, ggml block overheads included."""
    key = kv_dtype.strip().lower()
    if key in _KV_ELEMENT_BYTES:
        return _KV_ELEMENT_BYTES[key]
    if key in _GGML_KV:
        t = GGML_TYPES[key.upper()]
        return t.type_size / t.block_size
    if (q := kv_quant(key)) is not None:
        return q.element_bytes
    raise InputError(
        f"unknown inference.kv_dtype '{kv_dtype}'; use bf16, fp16, fp8, int8, fp32, a llama.cpp cache type "
        f"({', '.join(_GGML_KV)}) or a group-quantised one ({QUANT_KV_EXAMPLES})"
    )


MlaCache = Literal["latent", "heads", "heads_padded"]  # core.engine_profile.EngineProfile.mla_cache


def kv_dtype_refusal(kv_dtype: str, engine_name: str, taken: tuple[str, ...]) -> str | None:
    """Why an engine has no such KV cache (one sentence naming what it takes), or None. ``taken``: the engine's
    cache types (``EngineProfile.kv_dtypes``, each from the engine's own docs in ``catalogs/engines.toml``);
    () takes every type. bf16 is taken where only fp16 is: Ollama keeps the cache in f16 (its default
    ``OLLAMA_KV_CACHE_TYPE``), the same 2 bytes an element, so a plan's default bf16 prices the same."""
    key = kv_dtype.strip().lower()
    if not taken or key in taken or (key == "bf16" and "fp16" in taken):
        return None
    eight = eight_bit_kv(taken)
    if key in _GGML_KV and not any(t in _GGML_KV for t in taken):
        head = f"{key} is a llama.cpp KV cache type, which {engine_name} does not offer"
    else:
        head = f"{engine_name} has no {key} KV cache"
    tail = f"; its 8-bit cache is {eight}" if eight else ""
    return f"{head}{tail} ({engine_name} takes {', '.join(taken)})"


def eight_bit_kv(taken: tuple[str, ...]) -> str | None:
    """The engine's 8-bit cache type (fp8 on the servers, q8_0 on llama.cpp and Ollama), or None (MLX,
    Transformers: the model's dtype only); () (any type): None."""
    return next((t for t in taken if t in ("fp8", "fp8_e4m3", "q8_0")), None)


def _value_bits(kv_dtype: str) -> float:
    """Bits of one cached value, a block's scale left out: 8 for fp8 and q8_0 alike, 5 for q5_1, 4 for iq4_nl."""
    if kv_dtype in _GGML_KV:
        return float(next(c for c in kv_dtype if c.isdigit()))
    if (q := kv_quant(kv_dtype)) is not None:
        return float(q.bits)
    return 8 * _KV_ELEMENT_BYTES[kv_dtype]


def nearest_kv_dtype(kv_dtype: str, taken: tuple[str, ...]) -> str:
    """The type the engine takes that is closest to ``kv_dtype`` without losing precision: the narrowest one whose
    values have at least as many bits (fp8 -> q8_0 on llama.cpp, q8_0 -> fp8 on vLLM, q5_1 -> q8_0 on Ollama,
    fp8 -> bf16 on MLX), else the widest (fp32 -> fp16 on Ollama); ``kv_dtype`` itself when it is taken."""
    key = kv_dtype.strip().lower()
    kv_element_bytes(key)  # an unknown name is named
    if kv_dtype_refusal(key, "", taken) is None:
        return key
    wider = [t for t in taken if _value_bits(t) >= _value_bits(key)]
    if wider:
        return min(wider, key=_value_bits)  # the first of equals, in the engine's order
    return max(taken, key=_value_bits)


def kv_elements_per_token_per_layer(spec: ModelSpec, mla_cache: MlaCache = "latent") -> int:
    """Elements one token adds to one attention layer's cache (all KV heads), for an engine that caches
    multi-latent attention as ``mla_cache`` (module doc)."""
    a = spec.mla
    if a is None:
        return 2 * spec.num_kv_heads * spec.head_dim
    if mla_cache == "latent":
        return a.kv_lora_rank + a.qk_rope_head_dim
    k, v = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
    if mla_cache == "heads_padded":
        k = v = max(k, v)
    return spec.num_heads * (k + v)


def kv_split_by_heads(spec: ModelSpec, mla_cache: MlaCache = "latent") -> bool:
    """Whether tensor parallelism splits the cache by heads (GQA, or MLA decompressed to heads); the latent is
    shared by all heads, so every TP rank keeps all of it."""
    return spec.mla is None or mla_cache != "latent"


def _cached_vectors(spec: ModelSpec, mla_cache: MlaCache) -> tuple[int, ...]:
    """The sizes of the vectors one token caches per head (key and value, or MLA's latent and rotary key)."""
    a = spec.mla
    if a is None:
        return (spec.head_dim,)
    if mla_cache == "latent":
        return a.kv_lora_rank, a.qk_rope_head_dim
    k, v = a.qk_nope_head_dim + a.qk_rope_head_dim, a.v_head_dim
    return (max(k, v),) if mla_cache == "heads_padded" else (k, v)


@dataclass(frozen=True, slots=True)
class KvLayout:
    """The cache geometry of a model at one cache dtype. ``quant``: a group-quantised type (core.kv_quant), whose
    plain tokens (a residual window, or a whole short context) cost ``plain_per_token_per_layer``."""

    spec: ModelSpec
    kv_dtype: str
    element_bytes: float
    per_token_per_layer: float  # bytes
    mla_cache: MlaCache = "latent"  # what an MLA model's cache holds (the engine's layout)
    quant: KvQuant | None = None
    plain_per_token_per_layer: float = 0.0  # bytes of one token in the model's dtype, where ``quant`` keeps some

    @property
    def full_layers(self) -> int:
        if self.quant is not None and not self.quant.caps_sliding:
            return self.spec.num_layers
        return self.spec.full_attention_layer_count

    @property
    def sliding_layers(self) -> int:
        return self.spec.num_layers - self.full_layers

    @property
    def bytes_per_token(self) -> float:
        """Bytes one token adds while the context is shorter than any window (all layers)."""
        return self.per_token_per_layer * self.spec.num_layers

    def _layer_tokens(self, tokens: int) -> int:
        window = self.spec.sliding_window or tokens
        return self.full_layers * tokens + self.sliding_layers * min(tokens, window)

    def held_bytes(self, tokens: int) -> float:
        """Bytes one sequence's cache holds at ``tokens`` tokens, what a decode step reads: sliding layers capped
        at the window; of a quantised cache, the tokens the engine still keeps plain at the model's dtype."""
        q = self.quant
        if q is not None and tokens < q.quantise_from:  # mlx-lm: not converted yet
            return self.plain_per_token_per_layer * self._layer_tokens(tokens)
        held = self.per_token_per_layer * self._layer_tokens(tokens)
        if q is not None and q.plain_window:  # transformers: every layer's newest tokens wait unquantised
            plain = min(q.plain_window, tokens) * self.spec.num_layers
            held += (self.plain_per_token_per_layer - self.per_token_per_layer) * plain
        return held

    def bytes_for_context(self, tokens: int) -> float:
        """Bytes one sequence of ``tokens`` tokens needs at its peak: ``held_bytes``, or, where mlx-lm converted
        its plain cache to the quantised one on the way, the two copies it held together then (at
        ``--quantized-kv-start`` tokens; a prompt crossing it converts at the end of its 2,048-token step)."""
        q = self.quant
        if q is not None and q.quantise_from and tokens >= q.quantise_from:
            both = (self.plain_per_token_per_layer + self.per_token_per_layer) * self._layer_tokens(q.quantise_from)
            return max(self.held_bytes(tokens), both)
        return self.held_bytes(tokens)

    def plain_bytes(self, tokens: int) -> float:
        """Bytes of one sequence's cache dequantised to the model's dtype (what Transformers' quantised cache
        rebuilds every step); the cache itself when it is not group-quantised."""
        if self.quant is None:
            return self.held_bytes(tokens)
        return self.plain_per_token_per_layer * self._layer_tokens(tokens)

    def marginal_bytes_per_token(self, tokens: int) -> float:
        """Bytes the next token adds at context length ``tokens`` (sliding layers stop at the window)."""
        window = self.spec.sliding_window or (tokens + 1)
        layers = self.full_layers + (self.sliding_layers if tokens < window else 0)
        return self.per_token_per_layer * layers


def kv_layout(spec: ModelSpec, kv_dtype: str = "bf16", mla_cache: MlaCache = "latent") -> KvLayout:
    """The cache of ``spec`` at ``kv_dtype``; a group-quantised type the model's shapes cannot take is named."""
    eb = kv_element_bytes(kv_dtype)
    elements = kv_elements_per_token_per_layer(spec, mla_cache)
    q = kv_quant(kv_dtype)
    if q is not None:
        why = q.check_dims(_cached_vectors(spec, mla_cache))
        if why is None and q.per_head_groups and 0 < spec.sliding_layer_count < spec.num_layers:
            why = ("mlx-lm keeps sliding-window layers in a RotatingKVCache, which it cannot quantise "
                   "(models/cache.py: 'RotatingKVCache Quantization NYI')")
        if why:
            raise InputError(f"inference.kv_dtype={q.name} for {spec.name}: {why}; choose another KV cache type")
    return KvLayout(spec, kv_dtype, eb, eb * elements, mla_cache, q, PLAIN_BYTES * elements if q else 0.0)


def paged_tokens(tokens: int, block_tokens: int) -> int:
    """Tokens a sequence occupies once rounded up to whole PagedAttention blocks."""
    if block_tokens <= 1:
        return tokens
    return math.ceil(tokens / block_tokens) * block_tokens


def batch_kv_bytes(
    layout: KvLayout, context_tokens: int, batch: int, block_tokens: int = 16, shared_prefix_tokens: int = 0
) -> float:
    """KV bytes of ``batch`` sequences of ``context_tokens`` each.

    With ``shared_prefix_tokens`` > 0, that many leading tokens (a common system prompt)
    are cached once for the whole batch; the prefix is counted in whole blocks only.
    """
    shared = min(shared_prefix_tokens, context_tokens)
    if block_tokens > 1:
        shared = (shared // block_tokens) * block_tokens
    own = paged_tokens(context_tokens - shared, block_tokens)
    if shared == 0:
        return batch * layout.bytes_for_context(own)
    # A prefix is shared only inside the window of sliding layers: price whole sequences, then remove
    # the duplicated prefix copies (batch - 1 of them).
    per_seq = layout.bytes_for_context(own + shared)
    duplicated = layout.bytes_for_context(shared)
    return batch * per_seq - (batch - 1) * duplicated
