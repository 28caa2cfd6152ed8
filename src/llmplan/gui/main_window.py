"""The main window: model and hardware on the left, workload and layout in the centre,
verdict, memory, figures and charts on the right (DESIGN.md §5).

The window owns no numbers: it wires widgets to one ``PlanState`` and shows each
``Outcome`` the state emits. Menus follow the platform's standard shortcuts.
"""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QSplitter, QStyle

from llmplan.core.present import MemoryUnit, one_line
from llmplan.gui import backend, dialogs, files
from llmplan.gui.after_paint import after_first_paint
from llmplan.gui.charts import ChartsPanel
from llmplan.gui.hardware_picker import HardwarePicker
from llmplan.gui.importing import is_plan_file
from llmplan.gui.layout_editor import LayoutEditor
from llmplan.gui.main_thread_gc import install as collect_garbage_on_this_thread
from llmplan.gui.model_picker import ModelPicker
from llmplan.gui.panes import EditorSplitter, FittingSplitter, PaneScroll
from llmplan.gui.preferences import Preferences, PreferencesDialog
from llmplan.gui.results_panel import ResultsPanel
from llmplan.gui.state import PlanState
from llmplan.gui.theme import apply_theme
from llmplan.gui.this_machine import ThisMachine
from llmplan.gui.tooltips import wrap_tip
from llmplan.gui.window_files import FileActions
from llmplan.gui.workload_tabs import WorkloadTabs
from llmplan.plan.document import PlanDocument

# Text lines of height the figures table keeps, at 1,024 × 700 too: about 10 rows show (issue 18 saw one row at
# 700 px; 5 lines showed about 5 rows and hid the communication rows).
TABLE_ROWS = 9
# px above the charts' minimum they get: SPARE when the column has room, at least KEPT on a short window (the
# "GPU capacity" and "offload starts" labels need a plot that tall to keep off the curves).
CHART_SPARE, CHART_KEPT = 60, 30
# px the workload tabs keep when the layout editor below them takes the height it needs (the tab bar and about
# four rows of a form, which scrolls inside its tab); below that the editor scrolls. With 240 px a 70B pre-train over
# 4 nodes (Megatron, its recompute modules and 32 GPUs drawn: 508 px) shows whole at 1,280 × 800.
WORKLOAD_KEPT = 240


