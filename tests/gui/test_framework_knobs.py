"""The layout editor shows the ZeRO, Offload and "Offload weights" knobs only as the plan's framework runs them
(chart33, leftover33; 2026-11-28), from the profiles' data (catalogs/frameworks.toml: ``zero_stages``,
``single_gpu_zero_stages``, ``offload_devices``, ``offload_targets``, ``offload_style``), and the app's Auto… lists
no layout the framework cannot run.

Sources, cited in the catalog: unsloth patches a single-device model, with no DeepSpeed ZeRO, FSDP or optimizer
offload of its own (offload32 read its code: "unsloth: none"); torchtune on one GPU is its single-device recipes,
which shard nothing and offload with torchao's CPUOffloadOptimizer (docs/source/tutorials/memory_optimizations.rst at
bd2a0fc); FSDP's CPU offload takes the weights with the optimizer (torchtune ``fsdp_cpu_offload``), so "Offload
weights" does nothing there; Megatron-Core offloads the optimizer only. Before: every knob was shown, clickable, on
every plan. Exact checks on widget state and the search's rows; no tolerance.
"""

from __future__ import annotations

import pytest
from drive import run_auto
from PySide6.QtWidgets import QApplication, QCheckBox, QComboBox

UNSLOTH = {"workload": "finetune", "training.method": "lora", "training.framework": "unsloth"}
TORCHTUNE_FULL_40GB = {"workload": "finetune", "training.method": "full", "training.framework": "torchtune",
                       "hardware.gpu": "nvidia-a100-sxm4-40gb",
                       "hardware.gpus_per_node": 1, "hardware.nodes": 1, "parallelism.tp": 1, "parallelism.pp": 1,
                       "parallelism.dp": 1, "training.seq_len": 4096, "training.global_batch": 64}


def _knobs(window):
    zero = window.findChild(QComboBox, "training.zero_stage")
    offload = window.findChild(QComboBox, "training.offload")
    weights = window.findChild(QCheckBox, "training.offload_params")
    return zero, offload, weights


def _entries(combo: QComboBox) -> list:
    return [combo.itemData(i) for i in range(combo.count())]


def test_unsloth_shows_no_zero_or_offload_knob(window):
    assert window.state.edit_many(UNSLOTH, "unsloth LoRA")
    assert [w.isVisibleTo(window) for w in _knobs(window)] == [False, False, False]
    assert window.state.edit("training.framework", "hf-trainer")
    zero, offload, weights = _knobs(window)
    assert all(w.isVisibleTo(window) and w.isEnabled() for w in (zero, offload, weights))
    assert [v for v in _entries(zero) if isinstance(v, int)] == [0, 1, 2, 3]


def test_a_stated_stage_unsloth_cannot_run_stays_on_screen_to_undo(window):
    assert window.state.edit_many({**UNSLOTH, "training.zero_stage": 3}, "unsloth ZeRO-3")
    zero = _knobs(window)[0]
    assert zero.isVisibleTo(window) and zero.isEnabled()
    assert "not run by unsloth" in zero.currentText()


def test_torchtune_greys_zero_on_one_gpu_and_offers_its_stages_on_two(window):
    assert window.state.edit_many(TORCHTUNE_FULL_40GB, "torchtune full on one A100")
    zero, offload, weights = _knobs(window)
    assert zero.isVisibleTo(window) and not zero.isEnabled()
    assert zero.toolTip().startswith("Off on 1 GPU: torchtune runs no ZeRO sharding")
    assert [v for v in _entries(zero) if isinstance(v, int)] == [0]
    assert offload.isVisibleTo(window) and offload.isEnabled()  # torchao's CPUOffloadOptimizer
    assert weights.isVisibleTo(window) and not weights.isEnabled()
    assert weights.toolTip().startswith("Always on under torchtune's offload")
    assert window.state.edit_many({"hardware.gpus_per_node": 2, "parallelism.dp": 2}, "two GPUs")
    assert zero.isEnabled() and zero.toolTip().startswith("ZeRO (Rajbhandari")
    assert [v for v in _entries(zero) if isinstance(v, int)] == [2, 3]  # the distributed recipes: FSDP2 only


def test_megatron_hides_offload_weights(window):
    assert window.state.edit_many({"workload": "pretrain", "training.framework": "megatron"}, "Megatron")
    zero, offload, weights = _knobs(window)
    assert zero.isVisibleTo(window) and offload.isVisibleTo(window) and not weights.isVisibleTo(window)


