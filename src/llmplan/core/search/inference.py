"""Inference layouts: the fewest GPUs that hold the weights and the KV cache, or the fastest.

A serving replica is TP (inside a node) × PP GPUs; the rest of the cluster runs replicas side
by side (DP). There are at most a few dozen (tp, pp) pairs, so every one is run through the
inference engine itself (``llmplan.core.inference``: the weights priced tensor by tensor in the
plan's format by ``core.quant``, the KV cache, the engine profile's memory share and, for
llama.cpp and Ollama, the layers left in host RAM). llama.cpp and Ollama get their own default layout
only: every GPU of the node in one layer split (``candidate_layouts``), or in the row split the plan states
(``inference.split_mode = row``, ``core.inference.row_estimate``: the search keeps the plan's split mode). The search and the estimate of
the chosen layout can therefore never disagree on whether it fits (issue 16: a separate
bits-per-weight table searched iq4_xs or q3_k_m as bf16 and ignored partial offload).

A layout with every layer on the GPUs ranks before any that leaves layers in host RAM (llama.cpp's
partial offload "fits", at a fraction of the speed: ``policy.offloads_layers``). When nothing fits
on the GPUs and the plan leaves the weight format open (``formats``), the engine's ladder is tried,
least quantised first, and the layouts of the first format that fits on the GPUs are returned (their
estimates carry the format; the note says so); offload is the answer only when no format fits on the
GPUs: in the engine's usual file (``policy.offload_format``: llama.cpp's and Ollama's Q4_K_M), else the plan's
own format, else the first format that fits with offload.
"""

from __future__ import annotations

from dataclasses import replace

from llmplan.core import present
from llmplan.core.inference import estimate_inference
from llmplan.core.kvcache import eight_bit_kv
from llmplan.core.result import Estimate
from llmplan.core.search.explain import room_why
from llmplan.core.search.policy import (
    experts_in_host,
    offload_format,
    offloads_layers,
    smaller_formats,
    usual_offload_words,
)
from llmplan.core.search.results import ParetoPoint, RankedLayout, SearchResult
from llmplan.core.search.room import rank_with_room, room_first, score
from llmplan.core.workload import ParallelLayout, Scenario
from llmplan.errors import LayoutError, LlmplanError

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
WIDE_KV = ("bf16", "fp16", "fp32")  # KV cache types an 8-bit cache halves or better


