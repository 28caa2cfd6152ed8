"""KV caches quantised in groups: values packed to a few bits with a scale (and a bias or zero) per group, priced
from each engine's code rather than from a rule of thumb.

Per group of ``group`` values a cache holds the packed values plus its scale data, so one element costs
``(data_bytes + meta_bytes) / group`` bytes. The types, with what each engine's code allocates:

- ``fp4_e2m1`` (SGLang ``--kv-cache-dtype fp4_e2m1``, PR #12612 MHA / #10078 MLA, merged 2025-11 and 2025-09;
  ``MHATokenToKVPoolFP4._create_buffers`` in python/sglang/srt/mem_cache/memory_pool.py): per token and layer a
  uint8 buffer of ``head_dim // 2`` bytes per head (two E2M1 values a byte) and one uint8 scale per 16 values
  (``scale_block_size = 16``; an E8M0 exponent, ``KVFP4QuantizeUtil``): 8 + 1 bytes per 16, 0.5625 a value.
  The PR states "≈1.78× KV8 and 3.56× KV16" tokens, which is 1 / 0.5625 and 2 / 0.5625.
- ``mlx-<b>bit`` / ``mlx-<b>bit-g<G>`` (mlx-lm ``--kv-bits b --kv-group-size G``, ml-explore/mlx-lm
  models/cache.py ``QuantizedKVCache`` at d78bf58e, 2026-08-22): per head and token ``dim // (32 // b)`` uint32
  words of values and, per group of G (default 64), a scale and a bias in the keys' dtype (2 + 2 bytes for a
  bf16/fp16 model). mlx-lm's ``generate`` converts the plain cache only once it holds ``--quantized-kv-start``
  tokens (``maybe_quantize_kv_cache``; the command's default 5,000, the Python API's 0): shorter contexts stay
  plain, and at the conversion the plain cache and its quantised copy are held together. A model whose layers
  all slide (Mistral-7B-v0.1: a ``sliding_window`` and no ``layer_types``) runs every layer on a plain
  ``KVCache`` in mlx-lm's llama.py, which keeps every token; a model mixing sliding and full layers keeps the
  sliding ones in a ``RotatingKVCache``, which mlx-lm cannot quantise.
- ``quanto-int4`` / ``quanto-int2`` and ``hqq-<b>bit`` (Hugging Face ``cache_implementation="quantized"``,
  transformers ``QuantizedLayer`` at 004999d9: ``q_group_size`` 64, ``residual_length`` 128): quanto's
  ``MaxOptimizer`` keeps a scale and a shift per group in the model's dtype (optimum-quanto e33f8202
  affine_optimizer.py: ``zeropoint`` False) and packs 8 / b values a byte (packed.py); HQQ keeps a scale and a
  zero per group cast to the compute dtype (mobiusml/hqq e0b1d00e quantize.py ``to_inplace``) and packs 1, 2, 4
  and 8 bits into bytes, 3 bits ten to an int32 (a group of 64 pads to 70: 7 words, 28 bytes; bitpack.py).
  Up to ``residual_length - 1`` = 127 of the newest tokens wait in the model's dtype before they are quantised
  with the rest; every layer keeps all its tokens (QuantizedCache has no sliding-window layer).

TensorRT-LLM's INT8 cache (one byte a value, a per-tensor scale per layer kept with the weights) is a plain
element type in core.kvcache.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLAIN_BYTES = 2.0  # the model's bf16/fp16: scales, biases and the plain window are kept in it
HF_RESIDUAL_LENGTH = 128  # transformers QuantizedLayer(residual_length=128)
HF_GROUP = 64  # transformers QuantizedLayer(q_group_size=64)
MLX_QUANTIZED_KV_START = 5000  # mlx_lm/generate.py DEFAULT_QUANTIZED_KV_START (the --quantized-kv-start default)
MLX_GROUPS = (32, 64, 128)  # the group sizes mx.quantize takes
_MLX_RE = re.compile(r"^mlx-(\d)bit(?:-g(\d+))?$")
_HQQ_DATA_BYTES = {1: 8, 2: 16, 3: 28, 4: 32, 8: 64}  # per group of 64: packed as above


@dataclass(frozen=True, slots=True)
class KvQuant:
    """One group-quantised cache type: what a group of ``group`` values costs, and the plain tokens around it."""

    name: str
    bits: int
    group: int
    data_bytes: float  # packed values of one group
    meta_bytes: float  # scale + bias / zero of one group
    plain_window: int = 0  # newest tokens per sequence still in the model's dtype (transformers: residual - 1)
    quantise_from: int = 0  # tokens before which the whole cache stays plain (mlx-lm --quantized-kv-start)
    per_head_groups: bool = False  # groups run along each head's vector (mlx): every cached vector must divide
    caps_sliding: bool = True  # sliding-window layers keep only their window (False: transformers, mlx-lm)
    dequant_on_read: bool = False  # SGLang: attention asks for a layer's cache and gets its whole pool dequantised

    @property
    def element_bytes(self) -> float:
        return (self.data_bytes + self.meta_bytes) / self.group

    def converted_at(self, step: int) -> int:
        """The prompt offset from which mlx-lm's prefill runs on the quantised cache: ``generate_step`` converts
        after the first ``step``-token step that ends at or past ``--quantized-kv-start`` (the first step always
        runs on the plain cache)."""
        return max(step, -(-self.quantise_from // step) * step)

    def check_dims(self, dims: tuple[int, ...]) -> str | None:
        """Why this cache cannot hold vectors of these sizes (a head's key and value, or MLA's latent and
        rotary key), or None. mlx-lm quantises along each vector (``mx.quantize``: the size a multiple of the
        group) into ``dim // (32 // bits)`` words it allocated up front, which must be the ``dim * bits / 32``
        ``mx.quantize`` writes (3-, 5- and 6-bit caches miss it for most sizes)."""
        if not self.per_head_groups:
            return None
        for d in dims:
            if d % self.group:
                return f"mlx-lm quantises each cached vector in groups of {self.group}; {d} values do not divide"
            if d // (32 // self.bits) * 32 != d * self.bits:
                return (f"mlx-lm's QuantizedKVCache allocates {d // (32 // self.bits)} words for {d} values at "
                        f"{self.bits} bits, where mx.quantize writes {d * self.bits / 32:g}")
        return None


def kv_quant(name: str) -> KvQuant | None:
    """The group-quantised cache type ``name`` names, or None when it is not one (a plain or ggml type)."""
    key = name.strip().lower()
    if key == "fp4_e2m1":
        return KvQuant(key, 4, 16, 8, 1, dequant_on_read=True)
    if m := _MLX_RE.match(key):
        bits, group = int(m.group(1)), int(m.group(2) or 64)
        if bits not in (2, 3, 4, 5, 6, 8) or group not in MLX_GROUPS:
            return None
        return KvQuant(key, bits, group, group * bits / 8, 2 * PLAIN_BYTES,
                       quantise_from=MLX_QUANTIZED_KV_START, per_head_groups=True, caps_sliding=False)
    hf = {"quanto-int4": 4, "quanto-int2": 2} | {f"hqq-{b}bit": b for b in _HQQ_DATA_BYTES}
    if key in hf:
        bits = hf[key]
        data = _HQQ_DATA_BYTES[bits] if key.startswith("hqq") else HF_GROUP * bits / 8
        return KvQuant(key, bits, HF_GROUP, data, 2 * PLAIN_BYTES, plain_window=HF_RESIDUAL_LENGTH - 1,
                       caps_sliding=False)
    return None


QUANT_KV_EXAMPLES = "fp4_e2m1, mlx-4bit, mlx-8bit-g32, quanto-int4, hqq-4bit"
