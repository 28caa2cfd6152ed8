"""The "Cluster & power" group: the plan's ``system`` options (beyond the GPU).

Storage for checkpoints and data, NVMe offload drives, the failure rate, checkpoint
policy, PUE, electricity price and grid CO2 intensity: preset ids from
``catalogs/system`` (``load_system_catalog``) or the user's own numbers. ``None`` in the
plan means "the catalog's named default", and every editor says which default that is
("default: Parallel file system at Llama 3 scale…"), so leaving a field alone is a
visible choice. Every change is one undoable plan edit, like any other knob.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QLabel, QWidget
from shiboken6 import isValid

from llmplan.gui import backend
from llmplan.gui.bind import ElidedCombo, _decorate, _follow, bound_float, compact
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip


def _short(name: str) -> str:
    """'Parallel file system at Llama 3 scale (Lustre/GPFS class; Meta Tectonic)' ->
    'Parallel file system at Llama 3 scale': the part before any bracket (full name in the tooltip)."""
    return name.split(" (")[0].strip() or name


def bound_preset(state: PlanState, path: str, label: str, tip: str, presets: list[tuple[str, str, str]],
                 default_text: str) -> QComboBox:
    """A preset picker whose first entry, "default: …", stands for ``None`` in the plan.
    ``presets`` are (id, name, source); each entry's tooltip is its full name and source."""
    w = compact(ElidedCombo(), 14)
    w.addItem(default_text, "")
    w.setItemData(0, "Leave unset: the catalog's default (catalogs/system [defaults])", Qt.ItemDataRole.ToolTipRole)
    for key, name, source in presets:
        w.addItem(_short(name), key)
        w.setItemData(w.count() - 1, wrap_tip(f"{name}\nid: {key}\nsource: {source}"), Qt.ItemDataRole.ToolTipRole)
    _decorate(w, path, label, tip)

    def show(value: Any) -> None:
        i = w.findData(value or "")
        if i < 0:  # a preset id the catalog no longer has: show it, resolve will name the problem
            w.addItem(str(value), value)
            i = w.count() - 1
        w.setCurrentIndex(i)

    def changed(i: int) -> None:
        value = w.itemData(i) or None
        if not state.edit(path, value, f"Set {label}"):
            w.blockSignals(True)
            show(state.get(path))
            w.blockSignals(False)

    _follow(state, w, path, show)
    w.currentIndexChanged.connect(changed)
    return w


def bound_default_check(state: PlanState, path: str, label: str, tip: str, default: bool) -> QCheckBox:
    """A check box for a ``bool | None`` option: unset shows the catalog's default."""
    w = QCheckBox(label)
    _decorate(w, path, label, f"{tip}; default: {'on' if default else 'off'}")
    _follow(state, w, path, lambda v: w.setChecked(default if v is None else bool(v)))
    w.toggled.connect(lambda on: state.edit(path, bool(on), f"{'Enable' if on else 'Disable'} {label}"))
    return w


def _default_name(table: dict[str, Any], key: str | None) -> str:
    if key is None or key not in table:
        return "none"
    entry = table[key]
    return _short(entry["name"] if isinstance(entry, dict) else entry.name)


