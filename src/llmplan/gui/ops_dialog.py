"""The "Operations" dialog: the step's operation list (``core.training.step_ops``) of the plan shown.

Opened from the results pane (the "Operations…" button beside the step time, or the step-time row's context menu).
It lists every operation the step time is the sum of — GEMMs by shape, attention, each elementwise kernel, the
loss, the optimizer's pass, exposed communication — with its FLOPs, bytes, the rate it was priced at and its time,
sortable by any column, and copies the table as CSV. The list is computed when the dialog opens, never on a knob
change. Training only: an inference plan's latency is priced per token (docs/inference.md), which the dialog says.
"""

from __future__ import annotations

import csv
import io

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import duration, si
from llmplan.core.training.step_ops import StepOps, step_operations

COLUMNS = ("Operation", "Group", "Phase", "Count", "FLOPs", "Bytes", "Rate", "Time", "Share")
_NUMERIC = {3, 4, 5, 6, 7, 8}


class _Cell(QTableWidgetItem):
    """A cell shown as text, sorted by its number where it has one."""

    def __init__(self, text: str, key: float | None = None):
        super().__init__(text)
        self.key = key
        if key is not None:
            self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        if isinstance(other, _Cell) and self.key is not None and other.key is not None:
            return self.key < other.key
        return self.text().lower() < other.text().lower()  # (QTableWidgetItem.__lt__ would call back here)


def _cells(r, step_s: float) -> list[tuple[str, float | None]]:
    share = r.seconds / step_s if step_s else 0.0
    return [(r.name, None), (r.group, None), (r.phase, None),
            (f"{r.count:,.0f}" if r.count else "—", r.count),
            (si(r.flops, "FLOP") if r.flops else "—", r.flops),
            (si(r.bytes, "B") if r.bytes else "—", r.bytes),
            (si(r.rate, r.rate_unit) if r.rate and r.rate_unit else "—", r.rate),
            (duration(r.seconds), r.seconds), (f"{share:.1%}", share)]


def _priced(r) -> str:
    return f"{r.name} ({r.phase}): priced by {r.priced_by}; source: {r.source}"


class OperationsDialog(QDialog):
    def __init__(self, title: str, ops: StepOps | None, why_none: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Operations of one step — {title}")
        self.ops = ops
        lay = QVBoxLayout(self)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        lay.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setAccessibleName("Operations of one step")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        lay.addWidget(self.table, 1)
        # the selected row's rate: what priced it and the measurement behind it (too long for a column)
        self.detail = QLabel("Select a row to see what priced it and the measurement behind it.", self)
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.detail)
        self.table.currentCellChanged.connect(self._show_detail)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.copy_button = QPushButton("Copy as CSV", self)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy_csv)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        if ops is None:
            self.summary.setText(why_none)
            self.table.hide()
            self.copy_button.setEnabled(False)
        else:
            self._fill(ops)
        self.resize(1000, 640)

    def _fill(self, ops: StepOps) -> None:
        self.summary.setText(
            f"{ops.notes[0]}. Compute time {duration(ops.compute_s)} (the estimate's); step time "
            f"{duration(ops.step_s)} with the exposed communication, pipeline bubble and offload. Rate: what each "
            "operation was priced at — FLOP/s for GEMMs and attention, bytes/s for memory-bound kernels "
            "(docs/training.md, 'Reading the operation list'). Click a column to sort.")
        rows = sorted(ops.rows, key=lambda r: -r.seconds)
        self._rows = rows
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        for i, r in enumerate(rows):
            for j, (text, key) in enumerate(_cells(r, ops.step_s)):
                cell = _Cell(text, key if j in _NUMERIC else None)
                cell.setToolTip(_priced(r))
                cell.setData(Qt.ItemDataRole.UserRole, i)
                self.table.setItem(i, j, cell)
        self.table.setSortingEnabled(True)
        head = self.table.horizontalHeader()
        self.table.resizeColumnsToContents()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)

    def _show_detail(self, row: int, *_args) -> None:
        item = self.table.item(row, 0) if row >= 0 else None
        if item is not None:
            self.detail.setText(_priced(self._rows[item.data(Qt.ItemDataRole.UserRole)]))

    def csv_text(self) -> str:
        """Every row with full numbers (seconds, FLOPs, bytes, the rate and its unit), in the table's order."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["operation", "group", "phase", "count", "flops", "bytes", "rate", "rate_unit", "seconds",
                    "share", "priced_by", "source", "in_compute_time"])
        order = sorted(self.ops.rows, key=lambda r: -r.seconds) if self.ops else []
        for r in order:
            share = r.seconds / self.ops.step_s if self.ops.step_s else 0.0
            w.writerow([r.name, r.group, r.phase, r.count, r.flops, r.bytes, r.rate, r.rate_unit, r.seconds, share,
                        r.priced_by, r.source, r.in_compute])
        return out.getvalue()

    def copy_csv(self) -> None:
        QGuiApplication.clipboard().setText(self.csv_text())


def operations_dialog(outcome, parent: QWidget | None = None) -> OperationsDialog:
    """The dialog for the plan an ``Outcome`` (``gui.backend``) holds, its list computed now."""
    doc, sc, ev = outcome.doc, outcome.scenario, outcome.estimate
    title = doc.name or (sc.model.name if sc is not None else "plan")
    if sc is None or ev is None or sc.workload == "inference" or ev.estimate.compute is None:
        why = ("The operation list is training-only: an inference plan's latency is priced per token, prefill and "
               "decode, not as a list of kernels (docs/inference.md)." if sc is not None and sc.workload ==
               "inference" else "This plan has no estimate to list.")
        return OperationsDialog(title, None, why, parent)
    return OperationsDialog(title, step_operations(sc, ev.estimate), parent=parent)
