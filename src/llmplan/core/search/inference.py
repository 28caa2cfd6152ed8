"""Inference layouts: the fewest GPUs that hold the weights and the KV cache, or the fastest.

A serving replica is TP (inside a node) × PP GPUs; the rest of the cluster runs replicas side
by side (DP). There are at most a few dozen (tp, pp) pairs, so every one is run through the
inference engine itself (``llmplan.core.inference``: the weights priced tensor by tensor in the
plan's format by ``core.quant``, the KV cache, the engine profile's memory share and, for
llama.cpp and Ollama, the layers left in host RAM on one GPU). The search and the estimate of
the chosen layout can therefore never disagree on whether it fits (issue 16: a separate
bits-per-weight table searched iq4_xs or q3_k_m as bf16 and ignored partial offload).

When nothing fits and the plan leaves the weight format open (``formats``), every quantised
format the engine knows is tried, largest first, and the layouts of the first one that fits are
returned (their estimates carry the format; the note says so).
"""

from __future__ import annotations

from llmplan.core.inference import estimate_inference
from llmplan.core.result import Estimate
from llmplan.core.search.results import ParetoPoint, RankedLayout, SearchResult
from llmplan.core.workload import ParallelLayout, Scenario
from llmplan.errors import LayoutError, LlmplanError

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
WIDE_KV = ("bf16", "fp16", "fp32")  # KV cache types an 8-bit cache halves or better


