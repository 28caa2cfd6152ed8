"""``llmplan.core.present``: one set of rules for numbers people read (issue 16, item 4).

The table is the contract: every front end (CLI tables, app panels, Markdown/CSV exports) calls
these functions, so each value below reads exactly so everywhere. 5,000 s and 800 days are the
two cases the CLI and app used to disagree on ("1.4 h" vs "83.3 min", "800.0 days" vs "2.2 years").
"""

from __future__ import annotations

import math

import pytest

from llmplan.core import present
from llmplan.core.explain import Figure
from llmplan.core.present import MemoryUnit

DAY = 86400.0

DURATIONS = [
    (0.0, "0 s"), (2.5e-5, "25 µs"), (0.25, "250 ms"), (42.0, "42 s"), (119.0, "119 s"),
    (5000.0, "83.3 min"), (7200.0, "2 h"), (15_000.0, "4.17 h"), (3 * DAY, "3.0 days"), (12.5 * DAY, "12.5 days"),
    (800 * DAY, "2.2 years"), (math.inf, "—"), (math.nan, "—"),
]
MEMORY = [  # (bytes, unit, digits, text)
    (80 * 2**30, "GiB", 1, "80.0 GiB"), (80e9, "GB", 1, "80.0 GB"), (45_283_131_392, "GiB", 2, "42.17 GiB"),
    (1234 * 2**30, "GiB", 1, "1,234.0 GiB"), (45_283_131_392, "GB", 2, "45.28 GB"),
]
MEMORY_ANY = [(0, "GiB", "0 B"), (131_072, "GiB", "128 KiB"), (160 * 2**20, "GiB", "160 MiB"),
              (160e6, "GB", "160 MB"), (37.46 * 2**30, "GiB", "37.46 GiB"), (512, "GiB", "512 B")]
OTHERS = [
    (present.percent, 0.412, "41.2 %"), (present.percent, 1.0, "100.0 %"), (present.load, 12.5, "1,250 %"),
    (present.count, 0.333, "0.33"), (present.count, 3.33, "3.3"), (present.count, 12_345.0, "12,345"),
    (present.rate, 12.5e9, "12.5 GB/s"), (present.rate, 523e6, "523 MB/s"), (present.rate, 1500.0, "1.5 kB/s"),
    (present.tokens_per_s, 12_345.4, "12,345 tokens/s"), (present.tokens_per_s, 42.5, "42.5 tokens/s"),
    (present.money, 1_234_567.89, "$1,234,568"), (present.money, 12.345, "$12.35"), (present.money, 0.2, "$0.20"),
    (present.energy, 1.66, "1.66 kWh"), (present.energy, 25_000.0, "25 MWh"), (present.energy, 47.7e6, "47.7 GWh"),
    (present.energy, 1.2e9, "1,200 GWh"),
    (present.mass_co2, 0.647, "0.647 kg CO₂"), (present.mass_co2, 9770.0, "9.77 t CO₂"),
    (present.mass_co2, 18_614_000.0, "18,614 t CO₂"),
    (present.params, 8_030_261_248, "8.03 B"), (present.params, 684_531_386_000, "685 B"),
    (present.params, 1.2e12, "1.2 T"), (present.params, 124_000_000, "124 M"),
    (present.money, math.inf, "—"), (present.rate, math.nan, "—"),
]


@pytest.mark.parametrize(("seconds", "text"), DURATIONS)
def test_duration(seconds, text):
    assert present.duration(seconds) == text


@pytest.mark.parametrize(("n", "unit", "digits", "text"), MEMORY)
def test_memory_in_the_preferred_unit(n, unit, digits, text):
    assert MemoryUnit(unit).fmt(n, digits) == text


@pytest.mark.parametrize(("n", "unit", "text"), MEMORY_ANY)
def test_memory_of_every_scale(n, unit, text):
    assert MemoryUnit(unit).fmt_any(n) == text


@pytest.mark.parametrize(("fn", "value", "text"), OTHERS)
def test_other_quantities(fn, value, text):
    assert fn(value) == text


def test_unit_preference():
    assert MemoryUnit("bogus").name == "GiB"
    assert MemoryUnit.decimal(True).name == "GB" and MemoryUnit.decimal(False).name == "GiB"
    assert present.si(989e12, "FLOP/s") == "989 TFLOP/s"


def test_figures_pick_the_rule_for_their_unit():
    gib = MemoryUnit("GiB")
    assert present.figure(Figure(5000.0, "s", "", ""), gib) == "83.3 min"
    assert present.figure(Figure(800.0, "d", "", ""), gib) == "2.2 years"
    assert present.figure(Figure(0.412, "1", "", ""), gib) == "41.2 %"
    assert present.figure(Figure(3.33, "1", "", ""), gib, "count") == "3.3"
    assert present.figure(Figure(1_234_567.89, "USD", "", ""), gib) == "$1,234,568"
    assert present.figure(Figure(131_072, "B", "", ""), gib) == "128 KiB"
    assert present.figure(Figure(25_000.0, "h", "", ""), gib) == "25,000 h"


def test_never_an_exponent():
    assert MemoryUnit("GiB").fmt_any(1000 * 2**20) == "1,000 MiB"
    assert present.si(999.6e12, "FLOP/s") == "1,000 TFLOP/s"
    assert present.energy(999.7) == "1,000 kWh"
    assert present.duration(119.97) == "120 s"


# Issue 18 item 7: a count of sequences read "100.0 %" for 1, "0.0 %" for 0 and "1.51e+03" for 1,511;
# GPU-hours read "11,930,512 h".
@pytest.mark.parametrize(("value", "text"), [(0.0, "0"), (1.0, "1"), (1511.0, "1,511"), (2_000_000.0, "2,000,000"),
                                             (math.nan, "—")])
def test_whole_counts(value, text):
    assert present.integer(value) == text
    assert present.figure(Figure(value, "1", "", ""), MemoryUnit(), "int") == text


@pytest.mark.parametrize(("hours", "text"), [(950.0, "950 GPU-hours"), (12_345.0, "12.3 k GPU-hours"),
                                             (11_930_512.0, "11.9 M GPU-hours"), (2.5e9, "2.5 G GPU-hours")])
def test_gpu_hours_grow_into_k_and_m(hours, text):
    assert present.gpu_hours(hours) == text
    assert present.figure(Figure(hours, "h", "", ""), MemoryUnit(), "gpu_hours") == text


@pytest.mark.parametrize(("values", "spacing", "texts"), [
    ([0.0, 100_000.0, 300_000.0], 100_000.0, ["0", "100,000", "300,000"]),
    ([1.5, 2.0, 2.5], 0.5, ["1.5", "2.0", "2.5"]),
    ([0.05, 0.1], 0.05, ["0.05", "0.10"]),
    ([-2000.0, 0.0, 2000.0], 1000.0, ["-2,000", "0", "2,000"]),
])
def test_axis_ticks_have_thousands_separators(values, spacing, texts):
    assert present.axis_ticks(values, spacing) == texts
