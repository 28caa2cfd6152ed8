"""Non-GGUF weight formats: bytes from each quantizer's storage layout.

References: QLoRA (Dettmers et al. 2023) §3 "Double Quantization": 32/64 = 0.5 bits per parameter of
absmax constants without it, 8/64 + 32/(64·256) = 0.127 bits with it. GPTQ/AWQ layouts: AutoGPTQ /
AutoAWQ tensors (qweight, qzeros, scales, g_idx). No published GPTQ/AWQ checkpoint size could be
sourced with the search tools in this session, so these formats are checked against their layout
arithmetic only (exact), not against a real file.
"""

import pytest

from llmplan.core.quant import known_formats, parse_weight_format, quantized_weights
from llmplan.errors import InputError
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.models import LLAMA3_8B

SPEC = spec_from_config(LLAMA3_8B)
LINEAR = sum(g.group.params for g in quantized_weights(SPEC, "bf16").groups
             if g.group.category in ("attention", "mlp") and len(g.group.shape) == 2)
OTHER = quantized_weights(SPEC, "bf16").total_bytes - 2 * LINEAR


def test_bf16_is_the_checkpoint():
    assert quantized_weights(SPEC, "bf16").total_bytes == 16_060_522_496  # safetensors total_size
    assert quantized_weights(SPEC, "fp32").total_bytes == 2 * 16_060_522_496


def test_nf4_double_quant_overhead_matches_qlora():
    dq = quantized_weights(SPEC, "nf4").total_bytes - OTHER
    no_dq = quantized_weights(SPEC, "nf4-nodq").total_bytes - OTHER
    assert 8 * dq / LINEAR == pytest.approx(4.127, abs=0.001)
    assert 8 * no_dq / LINEAR == pytest.approx(4.5, abs=0.001)


def test_gptq_and_awq_layout():
    # int4 weights + per 128-input group: fp16 scale (16 bits) + 4-bit zero = 20/128 bits; GPTQ adds g_idx.
    awq = quantized_weights(SPEC, "awq-4bit").total_bytes - OTHER
    assert 8 * awq / LINEAR == pytest.approx(4 + 20 / 128, abs=0.001)
    gptq = quantized_weights(SPEC, "gptq-4bit").total_bytes - OTHER
    assert gptq > awq
    assert quantized_weights(SPEC, "gptq-4bit-g32").total_bytes > quantized_weights(SPEC, "gptq-4bit").total_bytes


def test_fp8_keeps_head_and_embeddings_wide():
    fp8 = quantized_weights(SPEC, "fp8")
    head = next(g for g in fp8.groups if g.group.name == "lm_head")
    assert head.dtype == "bf16"
    assert fp8.total_bytes == pytest.approx(LINEAR + OTHER, rel=1e-4)  # + one fp32 scale per tensor
    assert quantized_weights(SPEC, "fp8-channel").total_bytes > fp8.total_bytes


def test_mlx_quantizes_embeddings_too():
    mlx = quantized_weights(SPEC, "mlx-4bit")
    assert mlx.bits_per_weight == pytest.approx(4.5, abs=0.01)  # 4 bits + (16 + 16) / 64
    assert quantized_weights(SPEC, "mlx-8bit").bits_per_weight == pytest.approx(8.5, abs=0.01)


def test_every_known_format_parses_and_prices():
    for name in known_formats():
        q = quantized_weights(SPEC, name)
        assert 1.0 < q.bits_per_weight < 33, name


@pytest.mark.parametrize("bad", ["int5", "gptq-5bit", "awq-3bit", "q4_k_x", ""])
def test_unknown_formats_are_clear_errors(bad):
    with pytest.raises(InputError, match=r"weight_format|GGUF|supports"):
        parse_weight_format(bad)


def test_compute_dtypes():
    assert parse_weight_format("fp8").compute_dtype == "fp8"
    assert parse_weight_format("w8a8").compute_dtype == "int8"
    assert parse_weight_format("awq-4bit").compute_dtype == "fp16"
    assert parse_weight_format("q4_k_m").compute_dtype == "fp16"


def test_mxfp4_is_gpt_oss_as_released():
    """gpt-oss ships its routed experts in MXFP4 (OCP MX v1.0: FP4 E2M1 + one E8M0 scale per 32 = 4.25 bits) and
    everything else in bf16 (config.json quantization_config, modules_to_not_convert). The model card gives the
    checkpoint sizes: 12.8 GiB (gpt-oss-20b) and 60.8 GiB (gpt-oss-120b) (OpenAI, "gpt-oss-120b & gpt-oss-20b
    Model Card", arXiv:2508.10925, 2025-08, Table 1); tolerance: the card's one decimal. Without the format a
    hobbyist asking about gpt-oss-20b on a 24 GB card got bf16 (39 GiB) and an offload verdict."""
    from llmplan.catalog.models import load_model_catalog

    catalog = load_model_catalog()
    for model_id, card_gib in (("openai/gpt-oss-20b", 12.8), ("openai/gpt-oss-120b", 60.8)):
        q = quantized_weights(catalog.get(model_id).spec, "mxfp4")
        assert q.total_bytes / 2**30 == pytest.approx(card_gib, abs=0.05)
    dense = quantized_weights(spec_from_config(LLAMA3_8B), "mxfp4")  # no experts: nothing to convert
    assert dense.total_bytes == quantized_weights(spec_from_config(LLAMA3_8B), "bf16").total_bytes


def test_a_hub_config_quantised_to_mxfp4_reads_as_mxfp4():
    from llmplan.plan.hub_plan import safetensors_weight_format

    assert safetensors_weight_format({"quantization_config": {"quant_method": "mxfp4"}}) == "mxfp4"
