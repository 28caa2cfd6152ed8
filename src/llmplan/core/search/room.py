"""Room to spare: the one ranking rule the search, the Pareto front and the inference search share.

Layouts rank by the objective's score (tokens/s, or tokens per dollar), with one exception: among those within
``ROOM_GAP`` of the best score, the ones that are not **tight** come first. Tight is the estimate's own notion
(``MemoryBreakdown.tight``, which the verdicts of ``estimate``, ``fit`` and the app print): the layout fits, but
with less headroom than the caching allocator's fragmentation margin, so a real run may still run out of memory.
Beyond the gap the score alone ranks. docs/planning.md, "Room to spare".
"""

from __future__ import annotations

from collections.abc import Sequence

from llmplan.core.search.results import Objective, RankedLayout

# A layout that fits only within the allocator's fragmentation margin (``MemoryBreakdown.tight``) may still run out
# of memory (fragmentation, a longer batch, another driver), so the ranking puts a layout that leaves that room first
# when it is at most this much slower (or dearer) than the best: 2 %, about the run-to-run spread of a training
# step's time, so the user gives up no speed they could measure for a plan that runs. 1B pre-training on one H100
# took 78.4 of 79.2 GiB for 0.2 % over a layout at 50.6 GiB.
ROOM_GAP = 0.02


def score(tps, gpus, price: float | None, objective: Objective):
    """Higher is better: tokens/s, or tokens per dollar (per GPU-hour without a price). Numbers or NumPy arrays."""
    if objective == "cost":
        return tps / (gpus * (price or 1.0))
    return tps


def room_first(scores: Sequence[float], tight: Sequence[bool]) -> list[int]:
    """Indices of items given best first by their objective (``scores[0]`` is the best's score), reordered so
    that among the items within ``ROOM_GAP`` of the best those that are not tight come first; each group keeps
    the given order."""
    if not scores:
        return []
    bar = (1.0 - ROOM_GAP) * scores[0]
    near = [s >= bar for s in scores]
    return sorted(range(len(scores)), key=lambda i: (not near[i], near[i] and bool(tight[i])))


def rank_with_room(ranked: Sequence[RankedLayout], price: float | None, objective: Objective) -> list[RankedLayout]:
    """``ranked`` best first by the objective's score, except that among the layouts within ``ROOM_GAP`` of the
    best score those that are not tight come first (``room_first``)."""
    scores = [float(score(r.tokens_per_s, r.gpus, price, objective)) for r in ranked]
    by_score = sorted(range(len(ranked)), key=lambda i: -scores[i])
    order = room_first([scores[i] for i in by_score], [ranked[i].tight for i in by_score])
    return [ranked[by_score[i]] for i in order]
