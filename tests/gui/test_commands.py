"""Edit records (Qt-free): apply, inverse, validation of the new value."""

from __future__ import annotations

import pytest

from llmplan.errors import InputError
from llmplan.gui.commands import Edit, Replace, get_path, set_path
from llmplan.plan.document import ModelRef, PlanDocument


def _doc() -> PlanDocument:
    return PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-8B"))


def test_edit_apply_and_inverse_round_trip():
    doc = _doc()
    e = Edit.of(doc, "parallelism.tp", 8)
    new = e.apply(doc)
    assert new.parallelism.tp == 8 and doc.parallelism.tp == 1
    assert e.inverse().apply(new) == doc


def test_set_path_validates_range_and_names_field():
    with pytest.raises(InputError, match=r"parallelism\.tp"):
        set_path(_doc(), "parallelism.tp", 0)


def test_set_path_rejects_unknown_field():
    with pytest.raises(InputError, match="nonsense"):
        set_path(_doc(), "training.nonsense", 3)


def test_set_whole_section_with_model_object():
    new = set_path(_doc(), "model", ModelRef(id="Qwen/Qwen3-8B"))
    assert get_path(new, "model.id") == "Qwen/Qwen3-8B"


def test_replace_inverse():
    a, b = _doc(), set_path(_doc(), "workload", "inference")
    r = Replace(a, b)
    assert r.apply(a) == b and r.inverse().apply(b) == a
