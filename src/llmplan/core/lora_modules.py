"""Which Linear modules LoRA adapts: PEFT adds one adapter per module it targets.

PEFT (huggingface/peft ``tuners/lora/model.py``: ``_create_and_replace`` wraps each module whose name matches
``target_modules`` in a ``LoraLayer``; ``tuners/lora/layer.py`` ``update_layer``: ``lora_A`` = nn.Linear(in_features,
r), ``lora_B`` = nn.Linear(r, out_features)) gives every targeted module one A (r × in) and one B (out × r), on the
module's whole weight: it cannot adapt part of a Linear. A checkpoint that stores several projections as one module
(``ModelSpec.fused``: Qwen-1's ``c_attn``, Phi-3's ``qkv_proj`` and ``gate_up_proj``, GPT-NeoX's ``query_key_value``
...) therefore gets one adapter there where separate projections would get one each: Qwen-7B's c_attn (4096 →
12,288) takes r · (4096 + 12,288) parameters, not 3 · r · (4096 + 4096).

llmplan names LoRA targets by projection (``training.lora_targets``: q, k, v, o, gate, up, down); a target that
names any projection of a fused module adapts the whole module, once. Everything that depends on how many adapters
there are reads it from here: the trainable parameters, gradients and optimizer states (``bytes_per_param.lora_params``),
the adapter GEMMs and their launches (``training.ops.layer_gemms``), the adapters' pointwise work and saved inputs
(``training.ops``), their activations (``training.memory.lora_activation_bytes``) and the measured host time's
share of adapted linears (``training.host_time``). ``peft_target_modules`` names the same modules the way the
checkpoint's modeling code does, for PEFT's ``target_modules`` (``llmplan-cli measure``).

A mixture of experts' routed experts (``training.lora_experts``, resolved by ``expert_adapters``) are reached one
of four ways (huggingface/transformers v5.24.0, huggingface/peft v0.21.2; docs/fine-tuning-frameworks.md):

- ``per_expert_modules``: transformers 4 kept each expert's projections as nn.Linear modules
  (``experts.N.gate_proj``, Mixtral's ``experts.N.w1``), so ``target_modules`` gave every expert its own adapter
  per projection: r·(in + out) per expert and projection.
- ``target_parameters``: transformers 5 keeps a layer's experts as one 3-D nn.Parameter per projection
  (``MixtralExperts``, ``Qwen3MoeExperts``, ``DeepseekV3Experts``: ``gate_up_proj`` [E, 2F, H], ``down_proj``
  [E, H, F]; ``GptOssExperts`` transposed: [E, H, 2F], [E, F, H]), which no ``target_modules`` entry reaches.
  PEFT's ``target_parameters`` wraps each in a ``ParamWrapper`` (peft ``tuners/lora/layer.py``): ``lora_A`` =
  nn.Linear(in, r·E), ``lora_B`` = nn.Linear(r·E, out), a rank-r pair per expert, r·E·(in + out) per stacked
  parameter; gate and up share one adapter because they are one parameter. Each forward adds the product to the
  whole stack (``_LoraFactorsProxy``: one ``baddbmm``, W + s·B·A for all E experts, whichever the tokens use; peft
  before 0.21.2 built the delta first, ``get_delta_weight``) and the experts' matmuls run on that copy, so it is
  kept for their backward, which computes its full gradient (``training.ops.layer_gemms``,
  ``training.lora.merged_expert_bytes``).
- ``peft_converted``: under transformers 5, PEFT >= 0.19 rewrites ``target_modules`` entries ending in the
  transformers 4 expert names (``utils/transformers_weight_conversion.py`` ``_convert_peft_config_moe``;
  ``gate_proj``/``up_proj``/``down_proj`` on the Qwen2-MoE pattern, Mixtral's ``w1``/``w3``/``w2``) into
  ``target_parameters`` ``gate_up_proj`` and ``down_proj``, with ``rank_pattern`` 2r (and ``alpha_pattern`` 2α) on
  ``gate_up_proj`` because two adapters became one; the names leave ``target_modules``, so the Linear MLPs of
  dense layers and shared experts are no longer adapted; a gate without its up (or the reverse) is refused.
  ``lora_modules`` counts the rank-2r adapter as two rank-r ones (``copies_per_layer`` and ``count`` doubled):
  the same parameters, gradients and FLOPs.
- ``none``: routed experts not adapted (transformers 5 with PEFT before 0.19, or a family PEFT does not convert:
  gpt-oss, Qwen2-MoE); the Linear MLPs of dense layers and shared experts keep their adapters.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup
from llmplan.errors import InputError

__all__ = ["EXPERT_LAYOUTS", "LORA_TARGET_OF", "MODULE_NAMES", "PEFT_CONVERTS", "PeftTargets", "adapted_modules",
           "expert_adapters", "lora_modules", "peft_target_modules", "stacked_expert_params"]

# the last component of a tensor name -> the LoRA target name people use (PEFT's module names)
LORA_TARGET_OF = {
    "q_proj": "q", "q_b_proj": "q", "k_proj": "k", "kv_b_proj": "k", "v_proj": "v", "o_proj": "o",
    "gate_proj": "gate", "up_proj": "up", "down_proj": "down",
}

_CACHE = IdentityCache(64)

EXPERT_LAYOUTS = ("none", "per_expert_modules", "target_parameters", "peft_converted")
_STACKED = ("target_parameters", "peft_converted")

# model_types whose transformers 4 MLP names PEFT rewrites into target_parameters under transformers 5: the keys of
# transformers v5.24.0 ``conversion_mapping._MODEL_TO_CONVERSION_PATTERN`` whose pattern is "mixtral" or
# "qwen2_moe", plus "mixtral", which peft v0.21.2 ``utils/transformers_weight_conversion.py`` adds itself.
# "qwen2_moe" is a pattern there but not a key, so PEFT leaves Qwen1.5-MoE and Qwen2-MoE plans alone; gpt_oss has
# no pattern (its experts were 3-D parameters already in transformers 4).
PEFT_CONVERTS = frozenset({
    "mixtral", "minimax", "minimax_m2", "deepseek_v2", "deepseek_v3", "deepseek_v32", "dots1", "ernie4_5_moe",
    "glm4_moe", "glm4_moe_lite", "glm4v_moe", "glm_moe_dsa", "longcat_flash", "solar_open", "mellum", "qwen3_moe",
    "beam", "qwen3_omni_moe", "qwen3_omni_moe_thinker", "qwen3_omni_moe_text", "qwen3_next", "hunyuan_v1_moe",
    "flex_olmo", "olmoe", "sarvam_mla", "exaone_moe", "cohere2_moe", "afmoe"})


def expert_adapters(m: ModelSpec, choice: str) -> str:
    """How LoRA reaches ``m``'s routed experts for ``training.lora_experts`` = ``choice`` (module doc): "none"
    for a dense model; "auto" is what transformers 5 and PEFT >= 0.19 do with module names: "peft_converted" on
    the families PEFT converts (``PEFT_CONVERTS``), "none" on the others. "peft_converted" on another family is
    refused (InputError): PEFT converts nothing there."""
    if not m.is_moe:
        return "none"
    if choice == "auto":
        return "peft_converted" if m.model_type in PEFT_CONVERTS else "none"
    if choice == "peft_converted" and m.model_type not in PEFT_CONVERTS:
        raise InputError(f"training.lora_experts: PEFT converts the MLP target names of transformers 4 MoE families "
                         f"only, not '{m.model_type}' models ({m.name}); choose target_parameters, none or "
                         "per_expert_modules")
    return choice


def _adaptable(g: TensorGroup) -> bool:
    """A 2-D weight inside the blocks that a target name reaches (routed experts included: ``lora_modules`` says
    how they are adapted); MTP modules are not loaded for fine-tuning."""
    return (g.place == "layer" and len(g.shape) == 2 and g.category != "mtp" and not g.name.endswith(".bias")
            and g.name.rsplit(".", 1)[-1] in LORA_TARGET_OF)


def lora_modules(pb: ParamBreakdown, targets: tuple[str, ...],
                 experts: str = "per_expert_modules") -> tuple[TensorGroup, ...]:
    """The modules LoRA adapts for ``targets``, each as one tensor group of the module's whole weight (out × in):
    the tensors of one fused module (``TensorGroup.module``) merged into one, their output widths added. A module
    is adapted when any projection it holds is targeted. ``experts``: how the routed experts are reached
    (``expert_adapters``; module doc): as their own modules, as stacked parameters (``<prefix>.gate_up_proj``
    holding gate and up, and ``down_proj``, ``copies_per_layer`` the experts), or not at all. Cached per breakdown
    object, target tuple and layout."""
    hit = _CACHE.get((pb,), (targets, experts))
    if hit is not None:
        return hit
    members: dict[str, list[TensorGroup]] = {}
    for g in pb.groups:
        if not _adaptable(g):
            continue
        if g.category == "expert" and experts != "per_expert_modules":
            if experts in _STACKED:  # one 3-D parameter holds every expert's gate and up, another the downs
                prefix, proj = g.name.rsplit(".", 1)
                members.setdefault(g.name if proj == "down_proj" else prefix + ".gate_up_proj", []).append(g)
            continue
        if experts == "peft_converted" and g.category in ("mlp", "shared_expert"):
            continue  # their module names became target_parameters
        members.setdefault(g.module or g.name, []).append(g)
    out: list[TensorGroup] = []
    for name, gs in members.items():
        hit_targets = {LORA_TARGET_OF[g.name.rsplit(".", 1)[-1]] for g in gs} & set(targets)
        if not hit_targets:
            continue
        first = gs[0]
        double = experts == "peft_converted" and first.category == "expert" and len(gs) > 1
        if double and len(hit_targets) == 1:
            raise InputError(f"training.lora_targets: PEFT (>= 0.19, under transformers 5) refuses to adapt the "
                             f"experts' {hit_targets.pop()} without the other half of gate_up_proj, which holds "
                             "both; target gate and up together, or set training.lora_experts")
        if len(gs) == 1:
            out.append(first)
            continue
        if any(g.shape[1] != first.shape[1] or g.count != first.count or g.tp_split != first.tp_split for g in gs):
            raise ValueError(f"{name}: the projections fused into one module must share their input and split")
        k = 2 if double else 1  # PEFT's rank_pattern 2r on a converted gate_up_proj: two rank-r adapters' worth
        out.append(TensorGroup(name, (sum(g.shape[0] for g in gs), first.shape[1]), first.count * k, first.category,
                               first.tp_split, first.place, first.layer_kind, first.copies_per_layer * k, name))
    return _CACHE.put((pb,), (targets, experts), tuple(out))


def adapted_modules(m: ModelSpec, targets: tuple[str, ...],
                    experts: str = "per_expert_modules") -> tuple[tuple[str, ...], ...]:
    """The modules of one block that LoRA adapts token by token, each as the projections (target names) it holds,
    in block order: q, k and v one module where the checkpoint fuses them (``ModelSpec.fused``), else one each; o;
    the MLP's gate and up likewise, and down. Projections the block does not have are left out (a plain MLP has no
    gate; latent attention no v_proj: its ``kv_b_proj`` is what "k" reaches). On a mixture of experts whose routed
    experts are stacked parameters or not adapted (``experts``, ``expert_adapters``), the MLP's adapters run per
    token only on its shared experts (none under "peft_converted"); the stacked experts' adapters are folded into
    their weights instead (``lora_modules``). The count per block of a model's adapters is ``len`` of this."""
    attn = ("q", "k") if m.mla else ("q", "k", "v")
    mlp = ("gate", "up") if m.gated_mlp else ("up",)
    mods: list[tuple[str, ...]] = [attn] if "qkv" in m.fused else [(t,) for t in attn]
    mods.append(("o",))
    linear_mlp = (not m.is_moe or experts == "per_expert_modules"
                  or (experts != "peft_converted" and m.moe is not None and m.moe.num_shared_experts > 0))
    if linear_mlp:
        mods += [mlp] if "gate_up" in m.fused else [(t,) for t in mlp]
        mods.append(("down",))
    return tuple(mod for mod in mods if any(t in targets for t in mod))


