"""Caches keyed by the identity of the engine's frozen specs.

The engine's specs (``ModelSpec``, ``TrainingSettings``, ``FrameworkProfile``, ...) are frozen pydantic
models, so a result derived from them never goes stale. They are hashable, but pydantic hashes a model
field by field in Python, nested models included: hashing a ``ModelSpec`` costs more than many of the
results it would key, and one training estimate has a budget of 0.2 ms (``benchmarks/bench_training.py``).
Where one plan is estimated several times, the same objects come back: the search re-checks its finalists
with one model and one set of settings (``model_copy`` keeps the sub-objects a change leaves alone), the
default policy's steps share the model, the charts' sweeps re-estimate a plan point by point. Their ``id``
is a cheap, exact key.

An entry holds the objects it was made from, so none of them can be freed and its ``id`` taken by another
object while the entry lives: a key of ids can only match the very same objects. The cache forgets
everything when it reaches its size (an LRU would cost more than it saves). The engine's caches hold 64
entries: enough for the search's finalists and the default policy's steps, and few enough that a stream
of new objects (a plan resolved again on every edit, which builds a new ``ModelSpec``) keeps little alive
for the garbage collector. A spec that is equal but not the same object misses here and falls through to
the value-keyed caches below (``lru_cache`` on ``count_params``, ``layer_and_head``, ``_collectives``).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any


class IdentityCache:
    """Values keyed by (the identity of some objects, a hashable rest). ``get`` answers None on a miss, so
    cached values must never be None."""

    __slots__ = ("_entries", "_maxsize")

    def __init__(self, maxsize: int = 64) -> None:
        self._entries: dict[tuple, tuple[tuple, Any]] = {}
        self._maxsize = maxsize

    def get(self, objs: tuple, rest: Hashable) -> Any:
        hit = self._entries.get((*map(id, objs), rest))
        return None if hit is None else hit[1]

    def put(self, objs: tuple, rest: Hashable, value: Any) -> Any:
        """Store ``value`` and return it."""
        if len(self._entries) >= self._maxsize:
            self._entries.clear()
        self._entries[(*map(id, objs), rest)] = (objs, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
