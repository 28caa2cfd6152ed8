"""Plan files, corrupt or hostile, all the way through: load -> resolve -> estimate -> JSON report.

Each shipped example plan gets one or two of its fields replaced by NaN, infinities, huge, negative,
wrongly typed or nested values (or removed). Every case ends in a PlanFileError/LlmplanError with one
line, or in an estimate whose JSON report is strict JSON (no NaN or infinity leaks into the output)."""

from __future__ import annotations

import json
import time
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from llmplan.cli.report import json_text
from llmplan.errors import LlmplanError, PlanFileError
from llmplan.plan.document import PlanDocument
from llmplan.plan.planfile import MAX_PLAN_BYTES, dumps_plan, load_plan, loads_plan
from llmplan.resources_path import resources_dir
from tests.property._support import JSON_VALUES, SCALARS, deep_json_text, dumps, fuzz, outcome


@cache
def _examples() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((resources_dir() / "examples").glob("*.llmplan"))}


def _leaves(value, prefix=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*prefix, k))
    yield prefix


@cache
def _paths() -> list[tuple[str, tuple]]:
    return sorted({(name, path) for name, doc in _examples().items() for path in _leaves(doc) if path})


def _set(doc: dict, path: tuple, value, remove: bool = False) -> None:
    for k in path[:-1]:
        if not isinstance(doc.get(k), dict):
            doc[k] = {}
        doc = doc[k]
    if remove:
        doc.pop(path[-1], None)
    else:
        doc[path[-1]] = value


def estimate_report(doc: PlanDocument) -> dict:
    """What `llmplan-cli estimate --json` prints for a plan (the same functions, in process)."""
    from llmplan.cli.report import estimate_json
    from llmplan.plan.evaluate import evaluate_plan

    scenario, est = evaluate_plan(doc)
    return estimate_json(est, scenario, "plan")


def _through_the_engine(text: str) -> None:
    doc = outcome("plan file", lambda: loads_plan(text))
    if isinstance(doc, PlanFileError):
        return
    assert loads_plan(dumps_plan(doc)) == doc  # what loads saves back to the same plan
    report = outcome("plan file", lambda: estimate_report(doc))
    if not isinstance(report, LlmplanError):
        json.loads(json_text(report))  # what --json prints must be strict JSON (no NaN/Infinity)


def _one_plan(name: str) -> dict:
    return json.loads(json.dumps(_examples()[name]))


@fuzz
@given(st.sampled_from(_paths()), SCALARS, st.booleans())
def test_one_field_hostile_or_missing(where, value, remove):
    name, path = where
    doc = _one_plan(name)
    _set(doc, path, value, remove)
    _through_the_engine(dumps(doc))


@fuzz
@given(st.sampled_from(sorted(_examples())), st.lists(st.tuples(st.sampled_from(_paths()), JSON_VALUES), max_size=3))
def test_several_fields_any_json(name, replacements):
    doc = _one_plan(name)
    for (_, path), value in replacements:
        _set(doc, path, value)
    _through_the_engine(dumps(doc))


@fuzz
@given(st.sampled_from(sorted(_examples())), st.integers(0, 10_000))
def test_truncated_plan(name, cut):
    text = dumps(_examples()[name])
    _through_the_engine(text[: cut % len(text)])


def test_deep_nesting_and_huge_files(tmp_path):
    for text in (deep_json_text(100_000), deep_json_text(100_000, "{")):
        assert isinstance(outcome("plan file", lambda text=text: loads_plan(text)), PlanFileError)
    big = tmp_path / "big.llmplan"
    with big.open("wb") as f:
        f.write(b'{"format": "llmplan"')
        f.truncate(10 * 2**30)  # sparse 10 GB
    t0 = time.perf_counter()
    result = outcome("plan file", lambda: load_plan(big))
    assert isinstance(result, PlanFileError) and f"{MAX_PLAN_BYTES:,}" in str(result)
    assert time.perf_counter() - t0 < 1.0


def test_impossible_file_names():
    for name in ("a\x00b.llmplan", "8" * 5000 + ".llmplan"):
        assert isinstance(outcome("plan file", lambda name=name: load_plan(name)), PlanFileError)