def stacked_expert_params(m: ModelSpec, targets: tuple[str, ...], experts: str) -> int:
    """How many stacked expert parameters of one MoE block PEFT wraps (a ``ParamWrapper`` each): gate_up_proj
    when gate or up is targeted, down_proj when down is; 0 unless the experts are reached as stacked
    parameters (``experts``: "target_parameters" or "peft_converted")."""
    if not m.is_moe or experts not in _STACKED:
        return 0
    return int("gate" in targets or "up" in targets) + int("down" in targets)


# Each projection's Linear module in one decoder block, by model_type, as ``block.<attribute>.<attribute>`` in the
# family's modeling code: huggingface/transformers v5.24.0 src/transformers/models/<family>/modeling_<family>.py (the
# decoder layer's attention and MLP attributes and their nn.Linear / Conv1D / FalconLinear members), and for Qwen-1
# (no built-in class) modeling_qwen.py of the Qwen/Qwen-7B Hub repo (QWenBlock.attn, .mlp; QWenMLP computes
# ``c_proj(w1(x) * silu(w2(x)))``: w2 is the gate). Two projections share a name where the code fuses them, as
# ``core.model.FUSED_LINEARS`` says. The name keeps its parent attribute: PEFT matches a ``target_modules`` entry
# against the end of each module's dotted name, and GPT-2's, StarCoder's and Qwen-1's ``c_proj`` is both the
# attention output and the MLP's down projection.
_LLAMA = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
          "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
