"""Even layouts (layers divisible by pp·virtual_stages) keep exactly the numbers they had before
uneven pipeline stages were modelled: every Figure of the estimate, to 1e-12 relative."""

import json

import pytest

from llmplan.core.engine import estimate

from .even_golden import GOLDEN, cases, figures

_BEFORE = json.loads(GOLDEN.read_text())
_CASES = cases()


def test_golden_covers_every_case():
    assert sorted(_BEFORE) == sorted(_CASES)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_even_layout_numbers_unchanged(name):
    now = figures(estimate(_CASES[name]))
    before = _BEFORE[name]
    assert sorted(now) == sorted(before)
    for key, value in before.items():
        assert now[key] == pytest.approx(value, rel=1e-12, abs=1e-300), key
