"""The auto-planner: enumerate, prune and rank parallel layouts (pure core, no I/O)."""

from llmplan.core.search.planner import quick_layout, scenario_for, search
from llmplan.core.search.results import ParetoPoint, RankedLayout, SearchResult
from llmplan.core.search.space import layout_of

__all__ = ["ParetoPoint", "RankedLayout", "SearchResult", "layout_of", "quick_layout", "scenario_for", "search"]
