"""Parameter counts from a safetensors checkpoint without reading its weights.

Two sources, both tiny compared with the weights:
- ``model.safetensors.index.json``: ``metadata.total_size`` is the bytes of all tensors;
  divided by the bytes per parameter it gives the total (exact for a single-dtype
  checkpoint, e.g. bf16: total_size / 2).
- each ``*.safetensors`` file starts with an 8-byte little-endian header length and a
  JSON header listing every tensor's dtype and shape: summing shapes gives the exact
  count per dtype (what the Hugging Face API reports as ``safetensors.parameters``).

Lengths read from a file are capped before anything is allocated.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from llmplan.errors import ConfigError
from llmplan.formats.bounded import load_json, open_regular, parse_json

MAX_HEADER_BYTES = 100 * 1024 * 1024  # the safetensors library's own limit
MAX_INDEX_BYTES = 64 * 1024 * 1024
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
               "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1}


def _load_json(path: Path, limit: int) -> Any:
    return load_json(path, limit, what="safetensors index", error=ConfigError)


def read_index(path: str | Path) -> tuple[int, list[str]]:
    """``(metadata.total_size in bytes, shard file names)`` from a model.safetensors.index.json."""
    p = Path(path)
    if p.is_dir():
        p = p / "model.safetensors.index.json"
    data = _load_json(p, MAX_INDEX_BYTES)
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a JSON object with 'metadata' and 'weight_map'")
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, bool) or not isinstance(total, int | float) or not 0 <= total < 2**63 or total != int(total):
        raise ConfigError(f"{p}: 'metadata.total_size' is missing or not a byte count; is this a safetensors index?")
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ConfigError(f"{p}: 'weight_map' is missing; is this a safetensors index?")
    shards = sorted({str(v) for v in weight_map.values()})
    for shard in shards:  # the index comes from the internet: never let it point outside the model folder
        if Path(shard).name != shard or shard in ("", ".", ".."):
            raise ConfigError(f"{p}: shard '{shard:.100}' is not a plain file name; an index may only list "
                              "files in its own folder, never paths outside it")
    return int(total), shards


def params_from_total_size(total_size: int, bytes_per_param: int = 2) -> int:
    """Total parameters of a single-dtype checkpoint (bf16/fp16: 2 bytes each)."""
    if total_size % bytes_per_param:
        raise ConfigError(f"total_size {total_size:,} is not a multiple of {bytes_per_param} bytes per parameter; "
                          "the checkpoint mixes dtypes, so count from the safetensors headers instead")
    return total_size // bytes_per_param


def read_safetensors_header(path: str | Path) -> dict[str, dict[str, Any]]:
    """The tensor table of one .safetensors file: name -> {dtype, shape, data_offsets}."""
    p = Path(path)
    try:
        with open_regular(p, what="safetensors file", error=ConfigError) as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise ConfigError(f"{p}: too short to be a safetensors file")
            (n,) = struct.unpack("<Q", raw)
            if n > MAX_HEADER_BYTES:
                raise ConfigError(f"{p}: header length {n:,} exceeds {MAX_HEADER_BYTES:,}; not a safetensors file")
            header = f.read(n)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    if len(header) != n:
        raise ConfigError(f"{p}: the header is cut short (file truncated)")
    try:
        table = parse_json(header, f"{p}: the header", what="safetensors header", error=ConfigError)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (not JSON as a safetensors file has it)") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{p}: the header is not a JSON object; not a safetensors file")
    return {k: v for k, v in table.items() if k != "__metadata__"}


def params_by_dtype(path: str | Path) -> dict[str, int]:
    """Exact parameter count per dtype of a .safetensors file, or of every shard a folder/index lists."""
    p = Path(path)
    if p.is_dir() or p.name.endswith(".index.json"):
        folder = p if p.is_dir() else p.parent
        index = folder / "model.safetensors.index.json" if p.is_dir() else p
        files = [folder / s for s in read_index(index)[1]] if index.is_file() else sorted(folder.glob("*.safetensors"))
        if not files:
            raise ConfigError(f"{p}: no .safetensors files found")
    else:
        files = [p]
    out: dict[str, int] = {}
    for file in files:
        for name, info in read_safetensors_header(file).items():
            try:
                dtype, shape = str(info["dtype"]), info["shape"]
                if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                    raise ValueError("a dimension is not a non-negative whole number")
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{file}: tensor {name[:100]!r} has no valid dtype/shape") from None
            n = 1
            for d in shape:
                n *= d
            out[dtype] = out.get(dtype, 0) + n
    return out
