"""One evaluation pipeline for every front end: plan -> Scenario -> Estimate -> Evaluation (with the system report).

The CLI, the GUI and the auto-planner's final answer all go through here, so a plan gives
the same numbers wherever it is opened. The GPU engine (``llmplan.core.engine``) knows
nothing of storage, failures or power; ``with_system`` puts that report, from the plan's
``system`` options, beside the engine's result in an ``Evaluation`` whose bottleneck ranks GPU
and system together (issue: "the bottleneck statement ranges over all of these"); the engine's
own result is never patched.
"""

from __future__ import annotations

from llmplan.catalog.snapshot import one_catalog_read
from llmplan.catalog.system_presets import default_system_settings
from llmplan.core import engine
from llmplan.core.result import Estimate
from llmplan.core.search.policy import apply_policy, automatic_knobs
from llmplan.core.system.report import Evaluation, evaluation
from llmplan.core.workload import Scenario
from llmplan.plan.document import PlanDocument, SystemOptions
from llmplan.plan.resolve import resolve


def system_settings(options: SystemOptions, scenario: Scenario | None = None):
    """The plan's ``system`` options over the catalog's named defaults (``catalogs/system``): a data
    centre's, or a personal machine's when the scenario is one (``ClusterSpec.is_personal_machine``)."""
    personal = scenario is not None and scenario.cluster.is_personal_machine
    return default_system_settings(**options.model_dump(exclude_none=True), personal=personal)


def with_system(scenario: Scenario, est: Estimate, options: SystemOptions) -> Evaluation:
    """``est`` and, beside it, its system report; the pair's ``bottleneck`` ranges over both."""
    return evaluation(scenario, est, system_settings(options, scenario))


def evaluate_scenario(scenario: Scenario, options: SystemOptions, est: Estimate | None = None) -> Evaluation:
    """``scenario``'s estimate with its system report; ``est``: the engine's estimate of this very
    scenario when the caller has it already (the default policy's, ``AutoChoice.estimate``)."""
    return with_system(scenario, est if est is not None else engine.estimate(scenario), options)


def automatic_choice(doc: PlanDocument, scenario: Scenario):
    """The default policy for the training knobs ``doc`` leaves open (``core.search.policy``): the
    scenario to estimate, and a label such as "auto: full recompute". The CLI, the app and the
    this-machine verdict all call this, so they choose alike."""
    return apply_policy(scenario, automatic_knobs(doc.training.model_fields_set), engine.estimate)


def check_split_mode(doc: PlanDocument) -> None:
    """Refuse ``inference.split_mode = row`` on a plan of one GPU, or of several machines, before any layout is
    searched (the search would only say that no layout fits); several identical GPUs in one machine are estimated
    as the machine's cards (``core.inference.row_estimate``)."""
    from llmplan.core.inference.memory import row_split_refusal
    from llmplan.core.inference.row_estimate import nodes_refusal
    from llmplan.errors import InputError

    hw = doc.hardware
    if doc.workload != "inference" or doc.inference.split_mode != "row" or hw.cards:
        return
    if hw.nodes > 1:
        raise InputError(nodes_refusal(hw.nodes))
    if hw.gpus_per_node < 2:
        raise InputError(row_split_refusal(1))


@one_catalog_read
def evaluate_plan(doc: PlanDocument) -> tuple[Scenario, Evaluation]:
    """Resolve ``doc`` (with the default policy for the knobs it leaves open) and estimate it,
    system report included, with one look at the catalogs (``one_catalog_read``). User errors raise
    ``LlmplanError``."""
    check_split_mode(doc)
    choice = automatic_choice(doc, resolve(doc))
    return choice.scenario, evaluate_scenario(choice.scenario, doc.system, choice.estimate)


@one_catalog_read
def estimate_cards(doc: PlanDocument):
    """llama.cpp's layer split of a plan with ``hardware.cards`` (a machine of different cards) and the
    scenario it used: one call for the CLI, a saved plan and the app's "Cards in this machine"."""
    from llmplan.core.inference.multi_gpu import split_cards
    from llmplan.errors import InputError
    from llmplan.plan.resolve import resolve_cards

    specs = resolve_cards(doc)
    scenario = resolve(doc.model_copy(update={"hardware": doc.hardware.model_copy(
        update={"gpus_per_node": 1, "nodes": 1, "cards": (), "tensor_split": None})}))
    if not scenario.engine_profile.splits_unequal_cards:
        from llmplan.catalog.engines import splitting_engines

        able = splitting_engines()
        raise InputError(f"engine {scenario.inference.engine!r} does not split layers across unequal GPUs; the "
                         f"engines that do: {', '.join(able)} (e.g. --set inference.engine={able[0]})")
    split = list(doc.hardware.tensor_split) if doc.hardware.tensor_split is not None else None
    return split_cards(scenario, specs, split, scenario.inference.gpu_layers), scenario