def system_group(state: PlanState, training: bool) -> QWidget:
    """The editors for ``system.*``; the training tabs get all, inference the parts that
    apply to serving (model storage for the cold start, power and grid)."""
    box = QGroupBox("Cl&uster && power (storage, failures, energy)" if training else
                    "Cl&uster && power (model storage, energy)")
    box.setAccessibleName("Cluster and power")
    f = QFormLayout(box)
    try:
        cat = backend.system_catalog()
    except Exception as exc:  # a broken user preset file: say so, keep the window
        f.addRow(QLabel(f"System presets could not be read: {exc}"))
        return box
    d = cat.defaults
    storage = [(k, v.name, v.source) for k, v in cat.storage.items()]
    default_storage = _default_name(cat.storage, d.get("storage"))
    tracked: list[tuple[QComboBox, dict, str]] = []  # (combo, its presets, its key in [defaults])

    def track(combo: QComboBox, table: dict, key: str) -> QComboBox:
        tracked.append((combo, table, key))
        return combo
    if training:
        f.addRow("Checkpoint storage", track(bound_preset(
            state, "system.storage", "Checkpoint storage",
            "Where checkpoints are written: sets save and load time (bytes/s per node and in aggregate)",
            storage, f"default: {default_storage}"), cat.storage, "storage"))
        f.addRow("Training-data storage", bound_preset(
            state, "system.data_storage", "Training-data storage",
            "Where the training data is read from (bytes/s); unset: the checkpoint storage",
            storage, "default: same as checkpoint storage"))
        f.addRow("Offload drives (NVMe)", track(bound_preset(
            state, "system.offload_storage", "Offload drives",
            "Drives that hold NVMe-offloaded optimizer states (ZeRO-Infinity): read + write bytes/s per node",
            storage, f"default: {_default_name(cat.storage, d.get('offload_storage'))}"), cat.storage,
            "offload_storage"))
        f.addRow("GPU-to-GPU bandwidth (GB/s)", bound_float(
            state, "hardware.intra_node_bandwidth", "GPU-to-GPU bandwidth inside a node",
            "Bytes per second per GPU, one direction, that a GPU reaches its node's other GPUs at (NVLink, or "
            "PCIe); at the minimum: the node preset's, else the GPU's NVLink or PCIe", 0.0, 100_000.0, 1, 10.0,
            "GB/s", none_text="node preset / GPU links", scale=1e-9))
        f.addRow("Host memory bandwidth (GB/s)", bound_float(
            state, "hardware.host_memory_bandwidth", "Host memory bandwidth",
            "Theoretical DRAM bandwidth of one node (sockets × channels × MT/s × 8 B): the CPU optimizer step of "
            "offloaded training streams through it; at the minimum: the node preset's, else a generic 2-socket "
            "DDR4-3200 host", 0.0, 100_000.0, 1, 10.0, "GB/s", none_text="node preset / generic host", scale=1e-9))
        f.addRow("Failure rate", bound_preset(
            state, "system.failures", "Failure rate",
            "Interruptions per GPU-hour from a published large run: sets the job's mean time between failures",
            [(k, v.name, v.source) for k, v in cat.failures.items()],
            f"default: {_default_name(cat.failures, d.get('failures'))}"))
        ckpt = cat.tables.get("checkpoint", {})
        f.addRow("Checkpoint interval (s)", bound_float(
            state, "system.interval_s", "Checkpoint interval",
            "Seconds of training between checkpoints; at the minimum: the Young/Daly optimum sqrt(2 × save time × "
            "MTBF)", 0.0, 1e7, 0, 60.0, "s", none_text="Young/Daly optimum"))
        restart = float(ckpt.get("restart_overhead_s", 600.0))
        f.addRow("Restart overhead (s)", bound_float(
            state, "system.restart_overhead_s", "Restart overhead",
            "Seconds lost per failure besides reading the checkpoint (relaunch, health checks, NCCL init)",
            -60.0, 1e6, 0, 60.0, "s", none_text=f"default: {restart:.0f} s"))
        f.addRow("", bound_default_check(
            state, "system.async_save", "Asynchronous checkpoints",
            "Only the copy to host memory blocks training; the write to storage runs in the background",
            bool(ckpt.get("async_save", False))))
        f.addRow("", bound_default_check(
            state, "system.pretokenized", "Pre-tokenised data",
            "Data stored as token ids (2 or 4 bytes per token); off: text is tokenised on the fly by the CPUs",
            bool(cat.tables.get("pipeline", {}).get("pretokenized", True))))
    else:
        f.addRow("Model storage", track(bound_preset(
            state, "system.storage", "Model storage",
            "Where the weights are loaded from at start-up: sets the cold start (bytes/s per node and in aggregate)",
            storage, f"default: {default_storage}"), cat.storage, "storage"))
    f.addRow("PUE", track(bound_preset(
        state, "system.pue", "PUE", "Power usage effectiveness: facility power / IT power (1.0: IT only)",
        [(k, v["name"], v["source"]) for k, v in cat.pue.items()],
        f"default: {_default_name(cat.pue, d.get('pue'))}"), cat.pue, "pue"))
    f.addRow("Electricity price", track(bound_preset(
        state, "system.electricity_price", "Electricity price", "Price preset in USD per kWh",
        [(k, v["name"], v["source"]) for k, v in cat.electricity_price.items()],
        f"default: {_default_name(cat.electricity_price, d.get('electricity_price'))}"), cat.electricity_price, "electricity_price"))
    f.addRow("Your price (USD/kWh)", bound_float(
        state, "system.price_per_kwh", "Electricity price per kWh",
        "Your own price in USD per kWh; wins over the preset", -0.01, 100.0, 4, 0.01, "USD/kWh",
        none_text="use the preset"))
    f.addRow("Grid CO₂ intensity", track(bound_preset(
        state, "system.grid_intensity", "Grid CO2 intensity", "kg CO2 emitted per kWh drawn from the grid",
        [(k, v["name"], v["source"]) for k, v in cat.grid_intensity.items()],
        f"default: {_default_name(cat.grid_intensity, d.get('grid_intensity'))}"), cat.grid_intensity, "grid_intensity"))
    f.addRow("Your grid (kg CO₂/kWh)", bound_float(
        state, "system.kg_co2_per_kwh", "Grid CO2 per kWh",
        "Your own grid intensity in kg CO2 per kWh; wins over the preset", -0.01, 10.0, 3, 0.01, "kg/kWh",
        none_text="use the preset"))

    shown_for: list[bool | None] = [None]  # the kind of machine the default names were last set for

    def show_defaults(outcome: Any) -> None:
        """Name the defaults the estimate really uses: a data centre's, or a personal machine's. Set again
        only when that changes: each item text set makes the combo box measure itself again."""
        if not isValid(box):  # the panel was closed; the plan lives on
            return
        scenario = getattr(outcome, "scenario", None)
        personal = scenario is not None and scenario.cluster.is_personal_machine
        if personal == shown_for[0]:
            return
        shown_for[0] = personal
        names = cat.defaults_for(personal)
        why = ("catalogs/system [personal_defaults]: this plan is one desktop or workstation machine" if personal
               else "catalogs/system [defaults]")
        for combo, table, key in tracked:
            combo.setItemText(0, f"default: {_default_name(table, names.get(key))}")
            combo.setItemData(0, wrap_tip(f"Leave unset: the catalog's default ({why})"), Qt.ItemDataRole.ToolTipRole)

    state.evaluated.connect(show_defaults)
    show_defaults(state.outcome)
    return box
