"""User flows against the real catalogs, engine, system report and auto-planner: pick, drop,
invalid layout, Auto. No stand-ins: a missing piece fails these tests, it does not skip them.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from llmplan.plan.document import ModelRef

# A tiny Llama-style config (the keys transformers' LlamaConfig writes), small enough to fit anywhere.
TINY_CONFIG = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "hidden_size": 512,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 1376,
    "max_position_embeddings": 2048, "tie_word_embeddings": False, "rms_norm_eps": 1e-5,
}


def _drop(window, paths: list[Path]) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)


def test_pick_model_changes_verdict(window):
    before = window.results.banner.text()
    assert window.models.select("meta-llama/Llama-3.1-70B")
    window.state.evaluate_now()
    assert window.state.doc.model.id == "meta-llama/Llama-3.1-70B"
    assert window.results.banner.text() != before
    window.undo_action.trigger()
    assert window.state.doc.model.id == "meta-llama/Meta-Llama-3-8B"


def test_drop_config_json_imports_model(window, isolated):
    folder = isolated / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_CONFIG), "utf-8")
    _drop(window, [folder / "config.json"])
    assert window.state.doc.model.config["hidden_size"] == 512
    out = window.state.evaluate_now()
    assert out.ok and out.estimate.params.total < 50_000_000
    assert window.results.banner.text().startswith("Fits:")
    # it joined the user catalog (in the isolated data dir)
    assert any(e.id == window.state.doc.model.id for e in window.models._entries)


def test_drop_gguf_imports_model(window, isolated):
    import gguf
    import numpy as np

    path = isolated / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-gguf")
    w.add_context_length(1024)
    w.add_embedding_length(64)
    w.add_block_count(2)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_token_list([f"t{i}" for i in range(96)])
    w.add_tensor("token_embd.weight", np.ones((96, 64), dtype=np.float32))
    w.add_tensor("output.weight", np.ones((96, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    _drop(window, [path])
    assert window.state.doc.model.config["hidden_size"] == 64
    assert window.state.evaluate_now().ok


def test_drop_broken_config_reports_not_crashes(window, isolated):
    bad = isolated / "config.json"
    bad.write_text("{}", "utf-8")
    before = window.state.doc
    _drop(window, [bad])
    assert window.state.doc == before
    assert "Could not import config.json" in window.notices().text.text()  # stays until dismissed


def test_invalid_layout_shows_engine_rule(window):
    window.state.edit_many({"hardware.gpus_per_node": 8, "parallelism.tp": 3}, "bad")
    out = window.state.evaluate_now()
    assert out.kind in ("layout", "input"), out
    assert window.results.banner.text().startswith(("Invalid layout", "Cannot estimate"))
    status = window.layout_editor.status.text()
    assert out.message in status or "TP" in status or "GPUs" in status


def test_auto_search_apply_result(window, qtbot):
    window.state.edit_many({"hardware.gpus_per_node": 8, "workload": "pretrain", "training.method": "full"},
                           "8 GPUs")
    window.state.evaluate_now()
    window.auto_search()
    dlg = window.auto_dialog
    with qtbot.waitSignal(dlg.finished_search, timeout=60_000):
        pass
    assert dlg.result is not None and dlg.result.best, dlg.status.text()
    dlg.list.setCurrentItem(dlg.list.topLevelItem(0))
    assert dlg.apply_selected()
    assert window.state.doc.parallelism == dlg.result.best[0].parallelism
    out = window.state.evaluate_now()
    assert out.ok
    window.undo_action.trigger()
    assert window.state.doc.parallelism.tp == 1
    dlg.close()
    QApplication.processEvents()


def test_charts_redraw_after_knob(window, qtbot):
    with qtbot.waitSignal(window.charts.redrawn, timeout=20_000):
        window.state.edit("training.seq_len", 8192)
    assert window.charts.last is not None
    assert window.charts.last.memory_vs_seq.xs


def test_edit_architecture_makes_custom_model(window):
    window.models.edit_architecture()
    dlg = window.models.arch_dialog
    dlg.spins["num_hidden_layers"].setValue(16)
    dlg._ok()
    assert window.state.doc.model.config["num_hidden_layers"] == 16
    out = window.state.evaluate_now()
    assert out.ok and out.scenario.model.num_layers == 16
    dlg.spins["num_key_value_heads"].setValue(5)  # 32 heads are not a multiple of 5 KV heads
    dlg._ok()
    assert dlg.error.text()


def test_export_report_csv_and_text(window, isolated, fake_dialogs):
    from PySide6.QtWidgets import QApplication

    fake_dialogs.save_result = isolated / "r.md"
    window.export_markdown()
    md = (isolated / "r.md").read_text("utf-8")
    assert window.results.banner.text() in md
    fake_dialogs.save_result = isolated / "r.csv"
    window.export_csv()
    csv_text = (isolated / "r.csv").read_text("utf-8")
    total = window.state.outcome.estimate.memory.total.value
    assert repr(total / 2**30) in csv_text  # full precision GiB (exact: a power-of-two divisor), not rounded text
    window.copy_text()
    assert window.results.banner.text() in QApplication.clipboard().text()
    fake_dialogs.folder_result = isolated
    window.charts.wait_idle()
    window.export_charts()
    assert len(list(isolated.glob("chart-*.png"))) == 5


def test_custom_gpu_dialog_sets_inline_spec(window):
    from llmplan.gui.custom_gpu import CustomGpuDialog

    dlg = CustomGpuDialog(window.state.outcome.scenario.cluster.gpu, window)
    dlg.memory.setValue(48)
    dlg.accepted_spec.connect(lambda spec: window.state.edit_many(
        {"hardware.gpu": spec.id, "hardware.gpu_spec": spec}, "custom"))
    dlg._ok()
    assert window.state.doc.hardware.gpu_spec.memory_bytes == 48 * 1024**3
    out = window.state.evaluate_now()
    assert out.ok and out.estimate.memory.capacity.value <= 48 * 1024**3


def test_saved_plan_is_self_contained_and_editable(window, isolated, fake_dialogs, settings, qtbot):
    from llmplan.gui.main_window import MainWindow

    window.state.edit_many({"hardware.gpus_per_node": 8, "hardware.nodes": 2, "parallelism.dp": 16,
                            "hardware.network": window.hardware.network.itemData(1)}, "2 nodes")
    fake_dialogs.save_result = isolated / "shared.llmplan"
    assert window.save_as()
    other = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(other)
    assert other.open_path(isolated / "shared.llmplan")
    assert other.state.doc.hardware.gpu_spec is not None  # written in on save
    a, b = window.state.evaluate_now(), other.state.evaluate_now()
    assert a.ok and b.ok and a.estimate.memory.total.value == b.estimate.memory.total.value
    assert a.estimate.compute.step_time_s.value == b.estimate.compute.step_time_s.value
    # picking another network in the reopened plan takes effect despite the inline spec
    other.hardware.network.setCurrentIndex(2 if other.hardware.network.count() > 2 else 0)
    c = other.state.evaluate_now()
    assert c.scenario.cluster.network.id == other.state.doc.hardware.network


def test_pareto_cleared_when_plan_changes_model(window):
    window.charts.show_pareto([(8, 1000.0, "a")], [(8, 1000.0, "a")], 0, window.state.doc)
    assert window.charts._pareto_for is not None
    window.state.edit("training.seq_len", 2048)  # same model and cluster: keep it
    window._show(window.state.evaluate_now())
    assert window.charts._pareto_for is not None
    window.models.select("meta-llama/Llama-3.1-70B")
    window._show(window.state.evaluate_now())
    assert window.charts._pareto_for is None


def test_auto_search_can_be_cancelled(window, qtbot):
    window.state.edit_many({"hardware.gpus_per_node": 8, "hardware.nodes": 8, "hardware.network": "ib-ndr-400",
                            "parallelism.dp": 64, "workload": "pretrain", "training.method": "full"}, "64 GPUs")
    window.state.evaluate_now()
    window.auto_search()
    dlg = window.auto_dialog
    with qtbot.waitSignal(dlg.finished_search, timeout=60_000):
        dlg.cancel()
    assert not dlg.running and dlg.run_button.isEnabled()
    assert dlg.result is None or dlg.result.cancelled or dlg.result.best
    dlg.close()


def test_closing_window_while_charts_compute_is_safe(qtbot, settings, fake_dialogs):
    from llmplan.gui.main_window import MainWindow

    w = MainWindow(settings=settings, detect=False)
    qtbot.addWidget(w)
    w.state.edit("training.seq_len", 8192)
    w.state.evaluate_now()
    w.charts._timer.setInterval(0)
    qtbot.wait(5)
    w.state.undo_stack.setClean()
    w.close()
    qtbot.wait(300)  # a sweep finishing after the window has closed must not crash


def test_inference_tab_shows_latency_and_kv_cache(window, qtbot):
    window.workload.setCurrentIndex(0)
    assert window.state.doc.workload == "inference"
    out = window.state.evaluate_now()
    assert out.ok, out.message
    assert window.results.value_of("Time to first token")
    before = out.estimate.memory.kv_cache.value
    window.state.edit("inference.batch", 32)
    after = window.state.evaluate_now().estimate.memory.kv_cache.value
    assert after > before  # more concurrent sequences hold more KV cache
    with qtbot.waitSignal(window.charts.redrawn, timeout=20_000):
        window.state.edit("inference.prompt_tokens", 2048)
    assert window.charts.last.roofline.points  # decode/prefill points on the roofline


def test_every_figure_has_its_explanation_as_tooltip(window):
    from llmplan.gui.tooltips import wrap_tip

    est = window.state.evaluate_now().estimate
    table = window.results.table
    tips = {table.topLevelItem(i).text(0).strip(): table.tooltip(i, 1)
            for i in range(table.topLevelItemCount())}
    assert tips["Total"] == wrap_tip(est.memory.total.describe())  # wrapped to a tooltip's width
    assert tips["Step time"] == wrap_tip(est.compute.step_time_s.describe())
    assert window.results.banner.toolTip() == wrap_tip(est.memory.total.describe())


def test_search_and_click_like_a_user(window, qtbot):
    """Type in the search boxes and click rows with the mouse."""
    hw = window.hardware
    qtbot.keyClicks(hw.search, "A100 SXM4 40")
    group = hw.tree.model().index(0, 0)
    item = group.model().index(0, 0, group)
    assert "A100" in item.data()
    rect = hw.tree.visualRect(item)
    qtbot.mouseClick(hw.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.state.doc.hardware.gpu == item.data(Qt.ItemDataRole.UserRole)
    est = window.state.evaluate_now().estimate
    assert f"of {window.unit.fmt(est.memory.capacity.value)} per GPU" in window.results.banner.text()
    assert est.memory.capacity.value < 45 * 1024**3  # a 40 GB card now, not the 80 GB H100
    models = window.models
    qtbot.keyClicks(models.search, "qwen3 32b")
    first = models.list.model().index(0, 0)
    qtbot.mouseClick(models.list.viewport(), Qt.MouseButton.LeftButton, pos=models.list.visualRect(first).center())
    assert window.state.doc.model.id == first.data(Qt.ItemDataRole.UserRole)
    assert "Qwen3" in window.state.doc.model.id


def test_drop_safetensors_index_and_model_folder(window, isolated):
    folder = isolated / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**TINY_CONFIG, "num_hidden_layers": 6}), "utf-8")
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 1}, "weight_map": {}}), "utf-8")
    _drop(window, [index])
    assert window.state.doc.model.config["num_hidden_layers"] == 6
    (folder / "config.json").write_text(json.dumps({**TINY_CONFIG, "num_hidden_layers": 7}), "utf-8")
    _drop(window, [folder])
    assert window.state.doc.model.config["num_hidden_layers"] == 7
    assert window.state.evaluate_now().ok


def test_edit_architecture_of_a_moe_model_edits_its_experts(window):
    """Mixtral's own keys: the dialog shows the routed experts and top-k; 4 experts instead of 8 keeps it
    a MoE model with half its expert weights, and the router loses 4 rows of 4,096 in each of 32 layers."""
    from llmplan.core.params import count_params

    assert window.state.edit("model", ModelRef(id="mistralai/Mixtral-8x7B-v0.1"))
    before = count_params(window.state.evaluate_now().scenario.model)
    window.models.edit_architecture()
    dlg = window.models.arch_dialog
    assert {"num_local_experts", "num_experts_per_tok"} <= set(dlg.spins)
    dlg.spins["num_local_experts"].setValue(4)
    dlg._ok()
    spec = window.state.evaluate_now().scenario.model
    assert spec.moe.num_experts == 4 and spec.moe.experts_per_token == 2
    assert count_params(spec).total == before.total - before.routed_experts // 2 - 4 * 4096 * 32


def test_edit_architecture_keeps_a_gpt2_a_gpt2(window):
    """GPT-2's keys are n_embd, n_layer ...; editing them must not turn the model into a Llama (it once did:
    GeLU, learned positions and biases were lost without a word)."""
    assert window.state.edit("model", ModelRef(id="openai-community/gpt2"))
    window.models.edit_architecture()
    dlg = window.models.arch_dialog
    assert "n_layer" in dlg.spins and "num_hidden_layers" not in dlg.spins and "num_key_value_heads" not in dlg.spins
    dlg.spins["n_layer"].setValue(6)
    dlg._ok()
    spec = window.state.evaluate_now().scenario.model
    assert spec.model_type == "gpt2" and spec.num_layers == 6 and spec.position == "learned" and not spec.gated_mlp
