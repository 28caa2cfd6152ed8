"""PEFT's ``target_modules`` per family (``core.lora_modules.peft_target_modules``): the names the modeling code gives
each projection's module, one name per module the estimate counts an adapter for.

Sources: huggingface/transformers v5.24.0 (the PyPI release, 2026), ``src/transformers/models/<family>/modeling_<family>
.py``: the decoder layer's attention and MLP attributes (``self_attn``, ``self_attention``, ``attention``, ``attn``;
``mlp``, or OPTDecoderLayer's own ``fc1``/``fc2``) and their nn.Linear / Conv1D / FalconLinear members; Qwen-1:
``modeling_qwen.py`` of the Qwen/Qwen-7B Hub repo (QWenBlock.attn: c_attn, c_proj; .mlp: w1, w2, c_proj with
``c_proj(w1(x) * silu(w2(x)))``). PEFT (huggingface/peft v0.21.2 ``tuners/tuners_utils.py``
``check_target_module_exists``) adapts a module whose dotted name equals or ends with ``.<entry>``. Names are exact
(string equality, no tolerance).

Checked beyond these tests on 2026-11-28 with torch 2.14.1 (CPU), transformers 5.24.0 and peft 0.21.2: every catalog
model transformers can build (all but Qwen-1) built on the meta device from its catalog config.json, PEFT's matching
run over its modules for six target sets: the matched modules' r · (in + out) equals ``lora_params`` exactly in all
516 cases; and tiny Phi-3, Pythia, Llama, GPT-2 and Gemma-3 configs through ``measure`` on the CPU: the PEFT model's
trainable parameters equal ``lora_params`` exactly.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.models import ModelEntry, load_model_catalog
from llmplan.core.lora_modules import MODULE_NAMES, PeftTargets, adapted_modules, peft_target_modules
from llmplan.core.model import FUSED_LINEARS
from llmplan.errors import InputError

ALL = ("q", "k", "v", "o", "gate", "up", "down")
ATTENTION = ("q", "k", "v", "o")
CATALOG = load_model_catalog(include_user=False)
LLAMA = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
         "mlp.up_proj", "mlp.down_proj")


@pytest.mark.parametrize(("model_id", "names"), [
    # Phi3Attention.qkv_proj, Phi3MLP.gate_up_proj (Phi-4 and Phi-4-mini are model_type phi3)
    ("microsoft/Phi-3-mini-4k-instruct", ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")),
    ("microsoft/phi-4", ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj")),
    # GPTNeoXLayer.attention (query_key_value, dense), GPTNeoXMLP (dense_h_to_4h, dense_4h_to_h)
    ("EleutherAI/pythia-1.4b", ("attention.query_key_value", "attention.dense", "mlp.dense_h_to_4h",
                                "mlp.dense_4h_to_h")),
    # BloomBlock / FalconDecoderLayer.self_attention, the same MLP names
    ("bigscience/bloom-560m", ("self_attention.query_key_value", "self_attention.dense", "mlp.dense_h_to_4h",
                               "mlp.dense_4h_to_h")),
    ("tiiuae/falcon-7b", ("self_attention.query_key_value", "self_attention.dense", "mlp.dense_h_to_4h",
                          "mlp.dense_4h_to_h")),
    # GPT2Block.attn (c_attn, c_proj: Conv1D), GPT2MLP (c_fc, c_proj); GPT-BigCode the same as nn.Linear
    ("openai-community/gpt2", ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")),
    ("bigcode/starcoderbase", ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")),
    ("Qwen/Qwen-7B", ("attn.c_attn", "attn.c_proj", "mlp.w2", "mlp.w1", "mlp.c_proj")),
    # Starcoder2Attention q/k/v/o_proj, Starcoder2MLP c_fc, c_proj
    ("bigcode/starcoder2-7b", (*LLAMA[:4], "mlp.c_fc", "mlp.c_proj")),
    # PhiAttention.dense, PhiMLP fc1/fc2; OPTAttention.out_proj, OPTDecoderLayer.fc1/fc2; GPTJ attn/out_proj, fc_in/out
    ("microsoft/phi-2", (*LLAMA[:3], "self_attn.dense", "mlp.fc1", "mlp.fc2")),
    ("facebook/opt-1.3b", (*LLAMA[:3], "self_attn.out_proj", "fc1", "fc2")),
    ("EleutherAI/gpt-j-6b", ("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj", "mlp.fc_in", "mlp.fc_out")),
    # Llama-style q/k/v/o_proj and gate/up/down_proj
    ("meta-llama/Llama-3.1-8B", LLAMA), ("mistralai/Mistral-7B-v0.1", LLAMA), ("Qwen/Qwen2.5-7B", LLAMA),
    ("Qwen/Qwen3-0.6B", LLAMA), ("google/gemma-2b", LLAMA), ("google/gemma-2-27b", LLAMA),
    ("google/gemma-3-1b-pt", LLAMA), ("google/gemma-3-12b-it", LLAMA), ("allenai/OLMo-2-1124-13B", LLAMA),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", LLAMA),
])
def test_each_familys_module_names(model_id, names):
    assert peft_target_modules(CATALOG.get(model_id).spec, ALL) == PeftTargets(names)


@pytest.mark.parametrize(("model_id", "names"), [
    ("mistralai/Mixtral-8x7B-v0.1", LLAMA[:4]), ("Qwen/Qwen1.5-MoE-A2.7B", LLAMA[:4]),
    ("Qwen/Qwen3-235B-A22B", LLAMA[:4]), ("openai/gpt-oss-120b", LLAMA[:4]),
    # latent attention: q_b_proj (or q_proj with no query compression), kv_b_proj; no v_proj to adapt
    ("deepseek-ai/DeepSeek-R1", ("self_attn.q_b_proj", "self_attn.kv_b_proj", "self_attn.o_proj")),
    ("deepseek-ai/DeepSeek-V2-Lite", ("self_attn.q_proj", "self_attn.kv_b_proj", "self_attn.o_proj")),
])
def test_mixtures_of_experts_adapt_their_attention(model_id, names):
    for experts in ("none", "target_parameters"):
        assert peft_target_modules(CATALOG.get(model_id).spec, ATTENTION, experts) == PeftTargets(names)


STACKED = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")


@pytest.mark.parametrize(("model_id", "experts", "targets"), [
    # transformers v5.24.0: MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock / GptOssMLP as the decoder layer's
    # ``mlp``, its ``experts`` holding gate_up_proj and down_proj as 3-D nn.Parameters; no Linear MLP beside them
    ("mistralai/Mixtral-8x7B-v0.1", "peft_converted", PeftTargets(LLAMA[:4], STACKED, ((STACKED[0], 2),))),
    ("mistralai/Mixtral-8x7B-v0.1", "target_parameters", PeftTargets(LLAMA[:4], STACKED)),
    ("mistralai/Mixtral-8x7B-v0.1", "none", PeftTargets(LLAMA[:4])),
    ("Qwen/Qwen3-235B-A22B", "peft_converted", PeftTargets(LLAMA[:4], STACKED, ((STACKED[0], 2),))),
    ("openai/gpt-oss-120b", "target_parameters", PeftTargets(LLAMA[:4], STACKED)),
    # Qwen2MoeSparseMoeBlock.shared_expert (Qwen2MoeMLP: Linear gate/up/down_proj) beside the stacked experts
    ("Qwen/Qwen1.5-MoE-A2.7B", "target_parameters",
     PeftTargets((*LLAMA[:4], "mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj",
                  "mlp.shared_expert.down_proj"), STACKED)),
    # DeepseekV3Attention q_b_proj, kv_b_proj, o_proj; PEFT's conversion takes every gate/up/down name, the dense
    # layers' and shared experts' too
    ("deepseek-ai/DeepSeek-R1", "peft_converted",
     PeftTargets(("self_attn.q_b_proj", "self_attn.kv_b_proj", "self_attn.o_proj"), STACKED, ((STACKED[0], 2),))),
])
def test_mixtures_of_experts_name_their_stacked_expert_parameters(model_id, experts, targets):
    assert peft_target_modules(CATALOG.get(model_id).spec, ALL, experts) == targets


def test_only_the_down_projection_needs_no_rank_pattern():
    m = CATALOG.get("Qwen/Qwen3-235B-A22B").spec
    assert peft_target_modules(m, ("q", "down"), "peft_converted") == PeftTargets(LLAMA[:1], STACKED[1:])


@pytest.mark.parametrize(("model_id", "experts", "targets", "words"), [
    ("mistralai/Mixtral-8x7B-v0.1", "per_expert_modules", ALL, "transformers 4 layout"),
    # PEFT >= 0.19 would turn DeepSeek's dense/shared gate_proj ... names into expert parameters
    ("deepseek-ai/DeepSeek-V2-Lite", "target_parameters", ("q", "down"), "lora_experts = peft_converted"),
    ("deepseek-ai/DeepSeek-V2-Lite", "none", ALL, "lora_experts = peft_converted"),
    # _convert_peft_config_moe: "Cannot convert PEFT target(s) gate_proj without also targeting up_proj"
    ("Qwen/Qwen3-235B-A22B", "peft_converted", ("q", "gate"), "gate and up together"),
])
def test_what_peft_cannot_build_on_a_mixture_of_experts_is_refused_with_the_fix(model_id, experts, targets, words):
    with pytest.raises(InputError, match=words):
        peft_target_modules(CATALOG.get(model_id).spec, targets, experts)


def test_every_catalog_model_maps_one_name_to_each_adapted_module():
    """One PEFT name per module the estimate counts (``adapted_modules``), distinct, for every dense catalog
    model; a mixture of experts' attention likewise (its MLP: the tests above)."""
    for entry in CATALOG.entries:
        m = entry.spec
        for targets in (ALL, ATTENTION, ("q",), ("v", "up"), ("down",)):
            if m.is_moe and not set(targets) <= set(ATTENTION):
                continue
            names = peft_target_modules(m, targets).modules
            assert len(names) == len(set(names)) == len(adapted_modules(m, targets)), (entry.id, targets)


