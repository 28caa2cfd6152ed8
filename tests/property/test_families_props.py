"""Issue 17's hostile-input families, each over every parser it applies to (a short run for CI).

FIFOs and character devices as every file input, 5,000-digit integers, deep nesting, booleans and
numeric text as numbers, control characters, oversized GGUF string totals, endless and forking
detection tools: the families and their rules are in ``_families.py`` and ``_families_io.py``.
``make fuzz`` (scripts/fuzz.py) runs the same families with at least 10,000 inputs each; docs/trust.md
has its table. Here hypothesis drives the same generators through ``st.randoms()`` so a failure shrinks
to a small, printed input.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property._families_io import ALL_FAMILIES, ALL_TARGETS, TOOLS_AVAILABLE
from tests.property._support import EXAMPLES, count, fuzz

# examples per family in CI (LLMPLAN_FUZZ_EXAMPLES scales them): catalog targets reload the shipped
# catalog (~0.1 s) and tool runs wait for their timeout, so these stay small; `make fuzz` runs 10,000+.
PER_FAMILY = {"endless tools": 8, "forking tools": 8, "GGUF totals": 30}
posix_only = pytest.mark.skipif(not TOOLS_AVAILABLE, reason="FIFOs, devices and process groups are POSIX")


def _run(family_name: str, target_name: str, rng) -> None:
    count(f"family: {family_name}")
    with tempfile.TemporaryDirectory(prefix="fz") as tmp:
        ALL_FAMILIES[family_name].make(rng, ALL_TARGETS[target_name], Path(tmp))


@posix_only
@pytest.mark.parametrize("family_name", list(ALL_FAMILIES))
def test_family_over_its_parsers(family_name):
    family = ALL_FAMILIES[family_name]
    examples = max(PER_FAMILY.get(family_name, 45) * EXAMPLES // 120, 3)

    @settings(fuzz, max_examples=examples)
    @given(st.sampled_from(family.targets), st.randoms(use_true_random=False))
    def check(target_name, rng):
        _run(family_name, target_name, rng)

    check()


@posix_only
@pytest.mark.parametrize("family_name", [f for f in ALL_FAMILIES if "tools" not in f and f != "GGUF totals"])
def test_every_parser_sees_every_family(family_name):
    """One input per parser, so no parser is left out of a family however hypothesis samples."""
    import random

    for target_name in ALL_FAMILIES[family_name].targets:
        _run(family_name, target_name, random.Random(f"{family_name}:{target_name}"))
