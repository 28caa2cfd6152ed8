"""The model picker: searchable catalog with family/size/licence filters, Import… and
drag-and-drop of model files, a "Hub: ORG/NAME" row when the search text names a Hugging Face
Hub repo (fetched in the background, see ``hub_panel``), and a summary of the chosen architecture.

The list is a ``QTreeView`` over ``picker_models.ModelRows`` through a ``ModelFilter`` proxy: the
rows are built when the catalog loads, and the search box and filters only re-run the proxy. A
click on a column header sorts by it (sizes as numbers); the Hub row stays on top.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from llmplan.core import present
from llmplan.core.params import count_params
from llmplan.gui import backend
from llmplan.gui.bind import ElidedCombo, compact
from llmplan.gui.hub_panel import HubPanel
from llmplan.gui.picker_models import HUB_ROLE, ID_ROLE, ModelFilter, ModelRow, ModelRows, hub_row, walk
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

SIZES = (("any size", 0, float("inf")), ("< 3 B", 0, 3e9), ("3–15 B", 3e9, 15e9), ("15–80 B", 15e9, 80e9),
         ("> 80 B", 80e9, float("inf")))


class ModelPicker(QWidget):
    import_requested = Signal()  # the main window owns the file dialog
    message = Signal(str)

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._entries: list = []
        self._params: dict[str, tuple[int, int]] = {}
        self._following = False  # the list is being moved to the plan's model: not a pick
        self.search = QLineEdit()
        # short enough to show whole in the left column at 1,280 px; the tooltip has the forms a Hub repo takes
        self.search.setPlaceholderText("Search, or paste a Hub repo or URL…")
        self.search.setToolTip(wrap_tip("Words of a model's name or family search the catalog. A Hugging Face Hub repo id "
                               "(ORG/NAME, ORG/NAME:QUANT for a GGUF quant) or its https://huggingface.co URL "
                               "offers the model from the Hub."))
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search models")
        self.family = compact(ElidedCombo(), 5)
        self.family.setAccessibleName("Model family filter")
        self.size = compact(ElidedCombo(), 8)  # "any size" whole
        self.size.setAccessibleName("Model size filter")
        for text, _lo, _hi in SIZES:
            self.size.addItem(text)
        self.licence = compact(ElidedCombo(), 11)  # "any licence" whole
        self.licence.setAccessibleName("Licence filter")
        self.rows = ModelRows(self)
        self.proxy = ModelFilter(self)
        self.proxy.setSourceModel(self.rows)
        self.list = QTreeView()
        self.list.setModel(self.proxy)
        self.list.setAccessibleName("Models")
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setSortingEnabled(True)
        self.list.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # catalog order until a header is clicked
        hdr = self.list.header()
        hdr.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in (1, 2, 3):
            hdr.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        hdr.setStretchLastSection(False)
        self.import_button = QPushButton("I&mport…")
        self.import_button.setToolTip(wrap_tip("Import a config.json, a model folder, a .gguf or a safetensors index "
                                      "(or drop one on the window)"))
        self.import_button.clicked.connect(self.import_requested)
        self.edit_button = QPushButton("Edit a&rchitecture…")
        self.edit_button.setToolTip("Change the chosen model's dimensions to plan a custom model")
        self.edit_button.clicked.connect(self.edit_architecture)
        self.arch = QLabel()
        self.arch.setWordWrap(True)
        self.arch.setAccessibleName("Architecture of the chosen model")
        self.arch.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        filters = QHBoxLayout()
        filters.addWidget(self.family, 1)
        filters.addWidget(self.size)
        filters.addWidget(self.licence)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.import_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addLayout(filters)
        self.hub = HubPanel(state, self)
        self.hub.message.connect(self.message)
        self.hub.edit_architecture.connect(self._edit_hub_architecture)
        lay.addWidget(self.hub)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.arch)
        lay.addWidget(self.edit_button)
        self.search.textChanged.connect(self.refilter)
        self.family.currentIndexChanged.connect(self.refilter)
        self.size.currentIndexChanged.connect(self.refilter)
        self.licence.currentIndexChanged.connect(self.refilter)
        self.list.selectionModel().currentChanged.connect(self._picked)
        self.list.activated.connect(self._activated)
        self.list.clicked.connect(self._activated)
        self.search.returnPressed.connect(self._enter)
        state.doc_changed.connect(self._follow)
        self.reload()

    # ---- catalog ------------------------------------------------------------------
    def reload(self, refresh: bool = False) -> None:
        cat = backend.refresh_model_catalog() if refresh else backend.model_catalog()
        self._entries = list(cat.entries)
        for combo, values, everything in (
                (self.family, sorted({e.family for e in self._entries}), "all families"),
                (self.licence, sorted({e.license or "unknown" for e in self._entries}), "any licence")):
            combo.blockSignals(True)
            current = combo.currentText()
            combo.clear()
            combo.addItem(everything)
            combo.addItems(values)
            combo.setCurrentIndex(max(combo.findText(current), 0))
            combo.blockSignals(False)
        self._fill()
        self.refilter()

    def params_of(self, entry) -> tuple[int, int]:
        if entry.id not in self._params:
            try:
                p = count_params(entry.spec)
                self._params[entry.id] = (p.total, p.active)
            except Exception:  # a broken catalog entry shows without a size, it does not break the list
                self._params[entry.id] = (0, 0)
        return self._params[entry.id]

    def _row(self, e) -> ModelRow:
        total, active = self.params_of(e)
        size = present.params(total) if total == active else f"{present.params(total)} / {present.params(active)}"
        ctx = e.context_length or e.spec.max_position_embeddings
        name = present.one_line(e.display_name)
        return ModelRow(e.id, (name, size, f"{ctx:,}", str(e.spec.num_layers)),
                        (name.lower(), total, ctx, e.spec.num_layers),
                        (f"{e.id}\nfamily: {e.family}\nlicence: {e.license or 'unknown'}\nsource: {e.source}",
                         "total parameters / active per token" if total != active else "parameters"),
                        f"{e.id} {e.display_name} {e.family}".lower(), e.family, e.license or "unknown", total)

    def _fill(self) -> None:
        """Every catalog row, built once per catalog load (the filters only re-run the proxy)."""
        self._following = True
        try:
            self.rows.set_rows([self._row(e) for e in self._entries])
        finally:
            self._following = False

    def refilter(self) -> None:
        _t, lo, hi = SIZES[max(self.size.currentIndex(), 0)]
        self._following = True
        try:
            self._hub_row(self.search.text())
            self.proxy.set_criteria(self.search.text().lower().split(),
                                    self.family.currentText() if self.family.currentIndex() > 0 else None,
                                    self.licence.currentText() if self.licence.currentIndex() > 0 else None, (lo, hi))
        finally:
            self._following = False
        self._follow(self.state.doc)

    def _hub_row(self, text: str) -> None:
        from llmplan.formats.hub_ref import looks_like_hub_ref, parse_hub_ref

        if not looks_like_hub_ref(text):
            self.rows.set_hub(None)
            return
        ref = parse_hub_ref(text)
        self.rows.set_hub(hub_row(text.strip(), ref.label(), ref.repo))

    # ---- selection ------------------------------------------------------------------
    def _enter(self) -> None:
        """Enter in the search box: an exact catalog id picks it (no network); a Hub reference fetches it."""
        text = self.search.text().strip()
        if any(e.id == text for e in self._entries):
            self.select(text)
        elif self.proxy.rowCount() and self.proxy.index(0, 0).data(HUB_ROLE):
            self.hub.fetch(text)
        elif self.proxy.rowCount() == 1:
            self.list.setCurrentIndex(self.proxy.index(0, 0))

    def _activated(self, index: QModelIndex) -> None:
        hub = index.siblingAtColumn(0).data(HUB_ROLE) if index.isValid() else None
        if hub and not self.hub.busy:
            self.hub.fetch(hub)

    def _edit_hub_architecture(self, config: dict, name: str, problem: str) -> None:
        """A Hub config llmplan cannot size: the editor opens on it, naming what is missing."""
        from llmplan.gui.arch_editor import ArchitectureDialog, prefilled_config

        self.arch_dialog = ArchitectureDialog(name, prefilled_config(config), self, note=problem)
        self.arch_dialog.accepted_model.connect(lambda r: self.state.edit("model", r, f"Custom model {r.name}"))
        self.arch_dialog.open()

    def _picked(self, index: QModelIndex, _prev: QModelIndex | None = None) -> None:
        if self._following or not index.isValid():
            return
        index = index.siblingAtColumn(0)
        model_id = index.data(ID_ROLE)
        if model_id and (model_id != self.state.doc.model.id or self.state.doc.model.config):
            from llmplan.plan.document import ModelRef

            self.state.edit("model", ModelRef(id=model_id), f"Model: {index.data()}")

    def index_of(self, model_id: str | None) -> QModelIndex:
        """The shown row of a catalog model (invalid when the filters hide it, or for no id). The current
        row is asked first: a knob change leaves it as it was (no walk over the catalog on each change)."""
        current = self.list.currentIndex()
        if model_id and current.isValid() and current.data(ID_ROLE) == model_id:
            return current
        return next((i for i in walk(self.proxy) if model_id and i.data(ID_ROLE) == model_id), QModelIndex())

    def select(self, model_id: str) -> bool:
        index = self.index_of(model_id)
        if index.isValid():
            self.list.setCurrentIndex(index)
        return index.isValid()

    def _follow(self, doc) -> None:
        hub = doc.model.hub
        if hub is not None and doc.model.config is None and doc.model.spec is None and not doc.model.id \
                and not self.hub.busy and hub != getattr(self, "_auto_fetched", None):
            from llmplan.formats.hub_ref import HubRef

            self._auto_fetched = hub  # a plan that names only a Hub repo: read it in the background, once
            self.hub.fetch_ref(HubRef(hub.repo, hub.revision or hub.commit, hub.file))
        index = self.index_of(doc.model.id)
        self._following = True
        try:
            if index.isValid():
                self.list.setCurrentIndex(index)
                self.list.scrollTo(index)
            else:
                self.list.selectionModel().clear()
        finally:
            self._following = False

    def show_architecture(self, outcome: backend.Outcome) -> None:
        s = outcome.scenario
        if s is None:
            self.arch.setText("")
            return
        m = s.model
        p = outcome.estimate.params if outcome.estimate else count_params(m)
        moe = f" · MoE {m.moe.experts_per_token} of {m.moe.num_experts} experts" if m.moe else ""
        mla = " · MLA" if m.mla else ""
        active = f" ({present.params(p.active)} active)" if p.active != p.total else ""
        self.arch.setText(
            f"<b>{html.escape(present.one_line(m.name))}</b> — {present.params(p.total)} params{active}<br>"
            f"{m.num_layers} layers · hidden {m.hidden_size:,} · {m.num_heads} heads "
            f"({m.num_kv_heads} KV) · head {m.head_dim} · MLP {m.intermediate_size:,}{moe}{mla}<br>"
            f"vocab {m.vocab_size:,} · context {m.max_position_embeddings:,}"
            + (" · <i>approximate (unknown family)</i>" if m.approximate else ""))

    def edit_architecture(self) -> None:
        from llmplan.gui.arch_editor import ArchitectureDialog, editable_config

        out = self.state.outcome
        if out is None or out.scenario is None:
            self.message.emit("Pick a model first: there is no architecture to edit")
            return
        ref = self.state.doc.model
        config = ref.config
        if config is None and ref.id:
            cat = backend.model_catalog()
            try:
                config = cat.get(ref.id).config if cat is not None else None
            except Exception:
                config = None
        spec = out.scenario.model
        self.arch_dialog = ArchitectureDialog(spec.name, editable_config(config, spec), self,
                                              from_spec=not config)
        self.arch_dialog.accepted_model.connect(lambda r: self.state.edit("model", r, f"Custom model {r.name}"))
        self.arch_dialog.open()

