"""The engine's one entry point, ``estimate(scenario) -> Estimate`` (module ``engine``, function ``estimate``).

Training and fine-tuning go to ``llmplan.core.training``; inference to
``llmplan.core.inference``. Both are pure functions of the resolved ``Scenario``.
"""

from __future__ import annotations

from llmplan.core.result import Estimate
from llmplan.core.workload import Scenario


def estimate(scenario: Scenario) -> Estimate:
    if scenario.workload == "inference":
        from llmplan.core.inference import estimate_inference

        return estimate_inference(scenario)
    from llmplan.core.training import estimate_training

    return estimate_training(scenario)
