"""The hardware picker: "This machine" (from background detection) at the top, the GPU
catalog grouped by vendor with search, GPUs per node, nodes, node and network presets,
price, and a custom-GPU dialog.

The GPU list is a ``QTreeView`` over ``picker_models.GpuTree`` through a ``GpuFilter`` proxy:
the tree is built when the catalog loads and when detection answers; the search box only
re-runs the proxy.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from llmplan.core.present import one_line
from llmplan.gui import backend
from llmplan.gui.bind import ElidedCombo, bound_float, bound_spin, compact
from llmplan.gui.detection import Detector, describe_gpu, gpus_of, match_gpu
from llmplan.gui.picker_models import (
    ALWAYS_ROLE,
    CARDS_ROLE,
    ID_ROLE,
    SPEC_ROLE,
    GpuFilter,
    GpuRow,
    GpuTree,
    walk,
)
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip
from llmplan.plan.document import cards_data, cards_of


def _network_changes(network_id: str) -> dict[str, Any]:
    """Pick a network by id; an inline network spec from an opened plan would otherwise win."""
    from llmplan.plan.document import HardwareRef

    changes: dict[str, Any] = {"hardware.network": network_id}
    if "network_spec" in HardwareRef.model_fields:
        changes["hardware.network_spec"] = None
    return changes


def engine_split(doc: Any, gpus: int) -> dict[str, Any] | None:
    """One node's GPUs for an inference plan, split the way its engine splits by default, as the nearest
    fixes' "Use N GPUs" does (``fit.changes.more_gpu_steps``): llama.cpp and Ollama put every GPU they see in
    one layer split (``llama_model_default_params()`` sets ``split_mode = LLAMA_SPLIT_MODE_LAYER``, the
    ``--split-mode`` help says "layer (default)"), so PP = N; vLLM, SGLang, TensorRT-LLM and the others
    tensor-parallel over them, TP = N, where the model's heads split N ways.
    Growing DP instead gave a hobbyist's two RTX 4090s two copies of a 70B, each with 32 layers in CPU RAM,
    where one model over both cards fits. None: not an inference plan with one engine, or no split that
    holds (a GPU layer count set by hand, an uneven head split): DP follows, as for training."""
    from llmplan.core.training.layout import check_head_split
    from llmplan.errors import LlmplanError
    from llmplan.fit.trial import engine_of
    from llmplan.plan.resolve import resolve_model

    p, ref = doc.parallelism, doc.model
    if doc.workload != "inference" or doc.hardware.cards or p.cp != 1 or p.ep != 1:
        return None
    if ref.hub is not None and not ref.id and ref.config is None and ref.spec is None:
        return None  # a Hub model still being read: the UI thread never waits on the network
    engine = engine_of(doc)
    if engine is None:
        return None
    try:
        model = resolve_model(doc)  # the catalog's entry (loaded once) or the plan's inline config
    except LlmplanError:
        return None
    if engine.partial_offload:
        if doc.inference.gpu_layers is not None or gpus > model.num_layers:
            return None
        return {"parallelism.tp": 1, "parallelism.pp": gpus, "parallelism.dp": 1}
    try:
        check_head_split(model, gpus)
    except LlmplanError:
        return None
    return {"parallelism.tp": gpus, "parallelism.pp": 1, "parallelism.dp": 1}


class HardwarePicker(QWidget):
    custom_requested = Signal()
    message = Signal(str)

    def __init__(self, state: PlanState, parent: QWidget | None = None, detect: bool = True) -> None:
        super().__init__(parent)
        self.state = state
        self.detected: list[tuple[str, str | None, Any]] = []  # (label, catalog id, inline spec)
        self.detect_status = QLabel("Looking for this machine's GPUs…" if detect else "")
        self.detect_status.setTextFormat(Qt.TextFormat.PlainText)  # GPU names as drivers report them
        self.detect_status.setAccessibleName("Detection status")
        self.detect_status.setWordWrap(True)  # a long list of detected GPUs must not widen the window
        self.detect_status.setVisible(detect)  # no empty row when there is nothing to say
        self.spinner = QProgressBar()  # busy indicator while detection runs
        self.spinner.setRange(0, 0)
        self.spinner.setMaximumHeight(6)
        self.spinner.setTextVisible(False)
        self.spinner.setAccessibleName("Detecting hardware")
        self.spinner.setVisible(detect)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search GPUs…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search GPUs")
        self._following = False  # the list is being moved to the plan's GPU: not a pick
        self._catalog = None  # the hardware catalog the tree was built from
        self.gpus = GpuTree(self)
        self.proxy = GpuFilter(self)
        self.proxy.setSourceModel(self.gpus)
        self.tree = QTreeView()
        self.tree.setModel(self.proxy)
        self.tree.setAccessibleName("GPUs")
        self.tree.setIndentation(10)
        self.tree.setUniformRowHeights(True)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        hdr = self.tree.header()
        hdr.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        hdr.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        hdr.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        hdr.setStretchLastSection(False)
        self.custom_button = QPushButton("Custom &GPU…")
        self.custom_button.setToolTip("Describe a GPU that is not in the catalog")
        self.custom_button.clicked.connect(self.custom_requested)
        self.network = compact(ElidedCombo())
        self.network.setAccessibleName("Network between nodes")
        self.network.setToolTip("The scale-out network between nodes (plan field hardware.network)")
        self.node = compact(ElidedCombo())
        self.node.setAccessibleName("Node preset")
        self.node.setToolTip("A node preset sets GPUs per node and the network (plan field hardware.node)")
        form = QFormLayout()
        per_node = bound_spin(state, "hardware.gpus_per_node", "GPUs per node",
                              "GPUs in each node, joined by NVLink/Infinity Fabric/PCIe", 1, 1024,
                              also=lambda v: self._keep_filled(v, self.state.doc.hardware.nodes))
        nodes = bound_spin(state, "hardware.nodes", "Nodes", "Nodes joined by the network", 1, 1_000_000,
                           also=lambda v: self._keep_filled(self.state.doc.hardware.gpus_per_node, v))
        row = QHBoxLayout()
        row.addWidget(per_node)
        row.addWidget(QLabel("× nodes"))
        row.addWidget(nodes)
        form.addRow("GPUs per node", row)
        form.addRow("Node preset", self.node)
        form.addRow("Network", self.network)
        form.addRow("Price (USD/GPU-hour)", bound_float(
            state, "hardware.price_per_gpu_hour", "Price per GPU-hour",
            "What one GPU-hour costs you; at the minimum the catalog's typical cloud price is used",
            0.0, 10_000.0, 2, 0.1, none_text="catalog price"))
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.custom_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addLayout(top)
        lay.addWidget(self.detect_status)
        lay.addWidget(self.spinner)
        lay.addWidget(self.tree, 1)
        lay.addLayout(form)
        self.search.textChanged.connect(self.refilter)
        self.tree.selectionModel().currentChanged.connect(self._picked)
        self.network.currentIndexChanged.connect(self._network_picked)
        self.node.currentIndexChanged.connect(self._node_picked)
        state.doc_changed.connect(self._follow)
        self._fill_presets()
        self.refill()
        self.detector = Detector(self)
        self.detector.finished.connect(self._detected)
        if detect:
            self.detector.start()

    def _keep_filled(self, per_node: int, nodes: int) -> dict[str, Any]:
        """While the layout is automatic — it filled the old cluster, or the plan states no TP/PP/DP/CP — it
        follows the GPU count in the same undo step: an inference plan in one node is split over its GPUs the
        way its engine splits (``engine_split``), any other plan grows DP so that TP·PP·DP·CP fills the new
        cluster (the engine requires it). A layout the user set that used part of the cluster keeps its sizes."""
        doc = self.state.doc
        p, hw = doc.parallelism, doc.hardware
        per_replica = p.tp * p.pp * p.cp
        new_total = per_node * nodes
        automatic = p.gpus == hw.gpus_per_node * hw.nodes or not ({"tp", "pp", "dp", "cp"} & p.model_fields_set)
        if not automatic:
            return {}
        split = engine_split(doc, per_node) if nodes == 1 else None
        if split is not None:
            return split
        if new_total % per_replica == 0:
            return {"parallelism.dp": new_total // per_replica}
        return {}

    # ---- lists -----------------------------------------------------------------------
    def _fill_presets(self) -> None:
        self.network.blockSignals(True)
        self.network.addItem("none (single node)", "none")
        for e in backend.network_entries():
            spec = getattr(e, "spec", e)
            net_id = getattr(e, "id", spec.id)
            if net_id != "none":  # already the first item
                self.network.addItem(getattr(e, "name", getattr(spec, "name", net_id)), net_id)
        self.network.blockSignals(False)
        self.node.blockSignals(True)
        self.node.addItem("(no preset)", None)
        for e in backend.node_entries():
            self.node.addItem(getattr(e, "name", getattr(e, "id", "?")), getattr(e, "id", None))
        self.node.blockSignals(False)

    def refill(self) -> None:
        """Build the tree: this machine's GPUs (once detection answers), then the catalog by vendor."""
        bold = QFont(self.tree.font())
        bold.setBold(True)
        rows = []
        self._catalog = backend.hardware_catalog()
        for e in self._catalog.gpus:
            spec = getattr(e, "spec", e)
            vendor = str(getattr(e, "vendor", spec.vendor))
            bf16 = spec.peak_flops.for_dtype("bf16")
            rows.append(GpuRow(
                vendor.upper() if len(vendor) <= 4 else vendor.title(), spec.id,
                (one_line(_without_vendor(spec.name)), f"{spec.memory_bytes / 1024**3:.0f} GiB",
                 f"{bf16 / 1e12:.0f} TF" if bf16 else "—"),
                f"{spec.name}\n{spec.id}\n{spec.memory_marketing or ''} · {spec.memory_bandwidth / 1e9:,.0f} GB/s"
                f"\ndense BF16: {bf16 / 1e12:.0f} TFLOP/s", f"{spec.id} {spec.name} {spec.vendor}".lower()))
        detected = [(one_line(label), gpu_id, spec) for label, gpu_id, spec in self.detected]
        self._following = True
        try:
            ids = self.detected_card_ids()
            self.gpus.fill(detected, rows, bold, ids if len(set(ids)) > 1 else ())
        finally:
            self._following = False
        self.refilter()

    def refilter(self) -> None:
        """Show the GPUs that hold every search word (the groups they are in stay open). A GPU saved to the
        user catalog since the tree was built (Custom GPU…, or a file) is added first."""
        if backend.hardware_catalog() is not self._catalog:  # cached: a new object only when a user file changed
            self.refill()
            return
        self._following = True
        try:
            self.proxy.set_words(self.search.text().lower().split())
        finally:
            self._following = False
        for row in range(self.proxy.rowCount()):  # the groups stay open (only they have rows under them)
            self.tree.expand(self.proxy.index(row, 0))
        self._follow(self.state.doc)

    # ---- selection -------------------------------------------------------------------
    def _picked(self, index: QModelIndex, _prev: QModelIndex | None = None) -> None:
        if self._following or not index.isValid():
            return
        index = index.siblingAtColumn(0)
        gpu_id = index.data(ID_ROLE)
        spec = index.data(SPEC_ROLE)
        cards = index.data(CARDS_ROLE)
        if cards:
            grouped = cards_data(cards_of(cards))
            self.state.edit_many({"hardware.gpu": cards[0], "hardware.gpu_spec": None, "hardware.gpu_efficiency": None,
                                  "hardware.gpus_per_node": 1, "hardware.nodes": 1, "hardware.cards": grouped,
                                  "hardware.tensor_split": None, **self._leave_preset(cards[0])},
                                 "GPU: this machine's cards")
        elif spec is not None:
            self.state.edit_many({"hardware.gpu": spec.id, "hardware.gpu_spec": spec, "hardware.gpu_efficiency": None,
                                  **self._leave_preset(spec.id)}, f"GPU: {index.data()}")
        elif gpu_id:
            self.state.edit_many({"hardware.gpu": gpu_id, "hardware.gpu_spec": None, "hardware.gpu_efficiency": None,
                                  **self._leave_preset(gpu_id)}, f"GPU: {index.data()}")

    def _leave_preset(self, gpu_id: str | None) -> dict[str, Any]:
        """A node preset names its GPU ("NVIDIA DGX H100"): another GPU leaves the preset (its count and
        network stay as they are), so the plan never says DGX H100 about H200s."""
        node_id = self.state.doc.hardware.node
        if not node_id:
            return {}
        preset = next((e for e in backend.node_entries() if getattr(e, "id", None) == node_id), None)
        if preset is not None and getattr(preset, "gpu_id", None) not in (None, gpu_id):
            return {"hardware.node": None}
        return {}

    def select(self, gpu_id: str) -> bool:
        index = self.index_of(gpu_id)
        if index.isValid():
            self.tree.setCurrentIndex(index)
        return index.isValid()

    def index_of(self, gpu_id: str | None) -> QModelIndex:
        """The shown catalog row of a GPU (not its "This machine" row); invalid when the search hides it.
        The current row is asked first: a knob change leaves it as it was, and walking every row of the
        catalog on each change cost ~0.7 ms of the knob → verdict path."""
        current = self.tree.currentIndex()
        if gpu_id and current.isValid() and current.data(ID_ROLE) == gpu_id and not current.data(ALWAYS_ROLE):
            return current
        return next((i for i in walk(self.proxy) if gpu_id and i.data(ID_ROLE) == gpu_id
                     and not i.data(ALWAYS_ROLE)), QModelIndex())

    def _follow(self, doc) -> None:
        index = self.index_of(doc.hardware.gpu)
        self._following = True
        try:
            if index.isValid():
                self.tree.setCurrentIndex(index)
            else:  # no current row either: a click on any row is then a pick
                self.tree.selectionModel().clear()
        finally:
            self._following = False
        for combo, value in ((self.network, doc.hardware.network), (self.node, doc.hardware.node)):
            combo.blockSignals(True)
            i = combo.findData(value)
            if i < 0 and value:
                combo.addItem(str(value), value)
                i = combo.count() - 1
            combo.setCurrentIndex(max(i, 0))
            combo.blockSignals(False)

    def _network_picked(self, i: int) -> None:
        self.state.edit_many(_network_changes(self.network.itemData(i) or "none"), "Network")

    def _node_picked(self, i: int) -> None:
        node_id = self.node.itemData(i)
        changes: dict[str, Any] = {"hardware.node": node_id}
        for e in backend.node_entries():
            if getattr(e, "id", None) == node_id:  # a preset fills in its GPU, count and network
                for field, attr in (("gpus_per_node", "gpus_per_node"), ("gpu", "gpu_id"), ("network", "network_id")):
                    value = getattr(e, attr, None)
                    if value:
                        changes[f"hardware.{field}"] = value
                if "hardware.gpu" in changes:
                    changes["hardware.gpu_spec"] = None
                    changes["hardware.gpu_efficiency"] = None
                if "hardware.network" in changes:
                    changes.update(_network_changes(changes["hardware.network"]))
        hw = self.state.doc.hardware
        changes.update(self._keep_filled(int(changes.get("hardware.gpus_per_node", hw.gpus_per_node)), hw.nodes))
        self.state.edit_many(changes, "Node preset")

    # ---- detection -------------------------------------------------------------------
    def _detected(self, report: Any, problem: str) -> None:
        self.spinner.hide()
        self.detect_status.setVisible(True)
        gpus = gpus_of(report) if report is not None else []
        self.detected = []
        for g in gpus:
            gpu_id, spec = match_gpu(g)
            self.detected.append((describe_gpu(g), gpu_id, spec))
        if gpus:
            self.detect_status.setText(one_line(f"This machine: {', '.join(lbl for lbl, _i, _s in self.detected)}"))
            self.detect_status.setToolTip(self.detect_status.text())
        else:  # the reasons are often a long list (every probe's): in the tooltip, so the pane keeps its width
            reasons = [str(r) for r in (getattr(report, "reasons", None) or [])] or ([problem] if problem else [])
            self.detect_status.setText("No GPU found on this machine" + (" (hover for why)" if reasons else ""))
            self.detect_status.setToolTip(wrap_tip("\n".join(["Why no GPU was found:", *reasons]) if reasons else ""))
        self.refill()

    def detected_card_ids(self) -> list[str]:
        """Catalog ids of every detected card in device order ([] when any is not in the catalog)."""
        ids = [gpu_id for _label, gpu_id, spec in self.detected if gpu_id and spec is None]
        return ids if len(ids) == len(self.detected) else []

    def detected_gpu(self) -> tuple[str | None, Any]:
        """The first detected GPU usable in a plan (catalog id, inline spec), if any."""
        for _label, gpu_id, spec in self.detected:
            if gpu_id or spec:
                return gpu_id, spec
        return None, None


def _without_vendor(name: str) -> str:
    """'NVIDIA GeForce RTX 4090 24GB' under the NVIDIA group is 'GeForce RTX 4090 24GB': the group says
    the vendor, and the narrow column then shows the model and its memory whole."""
    for prefix in ("NVIDIA ", "AMD ", "Intel ", "Apple "):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    return name