def candidate_layouts(scenario: Scenario) -> list[ParallelLayout]:
    """Every (tp, pp) replica the cluster can hold: TP inside a node dividing the heads, PP ≤ layers.
    Engines that split a model by layers (llama.cpp and Ollama: ``--split-mode layer``, their default) get one
    layout, theirs: one process per machine over every GPU it sees (llama.cpp's ``llama_model_default_params``
    offloads to all visible devices), PP = the node's GPUs, so "on my 2 cards" is both cards, as the app's GPUs per
    node sets it (``gui.hardware_picker.engine_split``), with the layers that fit nowhere in host RAM. Their row
    split is not tensor parallelism as vLLM runs it, so it is never priced as TP (that would promise twice a layer
    split's decode speed on two cards); a plan that states it gets the same one layout, estimated as llama.cpp's
    row split over the node's cards (``core.inference.row_estimate``). A layout the plan states is estimated as it is."""
    m, c = scenario.model, scenario.cluster
    if scenario.engine_profile is not None and scenario.engine_profile.partial_offload:
        pp = max(d for d in range(1, min(c.gpus_per_node, m.num_layers) + 1) if c.gpus_per_node % d == 0)
        return [ParallelLayout(tp=1, pp=pp, dp=1, sequence_parallel=False)]
    out = []
    for tp in TP_CHOICES:
        if tp > c.gpus_per_node or m.num_heads % tp or c.total_gpus % tp:
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
    if formats and not any(_on_gpus(scenario, est) for _, est in rows):
        chosen, on_gpus = _other_format(scenario, refine, formats, on_gpus=True)
        usual = "" if on_gpus else offload_format(scenario.model, scenario.inference.weight_format, formats,
                                                  scenario.engine_profile)
        usual_rows = _fitting(_in_format(scenario, usual), refine) if usual else []
        if on_gpus:
            rows = on_gpus
        elif usual_rows:  # no format fits on the GPUs: offload the engine's usual file (policy.offload_format)
            chosen, rows = usual, usual_rows
        elif not rows:
            chosen, rows = _other_format(scenario, refine, formats)
    if not rows:
        why = _no_fit(scenario, formats, "" if cancel and cancel() else _least(scenario, refine))
        return SearchResult((), (), (), evaluated, 0, 0, False, objective, why)
    price = c.hourly_price
    every = [_ranked(layout, est, scenario.training, price) for layout, est in rows]
    if objective == "cost":
        every.sort(key=lambda r: (r.gpus, r.step_time_s))
    else:
        every.sort(key=lambda r: (r.step_time_s, r.gpus))
    # Every layer on the GPUs ranks before any layout that offloads layers (docs/fit.md), the room rule within each.
    on = [r for r in every if _on_gpus(scenario, r.estimate)]
    every = on + [r for r in every if not _on_gpus(scenario, r.estimate)]
    order = [i + start for start, part in ((0, every[:len(on)]), (len(on), every[len(on):]))
             for i in room_first([score(r.tokens_per_s, r.gpus, price, objective) for r in part],
                                 [r.tight for r in part])]
    out: list[RankedLayout] = []
    for r in (every[i] for i in order[:top]):
        out.append(replace(r, rank=len(out) + 1, why="" if not out else _why(r, out[0], objective)))
    note = f"{c.total_gpus // out[0].gpus} replica(s) of the best layout fit in the cluster"
    if scenario.inference.split_mode == "row":  # row_estimate: the machine's cards whatever the layout says
        note = (f"llama.cpp's row split over the machine's {c.gpus_per_node} cards, as the plan states "
                f"(inference.split_mode = row; the search does not vary the split mode); {note}")
    inf = out[0].estimate.inference
    usual_words = usual_offload_words(inf.weight_format, inf.gpu_layers.value if inf.gpu_layers else None,
                                      scenario.model.num_layers, scenario.engine_profile)
    if chosen and usual_words:
        note = f"no weight format fits on the GPUs; {usual_words}; {note}"
    elif chosen:
        where = "on the GPUs" if _on_gpus(scenario, out[0].estimate) else "with offload"
        note = (f"nothing fits on the GPUs in {scenario.inference.weight_format}; showing {chosen}, the least "
                f"quantised weight format that fits {where} (the plan leaves inference.weight_format open); {note}")
    if experts_in_host(out[0].estimate):  # every layer on the GPUs, the first layers' routed experts in host RAM
        note += f"; llama.cpp: {present.experts_figure(out[0].estimate.inference.cpu_moe_layers)}"
    elif not usual_words and not _on_gpus(scenario, out[0].estimate):  # (llama.cpp's input embedding: not one)
        note += "; the engine keeps some layers in host RAM (partial offload)"
    return SearchResult(tuple(out), (), _front(every, price), evaluated, len(rows), len(out), False, objective, note)


def _tpot(est: Estimate) -> float:
    return est.inference.tpot_s.value


def _on_gpus(scenario: Scenario, est: Estimate) -> bool:
    return not offloads_layers(est, scenario.model.num_layers)


