"""Target-driven planning: "train T tokens in D days (or within $B): how many GPUs of which kind, and how?"

For each GPU type (a cluster template: the GPU, GPUs per node, network), the smallest whole number of
nodes whose best layout meets every target given, found with the auto-planner itself (``planner.search``
on exactly that many GPUs — the quick model is the engine's per-operation model, then the full engine
re-estimates the winner; one truth):

- ``days``: training time = tokens / tokens-per-second ≤ D (wall time of the step model; failures and
  checkpoints are the system report's, added by the caller's table);
- ``budget``: GPUs × price per GPU-hour × hours ≤ B (a GPU without a price cannot be judged: skipped
  with that reason).
With only a budget, the smallest count is the cheapest and the slowest; the fastest count within the
budget is what a person asks for, so that is chosen instead (the largest candidate that stays within it).

Candidates are whole nodes, 2^k and 3·2^k of them (1, 2, 3, 4, 6, 8, 12 …): with a batch of a power of
two of sequences, data parallelism is a power of two and the remaining factor goes to the pipeline
(PP 3 on 3·2^k nodes). A lower bound skips the counts that cannot make it even at 100% MFU. Training
time falls with the GPU count until the fixed batch runs out of micro-batches, so the scan walks up
from that bound and stops at the first count that meets the target.

Each count is searched as the plan would run on that many nodes (``on_nodes``): what the plan resolves
per cluster size — the training framework under ``training.framework = auto`` above all (a one-node full
fine-tune runs the Hugging Face Trainer, the same plan on several nodes Megatron-Core) — is resolved again
for every count, so each row's layout is the one ``search`` (and ``estimate``) give that plan at that count,
and the row says which framework it used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmplan.core.result import Estimate
from llmplan.core.search.planner import scenario_for, search
from llmplan.core.search.results import RankedLayout
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError

MAX_GPUS = 1_000_000
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class TargetRow:
    """One GPU type's answer: its smallest cluster that meets the target, or why none does."""

    gpu_id: str
    gpu_name: str
    nodes: int  # 0 when no count meets the target
    gpus: int
    layout: RankedLayout | None
    days: float
    gpu_hours: float
    cost_usd: float | None
    scenario: Scenario | None  # the plan on this cluster with this layout (for energy and the app)
    why: str = ""  # why no count meets the target ("" when one does)
    framework: str = ""  # the training-framework profile id the chosen count ran under ("" without an answer)

    @property
    def meets(self) -> bool:
        return self.layout is not None and not self.why