_NEOX_MLP = {"up": "mlp.dense_h_to_4h", "down": "mlp.dense_4h_to_h"}
_BLOOM = {"q": "self_attention.query_key_value", "k": "self_attention.query_key_value",
          "v": "self_attention.query_key_value", "o": "self_attention.dense", **_NEOX_MLP}  # Falcon's too
_GPT2 = {"q": "attn.c_attn", "k": "attn.c_attn", "v": "attn.c_attn", "o": "attn.c_proj", "up": "mlp.c_fc",
         "down": "mlp.c_proj"}  # GPT-2's are Conv1D; GPT-BigCode's (StarCoder) nn.Linear, named the same
_DEEPSEEK = {**_LLAMA, "q": "self_attn.q_b_proj", "k": "self_attn.kv_b_proj"}  # MLA: see peft_target_modules
_ATTN = {t: _LLAMA[t] for t in ("q", "k", "v")}
MODULE_NAMES: dict[str, dict[str, str]] = {
    **dict.fromkeys(("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2",
                     "gemma3", "gemma3_text", "mistral3", "olmo2", "gpt_oss"), _LLAMA),
    "deepseek_v2": _DEEPSEEK, "deepseek_v3": _DEEPSEEK,
    "phi3": {"q": "self_attn.qkv_proj", "k": "self_attn.qkv_proj", "v": "self_attn.qkv_proj",
             "o": "self_attn.o_proj", "gate": "mlp.gate_up_proj", "up": "mlp.gate_up_proj", "down": "mlp.down_proj"},
    "gpt_neox": {"q": "attention.query_key_value", "k": "attention.query_key_value",
                 "v": "attention.query_key_value", "o": "attention.dense", **_NEOX_MLP},
    "bloom": _BLOOM, "falcon": _BLOOM, "gpt2": _GPT2, "gpt_bigcode": _GPT2,
    "qwen": {**_GPT2, "gate": "mlp.w2", "up": "mlp.w1"},
    "starcoder2": {**_LLAMA, "up": "mlp.c_fc", "down": "mlp.c_proj"},
    "phi": {**_ATTN, "o": "self_attn.dense", "up": "mlp.fc1", "down": "mlp.fc2"},
    "opt": {**_ATTN, "o": "self_attn.out_proj", "up": "fc1", "down": "fc2"},  # OPTDecoderLayer holds fc1, fc2
    "gptj": {"q": "attn.q_proj", "k": "attn.k_proj", "v": "attn.v_proj", "o": "attn.out_proj", "up": "mlp.fc_in",
             "down": "mlp.fc_out"},
}


