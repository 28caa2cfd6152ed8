"""GGUF headers, corrupt or hostile: a header (and a ModelSpec or ConfigError from it), never a crash,
a hang, or a read of the tensor data. The files are written by ``_gguf_bytes`` (our own tiny writer),
so counts, types and lengths can be anything a broken file could hold."""

from __future__ import annotations

import struct
import time
import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from llmplan.core.model import ModelSpec
from llmplan.errors import ConfigError
from llmplan.formats.gguf_header import GgufHeader, read_gguf_header, spec_from_gguf
from tests.property import _gguf_bytes as g
from tests.property._support import NASTY_TEXT, fuzz, outcome

VALID = g.header(g.llama_kvs(), g.llama_tensors())

# a metadata value of any GGUF type, including wrong ones for the key
_TYPED_VALUE = st.one_of(
    st.tuples(st.just(4), st.integers(0, 2**32 - 1)),
    st.tuples(st.just(5), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(10), st.integers(0, 2**64 - 1)),
    st.tuples(st.just(11), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(6), st.floats(width=32, allow_nan=True)),
    st.tuples(st.just(12), st.floats(allow_nan=True, allow_infinity=True)),
    st.tuples(st.just(7), st.booleans()),
    st.tuples(st.just(8), NASTY_TEXT),
    st.tuples(st.just(9), st.tuples(st.just(4), st.lists(st.integers(0, 2**32 - 1), max_size=5))),
    st.tuples(st.just(9), st.tuples(st.just(8), st.lists(NASTY_TEXT, max_size=5))),
)


def _write(tmp_path_factory, data: bytes):
    path = tmp_path_factory.mktemp("gguf") / "model.gguf"
    path.write_bytes(data)
    return path


def _read_and_size(path) -> None:
    header = outcome("gguf", lambda: read_gguf_header(path))
    if isinstance(header, GgufHeader):
        spec = outcome("gguf", lambda: spec_from_gguf(path))
        assert isinstance(spec, ModelSpec | ConfigError)
    else:
        assert isinstance(header, ConfigError)


@fuzz
@given(st.dictionaries(st.sampled_from([k for k, _, _ in g.llama_kvs()] + ["llama.expert_count",
                                                                        "llama.vocab_size", "llama.attention.key_length",
                                                                        "llama.attention.sliding_window"]),
                       _TYPED_VALUE, max_size=3))
def test_metadata_of_any_type(tmp_path_factory, replaced):
    kvs = [(k, *replaced.get(k, (t, v))) for k, t, v in g.llama_kvs()]
    kvs += [(k, *tv) for k, tv in replaced.items() if k not in dict((k, 0) for k, _, _ in kvs)]
    _read_and_size(_write(tmp_path_factory, g.header(kvs, g.llama_tensors())))


@fuzz
@given(st.integers(0, len(VALID) - 1))
def test_truncated_anywhere(tmp_path_factory, cut):
    _read_and_size(_write(tmp_path_factory, VALID[:cut]))


@fuzz
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_bytes_flipped(tmp_path_factory, flips):
    data = bytearray(VALID)
    for pos, byte in flips:
        data[pos] = byte
    _read_and_size(_write(tmp_path_factory, bytes(data)))


@fuzz
@given(st.sampled_from([2, 3]), st.binary(max_size=300))
def test_random_bytes_after_the_magic(tmp_path_factory, version, tail):
    _read_and_size(_write(tmp_path_factory, b"GGUF" + struct.pack("<I", version) + tail))


@fuzz
@given(st.binary(max_size=64))
def test_random_files(tmp_path_factory, data):
    _read_and_size(_write(tmp_path_factory, data))


# ---- huge files: only the header is read, and hostile counts cannot make it slow or big ----------

def _sparse(path, head: bytes, size: int = 10 * 2**30):
    with path.open("wb") as f:
        f.write(head)
        f.truncate(size)  # the rest is a hole: no disk used, reads give zeros
    return path


def _bounded(call, seconds: float = 10.0, megabytes: float = 150.0):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        result = outcome("gguf (10 GB sparse)", call)
    finally:
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    assert peak < megabytes * 2**20, f"allocated {peak / 2**20:.0f} MiB"
    return result


def test_a_10_gb_model_reads_only_its_header(tmp_path):
    path = _sparse(tmp_path / "big.gguf", VALID)
    spec = _bounded(lambda: spec_from_gguf(path), seconds=2, megabytes=20)
    assert isinstance(spec, ModelSpec) and spec.hidden_size == g.H


def test_hostile_counts_in_a_10_gb_file_stay_bounded(tmp_path):
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    cases = {
        "a 50M-item string array over zeros": head + g.string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 50_000_000),
        "arrays nested 100,000 deep": head + g.string("k") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 100_000,
        "a million metadata entries of zeros": b"GGUF" + struct.pack("<IQQ", 3, 0, 1_000_000),
        "a million tensors of zeros": b"GGUF" + struct.pack("<IQQ", 3, 1_000_000, 0),
        "a 60 MB key": head + struct.pack("<Q", 60 * 2**20),
    }
    for what, data in cases.items():
        result = _bounded(lambda data=data: read_gguf_header(_sparse(tmp_path / "hostile.gguf", data)))
        assert isinstance(result, GgufHeader | ConfigError), what
