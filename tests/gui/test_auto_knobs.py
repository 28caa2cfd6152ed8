"""Knobs the engine chose show as chosen (found by the 2026-11-28 user trial: Llama-3-70B pre-training on 64 × 8
H100 with DP 512 — the banner said "(auto: full recompute, ZeRO-3)" while the layout editor showed "ZeRO 1" and
"selective recompute", the plan's unset defaults). Each of ZeRO, offload, recompute and micro-batch now reads
"auto (…)" with the value the result used; a pick states the knob, Undo (or "auto") leaves it automatic again.
Exact: entry texts and plan fields (``core.search.policy`` chose the values; nothing here estimates)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QComboBox, QSpinBox

from llmplan.gui.auto_knobs import AUTO
from llmplan.gui.commands import is_stated

PLAN_70B = {"model.id": "meta-llama/Meta-Llama-3-70B", "workload": "pretrain", "training.method": "full",
            "hardware.gpu": "nvidia-h100-sxm-80gb", "hardware.gpus_per_node": 8, "hardware.nodes": 64,
            "hardware.network": "ib-ndr-400", "parallelism.dp": 512, "training.seq_len": 8192}


def _shown_spin(window, path):
    """The spin box for ``path`` on the tab the plan's workload shows (each training tab has one; a hidden tab's
    editors catch up with the plan when it is shown: gui/page_state.py)."""
    return next(w for w in window.findChildren(QSpinBox, path) if w.isVisibleTo(window))


def _researcher(window):
    assert window.state.edit_many(PLAN_70B, "70B on 512 H100")
    out = window.state.evaluate_now()
    assert out.ok and out.automatic == "auto: full recompute, ZeRO-3", (out.message, out.automatic)
    return out


def test_the_editors_show_what_the_policy_chose(window):
    _researcher(window)
    zero = window.findChild(QComboBox, "training.zero_stage")
    recompute = window.findChild(QComboBox, "training.recompute")
    offload = window.findChild(QComboBox, "training.offload")
    micro = _shown_spin(window, "training.micro_batch")
    assert (zero.currentData(), zero.currentText()) == (AUTO, "auto (ZeRO 3)")
    assert (recompute.currentData(), recompute.currentText()) == (AUTO, "auto (full recompute)")
    assert (offload.currentData(), offload.currentText()) == (AUTO, "auto (no offload)")
    assert micro.value() == 0 and micro.text() == "auto (1)"
    assert not window.layout_editor.recompute_modules.isVisibleTo(window)  # selective's modules: not what ran
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>
        window.resize(1440, 900)
        window.grab().save(os.path.join(shots, "auto_knobs.png"))


def test_a_pick_states_the_knob_and_undo_returns_to_automatic(window):
    state = _researcher(window) and window.state
    zero = window.findChild(QComboBox, "training.zero_stage")
    zero.setCurrentIndex(zero.findData(3))  # the value the policy chose, now held: a step of its own
    assert is_stated(state.doc, "training.zero_stage") and state.doc.training.zero_stage == 3
    state.evaluate_now()
    assert zero.currentText() == "ZeRO 3" and state.outcome.automatic == "auto: full recompute"
    state.undo_stack.undo()
    assert not is_stated(state.doc, "training.zero_stage")
    state.evaluate_now()
    assert zero.currentText() == "auto (ZeRO 3)"
    zero.setCurrentIndex(zero.findData(3))  # held at 3, then 1, then 3 again: still held (the pick is its own step)
    zero.setCurrentIndex(zero.findData(1))
    zero.setCurrentIndex(zero.findData(3))
    assert is_stated(state.doc, "training.zero_stage") and state.doc.training.zero_stage == 3
    zero.setCurrentIndex(zero.findData(1))
    state.evaluate_now()
    zero.setCurrentIndex(zero.findData(AUTO))  # picking "auto" again unstates it
    assert not is_stated(state.doc, "training.zero_stage")
    state.evaluate_now()
    assert zero.currentText() == "auto (ZeRO 3)"


def test_the_micro_batch_spin_steps_from_the_value_used(window):
    state = _researcher(window) and window.state
    micro = _shown_spin(window, "training.micro_batch")
    micro.stepBy(1)  # from "auto (1)": 2, stated
    assert state.doc.training.micro_batch == 2 and is_stated(state.doc, "training.micro_batch")
    micro.stepBy(-1)  # back where the run began: automatic again, no step left
    assert not is_stated(state.doc, "training.micro_batch") and micro.value() == 0
    micro.stepBy(2)
    assert state.doc.training.micro_batch == 3
    micro.setValue(0)
    assert not is_stated(state.doc, "training.micro_batch")
    state.evaluate_now()
    assert micro.text() == "auto (1)"
