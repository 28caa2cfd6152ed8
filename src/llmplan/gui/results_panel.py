"""The right pane: verdict first, then memory per GPU, then every figure with its tooltip.

The verdict banner is the first thing a person reads, in three tiers (``llmplan.fit.tiers``):
green "Fits: 61.8 of 79.6 GiB per GPU"; amber "Fits with offload: 32 of 80 layers in CPU
RAM, ~3.55 tokens/s" with what the offload costs against all on the GPU on the line below;
red "Does not fit: needs 95.2 of 79.6 GiB per GPU". Unless it fits, the nearest fixes follow
(``PlanFixes``), for any plan. On a new window re-pointed at this machine's GPU, one line under the
banner says what the first start chose for that GPU and why (``first_plan``), until the plan is edited.
Then the bottleneck sentence (word-wrapped, never cut), the
stacked memory bar and a table of ``report.rows`` whose tooltips are each ``Figure.describe()``.
When the plan cannot be estimated, the banner says why (the engine's message, e.g. the layout
rule that is broken).
"""

from __future__ import annotations

import re

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QToolTip,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import MemoryUnit, one_line
from llmplan.fit.tiers import PlanVerdict, plan_verdict
from llmplan.gui import report
from llmplan.gui.backend import Outcome
from llmplan.gui.cards_verdict import cards_verdict
from llmplan.gui.memory_bar import MemoryBar
from llmplan.gui.plan_fixes import PlanFixes
from llmplan.gui.step_bar import StepTimeBar, fmt_seconds
from llmplan.gui.table_rows import HangingIndent, laid_out_height, row_padding, split_indent, text_margin
from llmplan.gui.theme import BAD_COLOUR, OK_COLOUR, WARN_COLOUR
from llmplan.gui.tooltips import wrap_tip

_UNIT_SPACE = re.compile(r"(?<=\d) (?=[^\W\d_])")  # "3.55 tokens/s", "23.9 GiB": a number stays with its unit


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
        size = self._base_size * (1.35 if len(text) < 70 else 1.0)  # long reasons stay readable
        sheet = f"QLabel {{ color: white; background: {colour}; border-radius: 6px; }}"
        if self.font().pointSizeF() != size or self.styleSheet() != sheet:  # setting them re-polishes the label:
            font = QFont(self.font())  # only when the tier or the text size changes, not on every knob change
            font.setPointSizeF(size)
            self.setFont(font)
            self.setStyleSheet(sheet)
        text = one_line(text)  # one line: a name's control characters escaped, never acted on
        self.setText(_UNIT_SPACE.sub("\u00a0", text).replace("/", "/\u2060"))  # wraps between words, not in units
        self.setAccessibleDescription(text)

    def text(self) -> str:
        """The verdict as written: without the no-break space and word joiner that keep "~3.55 tokens/s"
        whole when the banner wraps (Qt broke it after the slash: "…tokens/" then "s", at 585 px)."""
        return super().text().replace("\u00a0", " ").replace("\u2060", "")


SENTENCE_ROLE = Qt.ItemDataRole.UserRole + 1
SENTENCE_PAD = 8  # px: the item's margins around wrapped text
CELL_PAD = 12  # px: a cell's text margins on both sides, and a little air
SENTENCE_SECTIONS = ("Bottleneck", "Warnings")  # rows that are sentences, not figures
TIER_COLOURS = {"fits": OK_COLOUR, "offload": WARN_COLOUR, "does_not_fit": BAD_COLOUR}
Cell = tuple[str, str, str]  # kind ("header", "sentence" or "figure"), first column, second column
Tip = tuple[str, "report.Row | None", str]  # kind, the row whose tooltip a hover shows, the sentence shown


def wrapping_label(parent: QWidget, name: str) -> QLabel:
    """A label whose whole text is always shown: it wraps at word boundaries and takes the height
    its text needs at the width it gets (QLabel's heightForWidth), never one line of a sentence."""
    label = QLabel(parent)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setAccessibleName(name)
    policy = label.sizePolicy()
    policy.setHeightForWidth(True)
    policy.setVerticalPolicy(policy.Policy.MinimumExpanding)
    label.setSizePolicy(policy)
    return label


