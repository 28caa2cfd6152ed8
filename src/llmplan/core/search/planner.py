"""The auto-planner: every valid layout, pruned, ranked, explained.

1. enumerate every valid layout (``space``) for the cluster, and by default for smaller
   slices of it too (powers of two of nodes), so the Pareto front of time against cost
   and GPU count has something to show;
2. evaluate them all at once with the quick model (``quick``) and drop what cannot fit;
   CPU offload is tried only when nothing fits without it;
3. re-estimate the short list with the full engine (``refine``, normally
   ``llmplan.core.engine.estimate``), keep what still fits, and rank by tokens/s
   (objective "time") or by cost per token ("cost");
4. say for each runner-up why it loses to the best, in one sentence.

Micro-batch, ZeRO stage, recomputation and offload are part of the layout the search chooses;
``keep`` names those the caller wants held at the scenario's own values (the CLI passes the
ones a user set with ``--set``), so the search varies only the rest.

The GUI runs this on every knob change: ``progress(fraction, message)`` is called
between batches and ``cancel()`` is checked there; a cancelled search returns what it has.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from llmplan.core.framework_profile import offers_offload, one_rank_zero, zero_refusal
from llmplan.core.result import Estimate
from llmplan.core.search.explain import TIME_PARTS, explain_ranking, pareto_fronts
from llmplan.core.search.policy import AUTOMATIC
from llmplan.core.search.quick import Columns, QuickResult, evaluate
from llmplan.core.search.results import Objective, RankedLayout, SearchResult
from llmplan.core.search.room import rank_with_room, score
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import RECOMPUTE_NAMES, exclusions, gpu_counts, layout_of, training_columns
from llmplan.core.training import batch
from llmplan.core.training.placement import bus_bandwidth
from llmplan.core.training.recompute_modules import named
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.errors import LayoutError, LlmplanError

Progress = Callable[[float, str], None]
Cancel = Callable[[], bool]
Refine = Callable[[Scenario], Estimate]
_BATCH = 20_000  # rows per quick-model batch between progress/cancel checks
FRUGAL_CHECKS = 16  # layouts with the least quick-model memory the engine checks before "no layout fits"
REFINE_ATTEMPTS_FACTOR = 8  # at most 8 × refine_count full estimates per search
KEEPABLE = AUTOMATIC  # training knobs the search can hold fixed (the automatic knobs of ``policy``)


def search(
    scenario: Scenario,
    top: int = 5,
    objective: Objective = "time",
    refine: Refine | None = None,
    refine_count: int = 24,
    use_fewer_gpus: bool = True,
    progress: Progress | None = None,
    cancel: Cancel | None = None,
    keep: tuple[str, ...] = (),
    weight_formats: tuple[str, ...] = (),
    within_node: Scenario | None = None,
) -> SearchResult:
    """Best training layouts for ``scenario``'s model, workload and cluster (see module doc).
    ``keep``: training knobs of ``KEEPABLE`` held at the scenario's values instead of searched.
    ``weight_formats`` (inference): the formats to try when nothing fits in the plan's own, because
    the plan left the format open. ``within_node``: the same plan resolved on one node, for a plan of several
    nodes whose framework depends on the node count (``training.framework = auto``: a full fine-tune runs
    Megatron-Core on several nodes, the Hugging Face Trainer on one); the layouts on at most one node's GPUs
    are then searched under its framework, so each GPU count is searched as the plan runs there."""
    unknown = sorted(set(keep) - set(KEEPABLE))
    if unknown:
        raise LayoutError(f"the search cannot hold {', '.join(unknown)} fixed; it can hold {', '.join(KEEPABLE)}")
    if scenario.workload == "inference":
        from llmplan.core.search.inference import search_inference

        return search_inference(scenario, top=top, objective=objective, refine=refine, cancel=cancel,
                                formats=weight_formats)
    if objective not in ("time", "cost"):
        raise LayoutError(f"search objective '{objective}' is unknown; use 'time' or 'cost'")
    scenario = fixed_batch(scenario)
    result = _search_training(scenario, top, objective, refine, refine_count, use_fewer_gpus, progress, cancel, keep,
                              within_node)
    t = scenario.training
    counts = gpu_counts(scenario.cluster.total_gpus, scenario.cluster.gpus_per_node, use_fewer_gpus)
    excluded = exclusions(model_shape(scenario.model, t), counts, scenario.cluster.gpus_per_node, t.seq_len,
                          t.global_batch)
    note = result.note
    if not result.evaluated and not result.cancelled and excluded:
        note = no_layout_runs(counts, excluded)
    return dataclasses.replace(result, excluded=excluded, note=note)


def no_layout_runs(counts: list[int], excluded: tuple[tuple[str, int, str], ...]) -> str:
    """Why the search had nothing to try: every layout on these GPU counts breaks a rule of ``space``
    (7 GPUs for a batch of 1,024 sequences and 32 heads). "No layout fits in memory ... add GPUs" said
    there, although 4 or 8 of the same GPUs fit; the rules and their examples say what to change."""
    on = f"{counts[0]:,} GPUs" if len(counts) == 1 else f"up to {max(counts):,} GPUs"
    rules = "; ".join(f"{reason} (e.g. {example})" for reason, _n, example in excluded[:3])
    return f"no layout can use {on}: {rules}; use another GPU count, or change the setting a rule names"


def fixed_batch(scenario: Scenario) -> Scenario:
    """The scenario with its global batch in sequences, as the plan asks for it (``training.batch``): the
    search keeps it exactly for every layout and leaves out those that cannot cut it."""
    target = batch.target_sequences(scenario)
    t = scenario.training
    if not target or target == t.global_batch:
        return scenario
    return scenario.model_copy(update={"training": t.model_copy(update={"global_batch": target})})


def _least(res: QuickResult, cluster) -> str:
    """How far the most memory-frugal layout is from fitting, so that "nothing fits" comes with a number."""
    if not len(res.memory):
        return ""
    gib = 2**30
    return (f" (the most frugal layout needs {float(np.min(res.memory)) / gib:,.1f} GiB per GPU, "
            f"{cluster.gpu.usable_memory_bytes / gib:,.1f} GiB usable)")


def _advice(scenario: Scenario) -> str:
    """What shrinks a training plan that fits nowhere: LoRA/QLoRA only where the plan fine-tunes every weight."""
    t = scenario.training
    if scenario.workload == "finetune" and t.method == "full":
        return "add GPUs, or use LoRA or QLoRA"
    if t.method == "lora":
        return "add GPUs, use QLoRA, or shorten the sequence"
    return "add GPUs or shorten the sequence"


def _parts(scenario: Scenario, within_node: Scenario | None, counts: list[int]) -> list[tuple[Scenario, list[int]]]:
    """The GPU counts to search, each with the scenario it runs under: all under ``scenario``, or, when
    ``within_node`` runs another framework, those of at most one node under it (on the search's cluster)."""
    gpn = scenario.cluster.gpus_per_node
    if within_node is None or within_node.framework_profile == scenario.framework_profile:
        return [(scenario, counts)]
    inside = fixed_batch(within_node.model_copy(update={"cluster": scenario.cluster}))
    parts = [(inside, [c for c in counts if c <= gpn]), (scenario, [c for c in counts if c > gpn])]
    return [(sc, cs) for sc, cs in parts if cs]


def _search_training(scenario: Scenario, top: int, objective: Objective, refine: Refine | None, refine_count: int,
                     use_fewer_gpus: bool, progress: Progress | None, cancel: Cancel | None, keep: tuple[str, ...],
                     within_node: Scenario | None = None) -> SearchResult:
    cluster, t = scenario.cluster, scenario.training
    parts = _parts(scenario, within_node, gpu_counts(cluster.total_gpus, cluster.gpus_per_node, use_fewer_gpus))
    report = progress or (lambda _f, _m: None)
    stop = cancel or (lambda: False)

    note = ""
    offload = all(offers_offload(sc.framework, "cpu") for sc, _ in parts)  # only an offload the framework has
    phases = (False, True) if offload else (False,)  # CPU offload only when nothing fits without it
    if "offload" in keep:
        phases = (t.offload != "none",)
    cols, res, owner, cancelled = _quick_parts(parts, phases[0], keep, report, stop)
    fit = np.nonzero(res.memory <= cluster.gpu.usable_memory_bytes)[0] if len(cols) else np.zeros(0, int)
    if not len(fit) and not cancelled and len(phases) > 1:
        tried = cols, res, owner
        note = "nothing fits without CPU offload; showing layouts that offload the optimizer to the CPU"
        cols, res, owner, cancelled = _quick_parts(parts, True, keep, report, stop)
        fit = np.nonzero(res.memory <= cluster.gpu.usable_memory_bytes)[0] if len(cols) else np.zeros(0, int)
        if not len(cols) and len(tried[0]):  # no offloading layout runs the held knobs (ZeRO-0 under DeepSpeed):
            (cols, res, owner), note = tried, ""  # the answer is the layouts tried without it, by memory
    evaluated = len(cols)
    if not len(fit) and refine is not None and len(cols) and not cancelled:
        # the quick model is not the verdict: the engine checks the most memory-frugal layouts first
        frugal = np.argsort(res.memory, kind="stable")[:FRUGAL_CHECKS]
        ranked, refined, _tried, cancelled = _refine(frugal, top, _layouts(cols, res, parts, owner, refine), True,
                                                     report, stop)
        if ranked:
            ranked = rank_with_room(ranked, cluster.hourly_price, objective)
            report(1.0, "done")
            return SearchResult(tuple(explain_ranking(ranked[:top], objective)), (), (), evaluated, len(ranked),
                                refined, cancelled, objective,
                                "the quick model found no layout that fits; the full engine found these among "
                                "the most memory-frugal ones")
    if not len(fit):
        tried = "even with CPU offload" if len(phases) > 1 else f"{scenario.framework.name} has no CPU offload"
        why = f"no layout fits in memory on these GPUs, {tried}{_least(res, cluster)}: {_advice(scenario)}"
        if keep:
            why = (f"no layout fits in memory on these GPUs with {_kept(t, keep)} as set{_least(res, cluster)}: "
                   "add GPUs, or change those settings")
        if keep and not evaluated:  # not memory: no layout the settings allow exists here
            why = f"no layout can run {_kept(t, keep)} as set on these GPUs{_why_none(scenario, keep)}"
        return SearchResult((), (), (), evaluated, 0, 0, cancelled, objective, "" if cancelled else why)
    gpus = (cols.tp * cols.pp * cols.dp * cols.cp)[fit]
    price = cluster.hourly_price
    tps = res.tokens_per_s[fit]
    scores = score(tps, gpus, price, objective)
    order = fit[np.argsort(-scores, kind="stable")]

    wanted = max(refine_count, top) if refine else top
    layout_at = _layouts(cols, res, parts, owner, refine)
    ranked, refined, tried, cancelled = _refine(order, wanted, layout_at, refine is not None, report, stop)
    ranked = rank_with_room(ranked, price, objective)
    if refine and not ranked and not cancelled:
        note = (f"the full engine judged all {tried} best layouts of the quick model invalid or too big; "
                "try more GPUs, ZeRO-3, recomputation or offload")

    pareto_cost, pareto_gpus = pareto_fronts(cols, res, order, price, layout_at, ranked, refine is not None)
    final = explain_ranking(ranked[:top], objective)
    tp_why = _tp_placement_note(cols, res, fit, scores, cluster, scenario.efficiency)
    note = f"{note}; {tp_why}" if note and tp_why else (note or tp_why)
    report(1.0, "done")
    return SearchResult(tuple(final), pareto_cost, pareto_gpus, evaluated, len(fit), refined, cancelled,
                        objective, note)


def _tp_placement_note(cols: Columns, res: QuickResult, fit: np.ndarray, score: np.ndarray, cluster,
                       eff) -> str:
    """Why the best layout keeps TP inside a node (or may span nodes): the fastest fitting layout with TP
    inside a node against the fastest with TP across nodes, by the quick model, and the bandwidths of a TP
    group both ways (``placement.bus_bandwidth``: NVLink inside, the node's NICs shared by its TP groups
    across)."""
    gpn = cluster.gpus_per_node
    if cluster.nodes <= 1 or gpn <= 1 or not len(fit):
        return ""
    tp = cols.tp[fit]
    inside, across = fit[tp <= gpn], fit[tp > gpn]
    if not len(inside) or not len(across):
        return ""
    best_in = res.tokens_per_s[inside].max()
    best_out = res.tokens_per_s[across].max()
    nvlink = float(bus_bandwidth(gpn, 1, cluster, eff))
    net = float(bus_bandwidth(2 * gpn, 1, cluster, eff))
    if best_in >= best_out:
        slower = f"TP kept inside a node: the fastest layout with TP across nodes is {1 - best_out / best_in:.0%} slower"
        if net < 0.9 * nvlink:
            return (f"{slower} (a TP group across nodes gets {net / 1e9:,.0f} GB/s of the nodes' NICs and pays "
                    f"network latency on every all-reduce, against {nvlink / 1e9:,.0f} GB/s of NVLink in a node)")
        return (f"{slower}: this fabric gives a TP group across nodes {net / 1e9:,.0f} GB/s, close to NVLink's "
                f"{nvlink / 1e9:,.0f} GB/s, but every all-reduce pays network latency and the wider TP splits "
                "the GEMMs finer")
    return (f"TP spans nodes: this fabric gives a TP group {net / 1e9:,.0f} GB/s across nodes (NVLink inside: "
            f"{nvlink / 1e9:,.0f} GB/s), and the wider TP is {best_out / best_in - 1:.0%} faster overall")


def _layouts(cols: Columns, res: QuickResult, parts: list[tuple[Scenario, list[int]]], owner: np.ndarray,
             refine: Refine | None) -> Callable[[int], RankedLayout | None]:
    """Row → its ranked layout (``_ranked``) under the scenario of its part (``_parts``), each row estimated once:
    the ranking and the Pareto front (``explain.pareto_fronts``) ask the engine about many of the same rows."""
    seen: dict[int, RankedLayout | None] = {}

    def layout_at(row: int) -> RankedLayout | None:
        if row not in seen:
            sc = parts[int(owner[row])][0]
            seen[row] = _ranked(row, cols, res, sc, sc.cluster.hourly_price, refine)
        return seen[row]

    return layout_at


def _refine(order: np.ndarray, wanted: int, layout_at: Callable[[int], RankedLayout | None], refine: bool,
            report: Progress, stop: Cancel) -> tuple[list[RankedLayout], int, int, bool]:
    """Walk down the quick ranking until ``wanted`` layouts are accepted (the engine may reject
    some: stricter rules, more memory), trying at most REFINE_ATTEMPTS_FACTOR × wanted."""
    ranked: list[RankedLayout] = []
    refined = tried = 0
    for row in order[: wanted * REFINE_ATTEMPTS_FACTOR if refine else wanted]:
        if len(ranked) >= wanted:
            break
        if refine and stop():
            return ranked, refined, tried, True
        tried += 1
        report(0.8 + 0.2 * len(ranked) / wanted, f"re-estimating layout {tried} ({len(ranked)} of {wanted} kept)")
        item = layout_at(int(row))
        if item is not None:
            refined += item.refined
            ranked.append(item)
    return ranked, refined, tried, False


def _kept(t: TrainingSettings, keep: tuple[str, ...]) -> str:
    return ", ".join(f"training.{k}={getattr(t, k)}" for k in KEEPABLE if k in keep)


def _why_none(scenario: Scenario, keep: tuple[str, ...]) -> str:
    """Why the settings the plan holds leave no layout to try (a ZeRO stage the framework runs on no GPU count:
    ``framework_profile.zero_refusal``, the rule the estimate follows), and what to change."""
    why = zero_refusal(scenario.framework, scenario.training.zero_stage) if "zero_stage" in keep else ""
    return f": {why}" if why else ": change those settings, or add GPUs"


def _held(cols: Columns, t: TrainingSettings, keep: tuple[str, ...]) -> Columns:
    """Only the rows whose micro-batch, ZeRO stage and recompute equal the kept settings of ``t``."""
    if not len(cols) or not keep:
        return cols
    mask = np.ones(len(cols), dtype=bool)
    if "micro_batch" in keep:
        mask &= cols.mb == t.micro_batch
    if "zero_stage" in keep:
        mask &= cols.zero == t.zero_stage
    op_level = "recompute" in keep and t.recompute == "selective_op"
    if "recompute" in keep:  # selective_op is not enumerated: the layouts enumerated with full recompute, relabelled
        mask &= cols.recompute == RECOMPUTE_NAMES.index("full" if op_level else t.recompute)
    held = cols.take(np.nonzero(mask)[0])
    if op_level:
        held = dataclasses.replace(held, recompute=np.full(len(held), RECOMPUTE_NAMES.index("selective_op")))
    return held


def _quick_parts(parts: list[tuple[Scenario, list[int]]], offload: bool, keep: tuple[str, ...], report: Progress,
                 stop: Cancel) -> tuple[Columns, QuickResult, np.ndarray, bool]:
    """``_quick_all`` for each part (``_parts``), the rows concatenated; ``owner``: each row's part."""
    if len(parts) == 1:
        cols, res, cancelled = _quick_all(parts[0][0], parts[0][1], offload, keep, report, stop)
        return cols, res, np.zeros(len(cols), dtype=np.int64), cancelled
    out, cancelled = [], False
    for i, (sc, counts) in enumerate(parts):
        def share(f: float, m: str, i: int = i) -> None:  # each part its slice of the quick model's 80 %
            report((i + f / 0.8) * 0.8 / len(parts), m)
        out.append(_quick_all(sc, counts, offload, keep, share, stop))
        cancelled = out[-1][2]
        if cancelled:
            break
    cols = Columns(*(np.concatenate([getattr(c, f) for c, _r, _x in out]) for f in Columns.__slots__))
    res = QuickResult(*(np.concatenate([getattr(r, f) for _c, r, _x in out]) for f in QuickResult.__slots__))
    owner = np.concatenate([np.full(len(c), i, dtype=np.int64) for i, (c, _r, _x) in enumerate(out)])
    return cols, res, owner, cancelled


def _quick_all(scenario: Scenario, counts: list[int], offload: bool, keep: tuple[str, ...],
               report: Progress, stop: Cancel) -> tuple[Columns, QuickResult, bool]:
    cluster, t = scenario.cluster, scenario.training
    shape = model_shape(scenario.model, t)
    # selective recompute is worth trying where it drops something: the scores without flash attention, or the
    # plan's Megatron-Core modules (recompute_modules), the one module list the search tries; and where the plan
    # holds it. Never under a framework that has none (FrameworkProfile.selective_recompute)
    held_selective = "recompute" in keep and t.recompute == "selective"
    skip_selective = (t.flash_attention and not named(t) and not held_selective) or \
        not scenario.framework.selective_recompute
    prof = scenario.framework
    # the ZeRO stages the framework runs (framework_profile.zero_choices); a stage the plan holds is honoured
    stages = {"one_rank_zero": one_rank_zero(prof, t.zero_stage)} if "zero_stage" in keep else \
        {"zero_stages": prof.zero_stages, "single_gpu_zero_stages": prof.single_gpu_zero_stages}
    cols = training_columns(shape, counts, cluster.gpus_per_node, t.seq_len, t.global_batch, offload,
                            skip_selective, prof.zero2_with_pp, bool(prof.single_gpu_offload_style), **stages)
    cols = _held(cols, t, keep)
    cols = _supported(cols, scenario)
    parts: list[QuickResult] = []
    cancelled = False
    n = len(cols)
    for start in range(0, max(n, 1), _BATCH):
        if stop():
            cancelled = True
            cols = cols.take(np.arange(start))
            break
        idx = np.arange(start, min(start + _BATCH, n))
        parts.append(evaluate(cols.take(idx), shape, cluster, t, scenario.efficiency,
                              scenario.parallelism.sequence_parallel, scenario.framework_profile))
        report(0.8 * min(start + _BATCH, n) / max(n, 1), f"evaluated {min(start + _BATCH, n):,} of {n:,} layouts")
    if not parts:
        return cols, evaluate(cols, shape, cluster, t, scenario.efficiency, prof=scenario.framework_profile), cancelled
    merged = QuickResult(*(np.concatenate([getattr(p, f) for p in parts]) for f in QuickResult.__slots__))
    return cols, merged, cancelled


def _supported(cols: Columns, scenario: Scenario) -> Columns:
    """Only layouts the plan's training framework runs (the Hugging Face Trainer has no TP, PP, CP or EP)."""
    prof = scenario.framework
    keep = np.ones(len(cols), dtype=bool)
    for flag, col in (("supports_tp", cols.tp), ("supports_pp", cols.pp), ("supports_cp", cols.cp),
                      ("supports_ep", cols.ep)):
        if not getattr(prof, flag):
            keep &= col == 1
    return cols if keep.all() else cols.take(np.nonzero(keep)[0])


def nodes_for(gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """(nodes, GPUs per node) a layout of ``gpus`` GPUs runs on in a cluster of ``gpus_per_node``-GPU nodes: part of
    one node, or whole nodes. Every row of the search is estimated there (``scenario_for``), and applying a row
    gives the plan the same cluster (``plan.layout_row.row_edits``), so the plan's estimate is the row's."""
    return (1, gpus) if gpus < gpus_per_node else (gpus // gpus_per_node, gpus_per_node)


def scenario_for(scenario: Scenario, parallelism: ParallelLayout, training: TrainingSettings) -> Scenario:
    """The scenario with this layout, on the GPUs it uses (whole nodes, or part of one: ``nodes_for``)."""
    nodes, per_node = nodes_for(parallelism.gpus, scenario.cluster.gpus_per_node)
    cluster = scenario.cluster.model_copy(update={"gpus_per_node": per_node, "nodes": nodes})
    return scenario.model_copy(update={"cluster": cluster, "parallelism": parallelism, "training": training})


def _ranked(row: int, cols: Columns, res: QuickResult, scenario: Scenario, price: float | None,
            refine: Refine | None) -> RankedLayout | None:
    p, t = layout_of(cols, row, scenario.training, scenario.parallelism.sequence_parallel)
    gpus = p.gpus
    cap = float(scenario.cluster.gpu.usable_memory_bytes)
    peak = scenario.cluster.gpu.peak_flops.for_dtype(t.precision)
    step, tps, mem = float(res.step_time[row]), float(res.tokens_per_s[row]), float(res.memory[row])
    mfu = float(res.model_flops[row]) / (step * gpus * peak) if peak else 0.0
    est = None
    if refine is not None:
        try:
            est = refine(scenario_for(scenario, p, t))
        except LlmplanError:
            return None  # the engine judges this layout invalid: not a candidate
        if not est.fits or est.compute is None:
            return None
        step, tps = est.compute.step_time_s.value, est.compute.tokens_per_s.value
        mem, mfu, cap = est.memory.total.value, est.compute.mfu.value, est.memory.capacity.value
    cost = None if price is None else gpus * price / 3600.0 / tps * 1e6
    tokens = float(res.tokens_per_step[row])
    parts = tuple((name, float(getattr(res, name)[row]) / tokens) for name in TIME_PARTS)
    return RankedLayout(0, gpus, p, t, step, tps, mem, cap, mfu, cost, est is not None, "", est,
                        time_per_token=parts)


def quick_layout(scenario: Scenario, parallelism: ParallelLayout | None = None,
                 training: TrainingSettings | None = None) -> tuple[RankedLayout, QuickResult]:
    """The quick model's figures for one given layout (default: the scenario's own).

    Raises ``LayoutError`` naming the broken rule when the layout is not one the search
    would consider (see ``space``). The quick model splits layers over stages automatically;
    explicit ``first_stage_layers`` / ``last_stage_layers`` are honoured by the full engine only.
    """
    from llmplan.core.search.space import check_layout

    p = parallelism or scenario.parallelism
    t = training or scenario.training
    shape = model_shape(scenario.model, t)
    if not t.global_batch:  # a batch in tokens or by the published rule: what the engine trains this layout with
        gb, _note = batch.for_layout(scenario.model_copy(update={"training": t}), t, p.dp, p.pp, p.virtual_stages)
        t = t.model_copy(update={"global_batch": gb if batch.target_sequences(scenario) else 0})
    check_layout(shape, p, t, scenario.cluster.gpus_per_node, scenario.framework.zero2_with_pp,
                 one_rank_zero(scenario.framework, t.zero_stage))  # the layout's stage is given: stated
    accum = max(t.global_batch // (t.micro_batch * p.dp), 1) if t.global_batch else 1
    one = np.ones(1, dtype=np.int64)
    cols = Columns(tp=one * p.tp, pp=one * p.pp, vp=one * p.virtual_stages, dp=one * p.dp, cp=one * p.cp,
                   ep=one * p.ep, zero=one * t.zero_stage, offload=one * (t.offload != "none"),
                   recompute=one * RECOMPUTE_NAMES.index(t.recompute), mb=one * t.micro_batch, accum=one * accum)
    res = evaluate(cols, shape, scenario.cluster, t, scenario.efficiency, p.sequence_parallel,
                   scenario.framework_profile)
    base = scenario.model_copy(update={"training": t.model_copy(update={"global_batch": t.global_batch})})
    ranked = _ranked(0, cols, res, base, scenario.cluster.hourly_price, None)
    assert ranked is not None  # without refine, _ranked always returns a layout
    return ranked, res
