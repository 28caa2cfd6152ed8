"""The cheap keys that let a plan resolved afresh (new, equal spec objects) reuse per-model facts.

``count_params`` hands out one ``ParamBreakdown`` object per model value, and the engine keys the per-model
facts (stage parameters, token FLOPs) by that object's identity; spec equality is a faster path to pydantic's
own answer; ``Figure.own`` skips a copy; ``PartTimes`` spells its arithmetic out. Each test compares the fast
path with the slow one it replaces, on inputs where a wrong key or a wrong shortcut would show: all exact,
as both sides run the same arithmetic.
"""

from __future__ import annotations

import dataclasses
import random

from pydantic import BaseModel

from llmplan.core.explain import Figure
from llmplan.core.params import count_params
from llmplan.core.training.layout import resolve
from llmplan.core.training.op_time import PartTimes
from llmplan.core.training.shard import role, stage_params, stage_params_cached
from llmplan.core.workload import Scenario, TrainingSettings

from .helpers import scenario
from .test_estimate_smoke import LLAMA3_8B


def _afresh(sc: Scenario) -> Scenario:
    return Scenario.model_validate(sc.model_dump())


def test_equal_models_share_one_parameter_count_object_and_edited_ones_do_not():
    m = LLAMA3_8B
    twin = type(m).model_validate(m.model_dump())
    assert twin == m and twin is not m
    assert count_params(twin) is count_params(m)
    for change in ({"vocab_size": 128000}, {"num_layers": 16}, {"tie_embeddings": True}, {"num_kv_heads": 4}):
        edited = m.model_copy(update=change)
        assert count_params(edited) is not count_params(m), change


def test_stage_parameters_by_count_object_equal_a_fresh_count_for_every_stage():
    for tp, pp in ((1, 1), (2, 2), (8, 4), (16, 1)):  # tp 16 > 8 KV heads: replicated KV projections
        sc = scenario(LLAMA3_8B, tp * pp * 2, tp=tp, pp=pp)
        for model in (sc.model, LLAMA3_8B.model_copy(update={"vocab_size": 32000, "num_kv_heads": 16})):
            fresh = _afresh(sc.model_copy(update={"model": model}))
            lay = resolve(fresh)
            pb = count_params(fresh.model)
            for s, layers in enumerate(lay.split.per_stage):
                stage = role(s, lay.pp)
                want = stage_params(fresh.model, lay, stage, layers)
                assert stage_params_cached(fresh.model, pb, lay, stage, layers) == want
                assert stage_params_cached(_afresh(fresh).model, pb, lay, stage, layers) == want  # the hit


def test_spec_equality_gives_pydantic_s_answer():
    sc = scenario(LLAMA3_8B, 16, tp=2, pp=2, seq_len=8192, global_batch=128)
    twin = _afresh(sc)
    gpu = sc.cluster.gpu
    pairs = [
        (sc, twin), (sc.model, twin.model), (sc.training, twin.training), (sc.cluster, twin.cluster),
        (sc.training, sc.training.model_copy(update={"zero_stage": 3})),
        (sc.model, sc.model.model_copy(update={"num_layers": 31})),
        (sc.cluster, sc.cluster.model_copy(update={"gpu": gpu.model_copy(update={"memory_bytes": 1})})),
        (sc, sc.model_copy(update={"training": TrainingSettings(seq_len=8192, global_batch=256)})),
        (sc.training, sc.model), (sc.model, "a string"), (sc.training, None),
    ]
    for a, b in pairs:
        assert (a == b) is BaseModel.__eq__(a, b) or (BaseModel.__eq__(a, b) is NotImplemented and a != b), (a, b)
        assert (b == a) == (a == b)
    assert sc == twin and sc.model == twin.model
    assert (sc.model != twin.model) is False  # __ne__ follows the new __eq__


def test_figure_own_equals_figure_of():
    cases = [(1, "B", "x", {"a": 1, "b": 2.5}, "nccl", ("one",)), (2.5, "s", "y", {}, "", ()),
             (0.0, "1", "", {"k": "v"}, "assumption", ())]
    for value, unit, formula, inputs, source, assumptions in cases:
        of = Figure.of(value, unit, formula, dict(inputs), source, assumptions)
        own = Figure.own(value, unit, formula, dict(inputs), source, assumptions)
        assert own == of and type(own.value) is float and type(own.inputs) is type(of.inputs)
        if not inputs:
            assert own.inputs is of.inputs  # the shared empty mapping


def test_part_times_add_and_scale_field_by_field():
    rng = random.Random(16)
    names = [f.name for f in dataclasses.fields(PartTimes)]
    for _ in range(200):
        a = PartTimes(*(rng.uniform(0, 1e-3) for _ in names))
        b = PartTimes(*(rng.uniform(0, 1e-3) for _ in names))
        f = rng.uniform(0, 100)
        assert a + b == PartTimes(*(getattr(a, n) + getattr(b, n) for n in names))
        assert a.scale(f) == PartTimes(*(getattr(a, n) * f for n in names))