class FiguresTable(QTreeWidget):
    """Two columns that always both show: labels get at least 60 % of the width, and the room their
    longest needs while the longest value still fits beside it ("Goodput (useful share of wall time)"
    was cut at 1,280 px beside "100.0 %"). Values get the rest. A label or value still wider than its
    column wraps onto more lines of its row (``fit_rows``), never elided; the label's tooltip repeats it.

    Tooltips are worked out when hovered (``tooltip``), not set on the items: ``Figure.describe`` formats every
    input of a formula, and setting each line's on every knob change cost about 0.7 ms of the knob → verdict
    budget (issue 18: ≤ 10 ms)."""

    shown: tuple[Cell, ...] = ()  # the cells last set (``remember``, ``update_in_place``)
    widest: tuple[int, int] = (0, 0)  # px: the longest label and value of the figure rows shown
    tips: tuple[Tip, ...] = ()  # per line, what its tooltip is made from (``tooltip``)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._advances: dict[str, int] = {}  # text → its width in px (``advance``)
        self._widths: list[tuple[int, int]] = []  # per line shown: its label's and value's width (figures only)
        self._tall: dict[int, int] = {}  # line → the height set for its wrapped label or value (``fit_rows``)
        self._heights: dict[tuple[str, int], int] = {}  # (text, width) → its wrapped height (``laid_out_height``)
        self._pad = -1  # px a one-line row is taller than its text (``row_padding``); -1: not measured yet
        self.indents = HangingIndent(self)  # a wrapped label's lines all start under its first word
        self._indented: set[int] = set()  # the rows drawn by ``indents``: the tall ones and the sentences
        self.header().sectionResized.connect(lambda *_a: self.fit_rows())  # also when the person drags the divider

    def tooltip(self, line: int, column: int) -> str:
        """The tooltip of a cell: a figure's value shows its formula, inputs and source (``Figure.describe``), its
        label the label in full (elided ones) above that; a sentence its explanation, or itself."""
        if not 0 <= line < len(self.tips):
            return ""
        kind, row, text = self.tips[line]
        if kind == "sentence" and column == 0:
            return (row.tooltip() if row is not None else "") or wrap_tip(text)
        if kind != "figure" or row is None:
            return ""
        tip = row.tooltip()
        if column == 1:
            return tip
        label = wrap_tip(row.label.strip())  # a collective's row: its algorithm, nodes, bytes, bus bandwidth
        return f"{label}\n\n{tip}" if tip else label

    def viewportEvent(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            index = self.indexAt(event.pos())
            text = self.tooltip(index.row(), index.column()) if index.isValid() else ""
            if text:
                QToolTip.showText(event.globalPos(), text, self.viewport(), self.visualRect(index))
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().viewportEvent(event)

    def remember(self, cells: list[Cell], tips: list[Tip] | None = None) -> None:
        """The cells the items now show, and what their tooltips are made from: the next update compares with
        these in Python, not with each item's texts read back from Qt (about 280 reads a knob change)."""
        self.tips = tuple(tips or ())
        cells = tuple(cells)
        if cells == self.shown:
            return
        before, widths = self.shown, self._widths  # a figure line's (label, value) widths; only changed lines
        if len(before) != len(cells):               # are measured again (a knob change keeps most)
            before, widths = (None,) * len(cells), [(0, 0)] * len(cells)
        for i, cell in enumerate(cells):
            was = before[i]
            if cell != was:
                kind, first, second = cell
                if kind != "figure":
                    widths[i] = (0, 0)
                elif was is not None and was[0] == kind and was[1] == first:  # the label kept: its value changed
                    widths[i] = (widths[i][0], self.advance(second))
                else:
                    widths[i] = (self.advance(first), self.advance(second))
        self._widths = widths
        self.widest = (max((a for a, _ in widths), default=0), max((b for _, b in widths), default=0))
        self.shown = cells
        self.share_columns()

    def advance(self, text: str) -> int:
        """The text's width in px, remembered: measuring is ~10 µs a string, and a knob change keeps most
        labels and values (120 measured each time took 1.3 ms of the knob → verdict budget)."""
        known = self._advances.get(text)
        if known is None:
            if len(self._advances) > 4096:
                self._advances.clear()
            known = self._advances[text] = self.fontMetrics().horizontalAdvance(text)
        return known

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._advances.clear()
            self._heights.clear()
            self.indents.forget()
            self._pad = -1
            cells, self.shown = self.shown, ()  # every width measured again in the new font
            self.remember(list(cells), list(self.tips))

    def share_columns(self) -> None:
        width = self.viewport().width()
        labels, values = (w + CELL_PAD for w in self.widest)
        column = max(int(width * 0.6), min(labels, width - values))
        if self.columnWidth(0) != column:
            self.setColumnWidth(0, column)
        self.fit_rows()

    def clear(self) -> None:
        self._indent_rows(set())  # the rows are rebuilt with Qt's delegate alone (``fit_rows`` sets the indents)
        super().clear()
        self._tall = {}  # the new items have no size hints

    def fit_rows(self) -> None:
        """Give each figure line whose label or value is wider than its column the height of its wrapped text,
        and the others back their one line: Qt wraps a cell's text only within the row's height and elides the
        rest ("Exposed …" at 1,024 × 700). Only lines that overflow are laid out (their heights remembered), so a
        knob change that keeps the labels costs a comparison of widths per line."""
        margin = 2 * text_margin(self)
        col0, col1 = self.columnWidth(0), self.columnWidth(1)
        if self._pad < 0:
            self._pad = row_padding(self)
        wanted: dict[int, int] = {}
        for i, ((kind, first, second), (label, value)) in enumerate(zip(self.shown, self._widths, strict=False)):
            if kind != "figure" or (label + margin + 2 <= col0 and value + margin + 2 <= col1):
                continue  # both on one line, with 2 px to spare for kerning between the indent and the label
            spaces, body = split_indent(first)
            wanted[i] = self._pad + max(self.text_height(body, col0 - margin - self.indents.indent(spaces)),
                                        self.text_height(second, col1 - margin))
        if self.topLevelItemCount() != len(self.shown):
            return
        self._indent_rows(set(wanted) | {i for i, cell in enumerate(self.shown) if cell[0] == "sentence"})
        if wanted == self._tall:
            return
        model = self.model()
        model.blockSignals(True)  # one re-layout for all the rows below, not one per row
        try:
            for i in self._tall.keys() - wanted.keys():
                self.topLevelItem(i).setSizeHint(0, QSize())  # one line again: the style's own height
            for i, height in wanted.items():
                if self._tall.get(i) != height:
                    self.topLevelItem(i).setSizeHint(0, QSize(col0, height))
        finally:
            model.blockSignals(False)
        self._tall = wanted
        self.scheduleDelayedItemsLayout()
        self.viewport().update()

    def _indent_rows(self, rows: set[int]) -> None:
        """Draw these rows with the hanging indent; the others with Qt's own delegate, whose one line looks the
        same and costs no call into Python per cell painted (the indent's costs ~2 ms a repaint of every row)."""
        if rows == self._indented:
            return
        for i in self._indented - rows:
            self.setItemDelegateForRow(i, None)
        for i in rows - self._indented:
            self.setItemDelegateForRow(i, self.indents)
        self._indented = rows

    def text_height(self, text: str, width: int) -> int:
        """``laid_out_height`` in the table's font, remembered per (text, width)."""
        key = (text, width)
        known = self._heights.get(key)
        if known is None:
            if len(self._heights) > 4096:
                self._heights.clear()
            known = self._heights[key] = laid_out_height(self.font(), text, width)
        return known

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.share_columns()
        self.fit_sentences()

    def fit_sentences(self) -> None:
        """Give each sentence row (spanned over both columns) the height its wrapped text needs at
        the current width: QTreeView sizes a spanned row for one column and would cut it."""
        changed = False
        for i in range(self.topLevelItemCount()):
            item = self.topLevelItem(i)
            if item.data(0, SENTENCE_ROLE):
                hint = self.sentence_hint(item.text(0))
                if item.sizeHint(0) != hint:
                    item.setSizeHint(0, hint)
                    changed = True
        if changed:
            self.doItemsLayout()

    def update_in_place(self, cells: list[Cell], tips: list[Tip]) -> None:
        """Set the texts of the lines already shown to ``cells`` (the same lines as shown, new values). The
        model's signals are held meanwhile: with word wrap on, each changed cell made the view re-measure its
        rows (~35 µs a cell, 60 cells a knob change); one delayed re-layout and repaint afterwards covers them
        all. A text is compared with the one last set (``shown``), not read back from its item."""
        model = self.model()
        model.blockSignals(True)
        changed = False
        known = len(self.shown) == len(cells) == self.topLevelItemCount()
        try:
            for i, cell in enumerate(cells):
                kind, first, second = cell
                was = self.shown[i] if known else None
                if kind == "header" or cell == was:
                    continue
                item = self.topLevelItem(i)
                if first != (was[1] if was is not None else item.text(0)):
                    item.setText(0, first)
                    if kind == "sentence":
                        item.setSizeHint(0, self.sentence_hint(first))
                    changed = True
                if second != (was[2] if was is not None else item.text(1)):
                    item.setText(1, second)
                    changed = True
        finally:
            model.blockSignals(False)
        self.remember(cells, tips)
        if changed:
            self.scheduleDelayedItemsLayout()
            self.viewport().update()

    def sentence_hint(self, text: str) -> QSize:
        """The size a sentence row needs to show all of ``text`` wrapped at the current width."""
        spaces, body = split_indent(text)  # drawn with a hanging indent (``HangingIndent``)
        width = max(self.viewport().width() - 2 * SENTENCE_PAD - self.indents.indent(spaces), 50)
        rect = QFontMetrics(self.font()).boundingRect(0, 0, width, 100_000, int(Qt.TextFlag.TextWordWrap), body)
        return QSize(width, rect.height() + SENTENCE_PAD)


class ResultsPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unit = MemoryUnit()
        self.outcome: Outcome | None = None
        self.verdict: PlanVerdict | None = None
        self._table_shape: tuple = ()  # the (kind, label) of each table line shown (``_fill_table``)
        self.banner = VerdictBanner(self)
        self.start_note = wrapping_label(self, "What the first start chose")  # first_plan.StartChoice
        self.start_note.setTextFormat(Qt.TextFormat.PlainText)  # the GPU's name comes from its driver
        self.start_note.hide()
        self._start_doc = None  # the plan the note is about; the note goes at the first other plan
        self.cost = wrapping_label(self, "What the offload costs")  # offload tier only
        self.cost.hide()
        self.fixes = PlanFixes(self)
        self.detail = wrapping_label(self, "Verdict details")  # the bottleneck sentence
        self.bar = MemoryBar(self)
        self.step_bar = StepTimeBar(self)
        self.step_label = QLabel("Step time", self)
        self.step_label.setBuddy(self.step_bar)
        self.step_label.setWordWrap(True)  # "Step time per GPU: … (framework) profile" fits a narrow pane
        # the step's operation list (ops_dialog), computed only when asked for
        self.ops_button = QPushButton("Operations…", self)
        self.ops_button.setToolTip("Every operation the step time is the sum of: its FLOPs, bytes, rate and time")
        self.ops_button.clicked.connect(self.show_operations)
        self.ops_dialog = None
        self.table = FiguresTable(self)
        self.table.setAccessibleName("All figures")
        self.table.setColumnCount(2)
        self.table.setHeaderLabels(["Figure", "Value"])
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.header().setStretchLastSection(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setWordWrap(True)  # the bottleneck and warning sentences wrap instead of being cut
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.banner)
        lay.addWidget(self.start_note)
        lay.addWidget(self.cost)
        lay.addWidget(self.fixes)
        lay.addWidget(self.detail)
        mem_label = QLabel("Memory per GPU (worst-loaded GPU)")
        mem_label.setBuddy(self.bar)
        lay.addWidget(mem_label)
        lay.addWidget(self.bar)
        step_row = QHBoxLayout()
        step_row.addWidget(self.step_label, 1)
        step_row.addWidget(self.ops_button, 0, Qt.AlignmentFlag.AlignBottom)
        lay.addLayout(step_row)
        lay.addWidget(self.step_bar)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)
        lay.addWidget(self.table, 1)

    def set_unit(self, unit: MemoryUnit) -> None:
        self.unit = unit
        if self.outcome is not None:
            self.show_outcome(self.outcome)

    def set_start_note(self, doc, note: str, detail: str = "") -> None:
        """Show ``note`` (what the first start chose for this machine's GPU) while ``doc`` is the plan."""
        self._start_doc = doc if note else None
        self.start_note.setText(note)
        self.start_note.setToolTip(detail)
        self.start_note.setVisible(bool(note) and self.outcome is not None and self.outcome.doc == doc)

    def _follow_start_note(self, doc) -> None:
        if self._start_doc is None:
            return
        if doc is self._start_doc or doc == self._start_doc:
            self.start_note.show()
        else:  # the plan was edited (or replaced): the note is about a plan no longer shown
            self._start_doc = None
            self.start_note.hide()

    def show_outcome(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self._follow_start_note(outcome.doc)
        est = outcome.estimate
        if est is None:
            self._clear_table()
            title = {"layout": "Invalid layout", "internal": "Engine error"}.get(outcome.kind, "Cannot estimate")
            self.banner.show_message(f"{title}: {outcome.message}", BAD_COLOUR)
            self.verdict = None
            self.cost.hide()
            self.fixes.request(outcome.doc, "none", "")
            self.detail.setText("")
            self.bar.set_memory(None)
            self._show_step(None)
            return
        self._show_verdict(outcome)
        self.banner.setToolTip(wrap_tip(est.memory.total.describe()))
        self.detail.setText(est.bottleneck.statement)
        self.bar.set_memory(est.memory, self.unit, self.verdict.off_gpu if self.verdict is not None else ())
        self._show_step(est.compute)
        self._fill_table(est, outcome)

    def _fill_table(self, est, outcome: Outcome) -> None:
        """Show ``report.rows`` in the table. A knob change usually keeps the same rows with new values:
        then only the texts and tooltips that changed are set on the items already shown (issue 18:
        knob → verdict ≤ 10 ms; clearing and re-adding every row, then spanning the headers, cost about
        a third of it). Otherwise the rows are rebuilt (``_rebuild_table``)."""
        cells, tips = self._table_cells(est, outcome)
        shape = tuple((kind, first if kind != "sentence" else "") for kind, first, _second in cells)
        if shape != self._table_shape or self.table.topLevelItemCount() != len(cells):
            self._rebuild_table(cells, tips)
            self._table_shape = shape
            return
        self.table.update_in_place(cells, tips)

    def _table_cells(self, est, outcome: Outcome) -> tuple[list[Cell], list[Tip]]:
        """(kind, first column, second column) of every table line, kind "header" (a section title), "sentence"
        (spans both columns, wraps) or "figure"; and what each line's tooltip is made from (``FiguresTable.tooltip``
        works it out when hovered)."""
        cells: list[Cell] = []
        tips: list[Tip] = []
        section = ""
        for row in report.rows(est, outcome.scenario, self.unit):
            if row.section != section:
                section = row.section
                cells.append(("header", section, ""))
                tips.append(("header", None, ""))
            if row.style == "sentence" or (row.figure is None and row.section in SENTENCE_SECTIONS):
                # a sentence: both columns, wrapped (a figure too long for the value column keeps its tooltip)
                text = row.shown(self.unit)
                cells.append(("sentence", f"    {row.label}: {text}", ""))
                tips.append(("sentence", row, text))
                continue
            cells.append(("figure", "    " + row.label, row.shown(self.unit)))
            tips.append(("figure", row, ""))
        return cells, tips

    def _rebuild_table(self, cells: list[Cell], tips: list[Tip]) -> None:
        """Build every row off the view, add them at once, then span the headers and sentences:
        spanning an item already in a shown view one at a time costs a re-layout each (~2 ms)."""
        self.table.clear()
        bold = QFont(self.table.font())
        bold.setBold(True)
        items: list[QTreeWidgetItem] = []
        spanned: list[QTreeWidgetItem] = []
        for kind, first, second in cells:
            item = QTreeWidgetItem([first, second])
            if kind == "header":
                item.setFont(0, bold)
                spanned.append(item)
            elif kind == "sentence":
                item.setData(0, SENTENCE_ROLE, True)
                item.setSizeHint(0, self.table.sentence_hint(first))  # sized before it is shown
                spanned.append(item)
            else:
                item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            items.append(item)
        self.table.setUpdatesEnabled(False)
        try:
            self.table.addTopLevelItems(items)
            for item in spanned:
                item.setFirstColumnSpanned(True)
        finally:
            self.table.setUpdatesEnabled(True)
        self.table.remember(cells, tips)

    def _clear_table(self) -> None:
        self.table.clear()
        self.table.remember([])
        self._table_shape = ()

    def _show_verdict(self, outcome: Outcome) -> None:
        """The tier in the banner, what an offload costs below it, and the nearest fixes."""
        est = outcome.estimate
        if outcome.cards is not None:
            self._show_cards_verdict(outcome)
            return
        if outcome.scenario is not None:
            v = plan_verdict(outcome.scenario, est, self.unit)
        else:  # no scenario to compare with: the memory verdict alone
            tier = "fits" if est.fits else "does_not_fit"
            v = PlanVerdict(tier, bool(est.memory.tight), report.verdict(est, self.unit), "")
        self.verdict = v
        text = v.headline + (f" ({outcome.automatic})" if outcome.automatic else "")  # knobs the policy chose
        colour = WARN_COLOUR if v.tight else TIER_COLOURS[v.tier]
        self.banner.show_message(text, colour)
        self.cost.setText(v.cost)
        self.cost.setVisible(bool(v.cost))
        gpus = outcome.scenario.cluster.total_gpus if outcome.scenario is not None else 1
        name = outcome.scenario.cluster.gpu.name if outcome.scenario is not None else "these GPUs"
        self.fixes.request(outcome.doc, v.tier, f"{gpus}× {name}" if gpus > 1 else name)

    def _show_cards_verdict(self, outcome: Outcome) -> None:
        """A plan on different cards: the banner is the layer split's verdict (``cards_verdict``, which the exports
        print too); the figures below stay those of one card of the plan's GPU, and the line under the banner
        says so. Layers left in host RAM end the memory bar's legend ("Host RAM per node (offload, not on a
        GPU)"), with the CLI's bytes."""
        gpu = outcome.scenario.cluster.gpu.name if outcome.scenario is not None else "the plan's GPU"
        self.verdict = v = cards_verdict(outcome.cards, gpu)
        self.banner.show_message(v.headline, TIER_COLOURS[v.tier])
        self.cost.setText(f"Each card's layers and memory: Inference tab, Cards in this machine. {v.cost}")
        self.cost.setVisible(True)
        self.fixes.request(outcome.doc, "none", "")  # one list: the Cards pane shows plan_fixes on the cards

    def _show_step(self, compute) -> None:
        """The step-time bar, titled with the framework profile the estimate used (training only)."""
        self.step_bar.set_compute(compute)
        shown = compute is not None and bool(compute.breakdown)
        self.step_label.setVisible(shown)
        self.ops_button.setVisible(shown)
        if shown:
            framework = compute.step_time_s.inputs.get("framework", "")
            self.step_label.setText(f"Step time per GPU: {fmt_seconds(compute.step_time_s.value)}"
                                    + (f" ({framework} profile)" if framework else ""))

    def show_operations(self) -> None:
        """Open the step's operation list of the plan shown (``ops_dialog``)."""
        from llmplan.gui.ops_dialog import operations_dialog

        if self.outcome is None:
            return
        self.ops_dialog = operations_dialog(self.outcome, self)
        self.ops_dialog.show()

    def _table_menu(self, pos) -> None:
        """The step-time row's context menu: "Operations…" (``show_operations``)."""
        item = self.table.itemAt(pos)
        if item is None or item.text(0).strip() != "Step time" or not self.ops_button.isVisible():
            return
        menu = QMenu(self)
        menu.addAction("Operations of one step…", self.show_operations)
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def value_of(self, label: str) -> str:
        """The shown value of a row by its label (for tests and accessibility tools)."""
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            if item.text(0).strip() == label:
                return item.text(1)
            if item.data(0, SENTENCE_ROLE) and item.text(0).strip().startswith(label + ": "):
                return item.text(0).strip().removeprefix(label + ": ")  # a row spanning both columns
        raise KeyError(label)
