"""One look at the catalogs per plan evaluation (``one_catalog_read``).

Every catalog loader checks the user's override files on disk before it answers from its cache (a ``stat``
of each file, 25-50 µs of CPU a load), so that a user who edits ``engines.toml`` sees the change on the next
estimate. Resolving one plan asks for the hardware catalog four times, the frameworks twice, and so on:
about ten such checks per evaluation (0.1-0.4 ms of a GUI knob change, more with files in the user's
hardware folder, each of which was checked four times: docs/gui.md, "Speed"). Inside ``one_catalog_read``
each loader checks the disk once and then hands back what it loaded, so one evaluation sees one consistent
set of catalogs; the next evaluation opens a new read and sees any edit made in between.

The read is a ``ContextVar``: it belongs to the thread (and asyncio task) that opened it, so a chart sweep
or a background search in another thread is never answered from it. Nested reads share the outer one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

_READ: ContextVar[dict[Hashable, Any] | None] = ContextVar("llmplan_catalog_read", default=None)

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def catalog_read() -> Iterator[None]:
    """Within the block every catalog is checked on disk and loaded at most once; an enclosing read is reused."""
    if _READ.get() is not None:
        yield
        return
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def one_catalog_read(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` runs inside ``catalog_read``: what it loads, directly or through the functions it calls, is
    loaded once."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with catalog_read():
            return fn(*args, **kwargs)

    return wrapper


def within_read(key: Hashable, load: Callable[[], R]) -> R:
    """``load()``, or inside a read the value it gave the first time ``key`` was asked for in that read.
    Outside a read, ``load()`` every time (its own cache then checks the files)."""
    seen = _READ.get()
    if seen is None:
        return load()
    if key not in seen:
        seen[key] = load()
    return seen[key]
