"""``core.memo.IdentityCache``: hits only for the very same objects, never for equal copies, bounded."""

from __future__ import annotations

import gc

from llmplan.core.memo import IdentityCache
from llmplan.core.workload import TrainingSettings


def test_a_hit_needs_the_same_objects_and_the_same_rest():
    cache = IdentityCache()
    a = TrainingSettings(seq_len=2048)
    twin = TrainingSettings(seq_len=2048)  # equal, another object
    assert a == twin and a is not twin
    assert cache.put((a,), 1, "a, 1") == "a, 1"
    assert cache.get((a,), 1) == "a, 1"
    assert cache.get((twin,), 1) is None  # equal is not enough: the key is the identity
    assert cache.get((a,), 2) is None


def test_an_entry_keeps_its_objects_alive_so_their_ids_are_not_reused():
    cache = IdentityCache()
    cache.put((TrainingSettings(seq_len=1024),), None, "first")
    gc.collect()
    # the object the entry was made from is still alive, so no new object can take its id and hit
    hits = [cache.get((TrainingSettings(seq_len=1024),), None) for _ in range(200)]
    assert hits == [None] * 200


def test_it_forgets_everything_at_its_size():
    cache = IdentityCache(maxsize=3)
    objs = [TrainingSettings(seq_len=1024 * (i + 1)) for i in range(4)]
    for i, o in enumerate(objs[:3]):
        cache.put((o,), None, i)
    assert len(cache) == 3 and cache.get((objs[2],), None) == 2
    cache.put((objs[3],), None, 3)  # full: cleared first, then stored
    assert len(cache) == 1 and cache.get((objs[0],), None) is None and cache.get((objs[3],), None) == 3
