"""Whatever bytes arrive, loading a plan either succeeds or raises PlanFileError (never anything else)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from llmplan.errors import PlanFileError
from llmplan.plan.planfile import dumps_plan, loads_plan

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)


def _load_or_plan_error(data) -> None:
    try:
        doc = loads_plan(data)
    except PlanFileError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert loads_plan(dumps_plan(doc)) == doc


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _load_or_plan_error(data)


@settings(max_examples=60, deadline=None)
@given(_json)
def test_random_json_values(value):
    _load_or_plan_error(json.dumps(value))


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["parallelism", "training", "hardware", "inference", "notes", "workload"]),
                       _json, max_size=3))
def test_random_sections_in_a_plan(sections):
    _load_or_plan_error(json.dumps({"format": "llmplan", "schema_version": 1, "model": {"id": "m"}, **sections}))