def test_fused_projections_share_one_name_exactly_where_the_family_fuses_them():
    """The table agrees with ``FUSED_LINEARS``: q, k and v one name only in a 'qkv' family, gate and up one name
    only in a 'gate_up' family; and no name of one projection ends another's (PEFT matches by suffix)."""
    for family, names in MODULE_NAMES.items():
        fused = FUSED_LINEARS.get(family, ())
        assert (len({names[t] for t in ("q", "k", "v") if t in names}) == 1) == ("qkv" in fused), family
        if "gate" in names:
            assert (names["gate"] == names["up"]) == ("gate_up" in fused), family
        distinct = set(names.values())
        assert not [(a, b) for a in distinct for b in distinct if a != b and a.endswith("." + b)], family


def test_a_family_without_names_is_refused_with_the_fix():
    spec = CATALOG.get("meta-llama/Llama-3.1-8B").spec.model_copy(update={"model_type": "mamba"})
    with pytest.raises(InputError, match=r"model_type 'mamba'.*training\.method = full"):
        peft_target_modules(spec, ALL)


def test_a_fused_linears_override_its_family_code_does_not_have_is_refused():
    """A catalog entry that splits Phi-3's fused modules describes a layout Phi3Attention does not build: PEFT
    would adapt one qkv_proj where the estimate counts three adapters."""
    base = CATALOG.get("microsoft/Phi-3-mini-4k-instruct").model_dump(exclude={"user"})
    split = ModelEntry.model_validate({**base, "fused_linears": []}).spec
    with pytest.raises(InputError, match="fused_linears"):
        peft_target_modules(split, ALL)
