"""A tiny GGUF v3 header writer for the property tests: full control over every count and type,
so tests can write what a corrupt or hostile file would hold (llama.cpp ``docs/gguf.md`` layout)."""

from __future__ import annotations

import struct
from typing import Any

SCALAR_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


def string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def value(vtype: int, v: Any, item_type: int = 4) -> bytes:
    if vtype in SCALAR_FMT:
        return struct.pack(SCALAR_FMT[vtype], v)
    if vtype == STRING:
        return string(v)
    return struct.pack("<IQ", item_type, len(v)) + b"".join(value(item_type, x) for x in v)


def header(kvs: list[tuple[str, int, Any]], tensors: list[tuple[str, tuple[int, ...], int]],
           version: int = 3) -> bytes:
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors), len(kvs))]
    for key, vtype, v in kvs:
        item_type = 4
        if vtype == ARRAY:
            item_type, v = v
        out.append(string(key) + struct.pack("<I", vtype) + value(vtype, v, item_type))
    for name, shape, ttype in tensors:
        out.append(string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
                   + struct.pack("<IQ", ttype, 0))
    return b"".join(out)


H, L, HEADS, KV, FF, VOCAB = 64, 2, 4, 2, 128, 96


def llama_kvs() -> list[tuple[str, int, Any]]:
    return [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "tiny"),
        ("llama.context_length", 4, 256),
        ("llama.embedding_length", 4, H),
        ("llama.block_count", 4, L),
        ("llama.feed_forward_length", 4, FF),
        ("llama.attention.head_count", 4, HEADS),
        ("llama.attention.head_count_kv", 4, KV),
        ("llama.rope.freq_base", 6, 10000.0),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"t{i}" for i in range(VOCAB)])),
    ]


def llama_tensors() -> list[tuple[str, tuple[int, ...], int]]:
    t = [("token_embd.weight", (H, VOCAB), 1), ("output_norm.weight", (H,), 0), ("output.weight", (H, VOCAB), 12)]
    for i in range(L):
        t += [(f"blk.{i}.attn_q.weight", (H, H), 12), (f"blk.{i}.attn_k.weight", (H, KV * 16), 12),
              (f"blk.{i}.attn_v.weight", (H, KV * 16), 14), (f"blk.{i}.attn_output.weight", (H, H), 12),
              (f"blk.{i}.ffn_gate.weight", (H, FF), 12), (f"blk.{i}.ffn_up.weight", (H, FF), 12),
              (f"blk.{i}.ffn_down.weight", (FF, H), 14), (f"blk.{i}.attn_norm.weight", (H,), 0),
              (f"blk.{i}.ffn_norm.weight", (H,), 0)]
    return t
