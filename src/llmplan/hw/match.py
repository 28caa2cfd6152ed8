"""Which catalog GPU is the one this machine reported?

Names reported by drivers are close to, but not the same as, catalog names, and near-misses
are dangerous: an L4 (24 GB) is not an L40S (48 GB), an A10 is not an A10G, an H100 PCIe is
not an H100 SXM ("NVIDIA H100 80GB HBM3" is how the SXM part reports itself), a 4090 D is
not a 4090, and a 4060 Ti comes with 8 or 16 GB under one name. So matching is strict:

1. exact name, ignoring case and spacing, against each candidate's ``match_names``;
2. else the same *set of significant tokens* (vendor words like "NVIDIA"/"GeForce", memory
   sizes like "80GB" and Apple core counts are not significant; every other token is, so
   "L4" never equals "L40S" and "A10" never equals "A10G");
3. ties (one name, several memory sizes) are broken by the reported memory, which must
   lie within ``MEMORY_TOLERANCE`` of the candidate's;
4. for Apple Silicon, the GPU core count must agree when both sides know it.

No match is a normal answer: the result says so plainly, carries the reported memory, and
lists the closest entries so the UI can ask the user to pick one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from llmplan.core.present import MemoryUnit

# A device reports slightly less than its marketed size (ECC, firmware carve-outs): an H100
# 80GB HBM3 shows 81,559 MiB, an A100 PCIe 40GB 40,536 MiB. 10 % absorbs that and still
# separates every pair of sizes sold under one name (8/16 GB, 40/80 GB, 24/48 GB).
MEMORY_TOLERANCE = 0.10

_NOISE = frozenset({"nvidia", "geforce", "amd", "radeon", "instinct", "tesla", "apple", "gpu",
                    "graphics", "corporation", "inc", "the", "with"})
_MEMORY = re.compile(r"\b\d+(?:\.\d+)?\s?(?:gb|gib|g)\b")
_CORES = re.compile(r"\b(\d+)[- ]?cores?(?:\s+gpu)?\b")


class _SpecLike(Protocol):
    memory_bytes: int


class GpuCandidate(Protocol):
    """What matching needs of a catalog entry (the hardware catalog's GPU entries provide it)."""

    id: str
    match_names: tuple[str, ...]
    spec: _SpecLike


@dataclass(frozen=True)
class GpuMatch:
    """The answer: a catalog id, or none with the reason and the closest entries."""

    reported_name: str
    reported_memory_bytes: int | None
    candidate_id: str | None
    how: Literal["exact", "tokens", "none"]
    message: str
    alternatives: tuple[str, ...] = ()

    @property
    def matched(self) -> bool:
        return self.candidate_id is not None


def normalise(name: str) -> str:
    return " ".join(name.lower().replace("_", " ").split())


def core_count(name: str) -> int | None:
    m = _CORES.search(normalise(name))
    return int(m.group(1)) if m else None


def significant_tokens(name: str) -> frozenset[str]:
    """The tokens that identify a model: no vendor words, no memory sizes, no core counts."""
    text = _CORES.sub(" ", _MEMORY.sub(" ", normalise(name)))
    return frozenset(t for t in re.findall(r"[a-z0-9]+", text) if t not in _NOISE)


def _candidate_cores(c: GpuCandidate) -> int | None:
    for obj in (c, getattr(c, "spec", None)):
        cores = getattr(obj, "gpu_cores", None)
        if isinstance(cores, int):
            return cores
    counts = {core_count(n) for n in c.match_names} - {None}
    return counts.pop() if len(counts) == 1 else None


def _rel_diff(a: int, b: int) -> float:
    return abs(a - b) / max(a, b)


def _gib(n: int | None) -> str:
    return "unknown memory" if not n else MemoryUnit("GiB").fmt(n)


def _closest(reported: str, memory: int | None, candidates: list[GpuCandidate], limit: int = 3) -> tuple[str, ...]:
    """Entries sharing a model-number token (one with a digit), nearest in memory first."""
    mine = {t for t in significant_tokens(reported) if any(ch.isdigit() for ch in t)}
    related = [c for c in candidates if mine & set().union(*(significant_tokens(n) for n in c.match_names))]
    related.sort(key=lambda c: _rel_diff(memory, c.spec.memory_bytes) if memory else 0.0)
    return tuple(c.id for c in related[:limit])


def match_gpu(
    reported_name: str,
    memory_bytes: int | None,
    candidates: Iterable[GpuCandidate],
    *,
    gpu_cores: int | None = None,
) -> GpuMatch:
    """Match a reported GPU (name, memory in bytes, Apple GPU cores) to one catalog candidate."""
    pool_all = list(candidates)
    target = normalise(reported_name)
    pool = [c for c in pool_all if target in {normalise(n) for n in c.match_names}]
    how: Literal["exact", "tokens"] = "exact"
    if not pool:
        key = significant_tokens(reported_name)
        pool = [c for c in pool_all if key and any(significant_tokens(n) == key for n in c.match_names)]
        how = "tokens"

    def none(message: str, alternatives: tuple[str, ...]) -> GpuMatch:
        return GpuMatch(reported_name, memory_bytes, None, "none", message, alternatives)

    if not pool:
        return none(f"no catalog GPU matches {reported_name!r} ({_gib(memory_bytes)}); pick the closest entry",
                    _closest(reported_name, memory_bytes, pool_all))
    if gpu_cores is not None:
        same = [c for c in pool if _candidate_cores(c) in (None, gpu_cores)]
        if not same:
            return none(f"{reported_name} with {gpu_cores} GPU cores is not in the catalog "
                        f"(it has {sorted({_candidate_cores(c) for c in pool})} cores); pick the closest entry",
                        tuple(c.id for c in pool))
        pool = same
    if memory_bytes:
        near = [c for c in pool if _rel_diff(memory_bytes, c.spec.memory_bytes) <= MEMORY_TOLERANCE]
        if not near:
            sizes = ", ".join(f"{c.id} {_gib(c.spec.memory_bytes)}" for c in pool)
            return none(f"{reported_name!r} matches by name but its memory ({_gib(memory_bytes)}) differs from "
                        f"every entry ({sizes}); pick the closest entry", tuple(c.id for c in pool))
        near.sort(key=lambda c: _rel_diff(memory_bytes, c.spec.memory_bytes))
        if len(near) > 1 and _rel_diff(memory_bytes, near[0].spec.memory_bytes) == _rel_diff(
                memory_bytes, near[1].spec.memory_bytes):
            return none(f"{reported_name!r} ({_gib(memory_bytes)}) fits several entries equally; pick one",
                        tuple(c.id for c in near))
        pool = near[:1]
    if len(pool) > 1:
        return none(f"{reported_name!r} matches several entries and its memory is unknown; pick one",
                    tuple(c.id for c in pool))
    chosen = pool[0]
    return GpuMatch(reported_name, memory_bytes, chosen.id, how,
                    f"{reported_name} is catalog GPU {chosen.id} ({how} name match)")