class MainWindow(FileActions, QMainWindow):
    def __init__(self, settings: QSettings | None = None, detect: bool = True, charts: bool = True) -> None:
        super().__init__()
        collect_garbage_on_this_thread(self)  # never in a worker: it would destroy widgets there (main_thread_gc)
        self.settings = settings or QSettings("llmplan", "llmplan")
        pref_problems: list[str] = []
        self.prefs = Preferences.load(self.settings, pref_problems)  # bad stored values fall back, with a notice
        self.unit = MemoryUnit(self.prefs.memory_unit)
        self.state = PlanState(self.default_doc(), self)
        self.fresh_doc = self.state.doc  # the untouched default plan: detection may move it to this machine
        self.setAcceptDrops(True)
        self.setWindowTitle("llmplan")
        self.models = ModelPicker(self.state)
        self.hardware = HardwarePicker(self.state, detect=detect)
        self.workload = WorkloadTabs(self.state)
        self.layout_editor = LayoutEditor(self.state)
        self.results = ResultsPanel()
        self.this_machine = ThisMachine(self.state)
        self.results.layout().insertWidget(2, self.this_machine)  # under the verdict banner (and its first-start note)
        self.results.fixes.chosen.connect(self.state.replace)  # a nearest fix: one undoable edit
        self.charts = ChartsPanel() if charts else None
        self._build_splitters()
        self._build_menus()
        from llmplan.gui.watch_dock import install_watch

        install_watch(self)  # View ▸ Watch This Machine: live telemetry beside the plan (issue 25)
        self.state.evaluated.connect(self._show)
        if self.charts is not None:  # a redrawn chart's title and axes may need a wider column
            self.charts.redrawn.connect(self._refit)
            self.charts.built.connect(self._charts_built)
        self.state.edit_refused.connect(self.say)
        self.state.undo_stack.cleanChanged.connect(self._update_title)
        self.state.file_changed.connect(self._update_title)
        self.models.import_requested.connect(self.import_model)
        self.models.message.connect(self.say)
        self.hardware.message.connect(self.say)
        self.catalog_notice = QLabel()
        self.catalog_notice.setAccessibleName("Catalog problems")
        self.statusBar().addPermanentWidget(self.catalog_notice)
        self.catalog_notice.hide()  # until show_catalog_problems finds some
        self.models.message.connect(self.show_catalog_problems)  # imports and reloads re-read the catalogs
        self.hardware.message.connect(self.show_catalog_problems)
        after_first_paint(self, self.show_catalog_problems)  # reads every user catalog file: ~50 ms of CPU
        self.hardware.custom_requested.connect(self.custom_gpu)
        # the machine first: the plan re-pointed at its GPU is then judged knowing it (one fix list, not two)
        self.hardware.detector.finished.connect(lambda report, _problem: self.this_machine.set_report(report))
        self.hardware.detector.finished.connect(self._use_detected_gpu)
        self.hardware.detector.finished.connect(lambda report, _p: self.workload.machine_cards.set_report(report))
        self.state.doc_changed.connect(self.this_machine.request)
        self.results.fixes.covered_by = self.this_machine.is_plan  # one fix list when the plan is this machine
        self.this_machine.fitted.connect(self._machine_fitted)
        self.this_machine.message.connect(self.say)
        self.layout_editor.auto_button.clicked.connect(self.auto_search)
        self.autosave_slot = files.AutosaveSlot()
        self._autosave = QTimer(self)
        self._autosave.setInterval(files.AUTOSAVE_S * 1000)
        self._autosave.timeout.connect(self.autosave_now)
        self._autosave.start()
        QApplication.styleHints().colorSchemeChanged.connect(self._os_colour_scheme_changed)
        self._restore_ui()
        self._update_title()
        for problem in pref_problems:
            self.notices().add(problem)
        if pref_problems:
            self.prefs.save(self.settings)  # the next start reads good values
        self.state.evaluate_now()

    # ---- construction ---------------------------------------------------------------
    def _build_splitters(self) -> None:
        # Panes that hold forms scroll when the window is small (1,024 × 700): the workload tabs
        # scroll inside each tab and the charts shrink, so they go in as they are.
        self.left = QSplitter(Qt.Orientation.Vertical)
        self.left.addWidget(PaneScroll(self.models))
        self.left.addWidget(PaneScroll(self.hardware))
        # The layout editor gets the height its knobs and drawing need, the workload tabs above give way down to
        # WORKLOAD_KEPT (``EditorSplitter``).
        self.centre = EditorSplitter(self.editor_need, WORKLOAD_KEPT)
        self.centre.addWidget(self.workload)
        self.centre.addWidget(PaneScroll(self.layout_editor))
        # Right: the verdict and its bars (they scroll when the window is short), the figures table in a
        # pane of its own so it always shows several rows (issue 18: one row at 700 px), then the charts.
        self.right = FittingSplitter(self.right_needs, (0, 3, 3), Qt.Orientation.Vertical, gives_way=0)
        table = self.results.table
        self.results.layout().removeWidget(table)
        self.results.layout().addStretch(1)  # a taller pane leaves its room below the bars, not between them
        table.setMinimumHeight(table.header().sizeHint().height() + TABLE_ROWS * table.fontMetrics().height() * 5 // 4)
        self.right.addWidget(PaneScroll(self.results))
        self.right.addWidget(table)
        if self.charts is not None:
            self.right.addWidget(self.charts)
        self.main = FittingSplitter(self.column_needs, (2, 3, 5))  # spare width goes mostly to results
        for w in (self.left, self.centre, self.right):
            w.setChildrenCollapsible(False)
            self.main.addWidget(w)
        self.main.setStretchFactor(0, 3)
        self.main.setStretchFactor(1, 4)
        self.main.setStretchFactor(2, 4)
        self.setCentralWidget(self.main)
        self._refit_timer = QTimer(self)
        self._refit_timer.setSingleShot(True)
        self._refit_timer.setInterval(0)
        self._refit_timer.timeout.connect(lambda: (self.main.fit(), self.centre.fit(), self.right.fit()))

    def _charts_built(self) -> None:
        """The charts are made after the first paint (``ChartsPanel``): the columns and the right-hand
        panes are shared out again as if they had been there when the window was first shown."""
        self.main.reshare()
        self.right.reshare()
        self._refit()

    def _refit(self, *_a) -> None:
        """Re-share the columns once Qt has laid out what just changed (their needs are final then)."""
        if not self._refit_timer.isActive():
            self._refit_timer.start()

    def right_needs(self) -> list[int]:
        """Heights of the verdict and bars (at the column's width: their sentences wrap), of the figures
        table (its minimum: ``TABLE_ROWS`` rows) and of the charts (their minimum plus up to
        ``CHART_SPARE`` px of room for the axes). On a short window (1,024 × 700) the charts' spare room
        goes first, down to ``CHART_KEPT``, so the table keeps its rows; then the verdict pane gives way
        and scrolls."""
        width = self.right.width() - self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        lay = self.results.layout()
        results = lay.totalHeightForWidth(width) if lay.hasHeightForWidth() else lay.totalMinimumSize().height()
        results = max(results, lay.totalMinimumSize().height())
        table = self.results.table.minimumHeight()
        if self.charts is None:
            return [results, table]
        chart = self.charts.minimumSizeHint().height()
        room = self.right.height() - self.right.handleWidth() * (self.right.count() - 1)
        return [results, table, chart + max(CHART_KEPT, min(CHART_SPARE, room - results - table - chart))]

    def editor_need(self) -> int:
        """Height of the layout editor's pane with nothing to scroll: all of the editor at the pane's width, as
        its scroll area measures it (the wrapped status and colour key included), plus a horizontal scroll bar
        when the pane is narrower than the editor."""
        pane, editor = self.centre.widget(1), self.layout_editor
        width = pane.width()
        lay = editor.layout()
        need = max(lay.totalHeightForWidth(width) if lay.hasHeightForWidth() else 0,
                   editor.minimumSizeHint().height())
        if editor.minimumSizeHint().width() > width:
            need += self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return need

    def column_needs(self) -> list[int]:
        """Width each column needs to show its content without scrolling sideways: the pickers, the
        widest workload form (plus its vertical scroll bar and the tab frame) or the layout editor, and
        the results (plus a scroll bar, as a long "This machine" list can make them scroll)."""
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        pages = [self.workload.widget(i) for i in range(self.workload.count())]
        page = self.workload.currentWidget()
        frame = self.workload.width() - page.width() if page.width() > 0 else 8  # the tab widget's frame
        forms = max(p.widget().minimumSizeHint().width() for p in pages) + bar + max(frame, 0)
        plots = [self.charts.widget(i) for i in range(self.charts.count())] if self.charts is not None else []
        chart = max((p.plotItem.effectiveSizeHint(Qt.SizeHint.MinimumSize).width() for p in plots
                     if hasattr(p, "plotItem")), default=0)  # title and axes of the widest chart
        return [max(self.models.minimumSizeHint().width(), self.hardware.minimumSizeHint().width()),
                max(forms, self.layout_editor.minimumSizeHint().width() + bar),
                max(self.results.minimumSizeHint().width() + bar, math.ceil(chart) + 2 * frame)]

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
        self._action(exp, "Report (&HTML, charts included)…", self.export_html)
        self._action(exp, "Report (P&DF)…", self.export_pdf)
        self._action(exp, "Figures (&CSV)…", self.export_csv)
        self._action(exp, "Charts (&PNG)…", self.export_charts)
        self._action(m, "&Copy Report as Text", self.copy_text, "Ctrl+Shift+C")
        m.addSeparator()
        self._action(m, "&Quit", self.close, K.Quit)
        e = self.menuBar().addMenu("&Edit")
        undo = self.state.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts(K.Undo)  # every platform binding (Ctrl+Z, Alt+Backspace)
        redo = self.state.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts(K.Redo)  # Ctrl+Y and Ctrl+Shift+Z
        e.addAction(undo)
        e.addAction(redo)
        self.undo_action, self.redo_action = undo, redo
        e.addSeparator()
        self._action(e, "Plan &Name and Notes…", self.plan_info, "Ctrl+Shift+N")
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
        self._refit()  # a longer verdict or sentence may need more of a column

    def _update_title(self, *_a) -> None:
        name = self.state.path.name if self.state.path else (self.state.doc.name or "Untitled plan")
        self.setWindowModified(self.state.dirty)
        self.setWindowTitle(f"{one_line(name, 120)}[*] — llmplan")  # a plan name from a file: escaped

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
        self.right.setSizes([300, 200, 300])
        for name in ("main", "left", "centre", "right"):
            value = s.value(f"ui/splitter_{name}")
            if value is not None:
                getattr(self, name).restoreState(value)
                if isinstance(getattr(self, name), FittingSplitter):  # the person's sizes win
                    getattr(self, name).share_on_show = False
                if isinstance(getattr(self, name), EditorSplitter):
                    getattr(self, name).dragged = True

    def save_ui(self) -> None:
        s = self.settings
        s.setValue("ui/geometry", self.saveGeometry())
        for name in ("main", "left", "centre", "right"):
            s.setValue(f"ui/splitter_{name}", getattr(self, name).saveState())
        s.sync()

    # ---- models and hardware ------------------------------------------------------------
    def import_model(self) -> None:
        paths = dialogs.open_paths(self, "Import model", dialogs.MODEL_FILTER, str(self.start_folder()))
        if paths:
            self.import_files(paths)

    def custom_gpu(self) -> None:
        from llmplan.gui.custom_gpu import CustomGpuDialog

        dlg = CustomGpuDialog(self.state.outcome.scenario.cluster.gpu if self.state.outcome and
                              self.state.outcome.scenario else None, self)
        dlg.accepted_spec.connect(lambda spec: self.state.edit_many(
            {"hardware.gpu": spec.id, "hardware.gpu_spec": spec, "hardware.gpu_efficiency": None},
            f"Custom GPU {spec.name}"))
        dlg.open()

    def _use_detected_gpu(self, *_a) -> None:
        """Start on this machine's GPU when the plan is still the untouched default, with the first of the
        default's variants that fits it (``first_plan``), and say what was chosen."""
        gpu_id, spec = self.hardware.detected_gpu()
        doc = self.state.doc
        if (gpu_id or spec) and self.state.path is None and self.state.undo_stack.count() == 0 \
                and doc == self.fresh_doc:
            changes: dict[str, object] = {"hardware.gpu": gpu_id or spec.id, "hardware.gpu_efficiency": None}
            if spec is not None:
                changes["hardware.gpu_spec"] = spec
            from llmplan.gui.commands import set_path

            try:
                for k, v in changes.items():
                    doc = set_path(doc, k, v)
            except Exception:
                return
            self.start_plan(doc)
        elif self.state.outcome is not None:
            self._show(self.state.outcome)

    def start_plan(self, doc: PlanDocument) -> None:
        """Load the default plan ``doc`` (on this machine's GPU) made to fit it (``first_plan``), and show in
        the results what was chosen and why."""
        from llmplan.gui.first_plan import StartChoice, plan_for_this_gpu

        try:
            choice = plan_for_this_gpu(doc)
        except Exception as exc:  # the choice is a courtesy: a failure keeps the default plan
            choice = StartChoice(doc)
            self.say(f"The first plan was not fitted to this GPU: {exc}")
        self.state.load(choice.doc, None)
        self.fresh_doc = choice.doc
        self.results.set_start_note(choice.doc, choice.note, choice.detail)

    def _machine_fitted(self, _fit) -> None:
        """The "This machine" line answered: if it lists no changes, the results' own fixes show after all."""
        if not self.this_machine.lists_changes():
            self.results.fixes.uncover(self.this_machine.fit_doc)

    def auto_search(self) -> None:
        from llmplan.gui.auto_panel import AutoDialog, fix_first

        if self.state.outcome is None or self.state.outcome.scenario is None:
            dialogs.error(self, "Auto layout", fix_first(self.state.outcome))
            return
        self.auto_dialog = AutoDialog(self.state, self.charts, self)
        self.auto_dialog.open()
        self.auto_dialog.start()

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
            if self.charts is not None:
                self.charts.restyle()
        self.results.set_unit(self.unit)
        self.layout_editor.unit = self.unit
        if self.charts is not None:
            self.charts.unit = self.unit
            if self.state.outcome is not None:
                self.charts.request(self.state.outcome)

    def show_catalog_problems(self, *_a) -> None:
        """A lasting notice when some of the user's catalog files were skipped (broken, wrong fields):
        the app goes on with the rest, and the tooltip says which file and why."""
        problems = backend.user_data_problems()
        self.catalog_notice.setVisible(bool(problems))
        if problems:
            n = len(problems)
            self.catalog_notice.setText(f"⚠ {n} catalog file{'s' if n > 1 else ''} skipped")
            self.catalog_notice.setToolTip(wrap_tip("Skipped, the rest of the catalog is in use:\n" + "\n".join(problems)))

    def _os_colour_scheme_changed(self, *_a) -> None:
        if self.prefs.theme == "system":  # follow the OS's light/dark switch while running
            self.apply_preferences(self.prefs)

    def plan_info(self) -> None:
        from llmplan.gui.plan_info import PlanInfoDialog

        PlanInfoDialog(self.state, self).open()

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
            self.import_files(models)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save():
            event.ignore()
            return
        self.save_ui()
        self.autosave_slot.release()
        event.accept()

    def set_plan(self, doc: PlanDocument) -> None:
        """Replace the plan as one undoable step (used by Auto and by tests)."""
        self.state.replace(doc)
