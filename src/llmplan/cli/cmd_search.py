"""``llmplan-cli search``: the best parallel layouts for a model on a cluster, and why the others lose."""

from __future__ import annotations

import argparse
import json
from typing import Any

from llmplan.cli import positive_int, target_table
from llmplan.cli.cmd_estimate import add_plan_arguments, document_from_args, kept_knobs
from llmplan.cli.mixed_cards import rows_engine
from llmplan.core import present
from llmplan.core.present import MemoryUnit
from llmplan.core.search import SearchResult, search
from llmplan.plan.evaluate import check_split_mode
from llmplan.plan.resolve import resolve, resolve_within_node


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="find the best parallel layouts (auto-planner)")
    add_plan_arguments(p)
    p.add_argument("--top", type=positive_int, default=5, help="how many layouts to show (default 5)")
    p.add_argument("--objective", choices=("time", "cost"), default=None,
                   help="rank by tokens/s (time) or by tokens per dollar (cost); default: time for training, "
                        "cost (fewest GPUs per replica) for inference")
    p.add_argument("--exact-gpus", action="store_true", help="only layouts that use every GPU given")
    p.add_argument("--quick", action="store_true", help="rank with the quick model only (no full estimates)")
    p.add_argument("--explain", action="store_true",
                   help="also list the layouts left out because the training framework cannot run them, and why")
    target_table.add_arguments(p)
    p.set_defaults(handler=run)


def result_json(r: SearchResult) -> dict[str, Any]:
    def layout(x) -> dict[str, Any]:
        p, t = x.parallelism, x.training
        return {"rank": x.rank, "gpus": x.gpus, "label": x.label(),
                "layout": {"tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep,
                           "virtual_stages": p.virtual_stages, "sequence_parallel": p.sequence_parallel},
                "training": {"zero_stage": t.zero_stage, "micro_batch": t.micro_batch,
                             "global_batch": t.global_batch, "recompute": t.recompute, "offload": t.offload,
                             "accumulation": t.global_batch // (t.micro_batch * p.dp) if t.global_batch else 1},
                "step_time_s": x.step_time_s, "tokens_per_s": x.tokens_per_s, "memory_per_gpu_bytes": x.memory_bytes,
                "gpu_memory_bytes": x.capacity_bytes, "mfu": x.mfu,
                "cost_per_million_tokens": x.cost_per_million_tokens, "refined": x.refined, "why": x.why}

    def point(pt) -> dict[str, Any]:
        return {"gpus": pt.gpus, "tokens_per_s": pt.tokens_per_s,
                "cost_per_million_tokens": pt.cost_per_million_tokens, "label": pt.label, "refined": pt.refined}

    return {"objective": r.objective, "evaluated": r.evaluated, "fitting": r.fitting, "refined": r.refined,
            "cancelled": r.cancelled, "note": r.note, "best": [layout(x) for x in r.best],
            "excluded": [{"reason": reason, "count": n, "example": ex} for reason, n, ex in r.excluded],
            "pareto_cost": [point(p) for p in r.pareto_cost], "pareto_gpus": [point(p) for p in r.pareto_gpus]}


def run(args: argparse.Namespace) -> int:
    from llmplan.core.engine import estimate
    from llmplan.core.search.policy import formats_to_try

    refine = None if args.quick else estimate
    if target_table.wanted(args):
        gpus = target_table.gpu_list(args)
        args.gpu = [gpus[0]] if gpus else None  # --gpu is repeatable (a list): the first type builds the plan
        if args.model and not args.gpu:
            args.overrides = ["hardware.gpu=nvidia-h100-sxm-80gb", *args.overrides]  # replaced per GPU type
        return target_table.run(document_from_args(args), args, refine, gpus)
    doc = document_from_args(args)
    check_split_mode(doc)  # a row split on one GPU or several machines: the field's error, not "no layout fits"
    doc, engine_note = rows_engine(doc)  # a row split runs on llama.cpp, as ``estimate`` runs it
    scenario = resolve(doc)
    objective = args.objective or ("cost" if scenario.workload == "inference" else "time")
    keep = kept_knobs(args, doc) if scenario.workload != "inference" else ()  # as Auto… holds them
    # an open weight format: the engine's ladder, then its usual file with offload, as estimate and Auto… do
    formats = formats_to_try(doc.inference.model_fields_set, scenario.engine_profile) \
        if scenario.workload == "inference" else ()
    fewer = not args.exact_gpus
    result = search(scenario, top=max(args.top, 1), objective=objective, refine=refine, use_fewer_gpus=fewer,
                    keep=keep, within_node=resolve_within_node(doc) if fewer else None, weight_formats=formats)
    data = result_json(result)
    if engine_note:
        data["automatic"] = engine_note
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    c = scenario.cluster
    mem = MemoryUnit()  # as the app's Auto… list shows them
    print(f"{scenario.model.name} — {scenario.workload} on up to {c.total_gpus:,} × {c.gpu.name}; "
          f"objective: {objective}")
    print(f"{result.evaluated:,} layouts evaluated, {result.fitting:,} fit, {result.refined} re-estimated "
          f"by the full engine")
    if engine_note:
        print(f"({engine_note})")
    if result.note:
        print(f"note: {result.note}")
    for x in result.best:
        cost = f"  {present.money(x.cost_per_million_tokens)}/M tokens" if x.cost_per_million_tokens is not None else ""
        print(f"\n#{x.rank}  {x.label()}  on {x.gpus:,} GPU{'s' if x.gpus > 1 else ''}"
              + (_batch(x) if not x.serving else ""))
        step = "per output token" if x.serving else "step"
        print(f"    {present.tokens_per_s(x.tokens_per_s)}, {step} {present.duration(x.step_time_s)}, "
              f"{mem.fmt(x.memory_bytes)} of {mem.fmt(x.capacity_bytes)} per GPU"
              + (f", MFU {present.percent(x.mfu)}" if x.mfu else "") + cost)
        if x.why:
            print(f"    why not #1: {x.why}")
    if args.explain and result.excluded:
        print("\nleft out (the training framework cannot run them):")
        for reason, n, example in result.excluded:
            print(f"  {n:>6,} × {reason}; e.g. {example}")
    if result.pareto_gpus:
        what = "replica" if scenario.workload == "inference" else "layout"
        source = "full engine" if all(pt.refined for pt in result.pareto_gpus) else "quick model"
        print(f"\nfastest {what} per GPU count (Pareto front, {source}):")
        for pt in result.pareto_gpus:
            cost = f"  {present.money(pt.cost_per_million_tokens)}/M tokens" if pt.cost_per_million_tokens else ""
            print(f"  {pt.gpus:>7,} GPU{'s' if pt.gpus > 1 else ' '}  {pt.tokens_per_s:>14,.0f} tokens/s{cost}  {pt.label}")
    return 0


def _batch(x) -> str:
    t, p = x.training, x.parallelism
    if not t.global_batch:
        return ""
    return (f"; global batch {t.global_batch:,} sequences ({t.global_batch * t.seq_len:,} tokens) = micro-batch "
            f"{t.micro_batch} × DP {p.dp} × {t.global_batch // (t.micro_batch * p.dp)} accumulation steps")
