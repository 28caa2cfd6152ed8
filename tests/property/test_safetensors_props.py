"""safetensors headers and index files, corrupt or hostile: counts or a ConfigError; the weights are never
read, and shard names in an index never lead outside the model folder."""

from __future__ import annotations

import json
import struct
import time

from hypothesis import given
from hypothesis import strategies as st

from llmplan.errors import ConfigError
from llmplan.formats.safetensors_index import params_by_dtype, read_index, read_safetensors_header
from tests.property._support import JSON_VALUES, deep_json_text, dumps, fuzz, outcome

TABLE = {
    "__metadata__": {"format": "pt"},
    "model.embed_tokens.weight": {"dtype": "BF16", "shape": [32, 8], "data_offsets": [0, 512]},
    "model.norm.weight": {"dtype": "F32", "shape": [8], "data_offsets": [512, 544]},
}


def _st_file(header: bytes) -> bytes:
    return struct.pack("<Q", len(header)) + header


def _check_file(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("st") / "model.safetensors"
    path.write_bytes(data)
    table = outcome("safetensors", lambda: read_safetensors_header(path))
    assert isinstance(table, dict | ConfigError)
    counts = outcome("safetensors", lambda: params_by_dtype(path))
    if isinstance(counts, dict):
        assert all(isinstance(n, int) and n >= 0 for n in counts.values()), counts


@fuzz
@given(st.dictionaries(st.sampled_from(["dtype", "shape", "data_offsets", "x"]), JSON_VALUES, max_size=3))
def test_tensor_entry_with_hostile_fields(tmp_path_factory, fields):
    entry = {**TABLE["model.norm.weight"], **fields}
    _check_file(tmp_path_factory, _st_file(dumps({**TABLE, "t": entry}).encode()))


@fuzz
@given(st.lists(st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=3), max_size=5))
def test_any_shape(tmp_path_factory, shape):
    _check_file(tmp_path_factory, _st_file(dumps({"t": {"dtype": "F16", "shape": shape}}).encode()))


@fuzz
@given(JSON_VALUES)
def test_any_json_header(tmp_path_factory, value):
    _check_file(tmp_path_factory, _st_file(dumps(value).encode()))


@fuzz
@given(st.binary(max_size=200), st.integers(0, 2**64 - 1) | st.integers(0, 300))
def test_random_bytes_and_lengths(tmp_path_factory, tail, length):
    _check_file(tmp_path_factory, struct.pack("<Q", length) + tail)


@fuzz
@given(st.integers(0, 400))
def test_truncated(tmp_path_factory, cut):
    _check_file(tmp_path_factory, _st_file(json.dumps(TABLE).encode())[:cut])


@fuzz
@given(JSON_VALUES, st.dictionaries(st.sampled_from(["metadata", "weight_map"]), JSON_VALUES, max_size=2))
def test_index_files(tmp_path_factory, whole, sections):
    folder = tmp_path_factory.mktemp("idx")
    path = folder / "model.safetensors.index.json"
    for doc in (whole, {"metadata": {"total_size": 10}, "weight_map": {"a": "x.safetensors"}, **sections}):
        path.write_text(dumps(doc))
        assert isinstance(outcome("safetensors index", lambda: read_index(path)), tuple | ConfigError)
        assert isinstance(outcome("safetensors index", lambda: params_by_dtype(folder)), dict | ConfigError)


def test_deeply_nested_header_and_index(tmp_path):
    deep = deep_json_text(100_000).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(_st_file(deep))
    assert isinstance(outcome("safetensors", lambda: read_safetensors_header(path)), ConfigError)
    index = tmp_path / "model.safetensors.index.json"
    index.write_bytes(deep)
    assert isinstance(outcome("safetensors index", lambda: read_index(index)), ConfigError)


def test_a_10_gb_shard_reads_only_its_header(tmp_path):
    path = tmp_path / "model.safetensors"
    with path.open("wb") as f:
        f.write(_st_file(json.dumps(TABLE).encode()))
        f.truncate(10 * 2**30)
    t0 = time.perf_counter()
    assert params_by_dtype(path) == {"BF16": 256, "F32": 8}
    assert time.perf_counter() - t0 < 1.0


def test_shard_names_never_leave_the_model_folder(tmp_path):
    """An index is data from the internet: '/etc/passwd' or '../x' as a shard name must not be opened."""
    secret = tmp_path / "secret.safetensors"
    secret.write_bytes(_st_file(json.dumps(TABLE).encode()))  # readable, so following the path would "work"
    folder = tmp_path / "model"
    folder.mkdir()
    for shard in (str(secret), "../secret.safetensors", "/etc/passwd", "sub/../../secret.safetensors"):
        (folder / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": 544}, "weight_map": {"w": shard}}))
        result = outcome("safetensors index", lambda: params_by_dtype(folder))
        assert isinstance(result, ConfigError), (shard, result)
        assert "outside" in str(result) or "file name" in str(result)
