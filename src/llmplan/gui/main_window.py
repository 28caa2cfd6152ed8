"""The main window: model and hardware on the left, workload and layout in the centre,
verdict, memory, figures and charts on the right (DESIGN.md §5).

The window owns no numbers: it wires widgets to one ``PlanState`` and shows each
``Outcome`` the state emits. Menus follow the platform's standard shortcuts.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QSplitter

from llmplan.gui import backend, dialogs, files, report
from llmplan.gui.charts import ChartsPanel
from llmplan.gui.hardware_picker import HardwarePicker
from llmplan.gui.importing import is_plan_file
from llmplan.gui.layout_editor import LayoutEditor
from llmplan.gui.model_picker import ModelPicker
from llmplan.gui.preferences import Preferences, PreferencesDialog
from llmplan.gui.results_panel import ResultsPanel
from llmplan.gui.state import PlanState
from llmplan.gui.theme import apply_theme
from llmplan.gui.units import MemoryUnit
from llmplan.gui.workload_tabs import WorkloadTabs
from llmplan.io.plan_document import PlanDocument


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None, detect: bool = True, charts: bool = True) -> None:
        super().__init__()
        self.settings = settings or QSettings("llmplan", "llmplan")
        self.prefs = Preferences.load(self.settings)
        self.unit = MemoryUnit(self.prefs.memory_unit)
        self.state = PlanState(self.default_doc(), self)
        self.setAcceptDrops(True)
        self.setWindowTitle("llmplan")
        self.models = ModelPicker(self.state)
        self.hardware = HardwarePicker(self.state, detect=detect)
        self.workload = WorkloadTabs(self.state)
        self.layout_editor = LayoutEditor(self.state)
        self.results = ResultsPanel()
        self.charts = ChartsPanel() if charts else None
        self._build_splitters()
        self._build_menus()
        self.state.evaluated.connect(self._show)
        self.state.edit_refused.connect(lambda msg: self.statusBar().showMessage(msg, 8000))
        self.state.undo_stack.cleanChanged.connect(self._update_title)
        self.state.file_changed.connect(self._update_title)
        self.models.import_requested.connect(self.import_model)
        self.models.message.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.hardware.message.connect(lambda m: self.statusBar().showMessage(m, 8000))
        self.hardware.custom_requested.connect(self.custom_gpu)
        self.hardware.detector.finished.connect(self._use_detected_gpu)
        self.layout_editor.auto_button.clicked.connect(self.auto_search)
        self._autosave = QTimer(self)
        self._autosave.setInterval(files.AUTOSAVE_S * 1000)
        self._autosave.timeout.connect(self.autosave_now)
        self._autosave.start()
        self._restore_ui()
        self._update_title()
        self.state.evaluate_now()

    # ---- construction ---------------------------------------------------------------
    def _build_splitters(self) -> None:
        self.left = QSplitter(Qt.Orientation.Vertical)
        self.left.addWidget(self.models)
        self.left.addWidget(self.hardware)
        self.centre = QSplitter(Qt.Orientation.Vertical)
        self.centre.addWidget(self.workload)
        self.centre.addWidget(self.layout_editor)
        self.right = QSplitter(Qt.Orientation.Vertical)
        self.right.addWidget(self.results)
        if self.charts is not None:
            self.right.addWidget(self.charts)
        self.main = QSplitter(Qt.Orientation.Horizontal)
        for w in (self.left, self.centre, self.right):
            w.setChildrenCollapsible(False)
            self.main.addWidget(w)
        self.main.setStretchFactor(0, 3)
        self.main.setStretchFactor(1, 4)
        self.main.setStretchFactor(2, 4)
        self.setCentralWidget(self.main)

    def _action(self, menu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setStatusTip(tip)
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _build_menus(self) -> None:
        K = QKeySequence.StandardKey
        m = self.menuBar().addMenu("&File")
        self._action(m, "&New", self.new_plan, K.New)
        self._action(m, "&Open…", self.open_dialog, K.Open)
        self.recent_menu = m.addMenu("Open &Recent")
        self._refresh_recent()
        self._action(m, "&Save", self.save, K.Save)
        self._action(m, "Save &As…", self.save_as, K.SaveAs)
        m.addSeparator()
        self._action(m, "&Import Model…", self.import_model, "Ctrl+I")
        exp = m.addMenu("&Export")
        self._action(exp, "Report (&Markdown)…", self.export_markdown, "Ctrl+E")
        self._action(exp, "Breakdown (&CSV)…", self.export_csv)
        self._action(exp, "Charts (&PNG)…", self.export_charts)
        self._action(m, "&Copy Report as Text", self.copy_text, "Ctrl+Shift+C")
        m.addSeparator()
        self._action(m, "&Quit", self.close, K.Quit)
        e = self.menuBar().addMenu("&Edit")
        undo = self.state.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcut(QKeySequence(K.Undo))
        redo = self.state.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcut(QKeySequence(K.Redo))
        e.addAction(undo)
        e.addAction(redo)
        self.undo_action, self.redo_action = undo, redo
        e.addSeparator()
        self._action(e, "&Preferences…", self.preferences, K.Preferences)
        h = self.menuBar().addMenu("&Help")
        self._action(h, "&How the Estimates Are Made", self.help, K.HelpContents)
        self._action(h, "&About llmplan", self.about)

    # ---- showing results ---------------------------------------------------------------
    def _show(self, outcome: backend.Outcome) -> None:
        self.results.show_outcome(outcome)
        self.layout_editor.show_outcome(outcome)
        self.models.show_architecture(outcome)
        if self.charts is not None:
            self.charts.request(outcome)
        line = self.this_machine_line(outcome)
        if outcome.estimate is not None and line:
            self.results.detail.setText(f"{outcome.estimate.bottleneck.statement}\n{line}")

    def this_machine_line(self, outcome: backend.Outcome) -> str:
        """'On this machine (…): Fits: 20.1 of 23.6 GiB per GPU': the same plan re-estimated
        on the detected GPUs (one node of them), when they differ from the plan's."""
        gpu_id, spec = self.hardware.detected_gpu()
        if not (gpu_id or spec) or outcome.estimate is None:
            return ""
        hw = outcome.doc.hardware
        if gpu_id == hw.gpu and hw.nodes == 1 and hw.gpus_per_node == len(self.hardware.detected):
            return "This is this machine's hardware."
        from llmplan.gui.commands import set_path

        try:
            doc = set_path(outcome.doc, "hardware", {"gpu": gpu_id or spec.id, "gpu_spec": spec,
                                                     "gpus_per_node": len(self.hardware.detected), "nodes": 1,
                                                     "network": "none"})
        except Exception:
            return ""
        other = backend.evaluate(doc)
        label = self.hardware.detected[0][0]
        if other.estimate is None:
            return f"On this machine ({label}): {other.message}"
        return f"On this machine ({label}): {report.verdict(other.estimate, self.unit)}"

    def _update_title(self, *_a) -> None:
        name = self.state.path.name if self.state.path else (self.state.doc.name or "Untitled plan")
        self.setWindowModified(self.state.dirty)
        self.setWindowTitle(f"{name}[*] — llmplan")

    # ---- UI state (not preferences) ----------------------------------------------------
    def _restore_ui(self) -> None:
        s = self.settings
        geo = s.value("ui/geometry")
        if geo is not None:
            self.restoreGeometry(geo)
        else:
            self.resize(1280, 800)
        self.main.setSizes([350, 420, 510])  # defaults; a saved state below wins
        self.left.setSizes([430, 370])
        self.centre.setSizes([400, 400])
        self.right.setSizes([440, 360])
        for name in ("main", "left", "centre", "right"):
            value = s.value(f"ui/splitter_{name}")
            if value is not None:
                getattr(self, name).restoreState(value)

    def save_ui(self) -> None:
        s = self.settings
        s.setValue("ui/geometry", self.saveGeometry())
        for name in ("main", "left", "centre", "right"):
            s.setValue(f"ui/splitter_{name}", getattr(self, name).saveState())
        s.sync()

    # ---- files ---------------------------------------------------------------------------
    def maybe_save(self) -> bool:
        """True when it is fine to drop the current plan (saved, discarded, or unchanged)."""
        if not self.state.dirty:
            return True
        choice = dialogs.ask(self, "Unsaved changes", "Save the changes to this plan first?")
        if choice == "Save":
            return self.save()
        return choice == "Discard"

    def default_doc(self, gpu_id: str | None = None, spec=None) -> PlanDocument:
        """The starting plan, with the preferred default efficiencies written in."""
        doc = backend.default_plan(gpu_id)
        updates: dict = {"efficiency": doc.efficiency.model_copy(update=self.prefs.efficiency_overrides())}
        if spec is not None:
            updates["hardware"] = doc.hardware.model_copy(update={"gpu_spec": spec})
        return doc.model_copy(update=updates)

    def new_plan(self) -> None:
        if self.maybe_save():
            gpu_id, spec = self.hardware.detected_gpu()
            self.state.load(self.default_doc(gpu_id, spec), None)

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        paths = dialogs.open_paths(self, "Open plan", dialogs.PLAN_FILTER)
        if paths:
            self.open_path(paths[0], ask=False)

    def open_path(self, path: Path, ask: bool = True) -> bool:
        if ask and not self.maybe_save():
            return False
        try:
            doc = files.load(Path(path))
        except Exception as exc:
            dialogs.error(self, "Cannot open plan", f"{Path(path).name}: {exc}")
            return False
        self.state.load(doc, Path(path))
        self._add_recent(Path(path))
        self.statusBar().showMessage(f"Opened {path}", 5000)
        return True

    def save(self) -> bool:
        if self.state.path is None:
            return self.save_as()
        return self._write(self.state.path)

    def save_as(self) -> bool:
        suggested = str(self.state.path or Path.home() / f"{self.state.doc.name or 'plan'}.llmplan")
        path = dialogs.save_path(self, "Save plan", suggested, dialogs.PLAN_FILTER)
        if path is None:
            return False
        if path.suffix != ".llmplan":
            path = path.with_suffix(".llmplan")
        return self._write(path)

    def _write(self, path: Path) -> bool:
        try:
            files.save(self.state.doc, path)
        except Exception as exc:
            dialogs.error(self, "Cannot save plan", f"{path}: {exc}")
            return False
        self.state.mark_saved(path)
        self._add_recent(path)
        files.clear_autosave()
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def _add_recent(self, path: Path) -> None:
        recent = files.push_recent(self._recent(), path)
        self.settings.setValue("ui/recent", recent)
        self._refresh_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("ui/recent") or []
        return [value] if isinstance(value, str) else list(value)

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for p in self._recent():
            act = self.recent_menu.addAction(p)
            act.triggered.connect(lambda _=False, p=p: self.open_path(Path(p)))
        self.recent_menu.setEnabled(bool(self._recent()))

    def autosave_now(self) -> None:
        if self.state.dirty:
            try:
                files.autosave(self.state.doc, self.state.path)
            except Exception as exc:  # autosave failing must never interrupt work
                self.statusBar().showMessage(f"Autosave failed: {exc}", 8000)

    def offer_recovery(self) -> None:
        found = files.recoverable()
        if found is None:
            return
        doc, origin = found
        answer = dialogs.ask(self, "Recover plan", "llmplan did not close cleanly last time. Recover the "
                             f"unsaved plan{' from ' + origin.name if origin else ''}?", ("Yes", "No"))
        if answer == "Yes":
            self.state.load(doc, origin)
            self.state.undo_stack.resetClean()  # recovered work is unsaved
            self._update_title()
        files.clear_autosave()

    # ---- models and hardware ------------------------------------------------------------
    def import_model(self) -> None:
        paths = dialogs.open_paths(self, "Import model", dialogs.MODEL_FILTER)
        if paths:
            self.models.import_paths(paths)

    def custom_gpu(self) -> None:
        from llmplan.gui.custom_gpu import CustomGpuDialog

        dlg = CustomGpuDialog(self.state.outcome.scenario.cluster.gpu if self.state.outcome and
                              self.state.outcome.scenario else None, self)
        dlg.accepted_spec.connect(lambda spec: self.state.edit_many(
            {"hardware.gpu": spec.id, "hardware.gpu_spec": spec}, f"Custom GPU {spec.name}"))
        dlg.open()

    def _use_detected_gpu(self, *_a) -> None:
        """Start on this machine's GPU when the plan is still the untouched default."""
        gpu_id, spec = self.hardware.detected_gpu()
        if (gpu_id or spec) and self.state.path is None and self.state.undo_stack.count() == 0:
            changes: dict[str, object] = {"hardware.gpu": gpu_id or spec.id}
            if spec is not None:
                changes["hardware.gpu_spec"] = spec
            new = self.state.doc
            from llmplan.gui.commands import set_path

            try:
                for k, v in changes.items():
                    new = set_path(new, k, v)
            except Exception:
                return
            self.state.load(new, None)
        if self.state.outcome is not None:
            self._show(self.state.outcome)

    def auto_search(self) -> None:
        from llmplan.gui.auto_panel import AutoDialog

        if self.state.outcome is None or self.state.outcome.scenario is None:
            dialogs.error(self, "Auto layout", "Fix the plan first: the auto-planner needs a model and a GPU.")
            return
        self.auto_dialog = AutoDialog(self.state, self.charts, self)
        self.auto_dialog.open()
        self.auto_dialog.start()

    # ---- export ----------------------------------------------------------------------------
    def _estimate_or_complain(self):
        out = self.state.outcome
        if out is None or out.estimate is None:
            dialogs.error(self, "Nothing to export", out.message if out else "No estimate yet.")
            return None
        return out.estimate

    def export_markdown(self) -> None:
        est = self._estimate_or_complain()
        if est is None:
            return
        path = dialogs.save_path(self, "Export report", "llmplan-report.md", "Markdown (*.md)")
        if path:
            path.write_text(report.as_markdown(est, self.unit, self.state.doc.name, self.state.doc.notes), "utf-8")

    def export_csv(self) -> None:
        est = self._estimate_or_complain()
        if est is None:
            return
        path = dialogs.save_path(self, "Export breakdown", "llmplan-breakdown.csv", "CSV (*.csv)")
        if path:
            path.write_text(report.as_csv(est), "utf-8")

    def export_charts(self) -> None:
        if self.charts is None:
            return
        folder = dialogs.open_folder(self, "Export charts to folder")
        if folder:
            written = self.charts.export_png(folder)
            self.statusBar().showMessage(f"Wrote {len(written)} PNG files to {folder}", 5000)

    def copy_text(self) -> None:
        est = self._estimate_or_complain()
        if est is not None:
            QApplication.clipboard().setText(report.as_text(est, self.unit, self.state.doc.name))
            self.statusBar().showMessage("Report copied", 3000)

    # ---- preferences and help ----------------------------------------------------------------
    def preferences(self) -> None:
        dlg = PreferencesDialog(self.prefs, self)
        dlg.accepted.connect(lambda: self.apply_preferences(dlg.result_prefs()))
        dlg.open()

    def apply_preferences(self, prefs: Preferences) -> None:
        self.prefs = prefs
        prefs.save(self.settings)
        self.unit = MemoryUnit(prefs.memory_unit)
        app = QApplication.instance()
        if app is not None:
            apply_theme(app, prefs.theme)
        self.results.set_unit(self.unit)
        self.layout_editor.unit = self.unit
        if self.charts is not None:
            self.charts.unit = self.unit
            if self.state.outcome is not None:
                self.charts.request(self.state.outcome)

    def help(self) -> None:
        from llmplan.gui.help_dialog import HelpDialog

        self.help_dialog = HelpDialog(self)
        self.help_dialog.open()

    def about(self) -> None:
        from llmplan.gui.help_dialog import about_text

        dialogs.inform(self, "About llmplan", about_text(backend.version()))

    # ---- drag and drop, close -----------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        event.acceptProposedAction()
        self.open_dropped(paths)

    def open_dropped(self, paths: list[Path]) -> None:
        plans = [p for p in paths if is_plan_file(p)]
        models = [p for p in paths if not is_plan_file(p)]
        if plans:
            self.open_path(plans[0])
        if models:
            self.models.import_paths(models)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save():
            event.ignore()
            return
        self.save_ui()
        files.clear_autosave()
        event.accept()

    def set_plan(self, doc: PlanDocument) -> None:
        """Replace the plan as one undoable step (used by Auto and by tests)."""
        self.state.replace(doc)
