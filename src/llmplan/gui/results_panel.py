"""The right pane: verdict first, then memory per GPU, then every figure with its tooltip.

The verdict banner is the first thing a person reads ("Fits: 61.8 of 79.6 GiB per
GPU"); below it the stacked memory bar and a table of ``report.rows`` whose tooltips
are each ``Figure.describe()``. When the plan cannot be estimated, the banner says
why (the engine's message, e.g. the layout rule that is broken).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import MemoryUnit, one_line
from llmplan.gui import report
from llmplan.gui.backend import Outcome
from llmplan.gui.memory_bar import MemoryBar
from llmplan.gui.step_bar import StepTimeBar, fmt_seconds
from llmplan.gui.theme import BAD_COLOUR, OK_COLOUR, WARN_COLOUR


class VerdictBanner(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)  # model and GPU names inside come from files and drivers
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = QFont(self.font())
        self._base_size = font.pointSizeF()
        font.setBold(True)
        self.setFont(font)
        self.setAccessibleName("Verdict")
        self.setMargin(8)
        self.show_message("Estimating…", WARN_COLOUR)

    def show_message(self, text: str, colour: str) -> None:
        font = QFont(self.font())
        font.setPointSizeF(self._base_size * (1.35 if len(text) < 70 else 1.0))  # long reasons stay readable
        self.setFont(font)
        text = one_line(text)  # one line: a name's control characters escaped, never acted on
        self.setText(text)
        self.setAccessibleDescription(text)
        self.setStyleSheet(f"QLabel {{ color: white; background: {colour}; border-radius: 6px; }}")


class FiguresTable(QTreeWidget):
    """Two columns that always both show: labels get ~60 % of the width (long collective
    names are elided, full text in the tooltip), values the rest."""

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.setColumnWidth(0, int(self.viewport().width() * 0.6))


class ResultsPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit = MemoryUnit()
        self.outcome: Outcome | None = None
        self.banner = VerdictBanner(self)
        self.detail = QLabel(self)  # "this machine" line, bottleneck sentence
        self.detail.setWordWrap(True)
        self.detail.setAccessibleName("Verdict details")
        self.bar = MemoryBar(self)
        self.step_bar = StepTimeBar(self)
        self.step_label = QLabel("Step time", self)
        self.step_label.setBuddy(self.step_bar)
        self.step_label.setWordWrap(True)  # "Step time per GPU: … (framework) profile" fits a narrow pane
        self.table = FiguresTable(self)
        self.table.setAccessibleName("All figures")
        self.table.setColumnCount(2)
        self.table.setHeaderLabels(["Figure", "Value"])
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.header().setStretchLastSection(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.banner)
        lay.addWidget(self.detail)
        mem_label = QLabel("Memory per GPU (worst-loaded GPU)")
        mem_label.setBuddy(self.bar)
        lay.addWidget(mem_label)
        lay.addWidget(self.bar)
        lay.addWidget(self.step_label)
        lay.addWidget(self.step_bar)
        lay.addWidget(self.table, 1)

    def set_unit(self, unit: MemoryUnit) -> None:
        self.unit = unit
        if self.outcome is not None:
            self.show_outcome(self.outcome)

    def show_outcome(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.table.clear()
        est = outcome.estimate
        if est is None:
            title = {"layout": "Invalid layout", "internal": "Engine error"}.get(outcome.kind, "Cannot estimate")
            self.banner.show_message(f"{title}: {outcome.message}", BAD_COLOUR)
            self.detail.setText("")
            self.bar.set_memory(None)
            self._show_step(None)
            return
        verdict = report.verdict(est, self.unit)
        if outcome.automatic:  # core.search.policy chose knobs the plan leaves open
            verdict += f" ({outcome.automatic})"
        colour = (WARN_COLOUR if est.memory.tight else OK_COLOUR) if est.fits else BAD_COLOUR
        self.banner.show_message(verdict, colour)
        self.banner.setToolTip(est.memory.total.describe())
        self.detail.setText(est.bottleneck.statement)
        self.bar.set_memory(est.memory, self.unit)
        self._show_step(est.compute)
        section_item: QTreeWidgetItem | None = None
        section = ""
        bold = QFont(self.table.font())
        bold.setBold(True)
        sections: list[QTreeWidgetItem] = []
        for row in report.rows(est, outcome.scenario):
            if row.section != section:
                section = row.section
                section_item = QTreeWidgetItem(self.table, [section, ""])
                section_item.setFont(0, bold)
                sections.append(section_item)
            item = QTreeWidgetItem(self.table, ["    " + row.label, row.shown(self.unit)])
            tip = row.tooltip()
            item.setToolTip(0, f"{row.label.strip()}\n\n{tip}" if tip else row.label.strip())  # elided labels in full
            item.setToolTip(1, tip)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        del section_item
        for item in sections:  # after all rows: each call lays the whole tree out again (2 ms a section)
            item.setFirstColumnSpanned(True)

    def _show_step(self, compute) -> None:
        """The step-time bar, titled with the framework profile the estimate used (training only)."""
        self.step_bar.set_compute(compute)
        shown = compute is not None and bool(compute.breakdown)
        self.step_label.setVisible(shown)
        if shown:
            framework = compute.step_time_s.inputs.get("framework", "")
            self.step_label.setText(f"Step time per GPU: {fmt_seconds(compute.step_time_s.value)}"
                                    + (f" ({framework} profile)" if framework else ""))

    def value_of(self, label: str) -> str:
        """The shown value of a row by its label (for tests and accessibility tools)."""
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            if item.text(0).strip() == label:
                return item.text(1)
        raise KeyError(label)
