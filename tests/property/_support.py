"""Shared pieces of the property suite: one settings profile, nasty-value strategies, a case counter.

Why a counter: the trust issue asks how many malformed inputs the parsers survived; every
example a property test feeds in goes through ``outcome``/``count``, and the conftest prints
the totals at the end of the session (and docs/trust.md quotes them).

Budget: the examples per test come from ``LLMPLAN_FUZZ_EXAMPLES`` (default below), derandomized
so CI sees the same cases every run; set the variable higher (and ``LLMPLAN_FUZZ_RANDOM=1``)
for a deeper, randomized hunt on a fast machine.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from llmplan.errors import LlmplanError

EXAMPLES = int(os.environ.get("LLMPLAN_FUZZ_EXAMPLES", "120"))
CASES: Counter[str] = Counter()

fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("LLMPLAN_FUZZ_RANDOM") != "1",
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---- values a file can hold --------------------------------------------------------------

HUGE_INTS = st.sampled_from([2**31, 2**63 - 1, 2**63, 2**64 + 1, 10**30, -(2**63), 10**400])
NASTY_NUMBERS = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | HUGE_INTS
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, -1, 0.5, -0.0, float("nan"), float("inf"), float("-inf"), 1e308, 5e-324])
)
NASTY_TEXT = st.text(max_size=30) | st.sampled_from(
    ["", " ", "nan", "inf", "-1", "1e400", "0x10", "\x00", "\ud800".encode("utf-8", "surrogatepass").decode(
        "utf-8", "replace"), "/etc/passwd", "../../x", "é" * 50, "8" * 400])
SCALARS = st.none() | st.booleans() | NASTY_NUMBERS | NASTY_TEXT
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(NASTY_TEXT, inner, max_size=5),
    max_leaves=25,
)


def deep(depth: int, leaf: Any = 1) -> Any:
    """A list nested ``depth`` deep, built without recursion (deep enough to break recursive code)."""
    value: Any = leaf
    for _ in range(depth):
        value = [value]
    return value


def deep_json_text(depth: int, kind: str = "[") -> str:
    close = "]" if kind == "[" else "}"
    opener = "[" if kind == "[" else '{"a":'
    return opener * depth + "1" + close * depth


def dumps(value: Any) -> str:
    """JSON text that may contain NaN/Infinity tokens (Python's json reads them back, so can a file)."""
    return json.dumps(value, allow_nan=True)


# ---- the single rule every property checks ------------------------------------------------


def outcome(name: str, call: Callable[[], Any], error: type[BaseException] = LlmplanError) -> Any:
    """Run ``call``: a result, or an ``error`` (an LlmplanError unless the parser's contract says
    otherwise) with a one-line, non-empty message. Anything else propagates and fails the test."""
    CASES[name] += 1
    try:
        return call()
    except error as exc:
        text = str(exc)
        assert text.strip(), f"{type(exc).__name__} with an empty message"
        assert "\n" not in text, f"multi-line error message: {text!r}"
        assert "Traceback" not in text
        return exc


def count(name: str, n: int = 1) -> None:
    CASES[name] += n
