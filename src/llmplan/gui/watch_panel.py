"""The "Watch" panel: this machine's GPUs and host live, beside the plan, with the bottleneck named.

A thin view over `llmplan.watch`: opening the sources (NVML init, amd-smi) runs in a worker
thread, sampling runs in the `Watcher`'s own thread, and the GUI thread only takes snapshots
(copies made under a lock the sampler never holds during a device call), so no driver call can
freeze the window. A QTimer redraws the charts at the sampling interval; Pause freezes the view
while sampling goes on, so nothing is lost. Export writes the samples as CSV and the panel as PNG.
"""

from __future__ import annotations

import html
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from llmplan.errors import LlmplanError
from llmplan.gui import dialogs
from llmplan.gui.theme import WARN_COLOUR
from llmplan.gui.watch_charts import WatchCharts
from llmplan.watch.diagnose import PlanLink, summary_lines
from llmplan.watch.process import process_name
from llmplan.watch.sampler import DEFAULT_INTERVAL_S, MAX_INTERVAL_S, MIN_INTERVAL_S, Watcher

WINDOWS = (("1 min", 60.0), ("5 min", 300.0), ("15 min", 900.0), ("1 h", 3600.0), ("24 h", 86400.0))
ALL_PROCESSES = "All processes"


class _Opened(QObject):
    done = Signal(object)  # Sampler


