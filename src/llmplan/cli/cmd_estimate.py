"""``llmplan-cli estimate``: one plan (a file, or flags) -> the estimate, as tables or JSON.

``estimate PLAN.llmplan [--set path=value ...] [--json]`` or
``estimate --model MODEL --gpu GPU [--gpus N] [--nodes M] [--workload KIND] ...``.
Without a file and without ``--set parallelism.*``, the layout is chosen by the
auto-planner (the fastest that fits, on all the GPUs given) and reported as such.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from llmplan.cli.models import resolve_model_arg
from llmplan.cli.report import estimate_json, estimate_text
from llmplan.core.workload import Scenario
from llmplan.errors import InputError
from llmplan.io.overrides import apply_overrides
from llmplan.io.plan_document import HardwareRef, ModelRef, PlanDocument
from llmplan.io.planfile import load_plan, plan_from_config, save_plan
from llmplan.io.resolve import resolve


def add_plan_arguments(p: argparse.ArgumentParser, plan_optional: bool = True) -> None:
    """The flags shared by ``estimate`` and ``search``."""
    p.add_argument("plan", nargs="?" if plan_optional else None, help="a .llmplan file")
    p.add_argument("--model", help="catalog model id, or a path to a config.json / model folder")
    p.add_argument("--gpu", help="catalog GPU id (see: llmplan-cli catalog gpus)")
    p.add_argument("--gpus", type=int, help="GPUs per node (hardware.gpus_per_node)")
    p.add_argument("--nodes", type=int, help="number of nodes (hardware.nodes)")
    p.add_argument("--network", help="catalog network id between nodes (hardware.network)")
    p.add_argument("--workload", choices=("pretrain", "finetune", "inference"))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a plan field by its dotted path, e.g. --set parallelism.tp=8 (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object (stable keys)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="memory, time and cost of a plan")
    add_plan_arguments(p)
    p.add_argument("--gb", action="store_true", help="show memory in GB (10^9) instead of GiB (2^30)")
    p.add_argument("--auto", action="store_true",
                   help="let the auto-planner choose the layout even when the plan gives one")
    p.add_argument("--save", metavar="PATH", help="also save the plan (with the layout used) to PATH, "
                   "self-contained (catalog specs written inline)")
    p.set_defaults(handler=run)


def document_from_args(args: argparse.Namespace) -> PlanDocument:
    """A plan file with flags applied, or a plan built from the flags alone."""
    if args.plan:
        if args.model:
            raise InputError("give either a plan file or --model, not both")
        doc = load_plan(args.plan)
    else:
        if not args.model:
            raise InputError("give a plan file, or --model MODEL --gpu GPU (see llmplan-cli estimate --help)")
        if not args.gpu and not any(s.startswith("hardware.gpu") for s in args.overrides):
            raise InputError("--gpu is required with --model: a catalog GPU id (see llmplan-cli catalog gpus)")
        doc = _doc_for_model(args.model)
    hw = {}
    for flag, field in (("gpu", "gpu"), ("gpus", "gpus_per_node"), ("nodes", "nodes"), ("network", "network")):
        value = getattr(args, flag)
        if value is not None:
            hw[field] = value
    sets = [f"hardware.{k}={json.dumps(v)}" for k, v in hw.items()]
    if args.workload:
        sets.append(f"workload={args.workload}")
    return apply_overrides(doc, [*sets, *args.overrides])


def _doc_for_model(model: str) -> PlanDocument:
    """A config.json (or a folder holding one) goes in inline as it is; any other file the model readers
    understand (.gguf, safetensors index ...) goes in as its resolved spec; anything else is a catalog id."""
    path = Path(model)
    if (path.suffix == ".json" and path.name != "model.safetensors.index.json") or (path / "config.json").is_file():
        return plan_from_config(path)
    if path.exists():
        spec = resolve_model_arg(model)
        return PlanDocument(name=spec.name, model=ModelRef(name=spec.name, spec=spec), hardware=HardwareRef())
    return PlanDocument(name=model, model=ModelRef(id=model), hardware=HardwareRef())


def layout_given(args: argparse.Namespace) -> bool:
    if getattr(args, "auto", False):
        return False
    return bool(args.plan) or any(s.startswith("parallelism.") for s in args.overrides)


def auto_layout(scenario: Scenario) -> Scenario:
    """The auto-planner's best layout on all the scenario's GPUs (DESIGN.md §3: a sensible default)."""
    from llmplan.core.estimate import estimate
    from llmplan.core.search import scenario_for, search

    result = search(scenario, top=1, refine=estimate, use_fewer_gpus=False)
    if not result.best:
        raise InputError(f"no layout fits: {result.note}")
    best = result.best[0]
    if scenario.workload == "inference":
        return scenario.model_copy(update={"parallelism": best.parallelism})
    chosen = scenario_for(scenario, best.parallelism, best.training)
    return chosen.model_copy(update={"cluster": scenario.cluster})


def with_layout(doc: PlanDocument, scenario: Scenario) -> PlanDocument:
    """The document with the layout and training knobs the estimate used (the auto-planner's, if it chose)."""
    return doc.model_copy(update={"parallelism": scenario.parallelism, "training": scenario.training})


def run_estimate(scenario: Scenario, doc: PlanDocument):
    """The engine's estimate with the plan's system report (checkpoints, goodput, power) attached."""
    from llmplan.io.evaluate import evaluate_scenario

    return evaluate_scenario(scenario, doc.system)


def run(args: argparse.Namespace) -> int:
    doc = document_from_args(args)
    scenario = resolve(doc)
    source = "plan"
    if not layout_given(args):
        scenario, source = auto_layout(scenario), "auto"
    est = run_estimate(scenario, doc)
    if args.save:
        save_plan(with_layout(doc, scenario), args.save)
    data = estimate_json(est, scenario, source)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(estimate_text(data, decimal=args.gb))
    return 0
