"""The measured host time of eager Hugging Face blocks (``core.training.host_time``): exact lookups, the
derived keys, where it applies, and its validation. The figures are the catalog's hf-trainer rows
(measured on an H200 machine's Xeon VM, torch 2.11 / transformers 5.17 / peft 0.21 / bitsandbytes 0.50.2,
2026-11-27: width-64 models, fastest step per configuration)."""

import pytest
from pydantic import ValidationError

from llmplan.catalog.frameworks import load_framework_profiles as load_frameworks
from llmplan.catalog.models import load_model_catalog
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.training.host_time import MEASURED_LORA_LINEARS, block_host_seconds, block_kind
from llmplan.core.workload import TrainingSettings

HF = load_frameworks()["hf-trainer"]
TABLE = dict(HF.block_host_s)
LLAMA = load_model_catalog().get("meta-llama/Llama-3.1-8B").spec  # q, k, v, gate and up as separate modules


def _tr(**kw):
    base = {"method": "lora", "regime": "amp", "recompute": "full", "zero_stage": 0, "liger": False,
            "torch_compile": False}
    return TrainingSettings(**{**base, **kw})


def test_a_measured_kind_is_read_as_is():
    assert block_host_seconds(_tr(), HF, LLAMA) == (TABLE["lora_recompute"], "lora with gradient checkpointing")
    assert block_host_seconds(_tr(method="full", regime="pure", recompute="none"), HF, LLAMA)[0] == TABLE["full_16bit"]
    assert block_host_seconds(_tr(method="full", recompute="none"), HF, LLAMA)[0] == TABLE["full_autocast"]


def test_a_missing_kind_takes_the_measured_recompute_ratio():
    ratio = (TABLE["full_autocast_recompute"] / TABLE["full_autocast"] + TABLE["lora_recompute"] / TABLE["lora"]) / 2
    assert block_host_seconds(_tr(method="full", regime="pure"), HF, LLAMA)[0] == pytest.approx(
        TABLE["full_16bit"] * ratio)
    assert block_host_seconds(_tr(method="qlora", recompute="none"), HF, LLAMA)[0] == pytest.approx(
        TABLE["qlora_recompute"] / ratio)
    assert 1.6 < ratio < 1.8  # the checkpointed block re-runs its forward and its hooks


def test_fewer_adapted_linears_scale_the_adapters_part():
    seconds, how = block_host_seconds(_tr(lora_targets=("q", "v"), recompute="none"), HF, LLAMA)
    adapters = TABLE["lora"] - TABLE["full_16bit"]
    assert seconds == pytest.approx(TABLE["lora"] - adapters * 5 / MEASURED_LORA_LINEARS)
    assert "2 of 7 linears adapted" in how


def test_a_fused_module_is_one_adapted_linear():
    """Phi-3's qkv_proj and gate_up_proj are one Linear module each (transformers modeling_phi3.py), so PEFT wraps
    four modules per block for all seven targets: the adapters' part scales by 4/7."""
    phi3 = load_model_catalog().get("microsoft/Phi-3-mini-4k-instruct").spec
    seconds, how = block_host_seconds(_tr(recompute="none"), HF, phi3)
    adapters = TABLE["lora"] - TABLE["full_16bit"]
    assert seconds == pytest.approx(TABLE["lora"] - adapters * 3 / MEASURED_LORA_LINEARS)
    assert "4 of 7 linears adapted" in how


@pytest.mark.parametrize("kw", [{"zero_stage": 3}, {"precision": "fp8", "method": "full"}, {"liger": True},
                                {"torch_compile": True}, {"method": "qlora", "quant_base": "gptq"}])
def test_kinds_never_measured_keep_the_kernel_count(kw):
    assert block_kind(_tr(**kw), HF) is None
    assert block_host_seconds(_tr(**kw), HF, LLAMA) is None


def test_profiles_without_the_table_keep_the_kernel_count():
    assert block_host_seconds(_tr(), FrameworkProfile(), LLAMA) is None
    assert not load_frameworks()["megatron"].block_host_s


@pytest.mark.parametrize("row", [("lora_fast", 1e-3), ("lora", 0.0), ("qlora", 0.5)])
def test_a_bad_row_is_refused_naming_the_kinds(row):
    with pytest.raises(ValidationError, match="block_host_s: each row is"):
        FrameworkProfile(block_host_s=(row,))


def test_the_hugging_face_configurations_share_the_measurement():
    """LLaMA-Factory and axolotl run the same modeling code and PEFT: the same rows."""
    fw = load_frameworks()
    assert fw["llama-factory"].block_host_s == fw["axolotl"].block_host_s == HF.block_host_s
