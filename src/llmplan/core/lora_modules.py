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
share of adapted linears (``training.host_time``).
"""

from __future__ import annotations

from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup

__all__ = ["LORA_TARGET_OF", "adapted_modules", "lora_modules"]

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
