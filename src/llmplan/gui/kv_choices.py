"""The KV cache type list of the Inference tab, which follows the plan's engine.

Each engine takes its own cache types (``kv_dtypes`` in ``catalogs/engines.toml``, from its docs: llama.cpp's
block types, vLLM's fp8, Ollama's f16/q8_0/q4_0), so the list shows only those. A plan that states a type its
engine does not take keeps it: the entry stays selected, marked and with the reason as its tooltip, and the
estimate's banner says the same; nothing changes the plan behind the person's back.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QComboBox, QFormLayout
from shiboken6 import isValid

from llmplan.gui import backend
from llmplan.gui.bind import bound_combo
from llmplan.gui.state import PlanState

TIP = ("Element type of the cached keys and values; the list holds the types the chosen engine takes "
       "(docs/inference.md, 'KV cache types per engine')")
REFUSED = QColor(200, 40, 40)


def fill(box: QComboBox, engine: str, value: str) -> None:
    """List ``engine``'s cache types and select ``value``, kept as a marked extra entry when the engine
    refuses it (its tooltip says why)."""
    box.blockSignals(True)
    try:
        box.clear()
        for t in backend.engine_kv_dtypes(engine):
            box.addItem(t, t)
        i = box.findData(value)
        if i < 0:
            box.addItem(str(value), value)
            i = box.count() - 1
            why = backend.kv_refusal(str(value), engine)
            if why:
                box.setItemData(i, why, Qt.ItemDataRole.ToolTipRole)
                box.setItemData(i, QBrush(REFUSED), Qt.ItemDataRole.ForegroundRole)
        box.setCurrentIndex(i)
    finally:
        box.blockSignals(False)


def add_kv_row(f: QFormLayout, state: PlanState) -> QComboBox:
    """The "KV cache type" row; its list is rebuilt when the plan's engine or cache type changes."""
    doc = state.doc.inference
    box = bound_combo(state, "inference.kv_dtype", "KV cache type", TIP,
                      [(t, t) for t in backend.engine_kv_dtypes(doc.engine)], editable=True)
    shown = [(doc.engine, doc.kv_dtype)]
    fill(box, doc.engine, doc.kv_dtype)

    def follow() -> None:
        if not isValid(box):  # the tab was rebuilt; the plan lives on
            return
        now = (state.doc.inference.engine, state.doc.inference.kv_dtype)
        if now != shown[0]:
            shown[0] = now
            fill(box, *now)

    state.follow(follow)
    f.addRow("KV cache type", box)
    return box
