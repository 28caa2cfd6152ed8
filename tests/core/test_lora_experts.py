"""LoRA on a mixture of experts' routed experts, each way ``training.lora_experts`` names (``core.lora_modules``).

Sources (read 2026-11-28): huggingface/transformers v5.24.0 (PyPI wheel) ``models/<family>/modeling_<family>.py``:
``MixtralExperts``, ``Qwen3MoeExperts``, ``DeepseekV3Experts`` hold ``gate_up_proj`` [E, 2F, H] and ``down_proj``
[E, H, F] as nn.Parameters, ``GptOssExperts`` [E, H, 2F] and [E, F, H] (``is_transposed``); DeepseekV3MoE keeps its
``shared_experts`` and the first dense layers' MLP as nn.Linear. huggingface/peft v0.21.2 (PyPI wheel)
``tuners/lora/layer.py`` ``ParamWrapper.update_layer``: ``lora_A`` = nn.Linear(in, r·E), ``lora_B`` =
nn.Linear(r·E, out) for a 3-D parameter, i.e. r·E·(in + out) parameters whichever of its last two axes is the input;
``utils/transformers_weight_conversion.py`` ``_convert_peft_config_moe``: under transformers 5, target_modules ending
in ``gate_proj``/``up_proj``/``down_proj`` (Mixtral: ``w1``/``w3``/``w2``) become target_parameters ``gate_up_proj``
(``rank_pattern`` 2r) and ``down_proj``, and leave target_modules. Counts are exact (integer equality), derived by hand
below from config.json shapes at rank 16 on q, k, v, o, gate, up and down. The estimate's other consumers of the count
(the search's shape, the checkpoint size) are checked to give the same number.

PEFT's own trainable-parameter count could not be compared here: this environment has no torch or peft.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.shape import model_shape
from llmplan.core.system.checkpoint import checkpoint_size
from llmplan.core.training.lora import adapter_params, merged_expert_bytes
from llmplan.core.training.ops import layer_gemms, layer_ops
from llmplan.core.workload import TrainingSettings
from llmplan.errors import InputError, PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.planfile import dumps_plan, loads_plan
from llmplan.plan.resolve import resolve

ALL = ("q", "k", "v", "o", "gate", "up", "down")
R = 16


def _scenario(model: str, experts: str, targets=ALL):
    doc = PlanDocument(name="t", model=ModelRef(id=model), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                       workload="finetune",
                       training=TrainingSettings(method="lora", lora_rank=R, lora_targets=targets,
                                                 lora_experts=experts))
    return resolve(doc)


def _count(model: str, experts: str, targets=ALL) -> float:
    sc = _scenario(model, experts, targets)
    pb = count_params(sc.model)
    n = adapter_params(pb, sc.model, None, sc.training)
    assert model_shape(sc.model, sc.training).trainable_params == n  # the search's quick model
    assert checkpoint_size(sc, pb).trainable_params.value == n  # the checkpoint
    return n


# Mixtral-8x7B: 32 layers, H 4096, q 32 × 128, k/v 8 × 128, 8 experts of F 14,336, no shared expert.
# Attention per layer: q (4096+4096) + k, v (4096+1024) each + o (4096+4096) = 26,624 per unit rank.
# per_expert_modules: 8 × 3 × (4096+14336) = 442,368; target_parameters: gate_up 8 × (4096+28672) = 262,144 and
# down 8 × (14336+4096) = 147,456; peft_converted: gate_up at 2r, 524,288 + 147,456.
MIXTRAL = {"none": 32 * R * 26_624, "per_expert_modules": 32 * R * (26_624 + 442_368),
           "target_parameters": 32 * R * (26_624 + 262_144 + 147_456),
           "peft_converted": 32 * R * (26_624 + 524_288 + 147_456)}
# Qwen3-30B-A3B: 48 layers, H 2048, q 32 × 128, k/v 4 × 128, 128 experts of F 768, every layer MoE.
# Attention: (2048+4096) + 2 × (2048+512) + (4096+2048) = 17,408. per_expert_modules: 128 × 3 × (2048+768)
# = 1,081,344; gate_up 128 × (2048+1536) = 458,752; down 128 × (768+2048) = 360,448.
QWEN3 = {"none": 48 * R * 17_408, "per_expert_modules": 48 * R * (17_408 + 1_081_344),
         "target_parameters": 48 * R * (17_408 + 458_752 + 360_448),
         "peft_converted": 48 * R * (17_408 + 2 * 458_752 + 360_448)}
# DeepSeek-V3: 61 layers (3 dense, 58 MoE), H 7168, MLA: q_b_proj 1536 -> 128 × 192, kv_b_proj 512 -> 128 × 256,
# o_proj 128 × 128 -> 7168: 26,112 + 33,280 + 23,552 = 82,944. Dense MLP (F 18,432): 3 × (7168+18432) = 76,800;
# one shared expert (F 2048): 3 × (7168+2048) = 27,648; 256 routed experts of F 2048: per_expert_modules
# 256 × 3 × 9216 = 7,077,888; gate_up 256 × (7168+4096) = 2,883,584; down 256 × 9216 = 2,359,296.
# peft_converted drops the dense and shared MLPs (their gate/up/down names became target_parameters).
_DS_LINEAR = 61 * 82_944 + 3 * 76_800 + 58 * 27_648
DEEPSEEK = {"none": R * _DS_LINEAR, "per_expert_modules": R * (_DS_LINEAR + 58 * 7_077_888),
            "target_parameters": R * (_DS_LINEAR + 58 * (2_883_584 + 2_359_296)),
            "peft_converted": R * (61 * 82_944 + 58 * (2 * 2_883_584 + 2_359_296))}
# gpt-oss-20b: 24 layers, H 2880, q 64 × 64, k/v 8 × 64, 32 experts of F 2880 (GptOssExperts, transposed).
# Attention: (2880+4096) + 2 × (2880+512) + (4096+2880) = 20,736. per_expert_modules: 32 × 3 × 5760 = 552,960;
# gate_up 32 × (2880+5760) = 276,480; down 32 × (2880+2880) = 184,320.
GPT_OSS = {"none": 24 * R * 20_736, "per_expert_modules": 24 * R * (20_736 + 552_960),
           "target_parameters": 24 * R * (20_736 + 276_480 + 184_320)}


@pytest.mark.parametrize(("model", "counts", "auto"), [
    ("mistralai/Mixtral-8x7B-v0.1", MIXTRAL, "peft_converted"), ("Qwen/Qwen3-30B-A3B", QWEN3, "peft_converted"),
    ("deepseek-ai/DeepSeek-V3", DEEPSEEK, "peft_converted"), ("openai/gpt-oss-20b", GPT_OSS, "none"),
])
def test_adapter_parameters_per_expert_layout(model, counts, auto):
    for experts, expected in counts.items():
        assert _count(model, experts) == expected, experts
    # "auto": PEFT converts Mixtral, Qwen3-MoE and DeepSeek-V3 names; gpt_oss has no conversion pattern
    assert _count(model, "auto") == counts[auto]


def test_published_totals():
    """The Mixtral and Qwen3 figures as numbers, for a reader comparing with PEFT's print_trainable_parameters."""
    assert (MIXTRAL["per_expert_modules"], MIXTRAL["target_parameters"], MIXTRAL["peft_converted"]) == (
        240_123_904, 223_346_688, 357_564_416)
    assert (QWEN3["none"], QWEN3["target_parameters"], QWEN3["peft_converted"]) == (
        13_369_344, 642_514_944, 994_836_480)


