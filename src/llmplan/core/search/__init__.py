"""The auto-planner: enumerate, prune and rank parallel layouts (pure core, no I/O)."""

from llmplan.core.search.planner import (
    ParetoPoint,
    RankedLayout,
    SearchResult,
    layout_of,
    scenario_for,
    search,
)

__all__ = ["ParetoPoint", "RankedLayout", "SearchResult", "layout_of", "scenario_for", "search"]
