"""Issue 18 item 8: drops keep what the file says (name, weight format), ids never collide, and a drop
that fails stays on screen until dismissed. Files arrive through a real QDropEvent sent to the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from test_user_flows import TINY_CONFIG  # the tiny Llama config the other drop tests use

from llmplan.gui.importing import config_name, unique_id

gguf = pytest.importorskip("gguf")

# TINY_CONFIG's size by hand: embeddings and head 2 x 32,000 x 512 = 32,768,000; per layer q, o 512 x 512, k, v 512 x 256,
# MLP 3 x 512 x 1,376, two norms of 512 = 2,900,992, x 4 layers = 11,603,968; final norm 512: 44,372,480 -> "44M".


def drop(window, paths: list[Path]) -> None:
    """Drag enter, then drop, through QApplication.sendEvent: the path a file manager's drop takes."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, event)


def write_gguf(path: Path, name: str | None, file_type: int | None, tensor_type=None) -> Path:
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    if name is not None:
        w.add_name(name)
    if file_type is not None:
        w.add_file_type(file_type)
    w.add_context_length(1024)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_token_list([f"t{i}" for i in range(96)])

    def tensor(tname, *shape):
        data = np.ones(shape, dtype=np.float32)
        if tensor_type is not None and len(shape) == 2 and tname.startswith("blk."):
            q = gguf.quants.quantize(data, tensor_type)
            w.add_tensor(tname, q, raw_shape=q.shape, raw_dtype=tensor_type)
        else:
            w.add_tensor(tname, data)

    tensor("token_embd.weight", 96, 64)
    tensor("output.weight", 96, 64)
    for t, shape in (("attn_q", (64, 64)), ("attn_k", (32, 64)), ("attn_v", (32, 64)), ("attn_output", (64, 64)),
                     ("ffn_gate", (128, 64)), ("ffn_up", (128, 64)), ("ffn_down", (64, 128))):
        tensor(f"blk.0.{t}.weight", *shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_q4_k_m_gguf_keeps_its_format_and_general_name(window, isolated):
    path = write_gguf(isolated / "Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf", "Tiny Llama Instruct", 15)
    drop(window, [path])
    doc = window.state.doc
    assert doc.model.name == "Tiny Llama Instruct"
    assert doc.model.id == "user/Tiny Llama Instruct"
    assert doc.inference.weight_format == "q4_k_m"
    window.undo_action.trigger()  # model and format were one step
    assert window.state.doc.inference.weight_format == "bf16"
    assert window.state.doc.model.id == "meta-llama/Meta-Llama-3-8B"


def test_gguf_without_file_type_takes_the_blocks_tensor_type(window, isolated):
    path = write_gguf(isolated / "x.gguf", None, None, gguf.GGMLQuantizationType.Q8_0)
    drop(window, [path])
    assert window.state.doc.inference.weight_format == "q8_0"
    assert window.state.doc.model.name == "x"  # no general.name: the file's stem


def test_gguf_on_an_mlx_plan_switches_to_an_engine_that_loads_it(window, isolated):
    window.state.edit_many({"workload": "inference", "inference.engine": "mlx"}, "mlx")
    drop(window, [write_gguf(isolated / "m.gguf", "m", 15)])
    assert window.state.doc.inference.engine == "llama.cpp"
    assert window.state.evaluate_now().ok


def test_llama_ftype_table_matches_the_gguf_package():
    from llmplan.formats.gguf_header import LLAMA_FTYPES

    theirs = {e.value: e.name.removeprefix("MOSTLY_").removeprefix("ALL_") for e in gguf.LlamaFileType}
    assert all(theirs[k] == v for k, v in LLAMA_FTYPES.items())


def test_config_in_a_folder_called_drop_takes_its_own_name(window, isolated):
    folder = isolated / "drop"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**TINY_CONFIG, "_name_or_path": "acme/Tiny-Chat-v2"}), "utf-8")
    drop(window, [folder / "config.json"])
    assert window.state.doc.model.name == "Tiny-Chat-v2"
    (folder / "b.json").write_text(json.dumps(TINY_CONFIG), "utf-8")
    drop(window, [folder / "b.json"])
    assert window.state.doc.model.name == "llama-44M"  # model type and size, never "drop"


