"""Fetching a model from the Hugging Face Hub inside the app: in the background, with progress and Cancel.

``HubFetcher`` runs ``llmplan.formats.hub.fetch_hub_model`` on a worker thread and reports back through
queued signals, so the window never waits on the network. Each fetch has a generation number: Cancel
bumps it and the window is idle at once; whatever the abandoned worker still delivers is dropped (its
requests are bounded, and it stops at its next step). ``HubPanel`` is the row under the model search
that shows the progress, the Cancel button, the result, and for a GGUF repo a choice of quant whose
real file size becomes the plan's weights.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from llmplan.core import present
from llmplan.gui.state import PlanState

SIZE = present.MemoryUnit().fmt_any  # bytes as the app's tables show them: '4.68 GiB', '160 MiB'


class HubFetcher(QObject):
    """One fetch at a time; ``start`` while busy cancels the earlier one."""

    progress = Signal(float, str)
    done = Signal(object)  # HubModel
    failed = Signal(object)  # the exception
    _to_gui = Signal(int, str, object)  # (generation, kind, payload), queued from the worker thread

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._generation = 0
        self._cancel = threading.Event()
        self.busy = False
        self._to_gui.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def start(self, ref: Any, timeout: float = 10.0) -> None:
        self.cancel()
        self._generation += 1
        self._cancel = threading.Event()
        self.busy = True
        gen, cancel = self._generation, self._cancel
        threading.Thread(target=self._work, args=(gen, ref, timeout, cancel), daemon=True,
                         name=f"llmplan-hub-{gen}").start()

    def cancel(self) -> bool:
        """Stop waiting for the current fetch; True when one was running."""
        was = self.busy
        self._cancel.set()
        self._generation += 1
        self.busy = False
        return was

    def _work(self, gen: int, ref: Any, timeout: float, cancel: threading.Event) -> None:
        from llmplan.formats.hub import HubCancelled, fetch_hub_model

        def post(kind: str, payload: object) -> None:
            with contextlib.suppress(RuntimeError):  # the window closed while the worker ran
                self._to_gui.emit(gen, kind, payload)

        try:
            model = fetch_hub_model(ref, timeout=timeout, cancelled=cancel.is_set,
                                    progress=lambda f, text: post("progress", (f, text)))
        except HubCancelled:
            return
        except Exception as exc:  # shown to the person as one line; never kills the worker silently
            post("failed", exc)
            return
        post("done", model)

    def _deliver(self, gen: int, kind: str, payload: object) -> None:
        if gen != self._generation:
            return  # a cancelled or superseded fetch
        if kind == "progress":
            self.progress.emit(*payload)
            return
        self.busy = False
        (self.done if kind == "done" else self.failed).emit(payload)


class HubPanel(QWidget):
    """Progress, Cancel, the fetched model's summary and its GGUF quant choice (hidden when unused)."""

    message = Signal(str)
    edit_architecture = Signal(object, str, str)  # (config, name, what is missing)

    def __init__(self, state: PlanState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.fetcher = HubFetcher(self)
        self.model = None
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Hugging Face Hub status")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = QProgressBar()
        self.bar.setRange(0, 100)
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Cancel the Hub fetch")
        self.cancel_button.clicked.connect(self.cancel)
        self.quant = QComboBox()
        self.quant.setAccessibleName("GGUF file")
        self.quant.setToolTip("The GGUF file (quantisation) whose real size becomes the plan's weights")
        self.quant_label = QLabel("GGUF file")
        self.quant_label.setBuddy(self.quant)
        self.quant.activated.connect(self._quant_chosen)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        quant_row = QHBoxLayout()
        quant_row.setContentsMargins(0, 0, 0, 0)
        quant_row.addWidget(self.quant_label)
        quant_row.addWidget(self.quant, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.status)
        lay.addLayout(row)
        lay.addLayout(quant_row)
        self.fetcher.progress.connect(self._progress)
        self.fetcher.done.connect(self._done)
        self.fetcher.failed.connect(self._failed)
        self._show(busy=False, quants=False)
        self.setVisible(False)

    def _show(self, busy: bool, quants: bool) -> None:
        self.bar.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.quant.setVisible(quants)
        self.quant_label.setVisible(quants)

    @property
    def busy(self) -> bool:
        return self.fetcher.busy

    def fetch(self, text: str) -> bool:
        """Start fetching what ``text`` names; False (with a message) when it cannot be a Hub reference."""
        from llmplan.formats.hub_ref import HubRefError, parse_hub_ref

        try:
            ref = parse_hub_ref(text, require=True)
        except HubRefError as exc:
            self.message.emit(str(exc))
            return False
        return self.fetch_ref(ref)

    def fetch_ref(self, ref: Any) -> bool:
        self.setVisible(True)
        self.status.setText(f"Fetching <b>{ref.label()}</b> from the Hugging Face Hub…")
        self.bar.setValue(0)
        self._show(busy=True, quants=False)
        self.fetcher.start(ref)
        return True

    def cancel(self) -> None:
        if self.fetcher.cancel():
            self.status.setText("Hub fetch cancelled")
            self._show(busy=False, quants=False)
            self.message.emit("Hub fetch cancelled")

    def _progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(100 * fraction))
        self.status.setText(f"{text[:1].upper()}{text[1:]}…")

    def _failed(self, exc: object) -> None:
        self._show(busy=False, quants=False)
        self.status.setText(f"<span style='color:#c0392b'>{_escape(str(exc))}</span>")
        self.message.emit(f"Hub: {exc}")

    def _done(self, model: object) -> None:
        from llmplan.plan.hub_plan import effective_choice

        self.model = model
        usable = [c for c in model.gguf if not c.projector]
        self.quant.clear()
        chosen = effective_choice(model)
        for c in usable:
            self.quant.addItem(f"{c.label} — {SIZE(c.size)}" + ("" if c.complete else " (parts missing)"),
                               c.label)
        if chosen is not None:
            self.quant.setCurrentIndex(max(self.quant.findData(chosen.label), 0))
        self._show(busy=False, quants=bool(usable))
        self.apply(model)

    def _quant_chosen(self, index: int) -> None:
        if self.model is None or index < 0:
            return
        label = self.quant.itemData(index)
        choice = next((c for c in self.model.gguf if c.label == label), None)
        if choice is not None:
            self.apply(replace(self.model, chosen=choice))

    def apply(self, model: Any) -> None:
        """Put the fetched model into the plan as one undo step, or open the architecture editor."""
        from llmplan.errors import ConfigError
        from llmplan.plan.hub_plan import hub_edits

        try:
            changes, note = hub_edits(model)
        except ConfigError as exc:
            self.status.setText(f"<span style='color:#c0392b'>{_escape(str(exc))}</span>")
            self.edit_architecture.emit(dict(model.config or {}), model.repo, str(exc))
            return
        if self.state.edit_many(changes, note):
            self.status.setText(_summary(model, changes))
            self.message.emit(note)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _summary(model: Any, changes: dict[str, Any]) -> str:
    hub = changes["model"].hub
    parts = [f"<b>Hub:</b> {_escape(model.repo)}" + (f" @ {model.commit[:10]}" if model.commit else "")]
    st = model.safetensors
    if st is not None:
        dtypes = ", ".join(f"{k} {v:,}" for k, v in st.params_by_dtype.items())
        parts.append(f"safetensors: {st.params:,} params ({dtypes}); {SIZE(st.stored_bytes)} stored")
    if hub.file:
        parts.append(f"weights: {_escape(hub.file)}, {SIZE(hub.file_bytes)} ({hub.weight_format})")
    parts += [_escape(n) for n in model.notes]
    if model.from_cache:
        parts.append("<i>from the cache</i>")
    return "<br>".join(parts)
