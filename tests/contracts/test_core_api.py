"""``llmplan.core`` states its public API: every name in ``__all__`` resolves, lazily."""

from __future__ import annotations

import subprocess
import sys

import llmplan.core


def test_every_public_name_resolves_to_its_home_module():
    assert set(llmplan.core.__all__) == set(llmplan.core._HOME)
    for name in llmplan.core.__all__:
        value = getattr(llmplan.core, name)
        assert value.__module__ == f"llmplan.core.{llmplan.core._HOME[name]}", name


def test_estimate_is_the_function_and_engine_the_module():
    from llmplan.core import engine, estimate

    assert callable(estimate) and estimate is engine.estimate


def test_an_unknown_name_is_an_attribute_error():
    try:
        llmplan.core.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_one_spec_module_does_not_load_the_engine():
    code = "import sys, llmplan.core.model; print('llmplan.core.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
