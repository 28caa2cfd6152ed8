"""The inference tab shows llama.cpp's rows (GPU back-end, GPU layers, host RAM bandwidth) only under an engine
that has them, by the engine profiles' data (catalogs/engines.toml: ``partial_offload``,
``backend_context_bytes``). On a vLLM plan they stood there, changing nothing (the tab looked at, 2026-11-28).
Driven by picking the engine in its list (QTest key and mouse events)."""

from __future__ import annotations

from drive import choose, click_tab
from PySide6.QtWidgets import QFormLayout

from llmplan.gui.engine_rows import ENGINE_ROWS

LLAMA_ROWS = ("inference.backend", "inference.gpu_layers", "inference.host_memory_bandwidth")


def _shown(window, paths=LLAMA_ROWS) -> dict[str, bool]:
    from PySide6.QtWidgets import QWidget

    assert set(paths) <= set(ENGINE_ROWS)
    out = {}
    for path in paths:
        widget = next(w for w in window.findChildren(QWidget, path))
        form = widget.parentWidget().layout()
        assert isinstance(form, QFormLayout)
        label = form.labelForField(widget)
        out[path] = widget.isVisibleTo(window) and (label is None or label.isVisibleTo(window))  # a check box: no label
    return out


def test_llama_cpp_rows_follow_the_engine(window, qtbot):
    click_tab(window, 0)
    choose(window, "inference.engine", "llama")
    assert window.state.doc.inference.engine in ("llama-cpp", "llama.cpp")
    assert all(_shown(window).values()), _shown(window)
    qtbot.wait(1200)  # past the combo's keyboard-search interval: the next keys start a new search
    choose(window, "inference.engine", "vLLM")
    assert window.state.doc.inference.engine == "vllm"
    assert not any(_shown(window).values()), _shown(window)
    qtbot.wait(1200)
    choose(window, "inference.engine", "Ollama")
    assert all(_shown(window).values()), _shown(window)
    window.state.undo_stack.undo()  # back to vLLM: hidden again
    assert window.state.doc.inference.engine == "vllm" and not any(_shown(window).values())


def test_dp_attention_box_only_under_sglang(window, qtbot):
    """sglang33 added "Data-parallel attention (SGLang)"; the lead's look at the tab (2026-11-28) found it on a
    vLLM plan of Llama 3 8B, where it can only raise an error. Shown under SGLang (``dp_attention`` in its profile)."""
    click_tab(window, 0)
    choose(window, "inference.engine", "vLLM")
    assert window.state.doc.inference.engine == "vllm"
    assert _shown(window, ("inference.dp_attention",)) == {"inference.dp_attention": False}
    qtbot.wait(1200)
    choose(window, "inference.engine", "SGLang")
    assert window.state.doc.inference.engine == "sglang"
    assert _shown(window, ("inference.dp_attention",)) == {"inference.dp_attention": True}
