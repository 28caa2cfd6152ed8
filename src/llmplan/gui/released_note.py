"""The Inference tab's "weights as released: mxfp4" line, under the weight format.

Picking gpt-oss-20b or DeepSeek-V3 on the Inference tab plans them in the format their config.json declares
(``plan.released``: the rule the CLI applies to ``--model``, and the same words it prints). The line says why the
weight format moved; it shows while the plan's format is the release's, and hides otherwise.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QLabel

from llmplan.gui.state import PlanState
from llmplan.plan.released import release_of, released_words

ANOTHER = "choose another weight format above for another"


def add_released_row(form: QFormLayout, state: PlanState) -> QLabel:
    """A row of ``form`` spanning both columns that follows the plan; hidden unless the weights are as released."""
    note = QLabel()
    note.setWordWrap(True)
    note.setAccessibleName("Released weight format")
    note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    note.setStyleSheet("color: palette(placeholder-text)")
    form.addRow(note)
    row = form.rowCount() - 1
    seen: list[object] = [None]

    def refresh() -> None:
        doc = state.doc
        key = (doc.model, doc.workload, doc.inference.engine, doc.inference.weight_format)
        if key == seen[0]:
            return  # most edits change none of these
        seen[0] = key
        fmt = release_of(doc)
        shown = fmt is not None and doc.inference.weight_format.lower() == fmt
        words = released_words(fmt, ANOTHER) if shown else ""
        note.setText(words[:1].upper() + words[1:])
        form.setRowVisible(row, shown)

    state.follow(refresh)
    refresh()
    return note
