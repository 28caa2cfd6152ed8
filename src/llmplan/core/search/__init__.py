"""The auto-planner: enumerate, prune and rank parallel layouts (pure core, no I/O).

The names below are imported when first used (PEP 562): the default policy (``policy``) runs on
every estimate the app and the CLI make, and importing the planner with it (and NumPy with the
planner: 0.2–0.4 s alone on the 2-core dev VM) made the app's first estimate, and its start-up, slower.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmplan.core.search.planner import quick_layout, scenario_for, search
    from llmplan.core.search.results import ParetoPoint, RankedLayout, SearchResult
    from llmplan.core.search.space import layout_of

__all__ = ["ParetoPoint", "RankedLayout", "SearchResult", "layout_of", "quick_layout", "scenario_for", "search"]
_HOME = {"quick_layout": "planner", "scenario_for": "planner", "search": "planner", "ParetoPoint": "results",
         "RankedLayout": "results", "SearchResult": "results", "layout_of": "space"}


def _module(home: str) -> Any:
    """One of this package's own modules, each named by a constant (plan files never name code to import)."""
    if home == "planner":
        return importlib.import_module("llmplan.core.search.planner")
    if home == "results":
        return importlib.import_module("llmplan.core.search.results")
    return importlib.import_module("llmplan.core.search.space")


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