def test_a_conversion_on_a_family_peft_does_not_convert_is_refused():
    with pytest.raises(InputError, match=r"lora_experts.*'gpt_oss'"):
        _count("openai/gpt-oss-20b", "peft_converted")


def test_peft_refuses_a_converted_gate_without_its_up():
    with pytest.raises(InputError, match="gate and up together"):
        _count("Qwen/Qwen3-30B-A3B", "peft_converted", ("q", "v", "gate"))


# ---- what the stacked adapters cost beyond their parameters ----------------------------------------------------

def _lay(tp: int = 1, ep: int = 1):
    return SimpleNamespace(micro_batch=1, seq_len=2048, cp=1, ep=ep, tp=tp, sp=False, kv_replicated=False)


def _hf():
    return load_framework_profiles()["hf-trainer"]


def test_the_rebuilt_expert_stack_is_kept_for_the_backward():
    """Qwen3-30B-A3B, target_parameters on gate/up/down: PEFT's ParamWrapper builds W + s·B·A for both stacked
    parameters each forward and the experts' grouped matmuls keep it: 128 × (1536 × 2048 + 2048 × 768) weights
    = 603,979,776 per layer, 2 B each in bf16 = 1,207,959,552 B (1.125 GiB) per block, beside the saved
    activations; its gradient (the larger stack, gate_up: 128 × 1536 × 2048 × 2 B) is written in the backward."""
    sc = _scenario("Qwen/Qwen3-30B-A3B", "target_parameters")
    m, pb, tr = sc.model, count_params(sc.model), sc.training
    assert merged_expert_bytes(m, _lay(), tr) == 1_207_959_552
    assert merged_expert_bytes(m, _lay(), tr, largest=True) == 128 * 1536 * 2048 * 2
    assert merged_expert_bytes(m, _lay(ep=8), tr) == 1_207_959_552 / 8  # this GPU's experts only
    none = tr.model_copy(update={"lora_experts": "none"})
    assert merged_expert_bytes(m, _lay(), none) == 0.0
    saved = layer_ops(m, pb, _lay(), tr, _hf()).saved - layer_ops(m, pb, _lay(), none, _hf()).saved
    assert saved == pytest.approx(1_207_959_552, rel=1e-12)


