"""The share of the optimizer Megatron-Core offloads (``training.optimizer_offload_fraction``, its
``--optimizer-offload-fraction``), shown in the layout editor only where the plan's framework splits its optimizer
between host and GPU (``FrameworkProfile.offload_style`` optimizer) and the plan offloads to the CPU. Elsewhere the
field stays at 1.0; a plan file that holds another value under another framework gets the engine's field error in
the banner, as for every other knob.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from llmplan.gui.auto_knobs import automatic, used_value
from llmplan.gui.bind import bound_float
from llmplan.gui.ft_switches import plan_profile
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

TIP = ("Megatron-Core --optimizer-offload-fraction: the share of each GPU's optimizer parameters whose fp32 copy, "
       "Adam states and step go to the host (the first ones in the optimizer's order); the rest keep their states "
       "on the GPU and are stepped by its Adam while the CPU steps the offloaded ones. 1.00: all of them")


class OffloadShare(QWidget):
    """A label and a spin box, 0.01 to 1.00 in steps of 0.05."""

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        label = QLabel("Offloaded share")
        label.setToolTip(wrap_tip(TIP))
        self.spin = bound_float(state, "training.optimizer_offload_fraction", "Offloaded share", TIP, 0.01, 1.0,
                                decimals=2, step=0.05)
        label.setBuddy(self.spin)
        row.addWidget(label)
        row.addWidget(self.spin)
        row.addStretch(1)
        state.doc_changed.connect(self.refresh)
        state.evaluated.connect(lambda _out: self.refresh())  # the resolved profile comes with the outcome
        self.refresh(state.doc)

    def refresh(self, doc=None) -> None:
        """Visible for a training plan that offloads to the CPU (stated, or the value the result used while the
        plan leaves it automatic) under a framework that offloads a share; or whenever the plan holds a share
        below 1, so that it can be set back."""
        doc = doc or self.state.doc
        prof = plan_profile(self.state, fresh=True)
        offload = plan_offload(self.state, doc)
        splits = prof is not None and prof.offload_style == "optimizer" and bool(prof.offload_targets)
        self.setVisible(doc.workload != "inference" and (
            (splits and offload == "cpu") or doc.training.optimizer_offload_fraction < 1))


def plan_offload(state: PlanState, doc) -> str:
    """The plan's offload: as stated, or the value the latest result used while the plan leaves it automatic."""
    if automatic(doc, "training.offload") and used_value(state, "training.offload") is not None:
        return used_value(state, "training.offload")
    return doc.training.offload
