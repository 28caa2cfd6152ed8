"""The combined bottleneck ranking."""

from llmplan.core.result import Bottleneck
from llmplan.core.system.bottleneck import Finding, rank_bottlenecks

ENGINE = Bottleneck("compute", "The step is compute-bound.")


def test_engine_verdict_stands_when_the_system_keeps_up():
    r = rank_bottlenecks(ENGINE, (Finding("storage", 0.01, "s"), Finding("pcie", 0.3, "p")))
    assert r.dominant == ENGINE
    assert [f.kind for f in r.ranked] == ["compute", "pcie", "storage"]


def test_overloaded_system_resource_dominates():
    r = rank_bottlenecks(ENGINE, (Finding("storage", 3.0, "storage is slow"), Finding("cpu", 1.5, "cpu")))
    assert r.dominant.kind == "storage"
    assert r.dominant.statement == "storage is slow"


def test_memory_that_does_not_fit_dominates_everything():
    r = rank_bottlenecks(ENGINE, (Finding("storage", 50.0, "s"),), memory_load=1.2)
    assert r.dominant.kind == "memory capacity"
    assert "1.20×" in r.dominant.statement


def test_engine_memory_verdict_is_not_repeated():
    engine = Bottleneck("memory capacity", "Does not fit: 32 GiB short.")
    r = rank_bottlenecks(engine, (), memory_load=1.4)
    assert r.dominant == engine
    assert len(r.ranked) == 1