def test_stacked_experts_compute_their_weight_gradient_and_rebuild_the_stack():
    """The experts' matmuls run on W + s·B·A, so their backward writes its full gradient (``trainable``); no adapter
    GEMM runs per token on them; one batched GEMM per stacked parameter rebuilds it: (out × r)·(r × in) for every
    expert, 2 · 128 · 1536 · 2048 · 16 FLOPs for Qwen3-30B-A3B's gate_up_proj (rank 2r = twice that, converted)."""
    sc = _scenario("Qwen/Qwen3-30B-A3B", "target_parameters")
    m, pb, tr = sc.model, count_params(sc.model), sc.training
    gemms = {g.name: g for g in layer_gemms(m, pb, _lay(), tr)}
    assert all(g.trainable for name, g in gemms.items() if name.startswith("moe.experts.") and "lora" not in name)
    assert not [n for n in gemms if n.startswith("moe.experts.") and n.endswith((".lora_A", ".lora_B"))]
    merge = gemms["moe.experts.gate_up_proj.lora_merge"]
    assert 2 * merge.m * merge.n * merge.k * merge.count == 2 * 128 * 1536 * 2048 * 16
    assert merge.group == 128 and merge.trainable
    down = gemms["moe.experts.down_proj.lora_merge"]
    assert (down.m, down.n, down.count) == (2048, 768, 128)
    converted = {g.name: g for g in layer_gemms(m, pb, _lay(), tr.model_copy(update={"lora_experts": "peft_converted"}))}
    assert converted["moe.experts.gate_up_proj.lora_merge"].count == 2 * 128


def test_per_expert_modules_keep_the_per_token_adapters_and_frozen_experts():
    sc = _scenario("Qwen/Qwen3-30B-A3B", "per_expert_modules")
    gemms = {g.name: g for g in layer_gemms(sc.model, count_params(sc.model), _lay(), sc.training)}
    assert not gemms["moe.experts.gate_proj"].trainable and "moe.experts.gate_proj.lora_A" in gemms
    assert not [n for n in gemms if n.endswith(".lora_merge")]
    assert merged_expert_bytes(sc.model, _lay(), sc.training) == 0.0


