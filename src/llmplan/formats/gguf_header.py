"""Read a .gguf file's header (metadata and tensor list), never its tensor data.

GGUF v2/v3 layout (llama.cpp ``docs/gguf.md``), all little-endian:
``"GGUF"``, u32 version, u64 tensor count, u64 key-value count, then the key-values
(string key, u32 value type, value), then per tensor: name, u32 dims, u64 shape[dims],
u32 ggml type, u64 data offset. Everything after that is tensor data, which we never read.

Every length read from the file is checked against a cap before anything is allocated,
so a corrupt or hostile file fails with a ``ConfigError`` instead of exhausting memory.
Large arrays (the tokenizer's 100k+ tokens) are walked but only their length is kept.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from llmplan.core.model import ModelSpec
from llmplan.core.present import one_line
from llmplan.errors import ConfigError
from llmplan.formats.bounded import open_regular

MAGIC = b"GGUF"
MAX_KV = 100_000  # real files hold a few dozen keys
MAX_TENSORS = 100_000  # real files hold a few hundred to a few thousand tensors (experts are stacked)
MAX_STRING = 64 * 1024 * 1024  # a chat template is tens of KB; nothing legitimate comes near this
MAX_ARRAY = 50_000_000
MAX_DIMS = 8
MAX_ARRAY_DEPTH = 3  # arrays of arrays exist in the spec; nothing real nests deeper
MAX_ITEMS_WALKED = 2_000_000  # strings walked one by one (a 262k vocabulary plus its merges is < 1M)
KEEP_ARRAY_ITEMS = 64  # longer arrays are summarised by their length
MAX_STRING_BYTES = 64 * 1024 * 1024  # all strings together (keys, values, walked arrays): a 262k-token
# vocabulary with its merges is < 10 MB. Per string alone was not enough: 700 strings of 64 MiB read 45 GB.

# ggml tensor types (ggml.h ``enum ggml_type``); cross-checked against the gguf package in the tests.
GGML_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
    27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}
# llama.cpp ``enum llama_ftype`` (include/llama.h): the preset llama-quantize wrote, stored as
# ``general.file_type``; bit 1024 (LLAMA_FTYPE_GUESSED) marks a type llama.cpp inferred. Cross-checked
# against the gguf package's ``LlamaFileType`` in the tests. 4-6 and 33-35 were removed upstream.
LLAMA_FTYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}
LLAMA_FTYPE_GUESSED = 1024
# value type -> struct format for scalars
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GgufTensor:
    name: str
    shape: tuple[int, ...]
    type_name: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class GgufHeader:
    """What the header says: format version, metadata (long arrays summarised), tensor list."""

    version: int
    metadata: dict[str, Any]
    array_lengths: dict[str, int]
    tensors: tuple[GgufTensor, ...] = field(repr=False)

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def total_params(self) -> int:
        return sum(t.numel for t in self.tensors)

    def params_by_type(self) -> dict[str, int]:
        """Parameters stored in each ggml type (e.g. {'Q4_K': ..., 'Q6_K': ..., 'F32': ...})."""
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.type_name] = out.get(t.type_name, 0) + t.numel
        return out


class _Reader:
    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path
        self.items_walked = 0
        self.string_bytes = 0

    def take(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise ConfigError(f"{self.path}: the GGUF header is cut short (file truncated or not a GGUF file)")
        return b

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, what: str, cap: int) -> int:
        n = self.scalar("<Q")
        if n > cap:
            raise ConfigError(f"{self.path}: GGUF header claims {n:,} {what} (limit {cap:,}); the file is corrupt")
        return n

    def string(self) -> str:
        n = self.count("bytes in a string", MAX_STRING)
        self.string_bytes += n
        if self.string_bytes > MAX_STRING_BYTES:
            raise ConfigError(f"{self.path}: the GGUF header's strings add up to more than {MAX_STRING_BYTES:,} "
                              "bytes; the file is corrupt")
        return self.take(n).decode("utf-8", errors="replace")

    def skip(self, n: int) -> None:
        self.f.seek(n, 1)

    def value(self, vtype: int, key: str, lengths: dict[str, int], depth: int = 0) -> Any:
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth >= MAX_ARRAY_DEPTH:
                raise ConfigError(f"{self.path}: '{one_line(key, 200)}' nests arrays more than {MAX_ARRAY_DEPTH} deep; "
                                  "the file is corrupt")
            itype = self.scalar("<I")
            n = self.count("array items", MAX_ARRAY)
            lengths[key] = n
            if itype in _SCALARS and n > KEEP_ARRAY_ITEMS:  # fixed-size items: skip without reading
                self.skip(n * struct.calcsize(_SCALARS[itype]))
                return None
            self.items_walked += n
            if self.items_walked > MAX_ITEMS_WALKED:
                raise ConfigError(f"{self.path}: the GGUF header holds more than {MAX_ITEMS_WALKED:,} strings "
                                  "or arrays in its metadata; the file is corrupt")
            if n > KEEP_ARRAY_ITEMS:  # walk past the items without keeping them
                for _ in range(n):
                    self.value(itype, key, {}, depth + 1)
                return None
            return [self.value(itype, key, {}, depth + 1) for _ in range(n)]
        raise ConfigError(f"{self.path}: unknown GGUF value type {vtype} for '{one_line(key, 200)}'; the file is corrupt")


def read_gguf_header(path: str | Path) -> GgufHeader:
    """Parse the header of a GGUF v2/v3 file (metadata and tensor list only)."""
    p = Path(path)
    f = open_regular(p, what="GGUF file", error=ConfigError)  # a FIFO or /dev/zero is refused, never read
    with f:
        return read_gguf_header_from(f, p)


def read_gguf_header_from(f: BinaryIO, p: Path) -> GgufHeader:
    """The same from an open binary stream (the first bytes of a file read over HTTP); ``p`` names it in errors."""
    r = _Reader(f, p)
    if r.take(4) != MAGIC:
        raise ConfigError(f"{p}: not a GGUF file (it does not start with 'GGUF')")
    version = r.scalar("<I")
    if version not in (2, 3):
        raise ConfigError(f"{p}: GGUF version {version} is not supported (llmplan reads versions 2 and 3)")
    n_tensors = r.count("tensors", MAX_TENSORS)
    n_kv = r.count("metadata entries", MAX_KV)
    metadata: dict[str, Any] = {}
    lengths: dict[str, int] = {}
    for _ in range(n_kv):
        key = r.string()
        metadata[key] = r.value(r.scalar("<I"), key, lengths)
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.scalar("<I")
        if n_dims > MAX_DIMS:
            raise ConfigError(f"{p}: tensor '{one_line(name, 200)}' claims {n_dims} dimensions; the file is corrupt")
        shape = tuple(r.scalar("<Q") for _ in range(n_dims))
        ttype = r.scalar("<I")
        r.scalar("<Q")  # data offset: we never read the data
        tensors.append(GgufTensor(name, shape, GGML_TYPES.get(ttype, f"type{ttype}")))
    return GgufHeader(version, metadata, lengths, tuple(tensors))


# GGUF architecture -> Hugging Face model_type whose config keys we can fill in
_ARCH_TO_MODEL_TYPE = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3moe": "qwen3_moe",
                       "gemma": "gemma", "gemma2": "gemma2", "phi3": "phi3", "gpt-oss": "gpt_oss"}


def config_from_gguf(h: GgufHeader) -> dict[str, Any]:
    """A config.json-like dict from a llama-family GGUF header (keys as Hugging Face names them)."""
    arch = h.architecture
    if not arch:
        raise ConfigError("the GGUF header has no 'general.architecture'; cannot tell what model it is")
    md = h.metadata

    def key(name: str, default: Any = ...) -> Any:
        full = f"{arch}.{name}"
        if full in md:
            return md[full]
        if default is ...:
            raise ConfigError(f"the GGUF header lacks '{one_line(full, 200)}'; it is needed to size the model")
        return default

    vocab = key("vocab_size", None) or h.array_lengths.get("tokenizer.ggml.tokens")
    if vocab is None or vocab == 0:
        raise ConfigError(f"the GGUF header has neither '{one_line(arch, 200)}.vocab_size' nor tokenizer.ggml.tokens")
    heads = key("attention.head_count")
    kv = key("attention.head_count_kv", heads)
    hidden = key("embedding_length")
    names = {t.name for t in h.tensors}
    cfg: dict[str, Any] = {
        "model_type": _ARCH_TO_MODEL_TYPE.get(arch, arch),
        "vocab_size": vocab,  # spec_from_config checks every value's type and range
        "hidden_size": hidden,
        "num_hidden_layers": key("block_count"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv[0] if isinstance(kv, list) and kv else kv,
        "intermediate_size": key("feed_forward_length"),
        "max_position_embeddings": key("context_length", 2048),
        "tie_word_embeddings": bool(names) and "output.weight" not in names,
        "rope_theta": key("rope.freq_base", None),
        "rms_norm_eps": key("attention.layer_norm_rms_epsilon", None),
    }
    head_dim = key("attention.key_length", None)
    if head_dim:
        cfg["head_dim"] = head_dim
    experts = key("expert_count", 0)
    if experts:
        cfg["num_local_experts"] = cfg["num_experts"] = experts
        cfg["num_experts_per_tok"] = key("expert_used_count")
        if arch == "llama":
            cfg["model_type"] = "mixtral"
        ff_exp = key("expert_feed_forward_length", None)
        if ff_exp:
            cfg["moe_intermediate_size"] = ff_exp
    if arch == "llama" and "blk.0.attn_q.bias" in names:
        cfg["attention_bias"] = True
    window = key("attention.sliding_window", None)
    if window:
        cfg["sliding_window"] = window
    return {k: v for k, v in cfg.items() if v is not None}


def weight_format_of(h: GgufHeader) -> str | None:
    """The file's weight format as ``inference.weight_format`` spells it (``q4_k_m``): the preset in
    ``general.file_type`` when llmplan knows it, else the ggml type holding most of the blocks' 2-D
    weights (``q4_k``), else None. A Q4_K_M file is not bf16: its bytes are priced by its own format. A file with
    MXFP4 experts (gpt-oss) is ``mxfp4_bf16`` when its other block weights are mostly 16-bit (the converter's
    output, Ollama's blobs, whose file type 4 llama.h no longer names), else ``mxfp4_moe`` (llama-quantize's
    MXFP4_MOE; other mixes, such as a Q4_K_M of gpt-oss with its experts kept MXFP4, are nearest to it)."""
    from llmplan.core.quant_ggml import parse_gguf_name

    by_type: dict[str, int] = {}
    for t in h.tensors:
        if t.name.startswith("blk.") and len(t.shape) >= 2:
            by_type[t.type_name] = by_type.get(t.type_name, 0) + t.numel
    if "MXFP4" in by_type:  # gpt-oss: MXFP4 experts, the rest Q8_0 (llama-quantize, ggml-org) or 16-bit (the
        rest = {k: n for k, n in by_type.items() if k not in ("MXFP4", "F32")}  # converter, Ollama: file type 4)
        return "mxfp4_bf16" if rest and max(rest, key=rest.__getitem__) in ("BF16", "F16") else "mxfp4_moe"
    ftype = h.metadata.get("general.file_type")
    if isinstance(ftype, int) and not isinstance(ftype, bool):
        name = LLAMA_FTYPES.get(ftype & ~LLAMA_FTYPE_GUESSED)
        if name and parse_gguf_name(name):
            return name.lower()
    if by_type:
        name = max(by_type, key=by_type.__getitem__)
        if parse_gguf_name(name):
            return name.lower()
    return None


def name_of(h: GgufHeader) -> str | None:
    """``general.name`` as the file states it (one line, at most 200 characters), or None."""
    name = h.metadata.get("general.name")
    if not isinstance(name, str):
        return None
    name = " ".join(name.split())[:200]
    return name or None


def spec_from_gguf(path: str | Path, name: str | None = None) -> ModelSpec:
    """ModelSpec from a .gguf file's header (llama-family architectures are exact, others approximate)."""
    from llmplan.formats.hf_config import spec_from_config

    h = read_gguf_header(path)
    default = name_of(h) or Path(path).stem
    return spec_from_config(config_from_gguf(h), name=name or default)
