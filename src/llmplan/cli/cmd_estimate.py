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

from llmplan.cli import measured
from llmplan.cli.mixed_cards import (
    gpu_ids,
    rows_engine,
    rows_over_identical_cards,
    run_mixed,
    tensor_split,
    with_cards,
)
from llmplan.cli.models import fetch_model_arg, hub_ref_for, resolve_model_arg
from llmplan.cli.report import estimate_json, estimate_text, json_text
from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario
from llmplan.errors import InputError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import check_split_mode
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.planfile import load_plan, plan_from_config, save_plan
from llmplan.plan.released import as_released
from llmplan.plan.resolve import resolve


def add_plan_arguments(p: argparse.ArgumentParser, plan_optional: bool = True) -> None:
    """The flags shared by ``estimate`` and ``search``."""
    p.add_argument("plan", nargs="?" if plan_optional else None, help="a .llmplan file")
    p.add_argument("--model", help="catalog model id, a path to a config.json / model folder / .gguf, or a "
                   "Hugging Face Hub repo: ORG/NAME[@REVISION][:QUANT] or its https://huggingface.co URL")
    p.add_argument("--gpu", action="append", help="catalog GPU id (see: llmplan-cli catalog gpus); for a machine "
                   "with different cards give one --gpu per card (or ID,ID): llama.cpp's layer split")
    p.add_argument("--gpus", type=int, help="GPUs per node (hardware.gpus_per_node)")
    p.add_argument("--nodes", type=int, help="number of nodes (hardware.nodes)")
    p.add_argument("--network", help="catalog network id between nodes (hardware.network)")
    p.add_argument("--workload", choices=("pretrain", "finetune", "inference"))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a plan field by its dotted path, e.g. --set parallelism.tp=8 (repeatable)")
    p.add_argument("--split-mode", choices=("layer", "row"), help="llama.cpp's --split-mode over several cards: "
                   "'layer' (default) gives each card whole layers, 'row' splits every weight matrix's rows over "
                   "the cards; inference.split_mode (docs/inference.md)")
    p.add_argument("--cpu-moe-layers", metavar="N|all", help="llama.cpp's --n-cpu-moe N: keep the routed experts "
                   "of the first N layers of an MoE model in host RAM, the rest on the GPUs ('all': --cpu-moe; 0: "
                   "none); inference.cpu_moe_layers. Unset, the estimate keeps the fewest there when the model does "
                   "not fit on the GPUs")
    p.add_argument("--json", action="store_true", help="print one JSON object (stable keys)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="memory, time and cost of a plan")
    add_plan_arguments(p)
    p.add_argument("--gb", action="store_true", help="show memory in GB (10^9) instead of GiB (2^30)")
    p.add_argument("--auto", action="store_true",
                   help="let the auto-planner choose the layout even when the plan gives one")
    p.add_argument("--save", metavar="PATH", help="also save the plan (with the layout used) to PATH, "
                   "self-contained (catalog specs written inline)")
    p.add_argument("--this-machine", action="store_true",
                   help="estimate the plan on the GPUs detected here: the fit verdict, and the nearest changes "
                   "that make it fit (docs/fit.md)")
    p.add_argument("--tensor-split", metavar="A,B", help="with several --gpu cards: llama.cpp's --tensor-split "
                   "shares per card (default: by each card's usable memory)")
    p.add_argument("--ops", nargs="?", type=int, const=15, metavar="N",
                   help="list the training step's operations instead: every kernel's FLOPs, bytes, rate and time, "
                   "the N longest (default 15) and the rest summed; with --json every row (docs/training.md, "
                   "'Reading the operation list')")
    p.add_argument("--detection-fixture", metavar="FILE", help=argparse.SUPPRESS)  # a recorded `detect --json`
    measured.add_arguments(p)
    p.set_defaults(handler=run, mixed_ok=True)


def document_from_args(args: argparse.Namespace) -> PlanDocument:
    """A plan file with flags applied, or a plan built from the flags alone."""
    if args.plan:
        if args.model:
            raise InputError("give either a plan file or --model, not both")
        doc = load_plan(args.plan)
    else:
        if not args.model:
            raise InputError("give a plan file, or --model MODEL --gpu GPU (see llmplan-cli estimate --help)")
        if not args.gpu and not getattr(args, "this_machine", False) and not any(
                s.startswith("hardware.gpu") for s in args.overrides):
            raise InputError("--gpu is required with --model: a catalog GPU id (see llmplan-cli catalog gpus)")
        doc = _doc_for_model(args.model)
    hw, mixed = {}, False
    for flag, field in (("gpu", "gpu"), ("gpus", "gpus_per_node"), ("nodes", "nodes"), ("network", "network")):
        value = getattr(args, flag)
        if flag == "gpu" and value is not None:
            ids = gpu_ids(value)
            if len(ids) > 1 and not getattr(args, "mixed_ok", False):
                raise InputError("several --gpu cards are estimated by `llmplan-cli estimate` (llama.cpp's layer "
                                 "split); this command plans identical GPUs: give one --gpu and --gpus N")
            value, mixed = ids[0], len(ids) > 1  # several cards: the first stands for the machine (cli/mixed_cards.py)
        if value is not None:
            hw[field] = value
    sets = [f"hardware.{k}={json.dumps(v)}" for k, v in hw.items()]
    if args.workload:
        sets.append(f"workload={args.workload}")
    if getattr(args, "cpu_moe_layers", None) is not None:
        sets.append(f"inference.cpu_moe_layers={args.cpu_moe_layers}")
    if getattr(args, "split_mode", None) is not None:
        sets.append(f"inference.split_mode={args.split_mode}")
    try:
        doc = apply_overrides(doc, [*sets, *args.overrides])
    except InputError as exc:  # "--gpus 0" read "--set: hardware.gpus_per_node: ...": name the flag typed
        text = str(exc)
        for flag, field in (("--gpus", "gpus_per_node"), ("--nodes", "nodes"), ("--network", "network")):
            if field in hw:
                text = text.replace(f"--set: hardware.{field}: ", f"{flag}: ")
        if getattr(args, "cpu_moe_layers", None) is not None:
            text = text.replace("--set: inference.cpu_moe_layers: ", "--cpu-moe-layers: ")
        raise InputError(text) from None
    if args.plan:
        return doc  # a plan file is taken as written
    # the layer split over different cards, and any row split, run llama.cpp (``mixed_cards.split_engine``)
    split = (mixed or doc.inference.split_mode == "row") and "engine" not in doc.inference.model_fields_set
    # a model released quantised, as released (plan.released: the app's rule too)
    doc, fmt = as_released(doc, "llama-cpp" if split else None)
    if fmt is not None:
        args.released_format = fmt  # said beside the estimate (``run``)
    return doc


def _doc_for_model(model: str) -> PlanDocument:
    """A config.json (or a folder holding one) goes in inline as it is; any other file the model readers
    understand (.gguf, safetensors index ...) goes in as its resolved spec; anything else is a catalog id."""
    path = Path(model)
    if (path.suffix == ".json" and path.name != "model.safetensors.index.json") or (path / "config.json").is_file():
        return plan_from_config(path)
    ref = hub_ref_for(model)
    if ref is not None:
        from llmplan.plan.hub_plan import plan_from_hub

        return plan_from_hub(fetch_model_arg(model, ref))
    if path.exists():
        spec = resolve_model_arg(model)
        return PlanDocument(name=spec.name, model=ModelRef(name=spec.name, spec=spec), hardware=HardwareRef())
    return PlanDocument(name=model, model=ModelRef(id=model), hardware=HardwareRef())


def layout_given(args: argparse.Namespace) -> bool:
    if getattr(args, "auto", False):
        return False
    return bool(args.plan) or any(s.startswith("parallelism.") for s in args.overrides)


def kept_knobs(args: argparse.Namespace, doc: PlanDocument | None = None) -> tuple[str, ...]:
    """The training knobs the auto-planner would otherwise choose that the plan states: given with
    ``--set``, or (``doc``) written in the plan file. The search holds them at the plan's values."""
    from llmplan.core.search.policy import held_knobs

    paths = {s.split("=", 1)[0].strip() for s in args.overrides}
    stated = {p.removeprefix("training.") for p in paths}
    if doc is not None:
        stated |= doc.training.model_fields_set
    return held_knobs(stated)


def auto_layout(scenario: Scenario, keep: tuple[str, ...] = (), weight_formats: tuple[str, ...] = ()
                ) -> tuple[Scenario, str]:
    """The auto-planner's best layout on all the scenario's GPUs (DESIGN.md §3: a sensible default),
    with the training knobs in ``keep`` held at the scenario's values, and the words for an open format's
    offload answer (``policy.usual_offload_words``; "" otherwise). ``weight_formats``: inference formats the
    search may choose from when nothing fits in the plan's own (the plan left it open)."""
    from llmplan.core.engine import estimate
    from llmplan.core.search import scenario_for, search
    from llmplan.core.search.policy import usual_offload_words

    result = search(scenario, top=1, refine=estimate, use_fewer_gpus=False, keep=keep,
                    weight_formats=weight_formats)
    if not result.best:
        note = result.note
        raise InputError(note if note.startswith(("no layout fits", "no layout can")) else f"no layout fits: {note}")
    best = result.best[0]
    if scenario.workload == "inference":
        inf = best.estimate.inference if best.estimate is not None else None
        words = usual_offload_words(inf.weight_format, inf.gpu_layers.value if inf.gpu_layers else None,
                                    scenario.model.num_layers, scenario.engine_profile) \
            if weight_formats and inf is not None else ""
        return scenario.model_copy(update={"parallelism": best.parallelism, "inference": chosen_inference(scenario,
                                                                                                         best)}), words
    chosen = scenario_for(scenario, best.parallelism, best.training)
    return chosen.model_copy(update={"cluster": scenario.cluster}), ""


def chosen_inference(scenario: Scenario, best):
    """The plan's inference settings, with the weight format the search chose when the plan's own
    fits nowhere and the plan left it open (``search(weight_formats=...)``)."""
    inf = scenario.inference
    fmt = best.estimate.inference.weight_format if best.estimate is not None else inf.weight_format
    return inf if fmt == inf.weight_format.lower() else inf.model_copy(update={"weight_format": fmt})


def choose(args: argparse.Namespace, doc: PlanDocument, scenario: Scenario
           ) -> tuple[Scenario, str, str, Estimate | None]:
    """The scenario to estimate, where its layout came from ("plan" or "auto"), what the default
    policy chose for the user ("auto: full recompute", or ""): ``core.search.policy``, and the engine's
    estimate of that scenario when the policy already ran it (``AutoChoice.estimate``; None otherwise), so
    that ``run_estimate`` does not run the engine on it a second time."""
    from llmplan.core.search.policy import formats_to_try
    from llmplan.plan.evaluate import automatic_choice

    if not layout_given(args):
        formats = formats_to_try(doc.inference.model_fields_set, scenario.engine_profile)
        chosen, words = auto_layout(scenario, kept_knobs(args, doc), formats)
        fmt = chosen.inference.weight_format
        label = f"auto: weight format {fmt}" if fmt != scenario.inference.weight_format else ""
        label += f" ({words})" if label and words else ""
        return chosen, "auto", label, None
    choice = automatic_choice(doc, scenario)  # doc carries the --set fields as stated
    return choice.scenario, "plan", choice.label(), choice.estimate


def with_layout(doc: PlanDocument, scenario: Scenario) -> PlanDocument:
    """The document with the layout, training knobs and weight format the estimate used (the
    auto-planner's or the default policy's, where they chose)."""
    # the Hub file's size is the plan's model.hub, resolved into inference while the format is that file's:
    # saving the resolved value would pin it to the plan even after the format changes
    inference = scenario.inference.model_copy(update={"weight_file_bytes": doc.inference.weight_file_bytes})
    # an inference estimate trains nothing: the plan's training section stays as written (auto stays auto, a
    # setting the inference scenario does not check stays the user's), for when the plan trains again
    training = doc.training if doc.workload == "inference" else scenario.training
    return doc.model_copy(update={"parallelism": scenario.parallelism, "training": training,
                                  "inference": inference})


def run_estimate(scenario: Scenario, doc: PlanDocument, est: Estimate | None = None):
    """The engine's estimate with the plan's system report (checkpoints, goodput, power) attached; ``est``:
    the engine's estimate of ``scenario`` when ``choose`` has it already."""
    from llmplan.plan.evaluate import evaluate_scenario

    return evaluate_scenario(scenario, doc.system, est)


def run(args: argparse.Namespace) -> int:
    doc = document_from_args(args)
    if len(ids := gpu_ids(args.gpu)) > 1:
        doc = with_cards(doc, ids, tensor_split(args.tensor_split, len(ids)))
    elif args.tensor_split and doc.hardware.cards:
        split = tensor_split(args.tensor_split, len(doc.hardware.card_ids()))
        doc = doc.model_copy(update={"hardware": doc.hardware.model_copy(update={"tensor_split": tuple(split)})})
    elif args.tensor_split:
        raise InputError("--tensor-split needs several cards: give one --gpu per card")
    doc, engine_note = rows_engine(doc)
    if getattr(args, "this_machine", False):
        return run_this_machine(args, doc)
    check_split_mode(doc)
    if rows_over_identical_cards(doc):  # --gpu X --gpus N --split-mode row: the machine's N cards, split by rows
        doc, engine_note = rows_format(args, doc, engine_note)
        doc = with_cards(doc, [doc.hardware.gpu] * doc.hardware.gpus_per_node, None)
    if doc.hardware.cards:
        return run_mixed(args, doc, engine_note)
    calibration_note = None
    if args.calibration is not None:
        doc, calibration_note = measured.calibrated_document(doc, args.calibration)
    scenario, source, auto, policy_est = choose(args, doc, resolve(doc))
    est = run_estimate(scenario, doc, policy_est)
    if args.save:
        save_plan(with_layout(doc, scenario), args.save)
    data = estimate_json(est, scenario, source)
    if auto:
        data["automatic"] = auto
    if getattr(args, "released_format", None):
        data["released_format"] = args.released_format
    if calibration_note is not None:
        data["calibration"] = {"note": calibration_note, "efficiency": doc.efficiency.model_dump(exclude_none=True)}
    if args.ops is not None:
        return _print_ops(args, scenario, est.estimate)
    _print(args, data, est)
    return 0


def _print_ops(args: argparse.Namespace, scenario: Scenario, est: Estimate) -> int:
    """``--ops``: the step's operation list (``ops_table``), computed only when asked for."""
    from llmplan.cli.ops_table import operations, ops_json, ops_text

    if args.ops < 1:
        raise InputError("--ops N: give at least 1 operation to list")
    so = operations(scenario, est)
    title = Path(args.plan).stem if args.plan else scenario.model.name
    print(json_text(ops_json(so, title)) if args.json else ops_text(so, title, args.ops))
    return 0


def rows_format(args: argparse.Namespace, doc: PlanDocument, note: str) -> tuple[PlanDocument, str]:
    """A row split over identical GPUs whose plan leaves the weight format open: the format the search picks for
    it (``choose``: the engine's ladder, least quantised first, as ``search`` and the app's Auto… do), and the note
    with the words for it ("auto: weight format q5_k_m"); the plan and ``note`` as they are otherwise."""
    if layout_given(args):
        return doc, note
    scenario, _, label, _ = choose(args, doc, resolve(doc))
    fmt = scenario.inference.weight_format
    if fmt == doc.inference.weight_format.lower():
        return doc, note
    return apply_overrides(doc, [f"inference.weight_format={fmt}"]), "; ".join(x for x in (note, label) if x)


def _print(args: argparse.Namespace, data: dict, est, after: str = "") -> None:
    """The estimate as JSON or text, with the measured-run comparison and any closing text."""
    rows = measured.run_comparisons(est, args.compare_run) if args.compare_run else None
    if rows is not None:
        data["measured_run"] = rows
    if args.json:
        print(json_text(data))
        return
    print(estimate_text(data, decimal=args.gb))
    if "calibration" in data:
        print(f"note: {data['calibration']['note']}")
    if rows is not None:
        print()
        print(measured.comparison_text(rows))
    if after:
        print()
        print(after)


def run_this_machine(args: argparse.Namespace, doc: PlanDocument) -> int:
    """The plan on the hardware detected here: the estimate in the layout the verdict chose, then the
    verdict (``this_machine`` in --json). Where the plan cannot run here at all (no GPU for a GPU-only
    engine or for training), the estimate is of the plan as written and the verdict says why."""
    from llmplan.cli.fit_report import fit_json, fit_text, load_detection
    from llmplan.core.search.policy import usual_offload_words
    from llmplan.fit.local import fit_this_machine, local_hardware
    from llmplan.hw.measured import load_calibration
    from llmplan.plan.calibrated import load_calibration_quietly
    from llmplan.plan.evaluate import automatic_choice

    if args.no_calibration:
        calibration, note = None, None
    elif args.calibration:  # a file named explicitly: a bad one is an error
        calibration, note = load_calibration(Path(args.calibration)), None
    else:
        calibration, note = load_calibration_quietly()
    machine = local_hardware(load_detection(args.detection_fixture), calibration)
    if machine is None:
        raise InputError("--this-machine: detection found neither a GPU nor host facts; "
                         "run `llmplan-cli detect` to see why")
    fit = fit_this_machine(doc, machine)
    if fit.local_plan is not None and fit.local_plan.hardware.cards:  # every card of a mixed machine
        return _this_machine_cards(args, fit, note)
    if fit.current is not None and fit.local_plan is not None:
        # the scenario the verdict estimated: the local plan with the default policy's choices for the knobs it
        # leaves open (``evaluate_plan``), so the settings printed are those of the figures ("auto: full recompute")
        choice = automatic_choice(fit.local_plan, resolve(fit.local_plan))
        scenario, est, source, here, auto = choice.scenario, fit.current.estimate, "this-machine", True, choice.label()
        fmt = fit.local_plan.inference.weight_format
        if doc.workload == "inference" and fmt != doc.inference.weight_format:  # the open format's ladder (fit.verdict)
            words = usual_offload_words(fmt, fit.current.gpu_layers, fit.current.total_layers, scenario.engine_profile)
            auto = f"auto: weight format {fmt}" + (f" ({words})" if words else "")  # as ``choose`` says it
    else:
        check_split_mode(doc)  # a row split that cannot run here nor as written: the field's error, not "no layout"
        scenario, source, auto, policy_est = choose(args, doc, resolve(doc))
        est, here = run_estimate(scenario, doc, policy_est), False
    if args.save:
        save_plan(fit.local_plan if here else with_layout(doc, scenario), args.save)
    data = estimate_json(est, scenario, source)
    if auto:
        data["automatic"] = auto
    if getattr(args, "released_format", None):
        data["released_format"] = args.released_format
    data["this_machine"] = dict(fit_json(fit), estimated_here=here)
    if note:
        data["this_machine"]["notes"] = [*data["this_machine"].get("notes", []), note]
    if not here and not args.json:
        print("(The plan cannot run on this machine; the estimate below is of the plan as written.)")
    _print(args, data, est, after=fit_text(fit) + (f"\n  Note: {note}" if note else ""))
    return 0


def _this_machine_cards(args: argparse.Namespace, fit, note: str | None) -> int:
    """``--this-machine`` on different cards: the layer split over all of them, then the verdict."""
    from llmplan.cli.fit_report import fit_json, fit_text
    from llmplan.cli.mixed_cards import mixed_json, mixed_text
    from llmplan.core.present import MemoryUnit
    from llmplan.plan.evaluate import estimate_cards

    plan, scenario = estimate_cards(fit.local_plan)
    if args.save:
        save_plan(fit.local_plan, args.save)
    data = mixed_json(plan, scenario, split=fit.local_plan.hardware.tensor_split)
    data["this_machine"] = dict(fit_json(fit), estimated_here=True)
    if note:
        data["this_machine"]["notes"] = [*data["this_machine"].get("notes", []), note]
    if args.json:
        print(json_text(data))
        return 0
    print(mixed_text(data, scenario.model.name, MemoryUnit.decimal(args.gb)))
    print()
    print(fit_text(fit) + (f"\n  Note: {note}" if note else ""))
    return 0
