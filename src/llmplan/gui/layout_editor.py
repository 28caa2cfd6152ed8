"""The parallelism layout editor: sizes, ZeRO/offload/recompute, the drawing, the rule
the layout breaks (the engine's own LayoutError message, shown inline) and "Auto".
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import MemoryUnit
from llmplan.gui import backend
from llmplan.gui.backend import Outcome
from llmplan.gui.bind import bound_check, bound_spin
from llmplan.gui.ft_switches import plan_profile
from llmplan.gui.gpu_grid import GpuGrid, crossing_groups
from llmplan.gui.offload_copies import OffloadCopies
from llmplan.gui.offload_share import OffloadShare
from llmplan.gui.profile_choices import (
    ProfileChoices,
    offload_knob,
    offload_options,
    offload_shown,
    offload_weights_knob,
    recompute_options,
    recompute_shown,
    zero_knob,
    zero_options,
)
from llmplan.gui.recompute_modules_box import RecomputeModules
from llmplan.gui.state import PlanState
from llmplan.gui.theme import BAD_COLOUR, WARN_COLOUR
from llmplan.gui.tooltips import wrap_tip

SIZES = (
    ("tp", "TP", "Tensor parallel: each layer's matrices split over this many GPUs (keep inside a node)"),
    ("pp", "PP", "Pipeline parallel: the layers split into this many stages"),
    ("dp", "DP", "Data parallel: replicas that each see different batches"),
    ("cp", "CP", "Context parallel: the sequence split over this many GPUs for attention"),
    ("ep", "EP", "Expert parallel: MoE experts spread over this many GPUs (within data parallel)"),
)

SP_TIP = ("Sequence parallelism (Korthikanti et al. 2022): the norms, dropout and residual activations are split "
          "over the tensor-parallel group as well")
SP_OFF_TIP = ("Off while TP is 1: sequence parallelism splits activations over the tensor-parallel group, so it "
              "does nothing without one. The plan keeps the setting for when TP is above 1")


class LayoutEditor(QWidget):
    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.unit = MemoryUnit()
        sizes = QGridLayout()
        for col, (key, short, tip) in enumerate(SIZES):
            label = QLabel(short)
            spin = bound_spin(state, f"parallelism.{key}", f"{short} size", tip, 1, 1_000_000 if key == "dp" else 1024)
            label.setBuddy(spin)
            label.setToolTip(wrap_tip(tip))
            sizes.addWidget(label, 0, col)
            sizes.addWidget(spin, 1, col)
        opts = QFormLayout()
        row1 = QHBoxLayout()
        self.training_only: list[QWidget] = []
        self.zero_box = ProfileChoices(state, "training.zero_stage", "ZeRO stage",
                                       "ZeRO (Rajbhandari et al. 2020): 1 shards optimizer states, 2 also gradients, "
                                       "3 also the weights over data parallel; only the stages the plan's framework "
                                       "runs on its GPUs",
                                       lambda prof: zero_options(prof, state.doc.parallelism.gpus),
                                       lambda doc, _prof: doc.training.zero_stage, chars=13, automatic=True)
        row1.addWidget(self._training_only(self.zero_box))
        row1.addWidget(self._training_only(ProfileChoices(state, "training.offload", "Offload",
                       "Keep optimizer states (and, where the framework does, gradients and weights) in CPU RAM "
                       "or on NVMe; only what the plan's framework offers: NVMe is DeepSpeed's, Megatron-Core "
                       "offloads the optimizer only, FSDP the weights with it, unsloth nothing (hover an entry)",
                       offload_options, offload_shown, chars=16, automatic=True)))
        self.offload_box = row1.itemAt(row1.count() - 1).widget()
        row1.addWidget(self._training_only(ProfileChoices(state, "training.recompute", "Recompute",
                       "Activation recomputation: what the backward pass computes again instead of keeping it "
                       "from the forward (hover an entry for what each keeps). Only what the plan's framework "
                       "has: selective recompute is Megatron's; the Hugging Face Trainer, torchtune and unsloth "
                       "checkpoint every block (gradient checkpointing) or none",
                       recompute_options, recompute_shown, chars=20, automatic=True)))
        row2 = QHBoxLayout()  # two short rows (ZeRO, offload / recompute, SP): fits a 1,024-px window
        recompute = row1.takeAt(row1.count() - 1).widget()  # takes the row's spare width: its entries are long
        recompute.setSizePolicy(QSizePolicy.Policy.Expanding, recompute.sizePolicy().verticalPolicy())
        row2.addWidget(recompute, 1)
        offload_weights = self._training_only(bound_check(state, "training.offload_params", "Offload weights",
                                              "ZeRO-Infinity/FSDP: offload the parameters too (needs ZeRO 3)"))
        self.offload_weights = offload_weights
        # (widget, rule, its own tooltip): knobs the plan's framework never runs are hidden, those that do nothing
        # for this plan greyed with the reason (gui.profile_choices.KnobShow)
        self._profile_knobs = [(w, rule, w.toolTip()) for w, rule in (
            (self.zero_box, zero_knob), (self.offload_box, offload_knob), (offload_weights, offload_weights_knob))]
        row1.addStretch(1)
        opts.addRow(row1)
        self.sequence_parallel = bound_check(state, "parallelism.sequence_parallel", "Sequence parallel", SP_TIP)
        self._sp_tips = (self.sequence_parallel.toolTip(), f"{wrap_tip(SP_OFF_TIP)}\n(plan field: parallelism.sequence_parallel)")
        row2.addWidget(self.sequence_parallel)  # shown and enabled where it applies (``_show_sequence_parallel``)
        vs_label = QLabel("Virtual stages")
        vs = bound_spin(state, "parallelism.virtual_stages", "Virtual stages",
                        "Interleaved pipeline: model chunks per GPU; shrinks the bubble by this factor", 1, 128)
        vs_label.setBuddy(vs)
        opts.addRow(row2)
        self.recompute_modules = RecomputeModules(state)  # under "selective recompute" only (its own visibility)
        opts.addRow(self.recompute_modules)
        # Virtual stages, then Megatron's --decoder-first/last-pipeline-num-layers (unset: the automatic
        # split) in a grid of two rows, so the editor fits the centre column of a 1,024-px window.
        row3 = QGridLayout()
        row3.addWidget(self._training_only(vs_label), 0, 0)
        row3.addWidget(self._training_only(vs), 0, 1)
        # Under Virtual stages (row 1 holds the "auto (…)" knobs whole), "Offload weights" or, under Megatron-Core's
        # optimizer-only offload, which hides it, the share offloaded: one row for the two, so the pre-train tab's
        # editor has no row with a knob on one side only (it scrolled by 51 px at 1,024 × 700).
        offload_cell = QVBoxLayout()
        offload_cell.setContentsMargins(0, 0, 0, 0)
        offload_cell.addWidget(offload_weights)
        self.offload_share = OffloadShare(state)  # Megatron-Core's --optimizer-offload-fraction (its own visibility)
        offload_cell.addWidget(self.offload_share)
        row3.addLayout(offload_cell, 1, 0, 1, 2)
        self.offload_copies = OffloadCopies(state)  # torchao offload_gradients, Megatron's overlapped copies
        row3.addWidget(self.offload_copies, 2, 0, 1, 2)
        for row, (key, text, tip) in enumerate((
                ("first_stage_layers", "First stage layers", "Layers on the first pipeline stage (it also holds "
                 "the embedding); automatic: the balanced split, one layer fewer at the ends when layers do not "
                 "divide evenly (Llama 3)"),
                ("last_stage_layers", "Last stage layers", "Layers on the last pipeline stage (it also holds the "
                 "output head and loss); automatic: as for the first stage"))):
            label = QLabel(text)
            spin = bound_spin(state, f"parallelism.{key}", text, tip, 0, 100_000, special_zero="automatic",
                              none_below=True)
            label.setBuddy(spin)
            row3.addWidget(self._training_only(label), row, 2)
            row3.addWidget(self._training_only(spin), row, 3)
        row3.setColumnStretch(4, 1)
        opts.addRow(row3)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Layout check")
        self.grid = GpuGrid(self)
        self.auto_button = QPushButton("&Auto…")
        self.auto_button.setToolTip("Search layouts that fit and rank them by speed (runs in the background)")
        self.auto_button.setAccessibleName("Auto layout search")
        self.fill_button = QPushButton("Use all GPUs")
        self.fill_button.setToolTip("Set DP so that TP·PP·CP·DP equals the GPUs of the cluster")
        self.fill_button.clicked.connect(self.fill_cluster)
        top = QVBoxLayout()  # the buttons go under the sizes, so the pane fits a 1,024-px window
        top.addLayout(sizes)
        buttons = QHBoxLayout()
        buttons.addWidget(self.fill_button)
        buttons.addWidget(self.auto_button)
        buttons.addStretch(1)
        top.addLayout(buttons)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addLayout(opts)
        lay.addWidget(self.status)
        # The colour key above the drawing, in two short lines (its long form is the tooltip): under the
        # drawing, in four lines, it sat below the pane's fold at 1,024 × 700.
        self.legend = QLabel("Hue: pipeline stage · shade: tensor rank · grey: idle · red/orange outline: "
                             "TP/CP group spans nodes")
        self.legend.setToolTip(wrap_tip(
            "Hue: pipeline stage · shade: tensor rank in the stage · grey: idle · red/orange outline: the GPU's "
            "TP/CP group spans nodes (network, not NVLink) · hover a GPU for its ranks"))
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("color: palette(placeholder-text);")
        self.legend.setAccessibleName("Colour key of the GPU drawing")
        lay.addWidget(self.legend)
        lay.addWidget(self.grid, 1)
        state.doc_changed.connect(self._doc_changed)
        self._doc_changed(state.doc)

    def _training_only(self, w: QWidget) -> QWidget:
        self.training_only.append(w)
        return w

    def _doc_changed(self, doc) -> None:
        for w in self.training_only:  # serving has no optimizer states to shard or offload, no 1F1B schedule
            w.setVisible(doc.workload != "inference")
        self._show_profile_knobs(doc)
        self._show_sequence_parallel(doc)
        hw = doc.hardware
        self.grid.set_cluster(doc.parallelism, hw.gpus_per_node, hw.nodes, self.grid.memory_text)
        self._show_gpu_count(doc)

    def _show_profile_knobs(self, doc) -> None:
        """ZeRO, Offload and "Offload weights" as the plan's framework runs them (``zero_knob``, ``offload_knob``,
        ``offload_weights_knob``: profile data, no framework names here)."""
        if doc.workload == "inference":
            return
        prof = plan_profile(self.state, fresh=True)
        for w, rule, tip in self._profile_knobs:
            show = rule(doc, prof)
            w.setVisible(show.shown)
            if w.isEnabled() != show.enabled:
                w.setEnabled(show.enabled)
                w.setToolTip(tip if show.enabled else f"{wrap_tip(show.why)}\n{tip}")

    def _show_sequence_parallel(self, doc) -> None:
        """Sequence parallelism splits activations over the TP group (the engine applies it only with TP > 1,
        ``core.training.layout``): the box is hidden where the plan's framework has no tensor parallelism (the
        Hugging Face Trainer, torchtune, unsloth, LLaMA-Factory, axolotl, Composer: ``supports_tp`` false in
        their profiles) and for serving, and greyed with the reason while TP is 1. The frameworks with TP
        (Megatron-Core, Meta's Llama 3 stack, Megatron-DeepSpeed, torchtitan) all split the norms this way."""
        prof = plan_profile(self.state, fresh=True) if doc.workload != "inference" else None
        has_tp = doc.workload != "inference" and (prof is None or prof.supports_tp)
        box = self.sequence_parallel
        box.setVisible(has_tp)
        on = has_tp and doc.parallelism.tp > 1
        if box.isEnabled() != on:
            box.setEnabled(on)
            box.setToolTip(self._sp_tips[0] if on else self._sp_tips[1])

    def _show_gpu_count(self, doc) -> None:
        used, total = doc.parallelism.gpus, doc.hardware.gpus_per_node * doc.hardware.nodes
        if used > total:
            self._set_status(f"The layout needs TP·PP·DP·CP = {used} GPUs but the cluster has {total}: "
                             "lower a size or add GPUs/nodes.", BAD_COLOUR)
        elif used < total:
            self._set_status(f"The layout uses {used} of the cluster's {total} GPUs "
                             "(the rest are drawn grey).", WARN_COLOUR)
        else:
            text = "The layout uses the one GPU." if total == 1 else f"The layout uses all {total} GPUs."
            crossing = crossing_groups(doc.parallelism, doc.hardware.gpus_per_node)
            if crossing:
                text += " " + " and ".join(k.upper() for k in crossing) + (
                    " groups span nodes (outlined): their collectives run over the network.")
            self._set_status(text, WARN_COLOUR if crossing else "")

    def _set_status(self, text: str, colour: str) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {colour}; font-weight: bold;" if colour else "")

    def show_outcome(self, outcome: Outcome) -> None:
        if outcome.kind == "layout":
            self._set_status(f"Invalid layout: {outcome.message}", BAD_COLOUR)
        else:
            self._show_gpu_count(outcome.doc)
        mem = ""
        self.grid.stage_memory_text = ()
        if outcome.estimate is not None:
            m, unit, scenario = outcome.estimate.memory, self.unit, outcome.scenario
            mem = f"{unit.fmt(m.total.value)} of {unit.fmt(m.capacity.value)} (worst-loaded GPU)"
            self.grid.set_stage_memory(lambda: tuple(f"{unit.fmt(b)} of {unit.fmt(m.capacity.value)}"
                                                     for b in backend.stage_memory(scenario)))
        self.grid.memory_text = mem

    def fill_cluster(self) -> None:
        doc = self.state.doc
        per_replica = doc.parallelism.tp * doc.parallelism.pp * doc.parallelism.cp
        total = doc.hardware.gpus_per_node * doc.hardware.nodes
        if per_replica <= total:
            self.state.edit("parallelism.dp", max(total // per_replica, 1), "Use all GPUs")
