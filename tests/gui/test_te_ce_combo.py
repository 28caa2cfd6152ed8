"""The Loss selector offers Transformer Engine's fused cross-entropy (``training.loss = "te_ce"``, Megatron-Core's
``cross_entropy_fusion_impl = "te"``), and picking it prices the loss at the bytes that kernel moves (10 B per logit,
``ops.LOSS_BYTES``) instead of the measured fp32 cross-entropy's 55 B."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QComboBox

MEGATRON_8B = {"model.id": "meta-llama/Meta-Llama-3-8B", "workload": "pretrain", "hardware.gpu": "nvidia-h100-sxm-80gb",
               "hardware.gpus_per_node": 8, "hardware.nodes": 1, "parallelism.dp": 8, "training.framework": "megatron",
               "training.seq_len": 4096, "training.method": "full"}


def test_te_cross_entropy_entry_sets_the_plan_and_costs_less_than_the_fp32_loss(window):
    assert window.state.edit_many(MEGATRON_8B, "Megatron 8B")
    combo = window.findChild(QComboBox, "training.loss")
    loss = {}
    for value in ("fp32_logits", "te_ce"):
        i = combo.findData(value)
        assert i >= 0, [combo.itemData(k) for k in range(combo.count())]
        combo.setCurrentIndex(i)
        out = window.state.evaluate_now()
        assert out.ok, out.message
        loss[value] = out.estimate.compute.breakdown["loss"]
    assert window.state.doc.training.loss == "te_ce"
    assert combo.currentText() == "TE fused CE (Megatron)"
    assert loss["te_ce"] < 0.2 * loss["fp32_logits"]  # 10 B against 55.4 B per logit
    shots = os.environ.get("LLMPLAN_SHOTS")
    if shots:  # a picture to look at: LLMPLAN_SHOTS=<folder>
        window.resize(1440, 900)
        window.grab().save(os.path.join(shots, "te_ce.png"))
