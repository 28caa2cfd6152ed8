"""Two offload options of the layout editor, beside Megatron-Core's "Offloaded share" (``gui.offload_share``), each
shown only where the plan's offload has it:

- "Free gradients once copied" (``training.offload_gradients``): torchao's CPUOffloadOptimizer(offload_gradients=True),
  torchtune's one-GPU offload (one GPU, ZeRO-0, offload to the CPU);
- "Overlap offload copies" (``training.overlap_cpu_optimizer_copies``): Megatron-Core's --overlap-cpu-optimizer-d2h-h2d
  (offload to the CPU under a framework whose optimizer is Megatron-Core's HybridDeviceOptimizer).

A box also shows while the plan holds it on, so that it can be turned off; a plan file that holds it under another
framework gets the field error in the banner, as for every other knob.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QWidget

from llmplan.gui.bind import bound_check
from llmplan.gui.ft_switches import plan_profile
from llmplan.gui.offload_share import plan_offload
from llmplan.gui.state import PlanState

GRADIENTS_TIP = ("torchao CPUOffloadOptimizer offload_gradients=True (torchtune's one-GPU offload): each gradient is "
                 "freed on the GPU once its copy to the host is done, so the GPU holds only what PCIe has not "
                 "drained yet. The copies and the step time are the same. It cannot accumulate micro-batches. "
                 "Off: the class's default")
OVERLAP_TIP = ("Megatron-Core --overlap-cpu-optimizer-d2h-h2d: one CPU optimizer per parameter; the gradient copies "
               "to the host and the updated values back run on their own streams while the CPU steps, parameter by "
               "parameter, instead of one after the other. The same memory. Off: Megatron's default")


class OffloadCopies(QWidget):
    """Two check boxes in a row, each visible on its own."""

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.gradients = bound_check(state, "training.offload_gradients", "Free gradients once copied",
                                     GRADIENTS_TIP)
        self.overlap = bound_check(state, "training.overlap_cpu_optimizer_copies", "Overlap offload copies",
                                   OVERLAP_TIP)
        row.addWidget(self.gradients)
        row.addWidget(self.overlap)
        row.addStretch(1)
        state.doc_changed.connect(self.refresh)
        state.evaluated.connect(lambda _out: self.refresh())  # the resolved profile comes with the outcome
        self.refresh(state.doc)

    def refresh(self, doc=None) -> None:
        """Each box where the plan's offload has the option (``framework_profile.offload_option_refusal``'s rule,
        and torchao's one GPU at ZeRO-0), or where the plan holds it on."""
        doc = doc or self.state.doc
        tr = doc.training
        prof = plan_profile(self.state, fresh=True)
        training, cpu = doc.workload != "inference", plan_offload(self.state, doc) == "cpu"
        torchao = (prof is not None and prof.single_gpu_offload_style == "torchao" and doc.parallelism.gpus == 1
                   and tr.zero_stage == 0)
        hybrid = prof is not None and prof.offload_style == "optimizer" and bool(prof.offload_targets)
        self.gradients.setVisible(training and ((torchao and cpu) or tr.offload_gradients))
        self.overlap.setVisible(training and ((hybrid and cpu) or tr.overlap_cpu_optimizer_copies))
        self.setVisible(self.gradients.isVisibleTo(self) or self.overlap.isVisibleTo(self))
