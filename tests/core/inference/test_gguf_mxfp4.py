"""llama.cpp's MXFP4 GGUF files of gpt-oss (the ``mxfp4_moe`` preset) against the sizes published for them.

What the files hold, from llama.cpp's code:
- ggml type MXFP4 (id 39): ``block_mxfp4`` = one E8M0 exponent byte + 16 bytes of E2M1 nibbles per 32 weights
  (ggml-common.h); the ``gguf`` package's ``GGML_QUANT_SIZES`` says (32, 17).
- conversion/gpt_oss.py (ggml-org/llama.cpp @2bbcf7fc): the released expert blocks and scales are repacked into
  MXFP4, bit for bit; conversion/base.py: 1-D tensors, ``ffn_gate_inp`` (the router) and every tensor whose name
  does not end in ``.weight`` (the expert biases) are F32.
- src/llama-quant.cpp (@007dbbf3), ``LLAMA_FTYPE_MOSTLY_MXFP4_MOE``: the output head Q8_0, 3-D expert tensors
  MXFP4, every other quantisable weight Q8_0.

Published sizes (GiB = 2^30 B as llama-bench prints the tensor data; GB = 10^9 B as the Hub prints files):
- ``gpt-oss 20B MXFP4 MoE | 11.27 GiB | 20.91 B``: llama-bench on an RTX PRO 6000 Blackwell, llama.cpp PR #16991
  ("CUDA: add stream-based concurrency", 2025-11).
- ``gpt-oss 120B MXFP4 MoE | 59.02 GiB | 116.83 B``: llama-bench, ROCm, llama.cpp PR #19922 (2026).
- lmstudio-community/gpt-oss-20b-GGUF ``gpt-oss-20b-MXFP4.gguf``: 12,109,565,632 bytes (docusealco/rllama
  lib/rllama/cli.rb @e8baf3b, its download list).
- ggml-org's and the other released gpt-oss GGUFs, 120B 63.4 GB and 20B 12.1 GB (AlexsJones/llmfit PR #1059,
  2026-09-19); bartowski/openai_gpt-oss-20b-GGUF ``MXFP4`` 12.1 GB (its model card, llama.cpp b6096).
- unsloth/gpt-oss-20b-GGUF ``gpt-oss-20b-F16.gguf`` 13.8 GB (Hub file list): the converter's F16 output, whose
  experts stay MXFP4 (repacked whatever --outtype), the rest F16 (same 13.8 GB: DevQuasar's f16 file, and
  ``total_size = 13.8G`` in a ``--outtype bf16`` conversion log, danbev/learning-ai notes/llama.cpp/gpt-oss.md):
  the ``mxfp4_bf16`` layout, which Ollama's library serves too (ollama/ollama issue #16416, below).
Tolerance: the tensor data exactly (the llama-bench figures to their printed 0.01 GiB); the files by their header,
13.0 MB for the 20B (the o200k tokenizer's 201,088 tokens, its merges and the chat template), and the Hub's 0.1 GB.
"""

import pytest

from llmplan.catalog.models import load_model_catalog
from llmplan.core.quant import parse_weight_format, quantized_weights
from llmplan.core.quant_ggml import GGML_TYPES

GIB = 2**30
HEADER_20B = 12_109_565_632 - 12_096_558_336  # the lmstudio-community file minus its tensor data


def _spec(model_id):
    return load_model_catalog().get(model_id).spec


def test_mxfp4_block_is_17_bytes_per_32_weights():
    gguf = pytest.importorskip("gguf")
    assert (GGML_TYPES["MXFP4"].block_size, GGML_TYPES["MXFP4"].type_size) == \
        gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.MXFP4] == (32, 17)
    assert GGML_TYPES["MXFP4"].bits_per_weight == 4.25
    fmt = parse_weight_format("mxfp4_moe")
    assert (fmt.kind, fmt.variant, fmt.gguf_is_preset) == ("gguf", "MXFP4_MOE", True)
    assert parse_weight_format("mxfp4").kind == "mxfp4"  # the safetensors release keeps its own name


