"""The Inference tab's "Cards in this machine": different GPUs in one box, split llama.cpp's way.

A machine with, say, an RTX 5090 and an RTX 3090 runs one model with llama.cpp's layer split (each card a
contiguous run of layers in proportion to its memory; what fits nowhere in host RAM). The plan's hardware
is identical GPUs, so this list is the app's own state beside the plan, not saved in the plan file; the
numbers are `llmplan.core.inference.multi_gpu.split_layers`, the same call as ``llmplan-cli estimate
--gpu A --gpu B``. Detection fills the list when it finds different cards in this machine.
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
from llmplan.core.present import MemoryUnit
from llmplan.errors import LlmplanError
from llmplan.gui import backend
from llmplan.gui.state import PlanState

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


class MachineCards(QGroupBox):
    """Add, remove or take the detected cards; per-card layers and memory below."""

    changed = Signal()

    def __init__(self, state: PlanState, parent=None) -> None:
        super().__init__("Cards in this machine (llama.cpp layer split)", parent)
        self.state = state
        self.detected: list[str] = []
        self.setToolTip("Different GPUs in one machine, e.g. an RTX 5090 and an RTX 3090: llama.cpp and Ollama "
                        "give each a run of layers in proportion to its memory (--split-mode layer). Kept by the "
                        "app, not in the plan file; the same numbers as `llmplan-cli estimate --gpu A --gpu B`.")
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
        self.summary.setAccessibleName("Layer split summary")
        # narrow: the centre pane is about 400 px wide; long GPU names elide in the combo
        self.pick.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.pick.setMinimumContentsLength(14)
        buttons = QHBoxLayout()
        for b in (self.add_button, self.remove_button, self.detect_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.pick)
        lay.addLayout(buttons)
        lay.addWidget(self.cards)
        lay.addWidget(self.table)
        lay.addWidget(self.summary)
        self.add_button.clicked.connect(lambda: self.add(self.pick.currentData()))
        self.remove_button.clicked.connect(self.remove_selected)
        self.detect_button.clicked.connect(lambda: self.set_cards(self.detected))
        state.doc_changed.connect(lambda _doc: self.refresh())
        self.refresh()

    # ---- the list ---------------------------------------------------------------------------------------
    def card_ids(self) -> list[str]:
        return [self.cards.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.cards.count())]

    def add(self, gpu_id: str | None) -> None:
        if not gpu_id:
            return
        name = backend.hardware_catalog().gpu(gpu_id).spec.name
        self.cards.addItem(name)
        self.cards.item(self.cards.count() - 1).setData(Qt.ItemDataRole.UserRole, gpu_id)
        self.refresh()

    def remove_selected(self) -> None:
        row = self.cards.currentRow()
        if row >= 0:
            self.cards.takeItem(row)
            self.refresh()

    def set_cards(self, ids: list[str]) -> None:
        self.cards.clear()
        for i in ids:
            self.add(i)
        self.refresh()

    def set_report(self, report: Any) -> None:
        """Detection's report: its cards become the "Use detected" list, and fill an empty list when they
        are different models (a mixed machine; identical GPUs are the plan's own hardware)."""
        try:
            self.detected = detected_card_ids(report) if report is not None else []
        except Exception:  # a broken user catalog or an odd report must not break the tab
            self.detected = []
        self.detect_button.setEnabled(len(self.detected) > 1)
        if len(set(self.detected)) > 1 and not self.card_ids():
            self.set_cards(self.detected)

    # ---- the answer -------------------------------------------------------------------------------------
    def refresh(self) -> None:
        ids = self.card_ids()
        self.remove_button.setEnabled(bool(ids))
        self.table.setRowCount(0)
        if len(ids) < 2:
            self.summary.setText("Add two or more cards to see how llama.cpp splits the model across them.")
            self.changed.emit()
            return
        try:
            plan = self._split(ids)
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
                item.setToolTip(f"weights {mem.fmt(c.weights)} + KV cache {mem.fmt(c.kv_cache)} + runtime "
                                f"{mem.fmt(c.runtime)} (CUDA context, compute buffer{', logits' if c.has_output else ''})")
                if k:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, k, item)
        host = f"; {plan.host_layers} layers in host RAM" if plan.host_layers else ""
        verdict = "Fits" if plan.fits else "Does not fit"
        self.summary.setText(f"{verdict}: {present.tokens_per_s(1 / plan.tpot_s)} per user, first token in "
                             f"{present.duration(plan.ttft_s)}{host}.")
        self.changed.emit()

    def _split(self, ids: list[str]):
        from llmplan.core.inference.multi_gpu import split_layers
        from llmplan.plan.resolve import resolve

        doc = self.state.doc
        if doc.workload != "inference":
            raise LlmplanError("The layer split is for inference; training plans need identical GPUs.")
        hw = doc.hardware.model_copy(update={"gpu": ids[0], "gpu_spec": None, "gpu_efficiency": None, "node": None,
                                             "gpus_per_node": 1, "nodes": 1})
        scenario = resolve(doc.model_copy(update={"hardware": hw}))
        profile = scenario.engine_profile
        if profile is None or not profile.partial_offload:
            raise LlmplanError("Pick llama.cpp or Ollama as the engine: they split layers across different cards.")
        cat = backend.hardware_catalog()
        return split_layers(scenario, [cat.gpu(i).spec for i in ids], None, scenario.inference.gpu_layers)
