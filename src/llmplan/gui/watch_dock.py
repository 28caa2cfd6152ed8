"""Puts the Watch panel in the main window: a dock under the results, opened from View ▸ Watch This
Machine (Ctrl+Shift+W) or the "Watch a running job" link of the "This machine" line, fed with the
plan's estimate and the fit's nearest changes as they change."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget

from llmplan.gui.watch_panel import WatchPanel


def install_watch(window, open_sampler=None) -> WatchPanel:
    panel = WatchPanel(open_sampler)
    dock = QDockWidget("Watch — this machine", window)
    dock.setObjectName("watch_dock")
    dock.setWidget(panel)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock.hide()
    action = QAction("&Watch This Machine", window)
    action.setShortcut(QKeySequence("Ctrl+Shift+W"))
    action.setStatusTip("Live GPU and host telemetry beside the plan, with the bottleneck named")

    def show() -> None:
        dock.show()
        dock.raise_()
        panel.start()

    action.triggered.connect(show)
    bar = window.menuBar()
    help_menu = bar.actions()[-1]
    view = bar.addMenu("&View")
    bar.insertMenu(help_menu, view)  # before Help, where a View menu belongs
    view.addAction(action)
    window.watch_dock, window.watch_panel, window.watch_action = dock, panel, action
    window.state.evaluated.connect(panel.set_outcome)
    if window.state.outcome is not None:
        panel.set_outcome(window.state.outcome)
    window.this_machine.fitted.connect(panel.set_fit)
    window.this_machine.watch_requested.connect(show)
    panel.message.connect(lambda m: window.statusBar().showMessage(m, 8000))
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(panel.stop)
    return panel
