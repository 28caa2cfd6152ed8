"""Why each runner-up loses to the best layout, and the Pareto fronts of the quick model."""

from __future__ import annotations

import numpy as np

from llmplan.core.search.quick import Columns, QuickResult
from llmplan.core.search.results import Objective, ParetoPoint, RankedLayout
from llmplan.core.search.space import layout_of
from llmplan.core.workload import TrainingSettings


def explain_ranking(ranked: list[RankedLayout], objective: Objective) -> list[RankedLayout]:
    out = []
    for i, r in enumerate(ranked):
        why = "" if i == 0 else _why(r, ranked[0], objective)
        out.append(RankedLayout(i + 1, r.gpus, r.parallelism, r.training, r.step_time_s, r.tokens_per_s,
                                r.memory_bytes, r.capacity_bytes, r.mfu, r.cost_per_million_tokens, r.refined,
                                why, r.estimate, r.serving))
    return out


def _why(r: RankedLayout, best: RankedLayout, objective: Objective) -> str:
    """One sentence: how much worse, and the layout difference that explains most of it."""
    slower = best.tokens_per_s / r.tokens_per_s - 1 if r.tokens_per_s else float("inf")
    head = f"{slower:.1%} fewer tokens/s than #1" if slower > 0 else "as fast as #1"
    if objective == "cost" and r.cost_per_million_tokens and best.cost_per_million_tokens:
        more = r.cost_per_million_tokens / best.cost_per_million_tokens - 1
        head = f"{more:.1%} more per token than #1"
    a, b = r.parallelism, best.parallelism
    ta, tb = r.training, best.training
    reasons = []
    if r.gpus != best.gpus:
        reasons.append(f"it uses {r.gpus} GPUs instead of {best.gpus}")
    if a.pp != b.pp or a.virtual_stages != b.virtual_stages:
        reasons.append(f"its pipeline (PP{a.pp}, v{a.virtual_stages}) has a different bubble than PP{b.pp}, "
                       f"v{b.virtual_stages}")
    if a.tp != b.tp:
        reasons.append(f"TP{a.tp} {'adds tensor-parallel traffic' if a.tp > b.tp else 'leaves less memory'}"
                       f" vs TP{b.tp}")
    if ta.recompute != tb.recompute:
        reasons.append(f"recompute '{ta.recompute}' vs '{tb.recompute}'")
    if ta.micro_batch != tb.micro_batch:
        reasons.append(f"micro-batch {ta.micro_batch} vs {tb.micro_batch}")
    if ta.zero_stage != tb.zero_stage:
        reasons.append(f"ZeRO-{ta.zero_stage} vs ZeRO-{tb.zero_stage}")
    if a.cp != b.cp:
        reasons.append(f"CP{a.cp} vs CP{b.cp}")
    if ta.offload != tb.offload:
        reasons.append(f"offload '{ta.offload}' vs '{tb.offload}'")
    if not reasons:
        return f"{head}."
    return f"{head}: " + "; ".join(reasons[:2]) + "."


def pareto_fronts(cols: Columns, res: QuickResult, order: np.ndarray, price: float | None, t: TrainingSettings
            ) -> tuple[tuple[ParetoPoint, ...], tuple[ParetoPoint, ...]]:
    """Fastest layout per GPU count, then the non-dominated ones by cost and by GPU count (quick model)."""
    gpus = (cols.tp * cols.pp * cols.dp * cols.cp)[order]
    tps = res.tokens_per_s[order]
    best_per: dict[int, int] = {}
    for k, g in enumerate(gpus.tolist()):
        if g not in best_per or tps[k] > tps[best_per[g]]:
            best_per[g] = k
    points = []
    for g, k in sorted(best_per.items()):
        row = int(order[k])
        p, tr = layout_of(cols, row, t)
        cost = None if price is None else g * price / 3600.0 / float(tps[k]) * 1e6
        label = RankedLayout(0, g, p, tr, 0, 0, 0, 0, 0, None, False, "").label()
        points.append(ParetoPoint(g, float(tps[k]), cost, label))
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
