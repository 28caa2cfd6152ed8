"""One ranking of what limits a plan, over the GPU engine's verdict and the system's.

Each candidate has a *load*: demand / capacity of that resource over a step. The engine's
own bottleneck (compute, memory bandwidth, interconnect, network) is what paces a step when
everything else keeps up, so it enters with load 1. A system resource whose load exceeds 1
(the data loader needs more storage bandwidth than there is, PCIe takes longer than the
step) slows every step beyond the engine's estimate, and the largest such load dominates.
Memory capacity that does not fit dominates everything: the plan does not run at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.result import Bottleneck

KINDS = ("compute", "memory bandwidth", "memory capacity", "interconnect", "network", "pcie", "storage", "cpu",
         "kernel overhead")


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str  # one of KINDS
    load: float  # demand / capacity (> 1: this resource paces the job)
    statement: str  # one plain sentence for people


@dataclass(frozen=True, slots=True)
class Ranking:
    dominant: Bottleneck
    ranked: tuple[Finding, ...]  # most limiting first


def rank_bottlenecks(engine: Bottleneck, findings: tuple[Finding, ...], memory_load: float = 0.0) -> Ranking:
    """The dominant limit with a plain sentence, and every candidate ranked by load."""
    candidates = [Finding(engine.kind, 1.0, engine.statement)]
    if memory_load > 1.0 and engine.kind != "memory capacity":  # the engine may already say so
        candidates.append(Finding("memory capacity", float("inf"),
                                  f"The plan needs {memory_load:.2f}× the GPU's memory: it does not fit, so "
                                  "nothing else matters until memory is reduced."))
    candidates.extend(f for f in findings if f.kind != engine.kind or f.load > 1.0)
    ranked = tuple(sorted(candidates, key=lambda f: f.load, reverse=True))
    top = ranked[0]
    return Ranking(Bottleneck(top.kind, top.statement), ranked)
