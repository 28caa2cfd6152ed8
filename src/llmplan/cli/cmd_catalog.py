"""``llmplan-cli catalog models|...``: list what the catalogs hold.

``catalog`` is a parser with its own sub-commands. Each catalog kind (``models`` here,
``gpus`` from the hardware catalog) adds itself with a ``register_<kind>(subparsers)``
function listed in ``_kinds()``, so a new kind is one function and one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from llmplan.core import present
from llmplan.core.params import count_params


def _kinds() -> list[Callable[[argparse._SubParsersAction], None]]:
    from llmplan.cli.catalog_hardware import add_hardware_commands

    return [register_models, add_hardware_commands, register_problems]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("catalog", help="list the shipped and user catalogs: models, gpus, nodes, networks, "
                       "problems")
    kinds = p.add_subparsers(dest="catalog_kind", metavar="KIND")
    for add in _kinds():
        add(kinds)
    p.set_defaults(handler=lambda args: _no_kind(p))


def _no_kind(p: argparse.ArgumentParser) -> int:
    p.print_help()
    print("llmplan-cli catalog: error: say what to list: models, gpus, nodes, networks or problems",
          file=sys.stderr)
    return 2


def register_problems(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("problems", help="your own catalog files (models, GPUs, engines, system presets, "
                         "calibration) that were skipped, and why; and entries that replace built-in ones")
    p.add_argument("--json", action="store_true", help='print {"problems": [...], "notes": [...]}')
    p.set_defaults(handler=run_problems)


def run_problems(args: argparse.Namespace) -> int:
    """Exit 0 either way: a skipped file is reported, it never stops anything."""
    from llmplan.plan.user_data import user_data_report

    report = user_data_report()
    if args.json:
        print(json.dumps({"problems": list(report.problems), "notes": list(report.notes)}, indent=2))
        return 0
    for line in report.problems:
        print(f"skipped: {line}")
    for line in report.notes:
        print(f"note: {line}")
    if not report.problems:
        print("no problems: every file in your catalogs was read")
    return 0


def register_models(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("models", help="the model catalog: id, name, family, parameters, context, layers")
    p.add_argument("--family", help="only this family (e.g. llama, qwen3_moe, deepseek)")
    p.add_argument("--search", default="", metavar="TEXT", help="only models whose id or name contain TEXT")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(handler=run_models)


def run_models(args: argparse.Namespace) -> int:
    from llmplan.catalog.models import load_model_catalog

    catalog = load_model_catalog()
    entries = catalog.search(args.search, family=args.family)
    rows = []
    for e in entries:
        spec = e.spec
        pc = count_params(spec)
        rows.append({
            "id": e.id, "name": e.display_name, "family": e.family,
            "params_total": pc.total, "params_active": pc.active,
            "context_length": e.context_length or spec.max_position_embeddings,
            "layers": spec.num_layers, "license": e.license, "release_date": e.release_date,
            "user": e.user, "approximate": spec.approximate,
        })
    if args.json:
        print(json.dumps({"models": rows, "problems": catalog.problems}, indent=2))
        return 0
    if not rows:
        families = ", ".join(catalog.families)
        print(f"no models match (families: {families})")
        return 1
    header = f"{'id':<42} {'name':<26} {'family':<11} {'total':>7} {'active':>7} {'context':>8} {'layers':>6}  license"
    print(header)
    for r in rows:
        active = present.params(r["params_active"]) if r["params_active"] != r["params_total"] else "="
        print(f"{r['id']:<42} {r['name'][:26]:<26} {r['family']:<11} {present.params(r['params_total']):>7} "
              f"{active:>7} {r['context_length']:>8,} {r['layers']:>6}  {r['license'] or '-'}"
              + ("  (user)" if r["user"] else ""))
    print(f"{len(rows)} models")
    for problem in catalog.problems:
        print(f"skipped {problem}")
    return 0
