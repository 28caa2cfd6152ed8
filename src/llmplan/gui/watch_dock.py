"""Puts the Watch panel in the main window: a dock under the results, opened from View ▸ Watch This
Machine (Ctrl+Shift+W) or the "Watch a running job" link of the "This machine" line, fed with the
plan's estimate and the fit's nearest changes as they change.

The panel (and pyqtgraph with it) is built the first time it is opened, so the window starts as
fast as before and still opens where pyqtgraph is missing (the action then says so).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget


class WatchDock:
    def __init__(self, window, open_sampler=None) -> None:
        self.window, self._open_sampler = window, open_sampler
        self.panel = None
        self._outcome = window.state.outcome
        self._fit = None
        self.dock = QDockWidget("Watch — this machine", window)
        self.dock.setObjectName("watch_dock")
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()
        self.action = QAction("&Watch This Machine", window)
        self.action.setShortcut(QKeySequence("Ctrl+Shift+W"))
        self.action.setStatusTip("Live GPU and host telemetry beside the plan, with the bottleneck named")
        self.action.triggered.connect(self.show)
        bar = window.menuBar()
        help_menu = bar.actions()[-1]
        view = bar.addMenu("&View")
        bar.insertMenu(help_menu, view)  # before Help, where a View menu belongs
        view.addAction(self.action)
        window.state.evaluated.connect(self._set_outcome)
        window.this_machine.fitted.connect(self._set_fit)
        window.this_machine.watch_requested.connect(self.show)

    def _set_outcome(self, outcome) -> None:
        self._outcome = outcome
        if self.panel is not None:
            self.panel.set_outcome(outcome)

    def _set_fit(self, fit) -> None:
        self._fit = fit
        if self.panel is not None:
            self.panel.set_fit(fit)

    def _build(self) -> bool:
        try:
            from llmplan.gui.watch_panel import WatchPanel
        except ImportError as exc:  # pyqtgraph is optional for the rest of the window
            self.window.statusBar().showMessage(f"Watch needs pyqtgraph ({exc})", 8000)
            return False
        self.panel = WatchPanel(self._open_sampler)
        self.dock.setWidget(self.panel)
        self.panel.message.connect(lambda m: self.window.statusBar().showMessage(m, 8000))
        if self._outcome is not None:
            self.panel.set_outcome(self._outcome)
        if self._fit is not None:
            self.panel.set_fit(self._fit)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.panel.stop)
        return True

    def show(self) -> None:
        if self.panel is None and not self._build():
            return
        self.dock.show()
        self.dock.raise_()
        self.panel.start()


def install_watch(window, open_sampler=None) -> WatchDock:
    watch = WatchDock(window, open_sampler)
    window.watch = watch
    window.watch_dock, window.watch_action = watch.dock, watch.action
    return watch