def test_auto_lists_only_the_single_device_recipe_under_torchtune(window, qtbot):
    """Llama-3.1-8B full fine-tune, 4,096 tokens, global batch 64, on one A100 40 GB (the CLI case of
    tests/core/search/test_torchtune_one_gpu_offload.py): nothing fits without offload; every Auto… row is ZeRO-0
    (torchao's offload), none ZeRO-1/2/3 with FSDP's offload (before, the search kept such rows)."""
    assert window.state.edit("model.id", "meta-llama/Llama-3.1-8B")  # first: a model edit follows its release
    assert window.state.edit_many(TORCHTUNE_FULL_40GB, "torchtune full on one A100")
    assert window.state.doc.training.method == "full"
    assert window.state.evaluate_now().ok  # Auto… searches the evaluated plan
    dlg = run_auto(window, qtbot)
    rows = dlg.result.best
    assert rows, dlg.status.text()
    assert {(r.training.zero_stage, r.training.offload) for r in rows} == {(0, "cpu")}
    dlg.close()
    QApplication.processEvents()
    # on a 24 GB card the recipe's offload does not fit (29.92 GiB of weights and gradients stay on the GPU):
    # Auto… lists nothing, where it listed FSDP's ZeRO-3 offload before
    assert window.state.edit("hardware.gpu", "nvidia-rtx-4090-24gb")
    assert window.state.evaluate_now().ok
    dlg = run_auto(window, qtbot)
    assert not dlg.result.best and "no layout fits" in dlg.result.note
    dlg.close()
    QApplication.processEvents()


def test_fsdp2_offers_no_zero_1_and_reads_auto_zero_2(window, qtbot):
    """fsdp34: FSDP has no ZeRO-1 (tests/core/search/test_fsdp_zero_stages.py cites the code). Llama-3.2-1B full
    fine-tune on 8 × H100 under fsdp2, ZeRO left open: the picker lists 0, 2 and 3, reads "auto (ZeRO 2)" (the
    policy's move, said in the verdict line too), and no Auto… row is ZeRO-1 (before: 0–3 listed, "auto (ZeRO 1)")."""
    assert window.state.edit("model.id", "meta-llama/Llama-3.2-1B")
    assert window.state.edit_many({"workload": "finetune", "training.method": "full", "training.framework": "fsdp2",
                                   "hardware.gpu": "nvidia-h100-sxm-80gb", "hardware.gpus_per_node": 8,
                                   "hardware.nodes": 1, "parallelism.tp": 1, "parallelism.pp": 1, "parallelism.dp": 8,
                                   "training.seq_len": 4096, "training.global_batch": 64}, "fsdp2 full on 8 H100")
    out = window.state.evaluate_now()
    assert out.ok and out.automatic == "auto: ZeRO-2 (fsdp2 runs no ZeRO-1; the nearest it runs)", out.automatic
    zero = _knobs(window)[0]
    assert [v for v in _entries(zero) if isinstance(v, int)] == [0, 2, 3]
    assert zero.currentText() == "auto (ZeRO 2)"
    dlg = run_auto(window, qtbot)
    rows = dlg.result.best
    assert rows and {r.training.zero_stage for r in rows} <= {0, 2, 3}, dlg.status.text()
    dlg.close()
    QApplication.processEvents()


def test_a_stated_zero_3_on_one_gpu_is_what_auto_lists(window, qtbot, fake_dialogs):
    """zero1gpu34: a stated ZeRO-3 under deepspeed on one H100 (Llama-3.2-1B full fine-tune, no offload) is priced
    by the window's verdict and is Auto…'s first row, with the same memory and tokens/s (one engine: rel 1e-9);
    before, Auto… listed nothing ("on one GPU it runs only with a CPU offload"). Under unsloth, which has no ZeRO,
    the stated stage is the window's field error and Auto… names it (tests/core/search/test_zero_stated_one_gpu.py
    cites the frameworks' code)."""
    assert window.state.edit("model.id", "meta-llama/Llama-3.2-1B")
    assert window.state.edit_many({"workload": "finetune", "training.method": "full", "training.framework": "deepspeed",
                                   "hardware.gpu": "nvidia-h100-sxm-80gb", "hardware.gpus_per_node": 1,
                                   "hardware.nodes": 1, "parallelism.tp": 1, "parallelism.pp": 1, "parallelism.dp": 1,
                                   "training.seq_len": 4096, "training.global_batch": 64, "training.micro_batch": 4,
                                   "training.zero_stage": 3},
                                  "deepspeed ZeRO-3 on one H100")
    out = window.state.evaluate_now()
    assert out.ok and out.estimate.memory.fits and out.scenario.training.zero_stage == 3
    dlg = run_auto(window, qtbot)
    rows = dlg.result.best
    assert rows, dlg.status.text()
    top = rows[0]
    assert (top.training.zero_stage, top.training.offload, top.parallelism.dp) == (3, "none", 1)
    assert top.training.micro_batch == out.scenario.training.micro_batch
    assert top.memory_bytes == pytest.approx(out.estimate.memory.total.value, rel=1e-9)
    assert top.tokens_per_s == pytest.approx(out.estimate.compute.tokens_per_s.value, rel=1e-9)
    dlg.close()
    QApplication.processEvents()
    assert window.state.edit_many({"training.framework": "unsloth", "training.method": "lora"}, "unsloth")
    out = window.state.evaluate_now()
    assert not out.ok and "training.zero_stage: the unsloth profile runs ZeRO stages 0" in out.message
    window.layout_editor.auto_button.click()
    assert fake_dialogs.errors and "training.zero_stage" in fake_dialogs.errors[-1][1]