@dataclass(frozen=True)
class PeftTargets:
    """What PEFT's LoraConfig needs to adapt what the estimate counts: ``modules`` (``target_modules``),
    ``parameters`` (``target_parameters``) and ``rank_factors`` (parameter name, factor: PEFT's ``rank_pattern``
    and ``alpha_pattern`` at that multiple of r and alpha)."""

    modules: tuple[str, ...]
    parameters: tuple[str, ...] = ()
    rank_factors: tuple[tuple[str, int], ...] = ()


# The stacked routed-expert parameters of a transformers 5 MoE block (MixtralExperts, Qwen2MoeExperts,
# Qwen3MoeExperts, DeepseekV2Experts, DeepseekV3Experts, GptOssExperts: ``<family>SparseMoeBlock.experts`` or
# GptOssMLP.experts, each the decoder layer's ``mlp``), and the Linear shared experts of the families that have them
# (DeepseekV2/V3MoE.shared_experts, Qwen2MoeSparseMoeBlock.shared_expert).
_EXPERT_PARAMS = {"gate": "mlp.experts.gate_up_proj", "up": "mlp.experts.gate_up_proj", "down": "mlp.experts.down_proj"}
_SHARED = {"deepseek_v2": "mlp.shared_experts", "deepseek_v3": "mlp.shared_experts", "qwen2_moe": "mlp.shared_expert"}