def candidate_nodes(max_nodes: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, … up to ``max_nodes`` (module doc)."""
    out, k = set(), 1
    while k <= max_nodes:
        out.add(k)
        if 3 * k <= max_nodes:
            out.add(3 * k)
        k *= 2
    return sorted(out)


def _figures(r: RankedLayout, tokens: float, price: float | None) -> tuple[float, float, float | None]:
    seconds = tokens / r.tokens_per_s
    hours = seconds / 3600.0 * r.gpus
    return seconds / _SECONDS_PER_DAY, hours, None if price is None else hours * price


def _best(sc: Scenario, refine: Callable[[Scenario], Estimate] | None, keep: tuple[str, ...] = ()
          ) -> RankedLayout | None:
    try:
        res = search(sc, top=1, objective="time", refine=refine, use_fewer_gpus=False, keep=keep)
    except LlmplanError:
        return None
    return res.best[0] if res.best else None


OnNodes = Callable[[int], Scenario]  # the plan resolved on that many nodes of the template's cluster


def same_plan_on(template: Scenario) -> OnNodes:
    """``template`` with only its node count changed: for a plan whose resolution does not depend on the
    cluster size (callers without the plan document; ``plan.target.target_table`` resolves the plan at each
    count with ``plan.target.template_for``)."""
    return lambda nodes: template.model_copy(update={"cluster": template.cluster.model_copy(update={"nodes": nodes})})


def meet_target(template: Scenario, days: float | None = None, budget: float | None = None,
                tokens: float | None = None, refine: Callable[[Scenario], Estimate] | None = None,
                max_gpus: int = MAX_GPUS, keep: tuple[str, ...] = (), on_nodes: OnNodes | None = None
                ) -> TargetRow:
    """The smallest node count of ``template``'s cluster (its GPU, GPUs per node, network) whose best
    layout meets ``days`` and ``budget`` for ``tokens`` (default: the plan's training.tokens); see the
    module doc. ``refine``: the full engine, which re-estimates the chosen layout; ``keep``: training
    knobs the search holds at the plan's values (``planner.search``), as a layout search would;
    ``on_nodes(n)``: the plan on n nodes, its framework chosen for n (default ``same_plan_on(template)``)."""
    if days is None and budget is None:
        raise LlmplanError("a target needs --days or --budget (or both)")
    if (days is not None and days <= 0) or (budget is not None and budget <= 0):
        raise LlmplanError("--days and --budget must be positive")
    c = template.cluster
    gpu = c.gpu
    total = float(tokens or template.training.tokens)
    price = c.hourly_price
    row = dict(gpu_id=gpu.id, gpu_name=gpu.name, nodes=0, gpus=0, layout=None, days=0.0, gpu_hours=0.0,
               cost_usd=None, scenario=None)
    if budget is not None and price is None:
        return TargetRow(**row, why=f"{gpu.name} has no price per GPU-hour: set hardware.price_per_gpu_hour")
    peak = gpu.peak_flops.for_dtype(template.training.precision)
    if not peak:
        return TargetRow(**row, why=f"{gpu.name} lists no {template.training.precision} peak FLOP/s")
    gpn = c.gpus_per_node
    counts = candidate_nodes(max(1, max_gpus // gpn))
    if days is not None:  # even at 100% of peak, 6 FLOPs per parameter and token: skip hopeless counts
        from llmplan.core.params import count_params

        floor_gpus = 6.0 * count_params(template.model).active * total / (days * _SECONDS_PER_DAY * peak)
        counts = [n for n in counts if n * gpn >= floor_gpus] or counts[-1:]

    plan_on = on_nodes or same_plan_on(template)
    plans: dict[int, Scenario] = {}

    def at(nodes: int, with_engine: bool) -> tuple[RankedLayout | None, Scenario]:
        if nodes not in plans:
            sc = plan_on(nodes)
            plans[nodes] = sc.model_copy(update={"training": sc.training.model_copy(update={"tokens": total})})
        sc = plans[nodes]
        return _best(sc, refine if with_engine else None, keep), sc

    def ok(r: RankedLayout) -> bool:
        d, _h, cost = _figures(r, total, price)
        return (days is None or d <= days) and (budget is None or (cost is not None and cost <= budget))

    order = counts if days is not None else list(reversed(counts))  # budget only: the fastest within it
    best_seen: RankedLayout | None = None
    for nodes in order:
        quick, _sc = at(nodes, False)
        if quick is None:
            continue
        best_seen = quick if best_seen is None or quick.tokens_per_s > best_seen.tokens_per_s else best_seen
        if not ok(quick):
            continue
        final, sc = at(nodes, True) if refine is not None else (quick, _sc)
        if final is None or not ok(final):
            continue
        d, h, cost = _figures(final, total, price)
        chosen = scenario_for(sc, final.parallelism, final.training)
        return TargetRow(gpu.id, gpu.name, final.gpus // gpn or 1, final.gpus, final, d, h, cost, chosen,
                         framework=sc.framework.id)
    if best_seen is None:
        return TargetRow(**row, why=f"no layout fits {template.model.name} in {gpu.name} memory at any count")
    d, h, cost = _figures(best_seen, total, price)
    want = " and ".join(w for w in (f"{days:g} days" if days is not None else "",
                                    f"${budget:,.0f}" if budget is not None else "") if w)
    return TargetRow(**row, why=f"no count up to {max_gpus:,} GPUs meets {want}: the fastest, "
                                f"{best_seen.gpus:,} GPUs, takes {d:,.1f} days"
                                + (f" for ${cost:,.0f}" if cost is not None else ""))


def rank_targets(templates: Sequence[Scenario], days: float | None = None, budget: float | None = None,
                 tokens: float | None = None, refine: Callable[[Scenario], Estimate] | None = None,
                 max_gpus: int = MAX_GPUS, keep: tuple[str, ...] = (),
                 on_nodes: Callable[[Scenario, int], Scenario] | None = None) -> tuple[TargetRow, ...]:
    """``meet_target`` for each GPU type, those that meet it first, cheapest first (then fastest);
    unpriced GPUs after the priced ones. ``on_nodes(template, n)``: the plan of that template on n nodes
    (``meet_target``)."""
    rows = [meet_target(t, days, budget, tokens, refine, max_gpus, keep,
                        None if on_nodes is None else (lambda n, t=t: on_nodes(t, n))) for t in templates]
    return tuple(sorted(rows, key=lambda r: (not r.meets, r.cost_usd is None, r.cost_usd or 0.0, r.days)))
