"""llmplan's desktop app (PySide6 + pyqtgraph): the only package that imports Qt.

Start it with ``llmplan`` or ``python -m llmplan.gui`` (``app.main``). The window edits
one ``PlanDocument`` through ``state.PlanState``; everything it shows comes from
``llmplan.core.engine`` via ``backend``. See docs/gui.md.
"""

try:  # before any widget exists: see none_guard.py (a PySide6 6.12.0 reference-count bug)
    from llmplan.gui.none_guard import guard_none

    guard_none()
except ImportError:  # no PySide6: the CLI never imports this package
    pass
