"""The layout editor's module check boxes (``training.recompute_modules``, ``gui.recompute_modules_box``): shown under
"selective recompute" only, each with a tooltip saying what it recomputes; ticking one edits the plan and the estimate
moves (less memory, a longer step); a name the model has nothing for gets the engine's reason in the banner."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QCheckBox, QComboBox

V2_LITE = {"model.id": "deepseek-ai/DeepSeek-V2-Lite", "workload": "pretrain", "hardware.gpu": "nvidia-h100-sxm-80gb",
           "hardware.gpus_per_node": 8, "hardware.nodes": 1, "parallelism.dp": 8, "parallelism.ep": 8,
           "training.framework": "megatron", "training.seq_len": 4096, "training.recompute": "selective",
           "training.method": "full"}


def _box(window, name: str) -> QCheckBox:
    box = window.findChild(QCheckBox, f"training.recompute_modules.{name}")
    assert box is not None
    return box


def test_ticking_modules_edits_the_plan_and_moves_the_estimate(window):
    assert window.state.edit_many(V2_LITE, "DeepSeek-V2-Lite")
    window.resize(int(os.environ.get("LLMPLAN_SHOT_WIDTH", "1440")), 900)
    window.show()
    box = _box(window, "moe_act")
    assert box.isVisible() and "fc2's input" in box.toolTip()
    before = window.state.evaluate_now()
    assert before.ok, before.message
    box.setChecked(True)
    _box(window, "mla_up_proj").setChecked(True)
    assert window.state.doc.training.recompute_modules == ("core_attn", "mla_up_proj", "moe_act")
    after = window.state.evaluate_now()
    assert after.ok, after.message
    assert after.estimate.memory.total.value < before.estimate.memory.total.value
    assert after.estimate.compute.step_time_s.value > before.estimate.compute.step_time_s.value
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>
        window.grab().save(os.path.join(shots, "recompute_modules.png"))
    combo = window.findChild(QComboBox, "training.recompute")
    combo.setCurrentIndex(combo.findData("full"))
    assert not box.isVisible()  # the list applies to selective recompute only (and is kept for it)
    assert window.state.evaluate_now().ok


def test_the_last_module_cannot_be_unticked(window):
    assert window.state.edit_many(V2_LITE, "DeepSeek-V2-Lite")
    _box(window, "core_attn").setChecked(False)
    assert window.state.doc.training.recompute_modules == ("core_attn",)
    assert _box(window, "core_attn").isChecked()


def test_a_module_the_model_lacks_is_refused_in_the_banner(window):
    assert window.state.edit_many({**V2_LITE, "model.id": "meta-llama/Meta-Llama-3-8B", "parallelism.ep": 1},
                                  "Llama 3 8B")
    _box(window, "moe_act").setChecked(True)
    out = window.state.evaluate_now()
    assert not out.ok
    assert "moe_act: needs MoE layers" in out.message and "allowed here: core_attn, mlp" in out.message


def test_hidden_where_the_framework_has_no_named_modules_and_greyed_where_the_model_has_nothing(window):
    """Only Megatron-Core runs named modules: a Hugging Face Trainer plan under selective recompute shows no boxes.
    Under Megatron a dense Llama greys out the MoE/MLA names with the reason in the tooltip
    (``core.workload.RECOMPUTE_MODULE_LIMITS``), and keeps core_attn and mlp usable."""
    llama = {**V2_LITE, "model.id": "meta-llama/Meta-Llama-3-8B", "parallelism.ep": 1}
    window.resize(1440, 900)
    window.show()
    assert window.state.edit_many({**llama, "training.framework": "hf-trainer"}, "Llama 3 8B, Trainer")
    window.state.evaluate_now()
    assert not _box(window, "core_attn").isVisible()
    assert window.state.edit_many(llama, "Llama 3 8B, Megatron")
    window.state.evaluate_now()
    moe = _box(window, "moe")
    assert moe.isVisible() and not moe.isEnabled() and "Not for this model: needs MoE layers" in moe.toolTip()
    assert _box(window, "mlp").isEnabled() and _box(window, "core_attn").isEnabled()