def test_qlora_leaves_transformers_5_stacked_experts_unquantised():
    """bitsandbytes quantises nn.Linear weights only (transformers v5.24.0 ``replace_with_bnb_linear``,
    ``Bnb4BitHfQuantizer.param_needs_quantization``), and PEFT's ``prepare_model_for_kbit_training`` (peft v0.21.2
    ``utils/other.py``) casts every 16-bit parameter that is not a Params4bit to fp32, as the Hugging Face profile
    does. Qwen3-30B-A3B's routed experts, 48 × 128 × 3 × 768 × 2048 = 28,991,029,248 weights, therefore take 4 B each
    under transformers 5 instead of NF4's 4 + 8/64 + 32/(64·256) bits (double quantisation) under transformers 4:
    101,008,539,648 B more frozen weights. Adapters on the attention only, so both hold the same adapters. Exact."""
    weights = {}
    for experts in ("per_expert_modules", "none"):
        doc = PlanDocument(name="t", model=ModelRef(id="Qwen/Qwen3-30B-A3B"),
                           hardware=HardwareRef(gpu="nvidia-h200-sxm-141gb"), workload="finetune",
                           training=TrainingSettings(method="qlora", lora_rank=R, lora_targets=("q", "k", "v", "o"),
                                                     lora_experts=experts))
        weights[experts] = estimate(resolve(doc)).memory.weights.value
    routed = 48 * 128 * 3 * 768 * 2048
    assert routed == 28_991_029_248
    nf4 = (4 + 8 / 64 + 32 / (64 * 256)) / 8
    assert weights["none"] - weights["per_expert_modules"] == pytest.approx(routed * (4 - nf4), rel=1e-12)


def test_plans_without_the_field_load_as_auto_and_a_bad_value_names_the_choices():
    """A plan saved before the field (schema 5 has it optional) loads unchanged and is written back without it;
    a wrong value is a field error listing the valid ones."""
    old = {"format": "llmplan", "schema_version": 5, "model": {"id": "mistralai/Mixtral-8x7B-v0.1"},
           "workload": "finetune", "training": {"method": "lora", "lora_rank": 8}}
    doc = loads_plan(json.dumps(old))
    assert doc.training.lora_experts == "auto"
    assert "lora_experts" not in dumps_plan(doc)
    old["training"]["lora_experts"] = "experts"
    with pytest.raises(PlanFileError, match=r"training\.lora_experts: input should be 'auto', 'none', "
                                            r"'per_expert_modules', 'target_parameters' or 'peft_converted'"):
        loads_plan(json.dumps(old))


def test_dropout_on_stacked_expert_adapters_resolves_to_zero_on_auto_and_is_refused_when_stated():
    """PEFT's ParamWrapper raises for lora_dropout > 0: peft 0.21.2 (PyPI wheel) peft/tuners/lora/layer.py,
    ParamWrapper.__init__ and update_layer, ``raise ValueError("lora.ParamWrapper does not work with lora_dropout !=
    0.")``, read 2026-11-28. The default LoRA plan on an MoE model (Hugging Face profile, dropout 0.05 on auto, the
    experts reached as stacked parameters) was one PEFT refuses, with a warning (new-user trial, round 31, row 15).
    Auto now resolves to 0 there, and a stated dropout above 0 is a field error naming both fixes. Exact values."""
    from llmplan.errors import PlanFileError

    assert _scenario("Qwen/Qwen3-30B-A3B", "target_parameters").training.lora_dropout == 0.0
    assert _scenario("Qwen/Qwen3-30B-A3B", "auto").training.lora_dropout == 0.0  # auto: peft_converted, stacked too
    assert _scenario("Qwen/Qwen3-30B-A3B", "none").training.lora_dropout == 0.05  # no ParamWrapper: the profile's
    assert _scenario("Qwen/Qwen3-30B-A3B", "target_parameters", ("q", "v")).training.lora_dropout == 0.05
    assert _scenario("meta-llama/Meta-Llama-3-8B", "auto").training.lora_dropout == 0.05  # dense
    doc = PlanDocument(name="t", model=ModelRef(id="Qwen/Qwen3-30B-A3B"), workload="finetune",
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                       training=TrainingSettings(method="lora", lora_dropout=0.05))
    with pytest.raises(PlanFileError, match=r"^training\.lora_dropout: PEFT's ParamWrapper .* set it to 0 or "
                                            r"training\.lora_experts = none$"):
        resolve(doc)
    ok = doc.model_copy(update={"training": doc.training.model_copy(update={"lora_experts": "none"})})
    assert resolve(ok).training.lora_dropout == 0.05
    assert not any("PEFT refuses" in w for w in estimate(_scenario("Qwen/Qwen3-30B-A3B", "auto")).warnings)
