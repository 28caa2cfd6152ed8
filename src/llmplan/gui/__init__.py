"""llmplan's desktop app (PySide6 + pyqtgraph): the only package that imports Qt.

Start it with ``llmplan`` or ``python -m llmplan.gui`` (``app.main``). The window edits
one ``PlanDocument`` through ``state.PlanState``; everything it shows comes from
``llmplan.core.engine`` via ``backend``. See docs/gui.md.

Both ways in import this package first, so the app's start is timed from here (``STARTED``), and the
Qt-free modules the window needs are imported here, before PySide6 (``QT_FREE_MODULES``): once PySide6 is
imported, it reads the source of every module imported after it, looking for "PySide6" in it
(shibokensupport's ``feature_imported``, for its ``__feature__`` switches, PYSIDE-2029). The engine, the plan
and the catalogs are about 160 modules (pydantic's with them) that Qt has no reason to read; imported before
it, they are not read at all: 307 → 143 modules read before the window's first paint, the hook's CPU time
95-119 → 36-48 ms (3 starts each, 2-core dev VM under load, PySide6 6.12.0, 2026-11-28). A module the
window's own modules import by name is still read once.
"""

import time

STARTED = time.perf_counter(), time.process_time()  # the app's first line: its start-up is timed from here

# The window's Qt-free modules, outside this package (the layers contract keeps them free of Qt): the engine, the
# plan's resolution and evaluation, the catalogs and the verdict the window's first estimate runs through.
QT_FREE_MODULES = (
    "llmplan.core.engine", "llmplan.core.training", "llmplan.core.search.policy", "llmplan.plan.evaluate",
    "llmplan.plan.released", "llmplan.plan.hub_plan", "llmplan.catalog.hardware", "llmplan.catalog.models",
    "llmplan.catalog.engines", "llmplan.catalog.system_presets", "llmplan.fit.tiers",
)


def _import_qt_free_modules() -> None:
    """Each by its own import statement (plain names: no module is imported from a computed string)."""
    import llmplan.catalog.engines
    import llmplan.catalog.hardware
    import llmplan.catalog.models
    import llmplan.catalog.system_presets
    import llmplan.core.engine
    import llmplan.core.search.policy
    import llmplan.core.training
    import llmplan.fit.tiers
    import llmplan.plan.evaluate
    import llmplan.plan.hub_plan
    import llmplan.plan.released  # noqa: F401


_import_qt_free_modules()
_before_qt = time.perf_counter(), time.process_time()

try:  # before any widget exists: see none_guard.py (a PySide6 6.12.0 reference-count bug)
    from llmplan.gui.none_guard import guard_none

    guard_none()
except ImportError:  # no PySide6: the CLI never imports this package
    pass

# (wall, CPU) seconds of PySide6's import and the guard's probe: the self-test says how much of its start they are
QT_IMPORT_S = time.perf_counter() - _before_qt[0], time.process_time() - _before_qt[1]
