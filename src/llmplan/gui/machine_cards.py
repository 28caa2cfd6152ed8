"""The Inference tab's "Cards in this machine": different GPUs in one box, split llama.cpp's way.

A machine with, say, an RTX 5090 and an RTX 3090 runs one model with llama.cpp's layer split (each card a
contiguous run of layers in proportion to its memory; what fits nowhere in host RAM). The list is the plan's
``hardware.cards`` (schema 5): every change is an undoable edit, it is saved with the plan and reopens with
it; the numbers are ``plan.evaluate.estimate_cards``, the same call as ``llmplan-cli estimate --gpu A --gpu
B`` and as a saved plan opened by the CLI. Detection fills the list when it finds different cards here.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from llmplan.core import present
from llmplan.core.inference.context_fit import longest_context_split
from llmplan.core.present import MemoryUnit
from llmplan.errors import LlmplanError
from llmplan.gui import backend
from llmplan.gui.bind import bound_combo
from llmplan.gui.state import PlanState
from llmplan.gui.this_machine import change_title, show_changes
from llmplan.gui.tooltips import wrap_tip
from llmplan.plan.document import cards_data, cards_of

COLUMNS = ("GPU", "Layers", "Memory", "Usable", "Fits")


def detected_card_ids(report: Any) -> list[str]:
    """Catalog ids of the GPUs a detection report found, in device order ([] when any is unknown)."""
    from llmplan.hw.match import match_gpu

    candidates = list(backend.hardware_catalog().gpus)
    ids = []
    for g in getattr(report, "gpus", ()) or ():
        m = match_gpu(g.name, g.memory_total_bytes, candidates, gpu_cores=g.gpu_cores)
        if not m.matched:
            return []
        ids.append(m.candidate_id)
    return ids


def _catalog_name(catalog: Any, gpu_id: str) -> str:
    try:
        return catalog.gpu(gpu_id).spec.name
    except LlmplanError:  # a plan's card this catalog lacks and without an inline spec: show its id
        return gpu_id


class MachineCards(QGroupBox):
    """Add, remove or take the detected cards; per-card layers and memory below."""

    changed = Signal()

    def __init__(self, state: PlanState, parent=None) -> None:
        super().__init__("Cards in this machine (llama.cpp split)", parent)
        self.state = state
        self.detected: list[str] = []
        self.setToolTip(wrap_tip("Different GPUs in one machine, e.g. an RTX 5090 and an RTX 3090: llama.cpp and Ollama "
                        "give each a run of layers in proportion to its memory (--split-mode layer). Saved in the "
                        "plan file (hardware.cards); the same numbers as `llmplan-cli estimate --gpu A --gpu B`."))
        self.pick = QComboBox()
        self.pick.setAccessibleName("GPU to add")
        for entry in backend.gpu_entries():
            self.pick.addItem(entry.spec.name, entry.id)
        self.add_button = QPushButton("Add")
        self.add_button.setToolTip("Add the chosen GPU as one more card in this machine")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove the selected card")
        self.detect_button = QPushButton("Use detected")
        self.detect_button.setToolTip("Put the GPUs detection found in this machine in the list")
        self.detect_button.setEnabled(False)
        self.split_mode = bound_combo(
            state, "inference.split_mode", "Split mode",
            "llama.cpp --split-mode: 'layer' gives each card whole layers (a token visits the cards in turn); 'row' "
            "splits every weight matrix's rows over the cards, so each layer runs on all of them at once but waits "
            "for their copies (llama.cpp only; CUDA and ROCm). inference.split_mode; docs/inference.md 'Row split'.",
            [("layer", "layer"), ("row", "row")], chars=6)
        self.cards = QListWidget()
        self.cards.setAccessibleName("Cards in this machine")
        self.cards.setMaximumHeight(72)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Per-card memory")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setMaximumHeight(110)
        self.table.setCornerButtonEnabled(False)
        for corner in self.table.findChildren(QAbstractButton):  # Qt's corner button: named for screen readers
            corner.setAccessibleName("Per-card memory table corner")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Split summary")
        self.fixes = QLabel()  # the nearest changes that put every layer on a card, each one click away
        self.fixes.setWordWrap(True)
        self.fixes.setTextFormat(Qt.TextFormat.RichText)
        self.fixes.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)  # Tab + Enter
        self.fixes.setAccessibleName("Changes that make the plan fit these cards")
        self.fixes.linkActivated.connect(lambda href: self.apply_fix(int(href.split(":", 1)[1])))
        self.fixes.hide()
        self._changes: tuple = ()
        # narrow: the centre pane is about 400 px wide; long GPU names elide in the combo
        self.pick.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.pick.setMinimumContentsLength(14)
        buttons = QHBoxLayout()
        for b in (self.add_button, self.remove_button, self.detect_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        mode_label = QLabel("Split mode")
        mode_label.setBuddy(self.split_mode)
        mode_row = QHBoxLayout()  # a row of its own: beside the three buttons it widened the Inference tab's form
        mode_row.addWidget(mode_label)  # by 170 px, past the centre column's share at 1,024 × 700
        mode_row.addWidget(self.split_mode)
        mode_row.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.pick)
        lay.addLayout(buttons)
        lay.addLayout(mode_row)
        lay.addWidget(self.cards)
        lay.addWidget(self.table)
        lay.addWidget(self.summary)
        lay.addWidget(self.fixes)
        self.add_button.clicked.connect(lambda: self.add(self.pick.currentData()))
        self.remove_button.clicked.connect(self.remove_selected)
        self.detect_button.clicked.connect(lambda: self.set_cards(self.detected))
        state.doc_changed.connect(lambda _doc: self._sync())
        self._sync()

    # ---- the list: the plan's hardware.cards ---------------------------------------------------------------
    def card_ids(self) -> list[str]:
        return self.state.doc.hardware.card_ids()

    def add(self, gpu_id: str | None) -> None:
        if gpu_id:
            self.set_cards([*self.card_ids(), gpu_id])

    def remove_selected(self) -> None:
        row, ids = self.cards.currentRow(), self.card_ids()
        if 0 <= row < len(ids):
            self.set_cards(ids[:row] + ids[row + 1:])

    def set_cards(self, ids: list[str]) -> None:
        """Make ``ids`` (device order) the plan's cards, as one undoable edit; neighbouring identical cards
        are counted together, and an entry keeps its inline spec while its GPU stays."""
        specs = {c.gpu: c.gpu_spec for c in self.state.doc.hardware.cards if c.gpu_spec is not None}
        cards = cards_data(cards_of(ids, specs))
        self.state.edit_many({"hardware.cards": cards, "hardware.tensor_split": None}, "Cards in this machine")

    def _sync(self) -> None:
        """The list widget from the plan (after an edit, undo, open or new plan)."""
        ids = self.card_ids()
        if [self.cards.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.cards.count())] != ids:
            names = {c.gpu: c.gpu_spec.name for c in self.state.doc.hardware.cards if c.gpu_spec is not None}
            catalog = backend.hardware_catalog()  # only for a changed list: most knob changes keep the cards
            self.cards.clear()
            for i in ids:
                name = names.get(i) or _catalog_name(catalog, i)
                self.cards.addItem(name)
                self.cards.item(self.cards.count() - 1).setData(Qt.ItemDataRole.UserRole, i)
        self.refresh()

    def set_report(self, report: Any) -> None:
        """Detection's report: its cards become the "Use detected" list. The plan is not changed here (the
        list is the plan's hardware, and a plan just opened must not turn modified): the "Use detected"
        button, or choosing "This machine" as the GPU, puts a mixed machine's cards in the plan."""
        try:
            self.detected = detected_card_ids(report) if report is not None else []
        except Exception:  # a broken user catalog or an odd report must not break the tab
            self.detected = []
        self.detect_button.setEnabled(len(self.detected) > 1)

    # ---- the answer -------------------------------------------------------------------------------------
    def refresh(self) -> None:
        ids = self.card_ids()
        self.remove_button.setEnabled(bool(ids))
        self.table.setRowCount(0)
        self._show_fixes(())
        if len(ids) < 2:
            self.summary.setText("Add two or more cards to see how llama.cpp splits the model across them.")
            self.changed.emit()
            return
        try:
            plan, scenario = self._split(ids)
        except LlmplanError as exc:
            self.summary.setText(str(exc))
            self.changed.emit()
            return
        mem = MemoryUnit("GiB")
        self.table.setRowCount(len(plan.cards))
        for r, c in enumerate(plan.cards):
            cells = (c.gpu.name.removeprefix("NVIDIA ").removeprefix("GeForce "), f"{c.layers}{' + head' if c.has_output else ''}", mem.fmt(c.total),
                     mem.fmt(c.capacity), "yes" if c.fits else "NO")
            for k, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(wrap_tip(f"weights {mem.fmt(c.weights)} + KV cache {mem.fmt(c.kv_cache)} + runtime "
                                f"{mem.fmt(c.runtime)} (runtime context, compute buffer{', logits' if c.has_output else ''})"))
                if k:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, k, item)
        host = f"; {plan.host_layers} layers in host RAM" if plan.host_layers else ""
        verdict = ("Fits" if plan.fits else "Does not fit") + (" (row split)" if plan.split_mode == "row" else "")
        context = longest_context_split(scenario, [c.gpu for c in plan.cards], self.state.doc.hardware.tensor_split)
        longest = (f"Longest context with every layer on a card: {context.tokens:,} tokens (the model was trained "
                   f"on {context.trained_context:,})." if context.tokens else
                   "With every layer on a card, a card overflows at any context.")
        self.summary.setText(f"{verdict}: {present.tokens_per_s(1 / plan.tpot_s)} per user, first token in "
                             f"{present.duration(plan.ttft_s)}{host}. {longest}")
        if not plan.fits or plan.host_layers:
            from llmplan.fit.tiers import plan_fixes

            self._show_fixes(plan_fixes(self.state.doc))  # () when the plan cannot be evaluated
        self.changed.emit()

    def _show_fixes(self, changes: tuple) -> None:
        self._changes = changes
        show_changes(self.fixes, changes, "To fit on these cards alone (click one):", "fix")

    def apply_fix(self, index: int) -> bool:
        """Make the nearest change ``index`` to the plan: one undoable edit."""
        if not 0 <= index < len(self._changes):
            return False
        from llmplan.plan.overrides import apply_overrides

        change = self._changes[index]
        self.state.replace(apply_overrides(self.state.doc, list(change.overrides)), change_title(change.sentence))
        return True

    def _split(self, ids: list[str]):
        from llmplan.plan.evaluate import estimate_cards

        doc = self.state.doc
        if doc.workload != "inference":
            raise LlmplanError("The layer split is for inference; training plans need identical GPUs.")
        try:
            return estimate_cards(doc)
        except LlmplanError as exc:
            if "does not split layers" in str(exc):
                raise LlmplanError("Pick llama.cpp or Ollama as the engine: they split layers across different "
                                   "cards.") from None
            raise