def candidate_layouts(scenario: Scenario) -> list[ParallelLayout]:
    """Every (tp, pp) replica the cluster can hold: TP inside a node dividing the heads, PP ≤ layers.
    Engines that split a model by layers (llama.cpp and Ollama: ``--split-mode layer``, their default) get
    PP only: their row split is not tensor parallelism as vLLM runs it and is not modelled, so pricing it as
    TP would promise twice a layer split's decode speed on two cards."""
    m, c = scenario.model, scenario.cluster
    layer_split = scenario.engine_profile is not None and scenario.engine_profile.partial_offload
    out = []
    for tp in TP_CHOICES:
        if tp > c.gpus_per_node or m.num_heads % tp or c.total_gpus % tp or (layer_split and tp > 1):
            continue
        for pp in range(1, min(m.num_layers, c.total_gpus // tp) + 1):
            if (c.total_gpus // tp) % pp == 0:
                out.append(ParallelLayout(tp=tp, pp=pp, dp=1, sequence_parallel=False))
    return out


def _estimates(scenario: Scenario, refine) -> list[tuple[ParallelLayout, Estimate]]:
    """Every candidate layout the engine accepts, with its estimate (fitting or not)."""
    from llmplan.core.search.planner import scenario_for  # planner imports this module lazily

    engine = refine or estimate_inference
    rows = []
    for layout in candidate_layouts(scenario):
        try:
            est = engine(scenario_for(scenario, layout, scenario.training))
        except LlmplanError:
            continue  # the engine judges this layout invalid (e.g. an engine without pipeline stages)
        if est.inference is not None:
            rows.append((layout, est))
    return rows


def _fitting(scenario: Scenario, refine) -> list[tuple[ParallelLayout, Estimate]]:
    return [(layout, est) for layout, est in _estimates(scenario, refine) if est.fits]


def _least(scenario: Scenario, refine) -> str:
    """The layout that needs the least memory per GPU and how much, so that "nothing fits" has a number."""
    rows = _estimates(scenario, refine)
    if not rows:
        return ""
    layout, est = min(rows, key=lambda r: r[1].memory.total.value)
    gib = 2**30
    return (f" (the most frugal, TP{layout.tp} PP{layout.pp}, needs {est.memory.total.value / gib:,.1f} GiB per "
            f"GPU, {est.memory.capacity.value / gib:,.1f} GiB usable)")


def search_inference(scenario: Scenario, top: int = 5, objective: str = "cost", refine=None, cancel=None,
                     formats: tuple[str, ...] = ()) -> SearchResult:
    """The best serving layouts, every one estimated by the inference engine (``refine`` when given).
    ``formats``: weight formats to try, in order, when nothing fits in the plan's own (empty: none)."""
    if objective not in ("time", "cost"):
        raise LayoutError(f"search objective '{objective}' is unknown; use 'time' or 'cost'")
    c = scenario.cluster
    rows = _fitting(scenario, refine)
    if cancel and cancel():
        return SearchResult((), (), (), len(rows), 0, 0, True, objective)
    evaluated = len(candidate_layouts(scenario))
    chosen = ""
    if not rows and formats:
        chosen, rows = _other_format(scenario, refine, formats)
    if not rows:
        why = _no_fit(scenario, formats, "" if cancel and cancel() else _least(scenario, refine))
        return SearchResult((), (), (), evaluated, 0, 0, False, objective, why)
    price = c.hourly_price
    if objective == "cost":
        rows.sort(key=lambda r: (r[0].tp * r[0].pp, _tpot(r[1])))
    else:
        rows.sort(key=lambda r: (_tpot(r[1]), r[0].tp * r[0].pp))
    out: list[RankedLayout] = []
    for layout, est in rows[:top]:
        gpus = layout.tp * layout.pp
        tpot, tps = _tpot(est), est.inference.tokens_per_s.value
        cost = None if price is None else gpus * price / 3600.0 / tps * 1e6
        out.append(RankedLayout(len(out) + 1, gpus, layout, scenario.training, tpot, tps, est.memory.total.value,
                                est.memory.capacity.value, 0.0, cost, True,
                                "" if not out else _why(gpus, tpot, out[0]), est, serving=True))
    note = f"{c.total_gpus // out[0].gpus} replica(s) of the best layout fit in the cluster"
    if chosen:
        note = (f"nothing fits in {scenario.inference.weight_format}; showing {chosen}, the least quantised "
                f"weight format that fits (the plan leaves inference.weight_format open); {note}")
    if out[0].estimate.inference.host_weight_bytes.value:
        note += "; the engine keeps some layers in host RAM (partial offload)"
    return SearchResult(tuple(out), (), _front(rows, price), evaluated, len(rows), len(out), False, objective, note)


def _tpot(est: Estimate) -> float:
    return est.inference.tpot_s.value


def _other_format(scenario: Scenario, refine, formats: tuple[str, ...]
                  ) -> tuple[str, list[tuple[ParallelLayout, Estimate]]]:
    """The first of ``formats`` (least quantised first: ``policy.formats_to_try``) in which some layout fits,
    and its fitting layouts; a format no smaller than the plan's own is skipped."""
    from llmplan.core.quant import quantized_weights

    fmt = scenario.inference.weight_format.lower()
    own = quantized_weights(scenario.model, fmt).total_bytes
    for f in formats:
        if f == fmt or quantized_weights(scenario.model, f).total_bytes >= own:
            continue
        alt = scenario.model_copy(update={"inference": scenario.inference.model_copy(update={"weight_format": f})})
        rows = _fitting(alt, refine)
        if rows:
            return f, rows
    return "", []


def _no_fit(scenario: Scenario, formats: tuple[str, ...], least: str = "") -> str:
    """Why nothing fits, after the engine tried every layout (and every format, when left open); ``least``: the
    most frugal layout's need in the plan's own format."""
    fmt = scenario.inference.weight_format
    kv = " or an 8-bit KV cache (inference.kv_dtype=fp8)" if scenario.inference.kv_dtype in WIDE_KV else ""
    if formats:
        return (f"no layout fits, in {fmt}{least} nor in any smaller weight format the engine knows: "
                f"add GPUs, or use a shorter context{kv}")
    gpu = scenario.cluster.gpu
    wired = ", raise the GPU's share of unified memory (sudo sysctl iogpu.wired_limit_mb)" \
        if gpu.vendor == "apple" and gpu.gpu_memory_fraction < 1 else ""  # macOS wires 2/3 or 3/4 by default
    return (f"the weights ({fmt}) and KV cache do not fit on these GPUs in any layout{least}: add GPUs{wired}, "
            f"quantise, or use a shorter context{kv}")


def _front(rows: list[tuple[ParallelLayout, Estimate]], price: float | None) -> tuple:
    """Fastest replica per GPU count, kept when faster than every smaller one (engine figures)."""
    best: dict[int, tuple[ParallelLayout, Estimate]] = {}
    for layout, est in rows:
        g = layout.tp * layout.pp
        if g not in best or _tpot(est) < _tpot(best[g][1]):
            best[g] = (layout, est)
    out, fastest = [], 0.0
    for g, (layout, est) in sorted(best.items()):
        tps = est.inference.tokens_per_s.value
        if tps > fastest:
            cost = None if price is None else g * price / 3600.0 / tps * 1e6
            out.append(ParetoPoint(g, tps, cost, f"TP{layout.tp} PP{layout.pp}", True))
            fastest = tps
    return tuple(out)


def _why(gpus: int, tpot: float, best) -> str:
    if gpus > best.gpus:
        return f"needs {gpus} GPUs per replica instead of {best.gpus}"
    return f"{tpot / best.step_time_s - 1:.0%} slower per output token than #1"
