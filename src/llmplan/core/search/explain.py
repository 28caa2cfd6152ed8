"""Why each runner-up loses to the best layout, and the Pareto fronts (re-estimated by the full engine
when the search refines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from llmplan.core.search.quick import Columns, QuickResult
from llmplan.core.search.results import Objective, ParetoPoint, RankedLayout
from llmplan.core.search.room import ROOM_GAP, rank_with_room

TIME_PARTS = ("compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "ep_comm", "recompute", "optimizer_time")


def explain_ranking(ranked: list[RankedLayout], objective: Objective) -> list[RankedLayout]:
    return [replace(r, rank=i + 1, why="" if i == 0 else _why(r, ranked[0], objective))
            for i, r in enumerate(ranked)]


def _why(r: RankedLayout, best: RankedLayout, objective: Objective) -> str:
    """One sentence: how much worse, and the part of the step that explains most of it."""
    room = room_why(r, best, objective)
    if room:
        return room
    slower = best.tokens_per_s / r.tokens_per_s - 1 if r.tokens_per_s else float("inf")
    head = f"{slower:.1%} fewer tokens/s than #1" if slower > 1e-4 else "as fast as #1"
    if objective == "cost" and r.cost_per_million_tokens and best.cost_per_million_tokens:
        more = r.cost_per_million_tokens / best.cost_per_million_tokens - 1
        head = f"{more:.1%} more per token than #1" if more > 1e-4 else "as cheap as #1"
    if r.gpus != best.gpus:
        return f"{head}: it uses {r.gpus:,} GPUs instead of {best.gpus:,}."
    mine, theirs = dict(r.time_per_token), dict(best.time_per_token)
    deltas = {k: mine.get(k, 0.0) - theirs.get(k, 0.0) for k in TIME_PARTS}
    part, worst = max(deltas.items(), key=lambda kv: kv[1])
    total = sum(theirs.values())
    if slower <= 1e-4 or worst <= 0 or not total:
        return f"{head}; it differs in {_difference(r, best)}." if _difference(r, best) else f"{head}."
    share = worst / total
    return f"{head}; most of the gap: {_PHRASES[part](r, best)}, +{share:.1%} time per token."


def room_why(r: RankedLayout, best: RankedLayout, objective: Objective) -> str:
    """Why a tight layout ranks after #1 although it is faster (or as cheap): the room rule (``room``); "" when
    that is not why."""
    slower = best.tokens_per_s / r.tokens_per_s - 1 if r.tokens_per_s else float("inf")
    if not (r.tight and not best.tight and (slower < -1e-4 or objective == "cost")):
        return ""
    free = (r.capacity_bytes - r.memory_bytes) / 2**30
    faster = f"{-slower:.1%} more tokens/s than #1, but" if slower < -1e-4 else "Ranked after #1:"
    return (f"{faster} it fits only within the allocator's fragmentation margin ({free:.1f} GiB free), where "
            "a run may still run out of memory; #1 leaves that room.")


def _difference(r: RankedLayout, best: RankedLayout) -> str:
    a, b, ta, tb = r.parallelism, best.parallelism, r.training, best.training
    pairs = [("micro-batch", ta.micro_batch, tb.micro_batch), ("ZeRO stage", ta.zero_stage, tb.zero_stage),
             ("recompute", ta.recompute, tb.recompute), ("virtual stages", a.virtual_stages, b.virtual_stages),
             ("CP", a.cp, b.cp), ("TP", a.tp, b.tp), ("PP", a.pp, b.pp)]
    return ", ".join(f"{name} {x} vs {y}" for name, x, y in pairs if x != y)


_PHRASES = {
    "compute": lambda r, b: "more compute per token",
    "bubble": lambda r, b: (f"its pipeline bubble (PP{r.parallelism.pp}, v{r.parallelism.virtual_stages} vs "
                            f"PP{b.parallelism.pp}, v{b.parallelism.virtual_stages})"),
    "tp_comm": lambda r, b: (f"tensor/context-parallel traffic (TP{r.parallelism.tp} CP{r.parallelism.cp} vs "
                             f"TP{b.parallelism.tp} CP{b.parallelism.cp})"),
    "pp_comm": lambda r, b: (f"pipeline sends (PP{r.parallelism.pp}, v{r.parallelism.virtual_stages} vs "
                             f"PP{b.parallelism.pp}, v{b.parallelism.virtual_stages})"),
    "dp_comm": lambda r, b: (f"exposed data-parallel traffic (DP{r.parallelism.dp}, ZeRO-{r.training.zero_stage} "
                             f"vs DP{b.parallelism.dp}, ZeRO-{b.training.zero_stage})"),
    "ep_comm": lambda r, b: f"expert all-to-alls (EP{r.parallelism.ep} vs EP{b.parallelism.ep})",
    "recompute": lambda r, b: f"recomputation ('{r.training.recompute}' vs '{b.training.recompute}')",
    "optimizer_time": lambda r, b: ("the offloaded optimizer step on the host CPU and its PCIe copies" if r.training.offload != "none"
                                    else "the optimizer update"),
}


PARETO_TRIES = 3  # per GPU count: quick-ranked layouts offered to the full engine until one is accepted
# per GPU count whose first accepted layout is tight: further layouts within ROOM_GAP of it (by the quick model) the
# engine judges in search of one with room. A bound on the work, not on the rule: a count whose roomy layout is
# further down keeps its tight point, as the main search would if its refined short list had no roomy one.
ROOM_TRIES = 8

LayoutAt = Callable[[int], "RankedLayout | None"]


def pareto_fronts(cols: Columns, res: QuickResult, order: np.ndarray, price: float | None, layout_at: LayoutAt,
                  ranked: Sequence[RankedLayout] = (), engine: bool = True
                  ) -> tuple[tuple[ParetoPoint, ...], tuple[ParetoPoint, ...]]:
    """The layout the search would pick per GPU count, then the non-dominated ones by cost and by GPU count.

    ``layout_at(row)``: the row as a ranked layout, by the full engine when ``engine`` (None: it rejects the
    layout), else by the quick model. Each GPU count's candidates are the search's ``ranked`` layouts of that
    count and, with the engine, its fastest quick-model layouts the engine accepts (``_engine_tries``); without
    it, its fastest quick-model layout. The count's point is the first of its candidates by
    ``room.rank_with_room``, the search's own ranking: among those within ``ROOM_GAP`` of the fastest a layout
    with room comes before a tight one, so the front's point for N GPUs is the layout the search picks on N
    GPUs, on the engine's scale like the ranked layouts drawn beside it. A count with no candidate has no point."""
    gpus = (cols.tp * cols.pp * cols.dp * cols.cp)[order]
    tps = res.tokens_per_s[order]
    by_count: dict[int, list[int]] = {}
    for k in np.argsort(-tps, kind="stable").tolist():
        by_count.setdefault(int(gpus[k]), []).append(k)
    shown: dict[int, list[RankedLayout]] = {}
    for r in ranked:
        shown.setdefault(r.gpus, []).append(r)
    points = []
    for g in sorted(set(by_count) | set(shown)):
        ks = by_count.get(g, [])
        pool = list(shown.get(g, ()))
        if engine:
            pool += _engine_tries([int(order[k]) for k in ks], [float(tps[k]) for k in ks], layout_at)
        elif ks:
            pool += [r for r in (layout_at(int(order[ks[0]])),) if r is not None]
        if not pool:
            continue
        best = rank_with_room(pool, price, "time")[0]  # one GPU count: time and cost rank alike
        points.append(ParetoPoint(g, best.tokens_per_s, best.cost_per_million_tokens, best.label(), best.refined))
    by_gpus, fastest = [], 0.0
    for pt in points:  # fewest GPUs first: keep a point only if it is faster than every smaller one
        if pt.tokens_per_s > fastest:
            by_gpus.append(pt)
            fastest = pt.tokens_per_s
    unit_cost = [(pt.cost_per_million_tokens if price is not None else pt.gpus / pt.tokens_per_s, pt)
                 for pt in points]
    by_cost, cheapest = [], float("inf")
    for c, pt in sorted(unit_cost, key=lambda cp: -cp[1].tokens_per_s):
        if c < cheapest:
            by_cost.append(pt)
            cheapest = c
    return tuple(by_cost), tuple(by_gpus)


def _engine_tries(rows: list[int], quick_tps: list[float], layout_at: LayoutAt) -> list[RankedLayout]:
    """One GPU count's layouts, fastest first by the quick model, as the engine judges them: up to PARETO_TRIES
    until one is accepted; when that one is tight, up to ROOM_TRIES more within ROOM_GAP of its quick speed,
    until one with room is accepted (the room rule's candidates)."""
    out: list[RankedLayout] = []
    first = None  # the quick speed of the first accepted layout
    tries = 0
    for row, quick in zip(rows, quick_tps, strict=True):
        if first is None and tries >= PARETO_TRIES:
            break
        if first is not None and (tries >= ROOM_TRIES or quick < (1.0 - ROOM_GAP) * first):
            break
        tries += 1
        item = layout_at(row)
        if item is None:
            continue
        out.append(item)
        if first is None:
            first, tries = quick, 0
        if not item.tight:
            break
    return out
