"""llmplan's desktop app (PySide6 + pyqtgraph): the only package that imports Qt.

Start it with ``llmplan`` or ``python -m llmplan.gui`` (``app.main``). The window edits
one ``PlanDocument`` through ``state.PlanState``; everything it shows comes from
``llmplan.core.estimate`` via ``backend``. See docs/gui.md.
"""
