"""The inference tab's engine-specific rows (llama.cpp's, SGLang's DP attention), shown only under an engine that
has them.

"GPU back-end" (the ggml API llama.cpp and Ollama are built for), "GPU layers (-ngl)" and "Host RAM bandwidth"
(the CPU reading the layers left in host RAM) stood on every inference plan, vLLM's and TensorRT-LLM's too,
where they change nothing and read as if they did (the tab looked at on 2026-11-28). Which engines have them
is the engine profile's own data (catalogs/engines.toml): ``partial_offload`` (layers kept in host RAM:
llama.cpp, Ollama) and ``backend_context_bytes`` (a runtime per GPU back-end). A row hidden keeps its value in
the plan; an engine the catalog does not know shows every row (its estimate's error says why). The same holds for
"Data-parallel attention (SGLang)", which stood on vLLM plans of dense models: ``dp_attention`` in the profile.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFormLayout, QWidget

from llmplan.core.engine_profile import EngineProfile
from llmplan.gui.state import PlanState

ENGINE_ROWS: dict[str, Callable[[EngineProfile], bool]] = {
    "inference.backend": lambda p: p.partial_offload or bool(p.backend_context_bytes),
    "inference.gpu_layers": lambda p: p.partial_offload,
    "inference.host_memory_bandwidth": lambda p: p.partial_offload,
    "inference.dp_attention": lambda p: p.dp_attention,  # SGLang's --enable-dp-attention; nothing elsewhere
}


# A row the engine lacks stays shown while the plan holds a value that engine refuses, so that it can be cleared
# where the banner says to ("inference.dp_attention: vLLM has no data-parallel attention ... clear it": the box was
# hidden under vLLM, the plan stuck until the engine went back to SGLang). The llama.cpp rows' values are ignored
# elsewhere, not refused.
HELD: dict[str, Callable[[object], bool]] = {
    "inference.dp_attention": lambda doc: doc.inference.dp_attention,
}


def follow_engine(state: PlanState, form: QFormLayout) -> None:
    """Show each row of ``ENGINE_ROWS`` in ``form`` only while the plan's engine has it (or holds a value the
    engine refuses: ``HELD``)."""
    parent = form.parentWidget()
    fields = {path: parent.findChild(QWidget, path) for path in ENGINE_ROWS}
    shown_for: list[tuple | None] = [None]

    def follow(doc) -> None:
        engine = doc.inference.engine
        held = {path for path, holds in HELD.items() if holds(doc)}
        if (engine, held) == shown_for[0]:
            return
        shown_for[0] = (engine, held)
        from llmplan.catalog.engines import engine_profile
        from llmplan.errors import LlmplanError

        try:
            profile = engine_profile(engine)
        except LlmplanError:
            profile = None
        for path, widget in fields.items():
            if widget is not None:
                form.setRowVisible(widget, profile is None or ENGINE_ROWS[path](profile) or path in held)

    state.doc_changed.connect(follow)
    follow(state.doc)
