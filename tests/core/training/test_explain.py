"""Every number a training estimate reports is an explained Figure with a known source."""

from dataclasses import fields, is_dataclass

import pytest

from llmplan.core.engine import estimate
from llmplan.core.explain import SOURCES, Figure
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

MIXTRAL = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                num_local_experts=8, num_experts_per_tok=2))


def _figures(obj, path="estimate"):
    if isinstance(obj, Figure):
        yield path, obj
    elif isinstance(obj, tuple):
        for i, x in enumerate(obj):
            yield from _figures(x, f"{path}[{i}]")
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            if f.name != "params":
                yield from _figures(getattr(obj, f.name), f"{path}.{f.name}")


def test_every_figure_is_explained():
    sc = scenario(MIXTRAL, 64, tp=2, pp=4, ep=8, seq_len=4096, global_batch=64, zero_stage=3, offload="cpu")
    figs = list(_figures(estimate(sc)))
    assert len(figs) > 40
    for path, f in figs:
        assert f.formula, path
        assert f.source in SOURCES or (f.source == "" and (f.formula.startswith("0 (") or " = " in f.formula)), path


def test_figure_is_immutable_and_owns_a_copy_of_its_inputs():
    """A Figure is shared by the GUI, the CLI and caches: nobody may change it after the fact."""
    inputs = {"a": 1.0}
    f = Figure.of(2, "B", "a × 2", inputs, "zero")
    inputs["a"] = 99.0  # the caller's dict changing later does not reach the figure
    assert f.inputs == {"a": 1.0} and f.value == 2.0 and isinstance(f.value, float)
    with pytest.raises(AttributeError):
        f.value = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        f.inputs["a"] = 5.0  # type: ignore[index]
    assert float(f) == 2.0 and "source: " in f.describe()
