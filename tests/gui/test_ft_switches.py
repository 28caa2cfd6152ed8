"""Fine-tune tab: the profile's switches only, with its auto policy, and what fits on the GPU."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QGroupBox, QLabel

from llmplan.gui.auto_knobs import AUTO
from llmplan.gui.state import PlanState
from llmplan.gui.workload_tabs import training_form


def _form(qtbot, framework):
    state = PlanState()
    state.edit_many({"training.framework": framework, "training.method": "lora", "training.recompute": "full"},
                    "pick")
    state.evaluate_now()
    w = training_form(state, True)
    qtbot.addWidget(w)
    w.show()
    return state, w


def _visible(w, path):
    combo = w.findChild(QComboBox, path)
    return combo is not None and combo.isVisibleTo(w)


def test_only_the_profiles_switches_show(qtbot):
    state, w = _form(qtbot, "hf-trainer")
    assert _visible(w, "training.liger")
    assert not _visible(w, "training.activation_offload")
    assert not _visible(w, "training.optimizer_in_backward")
    state.edit("training.framework", "torchtune")
    state.evaluate_now()
    assert _visible(w, "training.optimizer_in_backward")
    assert not _visible(w, "training.liger")
    policy = w.findChild(QLabel, "framework policy")
    assert "torchtune default" in policy.text()


def test_a_switch_sets_the_plan_field_and_auto_shows_the_default(qtbot):
    state, w = _form(qtbot, "unsloth")
    combo = w.findChild(QComboBox, "training.activation_offload")
    assert combo.itemText(0) == "auto (on)"  # unsloth's offloaded gradient checkpointing (recompute full)
    combo.setCurrentIndex(2)
    assert state.doc.training.activation_offload is False
    combo.setCurrentIndex(0)
    assert state.doc.training.activation_offload is None


def test_limits_name_the_profile_and_gpu(qtbot):
    _state, w = _form(qtbot, "unsloth")
    box = next(g for g in w.findChildren(QGroupBox) if hasattr(g, "compute_now"))
    box.compute_now()
    text = w.findChild(QLabel, "longest sequence that fits").text()
    assert "tokens at micro-batch 1" in text and "unsloth" in text
    assert "sequences of" in w.findChild(QLabel, "largest micro-batch that fits").text()


def test_pretrain_tab_shows_torchtitans_compile_switch(qtbot):
    """torchtitan (fsdp2) trains uncompiled unless ``training.compile`` is set: its one switch shows on the
    Pre-train tab too, auto reading off (torchtitan's default), and turning it on sets the plan field."""
    state = PlanState()
    state.edit_many({"workload": "pretrain", "training.framework": "fsdp2"}, "pick")
    state.evaluate_now()
    w = training_form(state, False)
    qtbot.addWidget(w)
    w.show()
    assert _visible(w, "training.torch_compile")
    assert not _visible(w, "training.liger")
    combo = w.findChild(QComboBox, "training.torch_compile")
    assert combo.itemText(0) == "auto (off)"
    combo.setCurrentIndex(1)
    assert state.doc.training.torch_compile is True
    assert "compile off" in w.findChild(QLabel, "framework policy").text()


def test_the_routed_experts_choice_follows_the_model_and_sets_the_plan_field(qtbot):
    """Only a mixture of experts under LoRA has routed experts to adapt (training.lora_experts)."""
    state, w = _form(qtbot, "hf-trainer")
    combo = w.findChild(QComboBox, "training.lora_experts")
    assert combo is not None and not combo.isEnabled()  # the default plan's dense model
    state.edit("model.id", "Qwen/Qwen3-30B-A3B")
    state.evaluate_now()
    assert combo.isEnabled() and combo.currentText() == "Auto (as PEFT does)"
    combo.setCurrentIndex(combo.findData("target_parameters"))
    assert state.doc.training.lora_experts == "target_parameters"
    state.edit("training.method", "full")
    state.evaluate_now()
    assert not combo.isEnabled()


def test_gradient_clipping_shows_the_profiles_default_and_sets_the_plan_field(qtbot):
    """training.grad_clip sits with the switches under every profile, its auto item saying the profile's default
    (the Hugging Face Trainer's max_grad_norm 1.0: on; torchtune's clip_grad_norm: null: off) and the policy line
    naming the framework's own setting; picking "off" writes the plan field."""
    state, w = _form(qtbot, "hf-trainer")
    assert _visible(w, "training.grad_clip")
    combo = w.findChild(QComboBox, "training.grad_clip")
    assert combo.itemText(0) == "auto (on)"
    assert "Hugging Face Trainer + PEFT default: on (max_grad_norm 1.0)" in w.findChild(QLabel, "framework policy").text()
    combo.setCurrentIndex(2)
    assert state.doc.training.grad_clip == "off"
    state.edit_many({"training.framework": "torchtune", "training.grad_clip": "auto"}, "pick")
    state.evaluate_now()
    assert combo.itemText(0) == "auto (off)"
    assert combo.currentIndex() == 0
    assert "torchtune default: off (clip_grad_norm: null)" in w.findChild(QLabel, "framework policy").text()


def test_the_results_list_the_clipping_with_its_explanation(qtbot):
    """The results table has "Gradient clipping per step" where the plan clips (its figure: bytes, kernels, source)
    and none where it does not."""
    from llmplan.gui.report import rows

    state, _w = _form(qtbot, "hf-trainer")
    clip = [r for r in rows(state.outcome.estimate, state.outcome.scenario) if r.label == "Gradient clipping per step"]
    assert len(clip) == 1 and clip[0].figure.inputs["bytes"] > 0 and "clip_grad.py" in clip[0].figure.citation()
    state.edit("training.grad_clip", "off")
    state.evaluate_now()
    assert not [r for r in rows(state.outcome.estimate, state.outcome.scenario)
                if r.label == "Gradient clipping per step"]


def test_auto_framework_says_what_it_chose_and_why(qtbot):
    # QLoRA on two GPUs under auto: the Hugging Face stack (was Megatron; docs/fine-tuning-frameworks.md, "Which
    # framework auto picks"), said above the profile's policy as the switches' auto values are
    state, w = _form(qtbot, "auto")
    state.edit_many({"training.method": "qlora", "hardware.gpus_per_node": 2, "parallelism.dp": 2}, "two")
    state.evaluate_now()
    policy = w.findChild(QLabel, "framework policy").text()
    assert policy.startswith("Auto: Hugging Face Trainer + PEFT for LoRA/QLoRA"), policy
    state.edit("training.framework", "torchtune")
    state.evaluate_now()
    assert not w.findChild(QLabel, "framework policy").text().startswith("Auto:")


def test_lora_dropout_on_auto_shows_the_value_it_resolved_to(qtbot):
    # Qwen3-30B-A3B LoRA: the stacked experts' adapters (PEFT's ParamWrapper, peft 0.21.2 tuners/lora/layer.py)
    # refuse any dropout, so "framework's own" is 0 there and says why; a dense model keeps the profile's 0.05
    from PySide6.QtWidgets import QDoubleSpinBox

    state, w = _form(qtbot, "hf-trainer")
    field = w.findChild(QDoubleSpinBox, "training.lora_dropout")
    assert field.text() == "framework's own (0.05)"
    state.edit("model.id", "Qwen/Qwen3-30B-A3B")
    state.evaluate_now()
    assert field.text() == "framework's own (0)"
    assert "ParamWrapper refuses any dropout" in field.toolTip()
    state.edit("training.lora_dropout", 0.1)
    state.evaluate_now()
    out = state.outcome
    assert out.kind == "input" and out.message.startswith("training.lora_dropout: PEFT's ParamWrapper"), out.message


def test_the_offload_picker_lists_only_the_profiles_devices(window):
    """catalogs/frameworks.toml offload_devices: DeepSpeed's ZeRO-Infinity has NVMe (hf-trainer runs it),
    Megatron-Core's --optimizer-cpu-offload the CPU only, unsloth none; a device the plan holds that the profile
    lacks stays listed, marked, beside the field error."""
    state = window.state
    state.edit_many({"workload": "finetune", "training.framework": "hf-trainer", "training.method": "full"}, "pick")
    state.evaluate_now()
    combo = window.layout_editor.findChild(QComboBox, "training.offload")

    def listed():  # the plan's choices; the "auto (…)" entry (gui.auto_knobs) leads while the plan leaves it open
        return [combo.itemData(i) for i in range(combo.count()) if combo.itemData(i) != AUTO]

    assert listed() == ["none", "cpu", "nvme"]
    state.edit("training.framework", "megatron")
    state.evaluate_now()
    assert listed() == ["none", "cpu"]
    assert "gradients stay on the GPU" in combo.itemData(combo.findData("cpu"), Qt.ItemDataRole.ToolTipRole)
    state.edit_many({"training.framework": "unsloth", "training.method": "lora"}, "pick")
    state.evaluate_now()
    assert listed() == ["none"]
    state.edit("training.offload", "cpu")
    state.evaluate_now()
    assert listed() == ["none", "cpu"] and "not run by unsloth" in combo.itemText(combo.findData("cpu"))
