"""Edit → Plan Name and Notes…: the plan's own ``name`` and free-text ``notes`` (DESIGN.md §3).

A shared plan carries its author's notes (why this layout, what was measured); they are part of the
file, so the app lets people write them. Both change as one undoable edit.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from llmplan.gui.dialogs import error_and_buttons
from llmplan.gui.state import PlanState

MAX_NOTES = 100_000  # the plan document's limit on ``notes``


class PlanInfoDialog(QDialog):
    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.setWindowTitle("Plan name and notes")
        self.setAccessibleName("Plan name and notes")
        form = QFormLayout(self)
        self.name = QLineEdit(state.doc.name)
        self.name.setAccessibleName("Plan name")
        self.name.setPlaceholderText("e.g. Llama 3 8B LoRA on my 4090")
        self.notes = QPlainTextEdit(state.doc.notes)
        self.notes.setAccessibleName("Plan notes")
        self.notes.setPlaceholderText("Anything a reader of this plan should know: why this layout, what you "
                                      "measured, what is still open. Saved in the plan file.")
        self.notes.setMinimumSize(420, 180)
        form.addRow("&Name", self.name)
        form.addRow("N&otes", self.notes)
        self.error = error_and_buttons(form, self.apply, self.reject)

    def apply(self) -> None:
        notes = self.notes.toPlainText()
        if len(notes) > MAX_NOTES:
            self.error.setText(f"Notes are {len(notes):,} characters; a plan keeps at most {MAX_NOTES:,}.")
            return
        if self.state.edit_many({"name": self.name.text().strip(), "notes": notes}, "Plan name and notes"):
            self.accept()
        else:
            self.error.setText("These could not be saved in the plan; see the status bar for why.")
