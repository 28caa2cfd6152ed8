"""One evaluation pipeline for every front end: plan -> Scenario -> Estimate -> system report.

The CLI, the GUI and the auto-planner's final answer all go through here, so a plan gives
the same numbers wherever it is opened. The GPU engine (``llmplan.core.engine``) knows
nothing of storage, failures or power; ``with_system`` adds that report from the plan's
``system`` options and lets its bottleneck ranking (GPU and system together) become the
estimate's headline bottleneck (issue: "the bottleneck statement ranges over all of these").
"""

from __future__ import annotations

import dataclasses

from llmplan.core import engine
from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario
from llmplan.plan.document import PlanDocument, SystemOptions
from llmplan.plan.resolve import resolve


def system_settings(options: SystemOptions, scenario: Scenario | None = None):
    """The plan's ``system`` options over the catalog's named defaults (``catalogs/system``): a data
    centre's, or a personal machine's when the scenario is one (``ClusterSpec.is_personal_machine``)."""
    from llmplan.catalog.system_presets import default_system_settings

    personal = scenario is not None and scenario.cluster.is_personal_machine
    return default_system_settings(**options.model_dump(exclude_none=True), personal=personal)


def with_system(scenario: Scenario, est: Estimate, options: SystemOptions) -> Estimate:
    """``est`` with its ``system`` report attached and the combined bottleneck as its headline."""
    from llmplan.core.system import system_report

    report = system_report(scenario, est, system_settings(options, scenario))
    return dataclasses.replace(est, system=report, bottleneck=report.bottleneck)


def evaluate_scenario(scenario: Scenario, options: SystemOptions) -> Estimate:
    return with_system(scenario, engine.estimate(scenario), options)


def evaluate_plan(doc: PlanDocument) -> tuple[Scenario, Estimate]:
    """Resolve ``doc`` and estimate it, system report included. User errors raise ``LlmplanError``."""
    scenario = resolve(doc)
    return scenario, evaluate_scenario(scenario, doc.system)
