"""Knobs added to the engine's settings later get an editor without GUI changes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from llmplan.core.frozen import FrozenModel
from llmplan.gui.extra_knobs import add_extra_knobs
from llmplan.gui.state import PlanState


class _Future(FrozenModel):
    """Stands for a later TrainingSettings: same names and types as real fields, so the
    generic editors bind to real plan paths and their edits validate."""

    seq_len: int = 1  # "known": has its own editor
    flash_attention: bool = Field(True, description="fused attention")
    tokens: float = Field(1e12, gt=0, le=1e17, description="tokens to train on")
    lora_rank: int = Field(16, ge=1, le=64)
    recompute: Literal["none", "selective", "full"] = "selective"
    lora_targets: tuple[str, ...] = ()


def test_generic_editors_for_unknown_fields(qtbot):
    state = PlanState()
    box = QWidget()
    qtbot.addWidget(box)
    form = QFormLayout(box)
    added = add_extra_knobs(form, state, "training", _Future, known=("seq_len",))
    assert added == 4  # bool, float, int, Literal; the tuple has no generic editor
    widgets = [form.itemAt(i, QFormLayout.ItemRole.FieldRole).widget() for i in range(form.rowCount())]
    assert [isinstance(w, k) for w, k in zip(widgets, (QCheckBox, QDoubleSpinBox, QSpinBox, QComboBox),
                                              strict=True)] == [True] * 4
    spin = form.itemAt(2, QFormLayout.ItemRole.FieldRole).widget()
    assert (spin.minimum(), spin.maximum()) == (1, 64)
    spin.setValue(32)
    assert state.doc.training.lora_rank == 32
    form.itemAt(0, QFormLayout.ItemRole.FieldRole).widget().setChecked(False)
    assert state.doc.training.flash_attention is False


def test_efficiency_override_is_a_plan_edit(window):
    spin = window.findChild(QDoubleSpinBox, "efficiency.matmul")
    spin.setValue(0.5)
    assert window.state.doc.efficiency.matmul == 0.5
    spin.setValue(0.0)  # the minimum means "the catalog's default"
    assert window.state.doc.efficiency.matmul is None


def test_the_held_clock_is_a_plan_edit_and_slows_a_compute_bound_step(window):
    """efficiency.sustained_clock (the clock under full load) has a control; its minimum means the catalog's."""
    spin = window.findChild(QDoubleSpinBox, "efficiency.sustained_clock")
    spin.setValue(0.75)
    assert window.state.doc.efficiency.sustained_clock == 0.75
    spin.setValue(0.3)
    assert window.state.doc.efficiency.sustained_clock is None


def test_plan_name_and_notes_are_edited_in_one_undoable_step(window, qtbot):
    """Notes travel with a shared plan (DESIGN §3): the app edits them (Edit → Plan Name and Notes…)."""
    from llmplan.gui.plan_info import PlanInfoDialog

    action = next(a for a in window.findChildren(QAction) if a.text() == "Plan &Name and Notes…")
    assert action.shortcut().toString() == "Ctrl+Shift+N"
    before = (window.state.doc.name, window.state.doc.notes)
    action.trigger()
    dlg = window.findChild(PlanInfoDialog)
    qtbot.keyClicks(dlg.name, " for the team")
    dlg.notes.setPlainText("Measured 21.3 GiB peak on the real card.")
    dlg.apply()
    assert window.state.doc.notes == "Measured 21.3 GiB peak on the real card."
    assert window.state.doc.name.endswith("for the team")
    window.undo_action.trigger()
    assert (window.state.doc.name, window.state.doc.notes) == before


def test_every_remaining_knob_has_an_editor(window):
    """Knobs that had no control: GPU-to-GPU and host bandwidth, uneven pipeline ends, offload efficiencies."""
    from PySide6.QtWidgets import QAbstractSpinBox

    window.state.edit("workload", "pretrain")
    names = {w.objectName() for w in window.findChildren(QAbstractSpinBox)}
    for path in ("hardware.intra_node_bandwidth", "hardware.host_memory_bandwidth", "parallelism.first_stage_layers",
                 "parallelism.last_stage_layers", "efficiency.host_memory_bandwidth", "efficiency.pcie"):
        assert path in names, path
    spin = next(w for w in window.findChildren(QAbstractSpinBox) if w.objectName() == "hardware.host_memory_bandwidth")
    spin.setValue(512.0)  # GB/s as shown; the plan stores bytes/s
    assert window.state.doc.hardware.host_memory_bandwidth == 512e9
