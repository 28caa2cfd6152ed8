"""Every number in a SystemReport is an explained Figure: unit, formula, finite value."""

import dataclasses
import math

from system_fixtures import TINY, count_params, inference_estimate, scenario_tiny, settings, training_estimate

from llmplan.core.explain import Figure
from llmplan.core.system.report import system_report

UNITS = {"B", "s", "B/s", "W", "J", "kWh", "USD", "kg", "1", "params", "tokens/s"}


def _figures(obj, path="report"):
    if isinstance(obj, Figure):
        yield path, obj
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            yield from _figures(getattr(obj, f.name), f"{path}.{f.name}")


def _reports():
    yield system_report(scenario_tiny(offload="cpu", zero_stage=2),
                        training_estimate(TINY, tokens_per_s=1e5, step_time_s=1.0, mfu=0.3, host_ram=1e11),
                        settings())
    yield system_report(scenario_tiny(workload="inference"),
                        inference_estimate(TINY, 2 * count_params(TINY).total), settings())


def test_every_figure_is_explained():
    n = 0
    for rep in _reports():
        for path, fig in _figures(rep):
            n += 1
            assert fig.unit in UNITS, path
            assert fig.formula, f"{path} has no formula"
            assert math.isfinite(fig.value), path
            assert fig.describe(), path
    assert n > 40
