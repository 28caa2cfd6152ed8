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
"""

from __future__ import annotations

from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup
from llmplan.errors import InputError

__all__ = ["LORA_TARGET_OF", "MODULE_NAMES", "adapted_modules", "lora_modules", "peft_target_modules"]

# the last component of a tensor name -> the LoRA target name people use (PEFT's module names)
LORA_TARGET_OF = {
    "q_proj": "q", "q_b_proj": "q", "k_proj": "k", "kv_b_proj": "k", "v_proj": "v", "o_proj": "o",
    "gate_proj": "gate", "up_proj": "up", "down_proj": "down",
}

_CACHE = IdentityCache(64)


def _adaptable(g: TensorGroup) -> bool:
    """A 2-D weight inside the blocks that a target name reaches. Routed experts count (PEFT matches
    ``experts.N.gate_proj`` by its name); MTP modules are not loaded for fine-tuning."""
    return (g.place == "layer" and len(g.shape) == 2 and g.category != "mtp" and not g.name.endswith(".bias")
            and g.name.rsplit(".", 1)[-1] in LORA_TARGET_OF)


def lora_modules(pb: ParamBreakdown, targets: tuple[str, ...]) -> tuple[TensorGroup, ...]:
    """The modules LoRA adapts for ``targets``, each as one tensor group of the module's whole weight (out × in):
    the tensors of one fused module (``TensorGroup.module``) merged into one, their output widths added. A module
    is adapted when any projection it holds is targeted. Cached per breakdown object and target tuple."""
    hit = _CACHE.get((pb,), targets)
    if hit is not None:
        return hit
    members: dict[str, list[TensorGroup]] = {}
    for g in pb.groups:
        if _adaptable(g):
            members.setdefault(g.module or g.name, []).append(g)
    out: list[TensorGroup] = []
    for name, gs in members.items():
        if not any(LORA_TARGET_OF[g.name.rsplit(".", 1)[-1]] in targets for g in gs):
            continue
        first = gs[0]
        if len(gs) == 1:
            out.append(first)
            continue
        if any(g.shape[1] != first.shape[1] or g.count != first.count or g.tp_split != first.tp_split for g in gs):
            raise ValueError(f"{name}: the projections fused into one module must share their input and split")
        out.append(TensorGroup(name, (sum(g.shape[0] for g in gs), first.shape[1]), first.count, first.category,
                               first.tp_split, first.place, first.layer_kind, first.copies_per_layer, name))
    return _CACHE.put((pb,), targets, tuple(out))


def adapted_modules(m: ModelSpec, targets: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The modules of one block LoRA adapts, each as the projections (target names) it holds, in block order:
    q, k and v one module where the checkpoint fuses them (``ModelSpec.fused``), else one each; o; the MLP's gate
    and up likewise, and down. Projections the block does not have are left out (a plain MLP has no gate; latent
    attention no v_proj: its ``kv_b_proj`` is what "k" reaches). The count per block of a model's adapters is
    ``len`` of this, the same modules ``lora_modules`` counts parameters of."""
    attn = ("q", "k") if m.mla else ("q", "k", "v")
    mlp = ("gate", "up") if m.gated_mlp else ("up",)
    mods: list[tuple[str, ...]] = [attn] if "qkv" in m.fused else [(t,) for t in attn]
    mods.append(("o",))
    mods += [mlp] if "gate_up" in m.fused else [(t,) for t in mlp]
    mods.append(("down",))
    return tuple(mod for mod in mods if any(t in targets for t in mod))


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


def peft_target_modules(m: ModelSpec, targets: tuple[str, ...]) -> tuple[str, ...]:
    """PEFT's ``target_modules`` for LoRA on ``targets``: one name per module ``adapted_modules`` counts, in its
    order, so PEFT adapts exactly the modules the estimate counts. Latent attention's "q" is ``q_b_proj``, or
    ``q_proj`` where the model has no query compression (DeepSeek-V2-Lite: DeepseekV2Attention builds q_proj when
    ``q_lora_rank`` is None). Refused (InputError, saying what to do): a model_type without an entry; MLP targets
    on a mixture of experts, whose routed experts transformers 5 keeps as one 3-D parameter per layer
    (``MixtralExperts``, ``Qwen3MoeExperts``, ``DeepseekV3Experts``, ``GptOssExperts``: ``gate_up_proj``,
    ``down_proj``), which ``target_modules`` cannot reach; and a spec whose ``fused_linears`` disagrees with
    its family's modules."""
    names = MODULE_NAMES.get(m.model_type)
    if names is None:
        raise InputError(f"llmplan does not know the module names of model_type '{m.model_type}' "
                         f"(it knows {', '.join(sorted(MODULE_NAMES))}), so it cannot tell PEFT which modules "
                         "LoRA adapts; measure this model with training.method = full")
    if m.is_moe and any(t in targets for t in ("gate", "up", "down")):
        raise InputError(f"{m.name}: transformers keeps the routed experts of a '{m.model_type}' model as one 3-D "
                         "parameter per layer, which PEFT's target_modules cannot adapt; measure LoRA on the "
                         "attention only (training.lora_targets = q, k, v, o)")
    if m.mla and m.mla.q_lora_rank is None:
        names = {**names, "q": "self_attn.q_proj"}
    out: list[str] = []
    for mod in adapted_modules(m, targets):
        found = {names[t] for t in mod}
        if len(found) != 1 or found <= set(out):
            raise InputError(f"{m.name}: its fused_linears ({', '.join(m.fused) or 'none'}) disagree with the "
                             f"modules of '{m.model_type}' models ({', '.join(sorted(found))}); remove the override")
        out.append(found.pop())
    return tuple(out)