def test_two_configs_from_one_folder_get_unique_ids_and_both_survive(window, isolated):
    folder = isolated / "drop"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(TINY_CONFIG), "utf-8")
    (folder / "b.json").write_text(json.dumps({**TINY_CONFIG, "rope_theta": 500000.0}), "utf-8")
    drop(window, [folder / "a.json"])
    first = window.state.doc.model.id
    drop(window, [folder / "b.json"])
    second = window.state.doc.model.id
    assert (first, second) == ("user/llama-44M", "user/llama-44M-2")
    from llmplan.catalog.models import load_model_catalog

    cat = load_model_catalog(refresh=True)
    assert "rope_theta" not in cat.get(first).config and cat.get(second).config["rope_theta"] == 500000.0
    drop(window, [folder / "a.json"])  # the same file again: the same entry, not a third
    assert window.state.doc.model.id == first


def test_a_failed_drop_stays_until_dismissed(window, isolated, qtbot):
    garbage = isolated / "garbage.bin"
    garbage.write_bytes(b"\x00\x01not a model")
    drop(window, [garbage])
    banner = window.notices()
    assert banner.isVisible() and "garbage.bin" in banner.text.text()
    qtbot.wait(50)
    assert banner.isVisible()  # no timer takes it away
    QTest.mouseClick(banner.close_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()


@pytest.mark.parametrize("raw,expected", [("meta-llama/Llama-3.1-8B", "Llama-3.1-8B"), ("/home/me/models/qwen/", "qwen"),
                                          ("C:\\models\\phi", "phi"), ("", "llama-44M"), (".", "llama-44M")])
def test_config_name(raw, expected):
    assert config_name({**TINY_CONFIG, "_name_or_path": raw}) == expected


def test_unique_id_reuses_the_same_config_only():
    taken = {"user/m": {"a": 1}, "user/m-2": {"a": 2}}
    assert unique_id("m", {"a": 1}, taken) == "user/m"
    assert unique_id("m", {"a": 2}, taken) == "user/m-2"
    assert unique_id("m", {"a": 3}, taken) == "user/m-3"


@pytest.mark.parametrize("name", ["huge.gguf", "config.json", "model.safetensors.index.json"])
def test_a_2_gb_sparse_file_is_refused_quickly_in_the_banner(window, isolated, name):
    import time

    big = isolated / name
    with open(big, "wb") as f:
        f.truncate(2 * 1024**3)  # sparse: no disk used, but 2 GB to a reader
    if name.endswith("index.json"):
        (isolated / "config.json").unlink(missing_ok=True)
    before = window.state.doc
    t0 = time.perf_counter()
    drop(window, [big])
    assert time.perf_counter() - t0 < 5.0
    assert window.state.doc == before
    assert f"Could not import {name}" in window.notices().text.text()


def test_gguf_on_an_fp8_cache_plan_moves_the_cache_to_llama_cpps_q8_0_in_one_undo_step(window, isolated):
    """trial33: a GGUF dropped on a plan whose engine cannot load it switched the engine to llama.cpp but left
    an fp8 cache, which llama.cpp has not (--cache-type-k: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1;
    ggml-org/llama.cpp tools/server/README.md), so the estimate was a banner. Now the cache moves to q8_0, the
    nearest type llama.cpp takes, the status line says so, and one undo puts engine and cache back."""
    window.state.edit_many({"workload": "inference", "inference.engine": "tensorrt-llm",
                            "inference.kv_dtype": "fp8"}, "trt fp8")
    drop(window, [write_gguf(isolated / "m.gguf", "m", 15)])
    inf = window.state.doc.inference
    assert (inf.engine, inf.kv_dtype, inf.weight_format) == ("llama.cpp", "q8_0", "q4_k_m")
    assert window.statusBar().currentMessage().endswith(
        "served by llama.cpp; KV cache fp8 → q8_0: llama.cpp has no fp8 cache")
    assert window.state.evaluate_now().ok
    window.undo_action.trigger()
    inf = window.state.doc.inference
    assert (inf.engine, inf.kv_dtype, inf.weight_format) == ("tensorrt-llm", "fp8", "bf16")


def test_gguf_on_a_plan_whose_cache_llama_cpp_takes_leaves_the_cache(window, isolated):
    """An MLX plan's bf16 cache is one llama.cpp has: only the engine changes, and the note says nothing of it."""
    window.state.edit_many({"workload": "inference", "inference.engine": "mlx"}, "mlx")
    drop(window, [write_gguf(isolated / "m.gguf", "m", 15)])
    assert window.state.doc.inference.kv_dtype == "bf16"
    assert "KV cache" not in window.statusBar().currentMessage()
