"""Edit the key dimensions of the chosen model, making a custom model.

The edit is made on the model's config.json (the catalog entry's, or the plan's inline
one), so the result goes through the same ``spec_from_config`` path as any imported
model and stays in the plan inline (``model.config``). Families whose configs use other
key names (GPT-2's ``n_embd`` …) start from the Llama-style keys below.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget

from llmplan.io.plan_document import ModelRef

# (config key, label, tooltip)
DIMENSIONS = (
    ("hidden_size", "Hidden size", "Width of the residual stream (d_model)"),
    ("num_hidden_layers", "Layers", "Transformer blocks"),
    ("num_attention_heads", "Attention heads", "Query heads per layer"),
    ("num_key_value_heads", "KV heads", "Key/value heads (GQA: fewer than the query heads; must divide them)"),
    ("intermediate_size", "MLP width", "Hidden width of each dense MLP"),
    ("vocab_size", "Vocabulary", "Tokens in the vocabulary (embedding and output rows)"),
    ("max_position_embeddings", "Context length", "Longest context the model supports"),
)


def editable_config(config: dict[str, Any] | None, spec) -> dict[str, Any]:
    """A config with the Llama-style keys present (filled from the spec where missing)."""
    cfg = dict(config or {"model_type": "llama", "architectures": ["LlamaForCausalLM"]})
    defaults = {"hidden_size": spec.hidden_size, "num_hidden_layers": spec.num_layers,
                "num_attention_heads": spec.num_heads, "num_key_value_heads": spec.num_kv_heads,
                "intermediate_size": spec.intermediate_size, "vocab_size": spec.vocab_size,
                "max_position_embeddings": spec.max_position_embeddings}
    if not all(k in cfg for k in defaults):  # another family's key names: describe it Llama-style
        cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
               "tie_word_embeddings": spec.tie_embeddings, "head_dim": spec.head_dim}
    for k, v in defaults.items():
        cfg.setdefault(k, v)
    return cfg


class ArchitectureDialog(QDialog):
    accepted_model = Signal(object)  # ModelRef

    def __init__(self, name: str, config: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit architecture")
        self.config = config
        form = QFormLayout(self)
        self.name = QLineEdit(name if name.startswith("Custom") else f"Custom {name}")
        self.name.setAccessibleName("Model name")
        form.addRow("Name", self.name)
        self.spins: dict[str, QSpinBox] = {}
        for key, label, tip in DIMENSIONS:
            spin = QSpinBox()
            spin.setRange(1, 10_000_000)
            spin.setValue(int(config.get(key, 1)))
            spin.setToolTip(f"{tip} (config.json key '{key}')")
            spin.setAccessibleName(label)
            form.addRow(label, spin)
            self.spins[key] = spin
        self.error = QLabel("")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")
        form.addRow(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._ok)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def model_ref(self) -> ModelRef:
        """The edited model; raises ConfigError (naming the key) when it cannot be a model."""
        from llmplan.io.hf_config import spec_from_config

        cfg = dict(self.config)
        for key, spin in self.spins.items():
            cfg[key] = spin.value()
        if "head_dim" in cfg and cfg["hidden_size"] != self.config.get("hidden_size"):
            cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
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
