"""Check boxes for Megatron-Core's named-module selective recompute (``training.recompute_modules``), shown under
the Recompute list while it says "selective recompute". A name the model or profile has nothing for is refused by
the engine with a field error naming what is allowed, shown in the banner as for every other knob.
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QGridLayout, QLabel, QWidget

from llmplan.core.workload import RECOMPUTE_MODULE_LIMITS, RECOMPUTE_MODULES, valid_recompute_modules
from llmplan.gui.auto_knobs import automatic, used_value
from llmplan.gui.ft_switches import plan_profile
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

# Megatron-Core's names (--recompute-modules), a short label and what each recomputes (core.training.recompute_modules)
MODULE_TIPS = {
    "core_attn": ("attention core", "core_attn: run QKᵀ, softmax and AV again instead of keeping the s×s scores "
                  "(Korthikanti et al. 2022). With flash attention nothing s×s is kept, yet Megatron-Core still runs "
                  "the fused attention forward again in the backward: it costs time and saves almost nothing. "
                  "Megatron-Core's default and every other framework's selective recompute"),
    "layernorm": ("norms", "layernorm: drop the output of the norms not fused into a linear (MoE layers' pre-MLP "
                  "norm, MLA's input norm) and run the norm again in the backward. Not with fp8 delayed scaling"),
    "mla_up_proj": ("MLA up-proj", "mla_up_proj: multi-latent attention keeps only its latents; the q and kv "
                    "up-projections and rotary run again (DeepSeek-V2/V3, Kimi K2)"),
    "mlp": ("dense MLP", "mlp: checkpoint the dense layers' MLP: its intermediates and its norm's output are not "
            "kept; the norm, both projections and the activation run again, with the MLP's TP collective"),
    "moe": ("whole MoE", "moe: checkpoint the whole MoE layer: router, token copies and every expert's "
            "intermediates are not kept; routing, both all-to-alls and the experts run again (most memory saved, "
            "slowest)"),
    "moe_act": ("MoE activation", "moe_act: drop the experts' activation output (fc2's input) and run the "
                "activation again; needs grouped expert GEMMs, not with fp8 delayed scaling"),
    "shared_experts": ("shared experts", "shared_experts: checkpoint the shared experts' MLP (DeepSeek, Qwen2-MoE)"),
}


class RecomputeModules(QWidget):
    """The label and one check box per module name, three to a row so that the layout editor fits the centre column
    of a 1,024-px window."""

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        label = QLabel("Recompute modules")
        label.setToolTip(wrap_tip("Megatron-Core's --recompute-modules (plan field training.recompute_modules): what "
                         "selective recompute runs again in the backward instead of keeping it"))
        grid.addWidget(label, 0, 0, 1, 3)
        self.boxes: dict[str, QCheckBox] = {}
        self._shown: dict[str, tuple[bool, bool]] = {}  # name → (checked, enabled) last set on its box
        for i, name in enumerate(RECOMPUTE_MODULES):
            text, tip = MODULE_TIPS[name]
            box = QCheckBox(text)
            box.setAccessibleName(f"Recompute module {name}")
            box.setObjectName(f"training.recompute_modules.{name}")
            box.setToolTip(wrap_tip(tip))
            box.toggled.connect(lambda on, n=name: self._toggled(n, on))
            grid.addWidget(box, 1 + i // 3, i % 3)
            self.boxes[name] = box
        grid.setColumnStretch(3, 1)
        state.doc_changed.connect(self.refresh)
        state.evaluated.connect(lambda _out: self.refresh())  # the resolved profile and model come with the outcome
        self.refresh(state.doc)

    def refresh(self, doc=None) -> None:
        """Shown only where the plan's framework runs named modules (Megatron-Core); a name that recomputes nothing
        in this model is greyed out with the reason (``core.workload.valid_recompute_modules``), unless the plan
        already holds it (then the estimate's field error says what to change)."""
        doc = doc or self.state.doc
        prof = plan_profile(self.state, fresh=True)
        current = set(doc.training.recompute_modules)
        out = self.state.outcome
        model = out.scenario.model if out is not None and out.scenario is not None else None
        allowed = (valid_recompute_modules(model, prof, doc.training.precision)
                   if model is not None and prof is not None else RECOMPUTE_MODULES)
        for name, box in self.boxes.items():
            usable = name in allowed or name in current
            shown = (name in current, usable)
            if self._shown.get(name) == shown:  # a knob change seldom changes a box: setting the tooltip again
                continue                         # alone cost ~30 µs a box
            self._shown[name] = shown
            box.blockSignals(True)
            box.setChecked(name in current)
            box.blockSignals(False)
            box.setEnabled(usable)
            tip = MODULE_TIPS[name][1]
            box.setToolTip(wrap_tip(tip if usable else f"{tip}. Not for this model: {RECOMPUTE_MODULE_LIMITS[name]}"))
        recompute = doc.training.recompute  # left automatic: the one the result used, as the Recompute list says
        if automatic(doc, "training.recompute") and used_value(self.state, "training.recompute") is not None:
            recompute = used_value(self.state, "training.recompute")
        self.setVisible(doc.workload != "inference" and recompute == "selective"
                        and prof is not None and bool(prof.recompute_modules))

    def _toggled(self, name: str, on: bool) -> None:
        current = set(self.state.get("training.recompute_modules"))
        wanted = tuple(n for n in RECOMPUTE_MODULES if (n in current and n != name) or (n == name and on))
        if not wanted or not self.state.edit("training.recompute_modules", wanted, f"recompute module {name}"):
            self._shown.pop(name, None)  # the box shows the refused click: set it back
            self.refresh()
