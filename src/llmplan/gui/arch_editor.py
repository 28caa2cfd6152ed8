"""Edit the key dimensions of the chosen model, making a custom model.

The edit is made on the model's own config.json (the catalog entry's, or the plan's inline one),
with the family's own key names (GPT-2's ``n_embd``, OPT's ``ffn_dim``, Mixtral's
``num_local_experts``, DeepSeek's ``n_routed_experts`` …), so the result goes through the same
``spec_from_config`` path as any imported model, keeps everything the dialog does not show (norms,
activation, biases, positions, MLA, sliding windows) and stays in the plan inline
(``model.config``). Only a model known by its spec alone (no config.json) is described in
Llama-style keys, and the dialog says so.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget

from llmplan.gui.dialogs import error_and_buttons
from llmplan.gui.tooltips import wrap_tip
from llmplan.plan.document import ModelRef

# (config keys, the first the family's config has is edited; label; tooltip). Always shown.
DIMENSIONS = (
    (("hidden_size", "n_embd", "d_model"), "Hidden size", "Width of the residual stream (d_model)"),
    (("num_hidden_layers", "n_layer", "num_layers"), "Layers", "Transformer blocks"),
    (("num_attention_heads", "n_head"), "Attention heads", "Query heads per layer"),
    (("num_key_value_heads", "num_kv_heads", "n_head_kv"), "KV heads",
     "Key/value heads (GQA: fewer than the query heads; must divide them)"),
    (("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"), "MLP width",
     "Hidden width of each dense MLP"),
    (("vocab_size",), "Vocabulary", "Tokens in the vocabulary (embedding and output rows)"),
    (("max_position_embeddings", "n_positions", "seq_length"), "Context length",
     "Longest context the model supports"),
)
# Shown only when the model's config has them: head size, MoE, MLA and sliding-window dimensions.
OPTIONAL = (
    (("head_dim",), "Head size", "Width of one attention head"),
    (("num_local_experts", "num_experts", "n_routed_experts"), "Routed experts", "Experts per MoE layer"),
    (("num_experts_per_tok",), "Experts per token", "Routed experts each token is sent to (top-k)"),
    (("moe_intermediate_size",), "Expert MLP width", "Hidden width of one expert's MLP"),
    (("n_shared_experts",), "Shared experts", "Experts every token uses (DeepSeek)"),
    (("first_k_dense_replace",), "Dense first layers", "Leading layers with a dense MLP instead of experts"),
    (("kv_lora_rank",), "KV latent rank (MLA)", "Width of the compressed key/value latent (DeepSeek MLA)"),
    (("q_lora_rank",), "Query latent rank (MLA)", "Width of the compressed query (DeepSeek MLA)"),
    (("sliding_window",), "Sliding window", "Tokens a sliding-window layer attends to"),
)


def _key(cfg: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if isinstance(cfg.get(k), int) and not isinstance(cfg.get(k), bool)), None)


def editable_config(config: dict[str, Any] | None, spec) -> dict[str, Any]:
    """The model's own config; for a model known by its spec alone, a Llama-style config of it."""
    if config:
        return dict(config)
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": spec.hidden_size,
            "num_hidden_layers": spec.num_layers, "num_attention_heads": spec.num_heads,
            "num_key_value_heads": spec.num_kv_heads, "intermediate_size": spec.intermediate_size,
            "vocab_size": spec.vocab_size, "max_position_embeddings": spec.max_position_embeddings,
            "tie_word_embeddings": spec.tie_embeddings, "head_dim": spec.head_dim}


# Keys other code bases use for the same dimensions (Meta's params.json, GGUF-style names): a config that
# spells them so is pre-filled from them rather than left empty.
_ALIASES = {"hidden_size": ("dim", "hidden_dim_model", "embed_dim", "n_embed"),
            "num_hidden_layers": ("n_layers", "num_blocks", "depth"),
            "num_attention_heads": ("n_heads", "num_heads", "attention_heads"),
            "num_key_value_heads": ("n_kv_heads", "num_kv_heads", "kv_heads"),
            "intermediate_size": ("hidden_dim", "ffn_hidden_size", "mlp_dim", "d_ff"),
            "vocab_size": ("n_vocab", "padded_vocab_size"),
            "max_position_embeddings": ("max_seq_len", "context_length", "n_ctx")}


def prefilled_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config the editor can show: every always-shown dimension present, taken from an alias when the
    config has one; a dimension it lacks altogether starts at 1 for the person to fill in (the dialog
    says which are missing)."""
    cfg = dict(config)
    for keys, _label, _tip in DIMENSIONS:
        if _key(cfg, keys) is None:
            found = next((cfg[a] for a in _ALIASES.get(keys[0], ()) if isinstance(cfg.get(a), int)
                          and not isinstance(cfg.get(a), bool)), None)
            cfg[keys[0]] = found if found is not None else 1
    return cfg


class ArchitectureDialog(QDialog):
    accepted_model = Signal(object)  # ModelRef

    def __init__(self, name: str, config: dict[str, Any], parent: QWidget | None = None,
                 from_spec: bool = False, note: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit architecture")
        self.config = config
        form = QFormLayout(self)
        if from_spec:
            note = note or "This model has no config.json here; it is described in Llama-style keys."
        if note:
            label = QLabel(note)
            label.setWordWrap(True)
            label.setAccessibleName("Why the architecture needs editing")
            form.addRow(label)
        self.name = QLineEdit(name if name.startswith("Custom") else f"Custom {name}")
        self.name.setAccessibleName("Model name")
        form.addRow("Name", self.name)
        self.spins: dict[str, QSpinBox] = {}
        for keys, label, tip in (*DIMENSIONS, *OPTIONAL):
            key = _key(config, keys)
            if key is None:  # this family has no such dimension (MHA has no separate KV head count ...)
                continue
            spin = QSpinBox()
            spin.setRange(1, 10_000_000)
            spin.setValue(int(config[key]))
            spin.setToolTip(wrap_tip(f"{tip} (config.json key '{key}')"))
            spin.setAccessibleName(label)
            form.addRow(label, spin)
            self.spins[key] = spin
        self.error = error_and_buttons(form, self._ok, self.reject)

    def model_ref(self) -> ModelRef:
        """The edited model; raises ConfigError (naming the key) when it cannot be a model."""
        from llmplan.formats.hf_config import spec_from_config

        cfg = dict(self.config)
        for key, spin in self.spins.items():
            cfg[key] = spin.value()
        name = self.name.text().strip() or "Custom model"
        spec_from_config(cfg, name=name)
        return ModelRef(name=name, config=cfg)

    def _ok(self) -> None:
        try:
            ref = self.model_ref()
        except Exception as exc:
            self.error.setText(str(exc))
            return
        self.accepted_model.emit(ref)
        self.accept()
