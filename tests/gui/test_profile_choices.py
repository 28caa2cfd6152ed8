"""The Loss and Recompute pickers list only what the plan's framework runs (issue 26): the first fine-tune plan
(LoRA, framework auto = Hugging Face Trainer) showed "selective recompute", which the Trainer does not have
(``gradient_checkpointing`` checkpoints every decoder layer or none), and offered Transformer Engine's loss,
which it cannot run. Exact: entries, texts and plan fields."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QComboBox

from llmplan.gui.auto_knobs import AUTO

MEGATRON_8B = {"model.id": "meta-llama/Meta-Llama-3-8B", "workload": "pretrain", "hardware.gpu": "nvidia-h100-sxm-80gb",
               "hardware.gpus_per_node": 8, "hardware.nodes": 1, "parallelism.dp": 8, "training.framework": "megatron",
               "training.seq_len": 4096, "training.method": "full"}


def _entries(combo: QComboBox) -> list:
    """The plan values listed (the "auto (…)" entry of an automatic knob left out: gui/auto_knobs.py)."""
    return [combo.itemData(i) for i in range(combo.count()) if combo.itemData(i) != AUTO]


def _finetune(window) -> None:
    window.workload.setCurrentIndex(1)  # the Fine-tune tab: LoRA, framework auto
    window.state.evaluate_now()


def test_the_first_fine_tune_plan_shows_the_trainers_choices(window):
    _finetune(window)
    recompute = window.findChild(QComboBox, "training.recompute")
    assert _entries(recompute) == ["none", "full"]
    # left open by the plan: automatic, naming what the result ran in the Trainer's words (auto_knobs)
    assert recompute.currentData() == AUTO and recompute.currentText() == "auto (no gradient checkpointing)"
    assert recompute.itemText(recompute.findData("full")) == "gradient checkpointing"
    loss = window.findChild(QComboBox, "training.loss")
    assert _entries(loss) == ["auto", "upcast", "upcast_shifted", "shifted_16bit", "fused_linear"]
    assert loss.currentText() == "framework's own: fp32 upcast (HF)"
    out = window.state.outcome
    assert out.ok and out.scenario.training.recompute == "none"
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>
        window.resize(1440, 900)
        window.grab().save(os.path.join(shots, "finetune_choices.png"))


def test_picking_gradient_checkpointing_sets_full_and_undo_leaves_recompute_automatic(window):
    _finetune(window)
    recompute = window.findChild(QComboBox, "training.recompute")
    recompute.setCurrentIndex(recompute.findData("full"))
    assert window.state.doc.training.recompute == "full"
    assert window.state.evaluate_now().ok
    window.state.undo_stack.undo()
    tr = window.state.doc.training
    assert "recompute" not in tr.model_fields_set  # back to the default the policy may move, not a stated value
    out = window.state.evaluate_now()
    assert out.ok, out.message
    assert recompute.currentData() == AUTO and recompute.currentText() == "auto (no gradient checkpointing)"


def test_megatron_lists_selective_recompute_and_te_ce(window):
    assert window.state.edit_many(MEGATRON_8B, "Megatron 8B")
    window.state.evaluate_now()
    assert _entries(window.findChild(QComboBox, "training.recompute")) == ["none", "selective", "full"]
    assert "te_ce" in _entries(window.findChild(QComboBox, "training.loss"))


def test_a_held_loss_the_framework_cannot_run_stays_listed_and_the_banner_says_why(window):
    assert window.state.edit_many(MEGATRON_8B, "Megatron 8B")
    assert window.state.edit("training.loss", "te_ce")
    assert window.state.edit_many({"workload": "finetune", "training.method": "lora",
                                   "training.framework": "hf-trainer"}, "to the Trainer")
    out = window.state.evaluate_now()
    assert not out.ok and "training.loss: the hf-trainer profile does not run te_ce" in out.message
    loss = window.findChild(QComboBox, "training.loss")
    assert loss.currentData() == "te_ce"
    assert loss.currentText() == "TE fused CE (Megatron) (not run by Hugging Face Trainer + PEFT)"
    loss.setCurrentIndex(loss.findData("auto"))
    assert window.state.evaluate_now().ok


def test_the_quantised_base_list_is_the_frameworks(qtbot):
    """torchtune trains QLoRA on torchao's NF4 only (``quant_bases``); the list offered GPTQ, AWQ, LLM.int8 and
    MXFP4 under it, each a field error once picked."""
    from llmplan.gui.state import PlanState
    from llmplan.gui.workload_tabs import training_form

    state = PlanState()
    state.edit_many({"workload": "finetune", "training.framework": "torchtune", "training.method": "qlora"}, "pick")
    state.evaluate_now()
    w = training_form(state, True)
    qtbot.addWidget(w)
    quant = w.findChild(QComboBox, "training.quant_base")
    assert _entries(quant) == ["nf4"]
    state.edit("training.framework", "hf-trainer")
    assert _entries(quant) == ["nf4", "gptq", "awq", "int8", "mxfp4"]


def test_undo_of_an_edit_to_an_unstated_field_unstates_it_and_redo_states_it_again():
    """Qt-free (``commands``): undo used to write the old value back as a stated one, so an automatic knob stopped
    being automatic, and a default selective recompute became a stated one the Trainer refuses."""
    from llmplan.gui.commands import Edit, Unstate, is_stated
    from llmplan.plan.document import ModelRef, PlanDocument

    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"), workload="finetune")
    edit = Edit.of(doc, "training.recompute", "full")
    done = edit.apply(doc)
    assert is_stated(done, "training.recompute") and not is_stated(doc, "training.recompute")
    undo = edit.inverse()
    assert isinstance(undo, Unstate)
    back = undo.apply(done)
    assert not is_stated(back, "training.recompute") and back.training.recompute == "selective"
    again = undo.inverse().apply(back)
    assert again.training.recompute == "full" and is_stated(again, "training.recompute")
    stated = Edit.of(done, "training.recompute", "none")  # a stated field's undo restores the stated value
    assert isinstance(stated.inverse(), Edit)
