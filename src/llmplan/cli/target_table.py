"""``llmplan-cli search --days D / --budget USD``: per GPU type, the smallest cluster and its layout that
trains the plan's tokens within the target, cheapest first (``plan.target``)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from llmplan.cli.cmd_estimate import kept_knobs
from llmplan.cli.mixed_cards import gpu_ids
from llmplan.core import present
from llmplan.core.workload import MAX_TRAINING_TOKENS
from llmplan.errors import InputError
from llmplan.plan.document import PlanDocument
from llmplan.plan.target import TargetAnswer, target_table


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("target-driven planning (docs/planning.md)")
    g.add_argument("--days", type=float, help="finish training within D days: per GPU type, the smallest "
                   "number of nodes and its layout that does, ranked by cost")
    g.add_argument("--budget", type=float, metavar="USD", help="spend at most USD on GPU-hours (with --days: "
                   "both; alone: the fastest cluster within it)")
    g.add_argument("--tokens", type=float, help="tokens to train (default: the plan's training.tokens)")
    g.add_argument("--max-gpus", type=int, default=1_000_000, help="largest cluster to consider (default 1,000,000)")


def wanted(args: argparse.Namespace) -> bool:
    return args.days is not None or args.budget is not None


def gpu_list(args: argparse.Namespace) -> list[str]:
    """``--gpu a,b,c`` (or ``--gpu a --gpu b``) in target mode: the GPU types to compare (default: the
    catalog's training GPUs). The same parsing as a mixed-card machine's ``--gpu`` values."""
    return gpu_ids(args.gpu)


def answer_json(a: TargetAnswer) -> dict[str, Any]:
    r = a.row
    out: dict[str, Any] = {"gpu": r.gpu_id, "gpu_name": r.gpu_name, "meets": r.meets, "why": r.why,
                           "nodes": r.nodes, "gpus": r.gpus, "days": r.days, "gpu_hours": r.gpu_hours,
                           "cost_usd": r.cost_usd, "energy_kwh": a.energy_kwh, "framework": r.framework or None,
                           "layout": None}
    if r.layout is not None:
        p, t = r.layout.parallelism, r.layout.training
        out["layout"] = {"label": r.layout.label(), "tp": p.tp, "pp": p.pp, "dp": p.dp, "cp": p.cp, "ep": p.ep,
                         "virtual_stages": p.virtual_stages, "micro_batch": t.micro_batch,
                         "global_batch": t.global_batch, "accumulation": t.global_batch // (t.micro_batch * p.dp),
                         "zero_stage": t.zero_stage, "recompute": t.recompute,
                         "tokens_per_s": r.layout.tokens_per_s, "mfu": r.layout.mfu, "refined": r.layout.refined}
    return out


def run(doc: PlanDocument, args: argparse.Namespace, refine, gpus: list[str]) -> int:
    if any(v is not None and not 0 < v < math.inf for v in (args.days, args.budget)):  # NaN fails too
        raise InputError("--days and --budget must be positive numbers")
    if args.tokens is not None and not 0 < args.tokens <= MAX_TRAINING_TOKENS:  # training.tokens' bounds
        raise InputError(f"--tokens must be a positive number of at most {MAX_TRAINING_TOKENS:.0e} "
                         f"(training.tokens), got {args.tokens:g}")
    if args.max_gpus < 1:
        raise InputError(f"--max-gpus must be at least 1, got {args.max_gpus}")
    tokens = args.tokens or doc.training.tokens
    rows = target_table(doc, gpus, args.days, args.budget, tokens, refine, args.max_gpus, kept_knobs(args, doc))
    if args.json:
        print(json.dumps({"days": args.days, "budget_usd": args.budget, "tokens": tokens,
                          "rows": [answer_json(a) for a in rows]}, indent=2))
        return 0
    want = " and ".join(w for w in (f"in {args.days:g} days" if args.days is not None else "",
                                    f"within {present.money(args.budget)}" if args.budget is not None else "") if w)
    print(f"{doc.name or doc.model.id or 'model'} — {doc.workload}, {tokens:,.0f} tokens {want}; "
          "per GPU type the smallest cluster that does it, cheapest first")
    wide = max([len("framework"), *(len(a.row.framework) for a in rows)])
    print(f"{'GPU':<40} {'nodes':>6} {'GPUs':>8} {'days':>7} {'GPU-hours':>17} {'cost':>13} {'energy':>9}  "
          f"{'framework':<{wide}}  layout")
    for a in rows:
        r = a.row
        if not r.meets:
            print(f"{_name(r.gpu_name):<40} {'—':>6} {'—':>8} {'':>7} {'':>17} {'':>13} {'':>9}  {'':<{wide}}  {r.why}")
            continue
        cost = present.money(r.cost_usd) if r.cost_usd is not None else "no price"
        kwh = present.energy(a.energy_kwh) if a.energy_kwh is not None else "—"
        t, p = r.layout.training, r.layout.parallelism
        accum = t.global_batch // (t.micro_batch * p.dp)
        print(f"{_name(r.gpu_name):<40} {r.nodes:>6,} {r.gpus:>8,} {r.days:>7,.1f} {present.gpu_hours(r.gpu_hours):>17} {cost:>13} "
              f"{kwh:>9}  {r.framework:<{wide}}  {r.layout.label()}, {accum} accumulation step{'s' if accum != 1 else ''}")
    return 0


def _name(name: str) -> str:
    return name if len(name) <= 40 else name[:39] + "…"