def _other_format(scenario: Scenario, refine, formats: tuple[str, ...], on_gpus: bool = False
                  ) -> tuple[str, list[tuple[ParallelLayout, Estimate]]]:
    """The first of ``formats`` (least quantised first: ``policy.formats_to_try``) in which some layout fits
    (``on_gpus``: with every layer on the GPUs), and its fitting layouts; a format no smaller than the plan's
    own is skipped."""
    for f in smaller_formats(scenario.model, scenario.inference.weight_format, formats):
        alt = _in_format(scenario, f)
        rows = _fitting(alt, refine)
        if rows and (not on_gpus or any(_on_gpus(alt, est) for _, est in rows)):
            return f, rows
    return "", []


def _in_format(scenario: Scenario, fmt: str) -> Scenario:
    return scenario.model_copy(update={"inference": scenario.inference.model_copy(update={"weight_format": fmt})})


def _eight_bit_kv(scenario: Scenario) -> str | None:
    """The engine's 8-bit KV cache (engines.toml kv_dtypes; None where it has none: MLX, Transformers); an engine
    with no list: q8_0 where it runs GGUF files, else fp8."""
    prof = scenario.engine_profile
    if prof is not None and prof.kv_dtypes:
        return eight_bit_kv(prof.kv_dtypes)
    return "q8_0" if prof is not None and prof.partial_offload else "fp8"


def _no_fit(scenario: Scenario, formats: tuple[str, ...], least: str = "") -> str:
    """Why nothing fits, after the engine tried every layout (and every format, when left open); ``least``: the
    most frugal layout's need in the plan's own format."""
    fmt = scenario.inference.weight_format
    eight = _eight_bit_kv(scenario)
    kv = f" or an 8-bit KV cache (inference.kv_dtype={eight})" if eight and scenario.inference.kv_dtype in WIDE_KV else ""
    if formats:
        return (f"no layout fits, in {fmt}{least} nor in any smaller weight format the engine knows: "
                f"add GPUs, or use a shorter context{kv}")
    gpu = scenario.cluster.gpu
    wired = ", raise the GPU's share of unified memory (sudo sysctl iogpu.wired_limit_mb)" \
        if gpu.vendor == "apple" and gpu.gpu_memory_fraction < 1 else ""  # macOS wires 2/3 or 3/4 by default
    return (f"the weights ({fmt}) and KV cache do not fit on these GPUs in any layout{least}: add GPUs{wired}, "
            f"quantise, or use a shorter context{kv}")


def _ranked(layout: ParallelLayout, est: Estimate, training, price: float | None) -> RankedLayout:
    """One replica layout with the inference engine's figures (rank and why are set by the ranking)."""
    gpus = layout.tp * layout.pp
    tpot, tps = _tpot(est), est.inference.tokens_per_s.value
    cost = None if price is None else gpus * price / 3600.0 / tps * 1e6
    return RankedLayout(0, gpus, layout, training, tpot, tps, est.memory.total.value, est.memory.capacity.value, 0.0,
                        cost, True, "", est, serving=True)


def _front(ranked: list[RankedLayout], price: float | None) -> tuple:
    """Per GPU count the replica the search picks there (``room.rank_with_room``: the fastest, a tight one after
    one with room within ``ROOM_GAP``), kept when faster than every smaller one (engine figures)."""
    by_count: dict[int, list[RankedLayout]] = {}
    for r in ranked:
        by_count.setdefault(r.gpus, []).append(r)
    out, fastest = [], 0.0
    for g in sorted(by_count):
        best = rank_with_room(by_count[g], price, "time")[0]
        if best.tokens_per_s > fastest:
            p = best.parallelism
            out.append(ParetoPoint(g, best.tokens_per_s, best.cost_per_million_tokens, f"TP{p.tp} PP{p.pp}", True))
            fastest = best.tokens_per_s
    return tuple(out)


def _why(r: RankedLayout, best: RankedLayout, objective: str) -> str:
    room = room_why(r, best, objective)
    if room:
        return room
    if r.gpus > best.gpus:
        return f"needs {r.gpus} GPUs per replica instead of {best.gpus}"
    return f"{r.step_time_s / best.step_time_s - 1:.0%} slower per output token than #1"
