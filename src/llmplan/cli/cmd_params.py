"""``llmplan-cli params MODEL``: exact parameter counts of a catalog model or a config."""

from __future__ import annotations

import argparse
import json

from llmplan.cli.models import resolve_model_arg
from llmplan.core.params import count_params


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("params", help="exact parameter counts of a model")
    p.add_argument("model", help="catalog id, a path to a config.json / model folder, or a Hub repo ORG/NAME")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = resolve_model_arg(args.model)
    pc = count_params(spec)
    data = {
        "model": spec.name,
        "model_type": spec.model_type,
        "approximate": spec.approximate,
        "params": {
            "total": pc.total,
            "active": pc.active,
            "embedding": pc.embedding,
            "non_embedding": pc.non_embedding,
            "mtp": pc.mtp,
        },
        "by_category": pc.by_category(),
        "notes": list(spec.notes),
    }
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{spec.name}  ({spec.model_type}{', approximate' if spec.approximate else ''})")
    width = 16
    for label, key in (("total", "total"), ("active / token", "active"), ("embedding", "embedding"),
                       ("non-embedding", "non_embedding")):
        print(f"  {label:<{width}} {data['params'][key]:>20,}")
    if pc.mtp:
        print(f"  {'of which MTP':<{width}} {pc.mtp:>20,}")
    print("  by category:")
    for cat, n in sorted(pc.by_category().items(), key=lambda kv: -kv[1]):
        print(f"    {cat:<{width - 2}} {n:>20,}")
    for note in spec.notes:
        print(f"  note: {note}")
    return 0
