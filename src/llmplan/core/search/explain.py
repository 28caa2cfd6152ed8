"""Why each runner-up loses to the best layout, and the Pareto fronts (re-estimated by the full engine
when the search refines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from llmplan.core.search.quick import Columns, QuickResult
from llmplan.core.search.results import Objective, ParetoPoint, RankedLayout
from llmplan.core.search.space import layout_of
from llmplan.core.workload import TrainingSettings

TIME_PARTS = ("compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "ep_comm", "recompute", "optimizer_time")


def explain_ranking(ranked: list[RankedLayout], objective: Objective) -> list[RankedLayout]:
    return [replace(r, rank=i + 1, why="" if i == 0 else _why(r, ranked[0], objective))
            for i, r in enumerate(ranked)]


def _why(r: RankedLayout, best: RankedLayout, objective: Objective) -> str:
    """One sentence: how much worse, and the part of the step that explains most of it."""
    slower = best.tokens_per_s / r.tokens_per_s - 1 if r.tokens_per_s else float("inf")
    if r.tight and not best.tight and (slower < -1e-4 or objective == "cost"):  # ranked after #1 for room alone
        free = (r.capacity_bytes - r.memory_bytes) / 2**30
        faster = f"{-slower:.1%} more tokens/s than #1, but" if slower < -1e-4 else "Ranked after #1:"
        return (f"{faster} it fits only within the allocator's fragmentation margin ({free:.1f} GiB free), where "
                "a run may still run out of memory; #1 leaves that room.")
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


def pareto_fronts(cols: Columns, res: QuickResult, order: np.ndarray, price: float | None, t: TrainingSettings,
                  speed: Callable[[int], float | None] | None = None, ranked: Sequence[ParetoPoint] = ()
                  ) -> tuple[tuple[ParetoPoint, ...], tuple[ParetoPoint, ...]]:
    """Fastest layout per GPU count, then the non-dominated ones by cost and by GPU count.

    ``speed(row)``: the full engine's tokens/s for a row (None: it rejects the layout). Given, each GPU
    count's point is the first of its ``PARETO_TRIES`` fastest quick-model layouts the engine accepts, at
    the engine's speed, so the front and the ranked layouts (also the engine's) are on one scale; a
    count whose tries are all rejected has no point. Without it, the quick model's figures are used.
    ``ranked``: the layouts the search ranked; one faster than its GPU count's point replaces it, so the
    front bounds every ranked layout drawn beside it."""
    gpus = (cols.tp * cols.pp * cols.dp * cols.cp)[order]
    tps = res.tokens_per_s[order]
    by_count: dict[int, list[int]] = {}
    for k in np.argsort(-tps, kind="stable").tolist():
        by_count.setdefault(int(gpus[k]), []).append(k)
    points = []
    for g, ks in sorted(by_count.items()):
        found = None
        for k in ks[: PARETO_TRIES if speed is not None else 1]:
            value = float(tps[k]) if speed is None else speed(int(order[k]))
            if value is not None:
                found = (k, value)
                break
        if found is None:
            continue
        k, value = found
        p, tr = layout_of(cols, int(order[k]), t)
        cost = None if price is None else g * price / 3600.0 / value * 1e6
        label = RankedLayout(0, g, p, tr, 0, 0, 0, 0, 0, None, False, "").label()
        points.append(ParetoPoint(g, value, cost, label, speed is not None))
    best = {pt.gpus: pt for pt in points}
    for pt in ranked:
        if pt.gpus not in best or pt.tokens_per_s > best[pt.gpus].tokens_per_s:
            best[pt.gpus] = pt
    points = [best[g] for g in sorted(best)]
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
