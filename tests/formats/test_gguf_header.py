"""GGUF header reader on small synthetic files written by the ``gguf`` package (llama.cpp's own writer)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from llmplan.core.params import count_params  # noqa: E402
from llmplan.errors import ConfigError  # noqa: E402
from llmplan.formats.gguf_header import GGML_TYPES, config_from_gguf, read_gguf_header, spec_from_gguf  # noqa: E402

H, L, HEADS, KV, HEAD_DIM, FF, VOCAB = 64, 2, 4, 2, 16, 128, 96


def _write_llama(path, *, tied: bool = False, quantized: bool = False, bias: bool = False) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(256)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(VOCAB)])  # longer than the 64 items kept: only its length survives

    def tensor(name, *shape):
        data = np.ones(shape, dtype=np.float32)
        if quantized and len(shape) == 2:
            q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, data)

    tensor("token_embd.weight", VOCAB, H)
    tensor("output_norm.weight", H)
    if not tied:
        tensor("output.weight", VOCAB, H)
    for i in range(L):
        tensor(f"blk.{i}.attn_norm.weight", H)
        tensor(f"blk.{i}.attn_q.weight", H, H)
        if bias:
            tensor(f"blk.{i}.attn_q.bias", H)
        tensor(f"blk.{i}.attn_k.weight", KV * HEAD_DIM, H)
        tensor(f"blk.{i}.attn_v.weight", KV * HEAD_DIM, H)
        tensor(f"blk.{i}.attn_output.weight", H, H)
        tensor(f"blk.{i}.ffn_norm.weight", H)
        tensor(f"blk.{i}.ffn_gate.weight", FF, H)
        tensor(f"blk.{i}.ffn_up.weight", FF, H)
        tensor(f"blk.{i}.ffn_down.weight", H, FF)
    _finish(w)


def _finish(w) -> None:
    """Write the header, the metadata and the tensors, and close the file."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_header_matches_gguf_package_reader(tmp_path):
    path = tmp_path / "tiny.gguf"
    _write_llama(path)
    h = read_gguf_header(path)
    ref = gguf.GGUFReader(str(path))
    assert h.version == 3 and h.architecture == "llama"
    assert h.total_params == sum(int(t.n_elements) for t in ref.tensors)
    assert [t.name for t in h.tensors] == [t.name for t in ref.tensors]
    assert h.array_lengths["tokenizer.ggml.tokens"] == VOCAB and h.metadata["tokenizer.ggml.tokens"] is None
    assert h.metadata["general.name"] == "tiny-llama"


def test_config_and_spec_count_equal_the_stored_tensors(tmp_path):
    path = tmp_path / "tiny.gguf"
    _write_llama(path)
    h = read_gguf_header(path)
    cfg = config_from_gguf(h)
    assert (cfg["hidden_size"], cfg["num_key_value_heads"], cfg["vocab_size"]) == (H, KV, VOCAB)
    assert cfg["tie_word_embeddings"] is False
    spec = spec_from_gguf(path)
    assert spec.name == "tiny-llama" and not spec.approximate
    assert count_params(spec).total == h.total_params


def test_tied_output_and_qkv_bias_are_detected(tmp_path):
    path = tmp_path / "tied.gguf"
    _write_llama(path, tied=True, bias=True)
    cfg = config_from_gguf(read_gguf_header(path))
    assert cfg["tie_word_embeddings"] is True and cfg["attention_bias"] is True


def test_quantized_tensor_types_are_listed(tmp_path):
    path = tmp_path / "q8.gguf"
    _write_llama(path, quantized=True)
    by_type = read_gguf_header(path).params_by_type()
    assert set(by_type) == {"Q8_0", "F32"}
    assert by_type["F32"] == (2 * L + 1) * H  # only the norms stay F32


def test_type_table_matches_the_gguf_package():
    for t in gguf.GGMLQuantizationType:
        if t.value in GGML_TYPES:
            assert GGML_TYPES[t.value] == t.name