def peft_target_modules(m: ModelSpec, targets: tuple[str, ...], experts: str = "none") -> PeftTargets:
    """PEFT's targets for LoRA on ``targets`` under transformers 5: one ``target_modules`` name per module
    ``adapted_modules`` counts, in its order, and on a mixture of experts the shared experts' Linear modules and
    the stacked expert parameters ``lora_modules`` counts for ``experts`` (``expert_adapters``), so PEFT adapts
    exactly what the estimate counts. Latent attention's "q" is ``q_b_proj``, or ``q_proj`` where the model has
    no query compression (DeepSeek-V2-Lite: DeepseekV2Attention builds q_proj when ``q_lora_rank`` is None).
    Refused (InputError, saying what to do): a model_type without an entry; "per_expert_modules", the
    transformers 4 layout, which transformers 5 cannot build; MLP targets with Linear MLPs (dense layers, shared
    experts) on a family PEFT converts (``PEFT_CONVERTS``) unless "peft_converted": PEFT >= 0.19 would turn their
    names into expert parameters; and a spec whose ``fused_linears`` disagrees with its family's modules."""
    names = MODULE_NAMES.get(m.model_type)
    if names is None:
        raise InputError(f"llmplan does not know the module names of model_type '{m.model_type}' "
                         f"(it knows {', '.join(sorted(MODULE_NAMES))}), so it cannot tell PEFT which modules "
                         "LoRA adapts; measure this model with training.method = full")
    mlp_targets = [t for t in ("gate", "up", "down") if t in targets]
    if m.is_moe and mlp_targets:
        if experts == "per_expert_modules":
            raise InputError(f"{m.name}: training.lora_experts = per_expert_modules is the transformers 4 layout "
                             "(each expert an nn.Linear); transformers 5 keeps the routed experts as stacked "
                             "parameters: measure with target_parameters, peft_converted or none")
        linear_mlp = m.dense_layer_count > 0 or (m.moe is not None and m.moe.num_shared_experts > 0)
        if experts != "peft_converted" and linear_mlp and m.model_type in PEFT_CONVERTS:
            raise InputError(f"{m.name}: PEFT (>= 0.19, under transformers 5) turns gate/up/down module names of a "
                             f"'{m.model_type}' model into expert parameters, so its dense and shared-expert MLPs "
                             "cannot be adapted as modules; measure with training.lora_experts = peft_converted, "
                             "or LoRA on the attention only (training.lora_targets = q, k, v, o)")
    if m.mla and m.mla.q_lora_rank is None:
        names = {**names, "q": "self_attn.q_proj"}
    out: list[str] = []
    for mod in adapted_modules(m, targets):  # every projection's module; a MoE model's MLP names mapped below
        found = {names[t] for t in mod}
        if len(found) != 1 or found <= set(out):
            raise InputError(f"{m.name}: its fused_linears ({', '.join(m.fused) or 'none'}) disagree with the "
                             f"modules of '{m.model_type}' models ({', '.join(sorted(found))}); remove the override")
        name = found.pop()
        if m.is_moe and name.startswith("mlp."):  # a MoE model's Linear MLPs: dense layers, shared experts
            if experts == "peft_converted":
                continue
            shared = _SHARED.get(m.model_type)
            if m.dense_layer_count:
                out.append(name)
            if shared and m.moe is not None and m.moe.num_shared_experts:
                out.append(f"{shared}.{name.split('.', 1)[1]}")
            continue
        out.append(name)
    if not m.is_moe or experts not in _STACKED:
        return PeftTargets(tuple(out))
    params = tuple(dict.fromkeys(_EXPERT_PARAMS[t] for t in mlp_targets))
    factors: tuple[tuple[str, int], ...] = ()
    if experts == "peft_converted":
        if m.gated_mlp and ("gate" in targets) != ("up" in targets):
            raise InputError(f"{m.name}: PEFT (>= 0.19) refuses to adapt the experts' gate without their up (or the "
                             "reverse): both live in gate_up_proj; target gate and up together")
        if m.gated_mlp and "gate" in targets:
            factors = ((_EXPERT_PARAMS["gate"], 2),)
    return PeftTargets(tuple(out), params, factors)
