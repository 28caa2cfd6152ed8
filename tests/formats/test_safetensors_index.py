"""safetensors index and header readers on small synthetic checkpoints."""

from __future__ import annotations

import json
import struct

import pytest

from llmplan.errors import ConfigError
from llmplan.formats.safetensors_index import (
    params_by_dtype,
    params_from_total_size,
    read_index,
    read_safetensors_header,
)


def _write_shard(path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    """A valid safetensors file (zeros for data); returns its data bytes."""
    from llmplan.formats.safetensors_index import DTYPE_BYTES

    table, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = DTYPE_BYTES[dtype]
        for d in shape:
            n *= d
        table[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    header = json.dumps(table).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * offset)
    return offset


def test_sharded_checkpoint_counts_per_dtype(tmp_path):
    a = _write_shard(tmp_path / "model-00001-of-00002.safetensors",
                     {"embed.weight": ("BF16", [100, 8]), "norm.weight": ("F32", [8])})
    b = _write_shard(tmp_path / "model-00002-of-00002.safetensors",
                     {"proj.weight": ("F8_E4M3", [16, 8]), "proj.weight_scale_inv": ("F32", [1, 1])})
    index = {"metadata": {"total_size": a + b},
             "weight_map": {"embed.weight": "model-00001-of-00002.safetensors",
                            "norm.weight": "model-00001-of-00002.safetensors",
                            "proj.weight": "model-00002-of-00002.safetensors",
                            "proj.weight_scale_inv": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    expected = {"BF16": 800, "F32": 9, "F8_E4M3": 128}
    assert params_by_dtype(tmp_path) == expected
    assert params_by_dtype(tmp_path / "model.safetensors.index.json") == expected
    total, shards = read_index(tmp_path)
    assert total == 800 * 2 + 9 * 4 + 128 and len(shards) == 2


def test_single_file_and_header_table(tmp_path):
    f = tmp_path / "model.safetensors"
    _write_shard(f, {"w": ("F16", [3, 4])})
    assert read_safetensors_header(f) == {"w": {"dtype": "F16", "shape": [3, 4], "data_offsets": [0, 24]}}
    assert params_by_dtype(f) == {"F16": 12}


def test_total_size_to_params():
    # meta-llama/Meta-Llama-3-8B: total_size 16,060,522,496 bytes of bf16 = 8,030,261,248 parameters
    assert params_from_total_size(16_060_522_496) == 8_030_261_248
    with pytest.raises(ConfigError, match="mixes dtypes"):
        params_from_total_size(7, 2)


@pytest.mark.parametrize(("payload", "message"), [
    (b"\x01\x02", "too short"),
    (struct.pack("<Q", 1 << 40), "exceeds"),
    (struct.pack("<Q", 50) + b"{}", "cut short"),
    (struct.pack("<Q", 4) + b"nope", "not JSON"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
])
def test_corrupt_safetensors_fail_cleanly(tmp_path, payload, message):
    f = tmp_path / "bad.safetensors"
    f.write_bytes(payload)
    with pytest.raises(ConfigError, match=message):
        read_safetensors_header(f)


def test_bad_index_is_explained(tmp_path):
    p = tmp_path / "model.safetensors.index.json"
    p.write_text(json.dumps({"weight_map": {}}))
    with pytest.raises(ConfigError, match="total_size"):
        read_index(p)
    p.write_text(json.dumps({"metadata": {"total_size": 10}}))
    with pytest.raises(ConfigError, match="weight_map"):
        read_index(p)


def test_tensor_without_shape_is_named(tmp_path):
    f = tmp_path / "x.safetensors"
    header = json.dumps({"w": {"dtype": "F16"}}).encode()
    f.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(ConfigError, match="tensor 'w' has no valid dtype/shape"):
        params_by_dtype(f)
