"""kvlist33: the KV cache type list shows only the types the plan's engine takes (engines.toml kv_dtypes, from
each engine's docs), and a plan that states another keeps it on show, marked, with the reason."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6.QtWidgets")


def kv_box(window):
    from PySide6.QtWidgets import QComboBox

    return window.findChild(QComboBox, "inference.kv_dtype")


def items(box) -> list[str]:
    return [box.itemData(i) for i in range(box.count())]


def test_the_list_follows_the_engine(window):
    """llama.cpp's --cache-type-k types (ggml-org/llama.cpp tools/server/README.md), Ollama's
    OLLAMA_KV_CACHE_TYPE f16, q8_0, q4_0 (Ollama docs/faq.md), vLLM's model dtype or fp8 (--kv-cache-dtype)."""
    window.workload.setCurrentIndex(0)
    box = kv_box(window)
    window.state.edit("inference.engine", "vllm")
    assert items(box) == ["bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2"]
    window.state.edit("inference.engine", "llama.cpp")
    assert items(box) == ["bf16", "fp16", "fp32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"]
    window.state.edit_many({"inference.engine": "ollama", "inference.kv_dtype": "q8_0"}, "ollama")
    assert items(box) == ["fp16", "q8_0", "q4_0"] and box.currentData() == "q8_0"
    box.setCurrentIndex(2)  # choosing from the list edits the plan
    assert window.state.doc.inference.kv_dtype == "q4_0"


def test_a_stated_type_the_engine_lacks_stays_shown_with_the_reason(window):
    """trial33: Ollama took q5_0 though it documents f16, q8_0 and q4_0 only. The plan's q5_0 stays selected
    (not silently changed), marked, its tooltip and the estimate's message naming what Ollama takes."""
    from PySide6.QtCore import Qt

    window.workload.setCurrentIndex(0)
    window.state.edit_many({"inference.engine": "ollama", "inference.kv_dtype": "q5_0"}, "ollama q5_0")
    box = kv_box(window)
    assert items(box) == ["fp16", "q8_0", "q4_0", "q5_0"] and box.currentData() == "q5_0"
    why = "Ollama has no q5_0 KV cache; its 8-bit cache is q8_0 (Ollama takes fp16, q8_0, q4_0)"
    assert box.itemData(3, Qt.ItemDataRole.ToolTipRole) == why
    assert box.itemData(0, Qt.ItemDataRole.ToolTipRole) is None
    out = window.state.evaluate_now()
    assert not out.ok and why in out.message
    assert window.state.doc.inference.kv_dtype == "q5_0"
    window.state.edit("inference.engine", "llama.cpp")  # an engine that takes it: no longer an extra entry
    assert items(box)[-1] == "iq4_nl" and box.currentData() == "q5_0"
    assert window.state.evaluate_now().ok
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        window.state.edit("inference.engine", "ollama")
        window.state.evaluate_now()
        window.resize(1400, 900)
        window.grab().save(os.path.join(shot, "kv-cache-list-ollama.png"))


def test_the_list_offers_each_engine_its_quantised_caches(window):
    """kvq34: TensorRT-LLM's INT8 cache, SGLang's fp4_e2m1, mlx-lm's --kv-bits and Transformers' quantised cache
    (quanto, HQQ) are listed for their engines only (engines.toml kv_dtypes, each with its source)."""
    window.workload.setCurrentIndex(0)
    box = kv_box(window)
    window.state.edit("inference.engine", "tensorrt-llm")
    assert items(box)[-1] == "int8"
    window.state.edit("inference.engine", "sglang")
    assert items(box)[-1] == "fp4_e2m1" and "int8" not in items(box)
    window.state.edit("inference.engine", "mlx")
    assert items(box) == ["bf16", "fp16", "fp32", "mlx-8bit", "mlx-4bit", "mlx-3bit", "mlx-2bit"]
    window.state.edit("inference.engine", "transformers")
    assert items(box)[3:] == ["quanto-int4", "quanto-int2", "hqq-8bit", "hqq-4bit", "hqq-3bit", "hqq-2bit",
                              "hqq-1bit"]
    box.setCurrentIndex(items(box).index("quanto-int4"))
    assert window.state.doc.inference.kv_dtype == "quanto-int4"
    assert window.state.evaluate_now().ok
    window.state.edit("inference.engine", "vllm")  # stays, marked: vLLM has no quanto cache
    assert items(box)[-1] == "quanto-int4" and box.currentData() == "quanto-int4"
    assert not window.state.evaluate_now().ok
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:  # the MLX list with its --kv-bits caches, one chosen, and the estimate beside it
        window.state.edit_many({"inference.engine": "mlx", "inference.weight_format": "mlx-4bit",
                                "inference.kv_dtype": "mlx-4bit", "inference.prompt_tokens": 32768}, "mlx kv")
        window.state.evaluate_now()
        window.resize(1400, 900)
        window.grab().save(os.path.join(shot, "kv-cache-list-mlx.png"))
        box.showPopup()
        box.view().window().grab().save(os.path.join(shot, "kv-cache-popup-mlx.png"))
        box.hidePopup()
