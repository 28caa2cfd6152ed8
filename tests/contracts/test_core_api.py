"""``llmplan.core`` states its public API, and the engine's module and function differ in name."""

from __future__ import annotations

import llmplan.core


def test_every_public_name_resolves_and_lives_in_the_core():
    for name in llmplan.core.__all__:
        value = getattr(llmplan.core, name)
        assert value.__module__.startswith("llmplan.core."), name


def test_estimate_is_the_function_and_engine_the_module():
    from llmplan.core import engine, estimate

    assert callable(estimate) and estimate is engine.estimate
    assert engine.__name__ == "llmplan.core.engine"