@pytest.mark.parametrize(("model_id", "data_bytes", "llama_bench_gib"), [
    ("openai/gpt-oss-20b", 12_096_558_336, 11.27),
    ("openai/gpt-oss-120b", 63_374_323_968, 59.02),
])
def test_gpt_oss_mxfp4_moe_tensor_data_matches_llama_bench(model_id, data_bytes, llama_bench_gib):
    got = quantized_weights(_spec(model_id), "mxfp4_moe").total_bytes
    assert got == data_bytes  # worked out by hand from the tensor list above
    assert round(got / GIB, 2) == llama_bench_gib


def test_gpt_oss_tensor_types_follow_the_converter_and_llama_quant():
    by_name = {g.group.name: g.dtype for g in quantized_weights(_spec("openai/gpt-oss-20b"), "mxfp4_moe").groups}
    for name in ("moe.experts.gate_proj", "moe.experts.up_proj", "moe.experts.down_proj"):
        assert by_name[name] == "MXFP4"
    for name in ("embed_tokens", "lm_head", "attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.o_proj"):
        assert by_name[name] == "Q8_0"
    for name in ("moe.router", "moe.router.bias", "moe.experts.down_proj.bias", "attn.sinks", "attn.qkv.bias",
                 "block_norms", "final_norm"):
        assert by_name[name] == "F32"


def test_published_files_are_the_tensor_data_plus_the_header():
    data_20b = quantized_weights(_spec("openai/gpt-oss-20b"), "mxfp4_moe").total_bytes
    assert 0 < HEADER_20B < 16 * 2**20  # 13,007,296 B: the tokenizer and chat template, < 0.11% of the file
    assert round((data_20b + HEADER_20B) / 1e9, 1) == 12.1  # ggml-org, bartowski, LM Studio: 12.1 GB
    data_120b = quantized_weights(_spec("openai/gpt-oss-120b"), "mxfp4_moe").total_bytes
    assert round((data_120b + HEADER_20B) / 1e9, 1) == 63.4  # the same tokenizer in the 120B's header


def test_unsloth_f16_file_keeps_the_experts_in_mxfp4():
    # The converter repacks the released expert blocks whatever --outtype says; the rest follows F16 (or BF16, the
    # same bytes): mxfp4_bf16.
    q = quantized_weights(_spec("openai/gpt-oss-20b"), "mxfp4_bf16")
    assert q.total_bytes == 13_779_630_336
    assert round((q.total_bytes + HEADER_20B) / 1e9, 1) == 13.8
    assert {g.dtype for g in q.groups} == {"MXFP4", "BF16", "F32"}


def test_ollama_gpt_oss_120b_model_buffers_to_the_mib():
    # ollama/ollama issue #16416 (Ollama 0.30, 2026-06-02), llama.cpp's memory breakdown of gpt-oss:120b on one
    # ROCm GPU: model 61,223 MiB on the device, 1,104 MiB on the host (the input embedding, BF16). Whole MiB as
    # printed: the experts MXFP4, every other weight BF16, router, norms, biases and sinks F32.
    q = quantized_weights(_spec("openai/gpt-oss-120b"), "mxfp4_bf16")
    embedding = q.bytes_where(lambda g: g.name == "embed_tokens")
    assert int((q.total_bytes - embedding) / 2**20) == 61_223
    assert int(embedding / 2**20) == 1_104


def test_mxfp4_moe_on_a_dense_model_is_q8_0():
    # llama-quantize's MXFP4_MOE on a model without experts: no tensor has ne[2] > 1, every weight Q8_0.
    from llmplan.formats.hf_config import spec_from_config
    from tests.core.inference.models import LLAMA3_8B

    spec = spec_from_config(LLAMA3_8B)
    assert quantized_weights(spec, "mxfp4_moe").total_bytes == quantized_weights(spec, "q8_0").total_bytes