@pytest.mark.parametrize(("payload", "message"), [
    (b"GGML" + b"\0" * 20, "not a GGUF file"),
    (b"GGUF" + struct.pack("<I", 1) + b"\0" * 16, "version 1 is not supported"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40), "bytes in a string"),
    (b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0), "tensors"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 3) + b"abc", "cut short"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 99), "value type 99"),
])
def test_corrupt_headers_fail_cleanly(tmp_path, payload, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(payload)
    with pytest.raises(ConfigError, match=message):
        read_gguf_header(path)


def test_missing_architecture_keys_are_named(tmp_path):
    path = tmp_path / "noheads.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_token_list(["a", "b"])
    _finish(w)
    with pytest.raises(ConfigError, match=r"lacks 'llama\.attention\.head_count'"):
        config_from_gguf(read_gguf_header(path))


def _write_gpt_oss(path, experts: int = 4, rest_16bit: bool = False) -> None:
    """A tiny gpt-oss GGUF as llama.cpp lays one out (conversion/gpt_oss.py, ggml-org/llama.cpp @2bbcf7fc): 3-D
    expert weights in MXFP4, sinks, router and biases F32; the other weights Q8_0 with file type MXFP4_MOE (38), as
    llama-quantize writes it, or F16 with file type 4, as Ollama's library blobs say (``rest_16bit``)."""
    w = gguf.GGUFWriter(str(path), "gpt-oss")
    w.add_name("tiny-gpt-oss")
    w.add_file_type(4 if rest_16bit else gguf.LlamaFileType.MOSTLY_MXFP4_MOE)
    w.add_context_length(256)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(H)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_expert_count(experts)
    w.add_expert_used_count(2)
    w.add_expert_feed_forward_length(H)
    w.add_sliding_window(8)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_token_list([f"tok{i}" for i in range(VOCAB)])

    def f32(name, *shape):
        w.add_tensor(name, np.ones(shape, dtype=np.float32))

    def q8(name, *shape):
        if rest_16bit:
            w.add_tensor(name, np.ones(shape, dtype=np.float16))
            return
        q = gguf.quants.quantize(np.ones(shape, dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    def mxfp4(name, *shape):  # 17 bytes per 32 weights of the last dimension
        w.add_tensor(name, np.zeros((*shape[:-1], shape[-1] // 32 * 17), dtype=np.uint8),
                     raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    q8("token_embd.weight", VOCAB, H)
    f32("output_norm.weight", H)
    q8("output.weight", VOCAB, H)
    for i in range(L):
        f32(f"blk.{i}.attn_norm.weight", H)
        for proj, rows in (("q", HEADS * HEAD_DIM), ("k", KV * HEAD_DIM), ("v", KV * HEAD_DIM)):
            q8(f"blk.{i}.attn_{proj}.weight", rows, H)
            f32(f"blk.{i}.attn_{proj}.bias", rows)
        q8(f"blk.{i}.attn_output.weight", H, HEADS * HEAD_DIM)
        f32(f"blk.{i}.attn_output.bias", H)
        f32(f"blk.{i}.attn_sinks.weight", HEADS)
        f32(f"blk.{i}.post_attention_norm.weight", H)
        f32(f"blk.{i}.ffn_gate_inp.weight", experts, H)
        f32(f"blk.{i}.ffn_gate_inp.bias", experts)
        for part in ("gate", "up", "down"):
            mxfp4(f"blk.{i}.ffn_{part}_exps.weight", experts, H, H)
            f32(f"blk.{i}.ffn_{part}_exps.bias", experts, H)
    _finish(w)


def test_gpt_oss_mxfp4_file_is_read_as_mxfp4_moe(tmp_path):
    # A dropped gpt-oss GGUF: its MXFP4 experts are recognised, it plans as mxfp4_moe (not bf16), and the spec
    # built from its header counts exactly the tensors it stores.
    from llmplan.formats.gguf_header import weight_format_of

    path = tmp_path / "gpt-oss.gguf"
    _write_gpt_oss(path)
    h = read_gguf_header(path)
    by_type = h.params_by_type()
    assert set(by_type) == {"MXFP4", "Q8_0", "F32"} and by_type["MXFP4"] == L * 3 * 4 * H * H
    assert weight_format_of(h) == "mxfp4_moe"
    cfg = config_from_gguf(h)
    assert cfg["model_type"] == "gpt_oss" and cfg["num_local_experts"] == 4 and cfg["sliding_window"] == 8
    spec = spec_from_gguf(path)
    assert spec.moe is not None and spec.moe.num_experts == 4 and spec.moe.experts_per_token == 2
    assert count_params(spec).total == h.total_params


def test_gpt_oss_with_16_bit_attention_is_read_as_mxfp4_bf16(tmp_path):
    # Ollama's gpt-oss blobs (general.file_type 4, not a llama.h preset) and the converter's F16/BF16 output keep the
    # experts MXFP4 and the rest 16-bit: planned as mxfp4_bf16, not as an all-16-bit model 3x its size.
    from llmplan.formats.gguf_header import weight_format_of

    path = tmp_path / "ollama-gpt-oss.gguf"
    _write_gpt_oss(path, rest_16bit=True)
    h = read_gguf_header(path)
    assert set(h.params_by_type()) == {"MXFP4", "F16", "F32"}
    assert weight_format_of(h) == "mxfp4_bf16"