class WatchPanel(QWidget):
    message = Signal(str)

    def __init__(self, open_sampler=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        if open_sampler is None:
            from llmplan.watch.sampler import open_sampler
        self._open_sampler = open_sampler
        self.sampler = None
        self.watcher: Watcher | None = None
        self.paused = False
        self.plan: PlanLink | None = None
        self._opened = _Opened()
        self._opened.done.connect(self._started)
        self.start_button = QPushButton("Start watching")
        self.start_button.clicked.connect(self.toggle)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setEnabled(False)
        self.pause_button.setToolTip("Freeze the charts; sampling goes on")
        self.pause_button.clicked.connect(self.toggle_pause)
        self.window_box = QComboBox()
        self.window_box.setAccessibleName("Time window")
        for label, seconds in WINDOWS:
            self.window_box.addItem(label, seconds)
        self.window_box.setCurrentIndex(1)
        self.window_box.currentIndexChanged.connect(lambda *_: self.refresh(force=True))
        self.interval = QDoubleSpinBox()
        self.interval.setAccessibleName("Sampling interval")
        self.interval.setRange(MIN_INTERVAL_S, MAX_INTERVAL_S)
        self.interval.setSingleStep(0.5)
        self.interval.setDecimals(1)
        self.interval.setSuffix(" s")
        self.interval.setValue(DEFAULT_INTERVAL_S)
        self.interval.valueChanged.connect(self._interval_changed)
        self.process_box = QComboBox()
        self.process_box.setEditable(True)
        self.process_box.setAccessibleName("Watched process")
        self.process_box.setToolTip("Pick a process from the GPUs' process list, or type a process id")
        self.process_box.setMinimumContentsLength(30)
        self.process_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.process_box.addItem(ALL_PROCESSES, None)
        self.process_box.activated.connect(self._process_chosen)
        self.process_box.lineEdit().returnPressed.connect(self._process_chosen)
        self.csv_button = QPushButton("Export CSV…")
        self.csv_button.clicked.connect(self.export_csv_dialog)
        self.png_button = QPushButton("Export PNG…")
        self.png_button.clicked.connect(self.export_png_dialog)
        bar = QHBoxLayout()
        for w in (self.start_button, self.pause_button, QLabel("Window"), self.window_box, QLabel("Every"),
                  self.interval, QLabel("Process"), self.process_box):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.csv_button)
        bar.addWidget(self.png_button)
        self.status = QLabel("Not watching. Start to sample this machine's GPUs and host.")
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Watch status")
        self.diagnosis = QLabel("")
        self.diagnosis.setWordWrap(True)
        self.diagnosis.setTextFormat(Qt.TextFormat.RichText)
        self.diagnosis.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diagnosis.setAccessibleName("Watch diagnosis")
        self.charts = WatchCharts()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.charts)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(self.status)
        lay.addWidget(self.diagnosis)
        lay.addWidget(scroll, 1)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._ticks = 0

    # ---- plan -------------------------------------------------------------------------------
    def set_outcome(self, outcome) -> None:
        """The window's latest estimate: its per-GPU total (with overhead) and usable capacity."""
        est = getattr(outcome, "estimate", None)
        if est is None:
            self.plan = None
            self.charts.set_plan(None, None)
            return
        changes = self.plan.changes if self.plan else ()
        self.plan = PlanLink(float(est.memory.total.value), float(est.memory.capacity.value), "the plan", changes)
        self.charts.set_plan(self.plan.predicted_peak_bytes, self.plan.capacity_bytes)

    def set_fit(self, fit) -> None:
        """The "This machine" fit: its nearest changes join the memory verdict."""
        changes = tuple(c.sentence.split(": ", 1)[0] for c in getattr(fit, "changes", ())[:3]) if fit else ()
        if self.plan is not None:
            self.plan = PlanLink(self.plan.predicted_peak_bytes, self.plan.capacity_bytes, self.plan.label, changes)

    # ---- start / stop -----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.watcher is not None and self.watcher.running

    def toggle(self) -> None:
        self.stop() if self.running else self.start()

    def start(self) -> None:
        if self.running or not self.start_button.isEnabled():
            return
        self.start_button.setEnabled(False)
        self.status.setText("Looking for GPUs…")

        def work():
            try:
                sampler = self._open_sampler()
            except Exception as exc:  # a bug while probing: say it, do not crash the window
                sampler = exc
            self._opened.done.emit(sampler)

        threading.Thread(target=work, name="llmplan-watch-open", daemon=True).start()

    def _started(self, sampler) -> None:
        self.start_button.setEnabled(True)
        if isinstance(sampler, Exception):
            self.status.setText(f"Could not start watching: {sampler}")
            return
        self.sampler = sampler
        self.watcher = Watcher(sampler, self.interval.value())
        self.watcher.start()
        self.start_button.setText("Stop")
        self.pause_button.setEnabled(True)
        self._timer.start(int(self.interval.value() * 1000))
        self.refresh(force=True)

    def stop(self) -> None:
        self._timer.stop()
        if self.watcher is not None:
            self.watcher.stop()
        if self.sampler is not None:
            self.sampler.close()
        self.start_button.setText("Start watching")
        self.pause_button.setEnabled(False)
        self.refresh(force=True)
        self.watcher = None

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self.pause_button.setText("Resume" if self.paused else "Pause")
        if not self.paused:
            self.refresh(force=True)

    def _interval_changed(self, value: float) -> None:
        if self.watcher is not None:
            self.watcher.set_interval(value)
            self._timer.setInterval(int(value * 1000))

    # ---- the watched process -----------------------------------------------------------------
    def _process_chosen(self, *_a) -> None:
        if self.sampler is None:
            return
        data = self.process_box.currentData()
        text = self.process_box.currentText().strip()
        try:
            pid = data if isinstance(data, int) else None if text in ("", ALL_PROCESSES) else int(text.split()[0])
            self.sampler.set_pid(pid)
        except (ValueError, LlmplanError) as exc:
            msg = str(exc) if isinstance(exc, LlmplanError) else f"'{text}' is not a process id"
            self.message.emit(f"Watch: {msg}")
            self.status.setText(msg)
            return
        self.refresh(force=True)

    def _refresh_processes(self) -> None:
        if self.sampler is None or self.process_box.lineEdit().hasFocus():
            return
        seen: dict[int, str] = {}
        for i, g in enumerate(self.sampler.gpus):
            for p in self.sampler.processes(i):
                size = f", {p.memory_bytes / 2**30:.1f} GiB" if p.memory_bytes is not None else ""
                name = process_name(p.pid)
                seen.setdefault(p.pid, f"{p.pid}{' ' + name if name else ''} (GPU {g.info.index}{size})")
        items = [(ALL_PROCESSES, None), *sorted(((label, pid) for pid, label in seen.items()), key=lambda x: x[1])]
        current = [(self.process_box.itemText(i), self.process_box.itemData(i)) for i in range(self.process_box.count())]
        if items != current:
            chosen = self.sampler.pid
            self.process_box.blockSignals(True)
            self.process_box.clear()
            for label, pid in items:
                self.process_box.addItem(label, pid)
            pos = next((i for i, (_, pid) in enumerate(items) if pid == chosen), 0)
            if chosen is not None and pos == 0:
                self.process_box.addItem(str(chosen), chosen)
                pos = self.process_box.count() - 1
            self.process_box.setCurrentIndex(pos)
            self.process_box.blockSignals(False)

    # ---- drawing ----------------------------------------------------------------------------
    def window_s(self) -> float:
        return float(self.window_box.currentData())

    def refresh(self, force: bool = False) -> None:
        """One tick: redraw the charts and verdicts from a snapshot (skipped while paused)."""
        if self.sampler is None or (self.paused and not force):
            return
        snap = self.sampler.snapshot(self.window_s())
        self.charts.update_from(snap, self.window_s())
        self._ticks += 1
        if force or self._ticks % 5 == 1:
            self._refresh_processes()
        self._show_status(snap)
        if force or self._ticks % 5 == 1:  # the verdicts need a few samples to change: every fifth tick
            self._show_diagnosis(snap)

    def _show_status(self, snap) -> None:
        what = f"{len(snap.gpus)} GPU{'s' if len(snap.gpus) != 1 else ''}" if snap.gpus else \
            f"no GPU ({'; '.join(snap.reasons) or 'none found'}): host metrics only"
        text = f"{'Watching' if self.running else 'Stopped'}: {what}; {snap.samples} samples"
        if snap.pid is not None:
            text += f"; process {snap.pid}" + (" exited" if snap.process_exited_at is not None else "")
        if snap.host_reason:
            text += f"; {snap.host_reason}"
        if self.watcher is not None and self.watcher.error:
            text += f"; {self.watcher.error}"
        self.status.setText(text)

    def _show_diagnosis(self, snap) -> None:
        # the rules look at the samples in the shown window; the peak against the plan covers the whole watch
        lines = summary_lines(snap, self.plan)
        self.diagnosis.setText("<br>".join(
            f'<span style="color:{WARN_COLOUR}">{html.escape(x)}</span>' if not x.startswith(("No bottleneck", "Peak"))
            else html.escape(x) for x in lines))

    # ---- export -----------------------------------------------------------------------------
    def export_csv(self, path: Path) -> Path:
        from llmplan.watch.runfile import write_csv

        if self.sampler is None:
            raise LlmplanError("nothing watched yet: start watching first")
        return write_csv(self.sampler.snapshot(), path)

    def export_png(self, path: Path) -> Path:
        if not self.grab().save(str(path), "PNG"):
            raise OSError(f"could not write {path}")
        return Path(path)

    def export_csv_dialog(self) -> None:
        path = dialogs.save_path(self, "Export watched samples", "llmplan-watch.csv", "CSV (*.csv)")
        if path:
            try:
                self.message.emit(f"Wrote {self.export_csv(path)}")
            except (OSError, LlmplanError) as exc:
                dialogs.error(self, "Export CSV", str(exc))

    def export_png_dialog(self) -> None:
        path = dialogs.save_path(self, "Export watch panel", "llmplan-watch.png", "PNG (*.png)")
        if path:
            try:
                self.message.emit(f"Wrote {self.export_png(path)}")
            except OSError as exc:
                dialogs.error(self, "Export PNG", str(exc))

    def closeEvent(self, event) -> None:
        self.stop()
        super().closeEvent(event)
