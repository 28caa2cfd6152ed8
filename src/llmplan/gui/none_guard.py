"""Keep PySide6 6.12.0 on Python 3.11 from killing the app with "deallocating None".

Measured here (PySide6 6.12.0, CPython 3.11.7): every call of a Qt method that returns
nothing (``setValue``, ``setCurrentIndex``, ``setObjectName``...) hands back ``None``
without taking a reference to it, so None's reference count drops by one per call; a
signal's ``emit()`` does the same with the ``True``/``False`` it returns. After a few
thousand calls (a long session, or the GUI test suite) the count reaches zero and CPython
aborts: ``Fatal Python error: none_dealloc: deallocating None`` (or ``bool_dealloc:
deallocating True or False``), exit code 134. Python 3.12 made these objects immortal
(PEP 683), so there the leak is harmless.

``guard_none()`` measures the leak once and, only when it is there, gives None, True and
False a reference count no session can use up (2**48 calls). It touches nothing else, and
it is a no-op on Python >= 3.12 or a PySide6 without the bug.
"""

from __future__ import annotations

import ctypes
import sys

_HEADROOM = 1 << 48
_applied = False


def leaks_none() -> bool:
    """True when a void Qt call lowers None's reference count (the PySide6 6.12.0 bug)."""
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(64):
        probe.setObjectName("llmplan-refcount-probe")
    return sys.getrefcount(None) < before - 32


def leaks_bool() -> bool:
    """True when ``Signal.emit`` lowers the reference count of the bool it returns."""
    from PySide6.QtCore import QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    before = sys.getrefcount(False), sys.getrefcount(True)
    for _ in range(64):
        probe.ping.emit()
    after = sys.getrefcount(False), sys.getrefcount(True)
    return any(a < b - 32 for a, b in zip(after, before, strict=True))


def guard_none() -> bool:
    """Apply the headroom once if this interpreter needs it; True when applied."""
    global _applied
    if _applied or sys.version_info >= (3, 12):
        return _applied
    leaking = ([None] if leaks_none() else []) + ([False, True] if leaks_bool() else [])
    for obj in leaking:
        # CPython < 3.12 (release builds): ob_refcnt is the first Py_ssize_t of every object.
        ctypes.c_ssize_t.from_address(id(obj)).value += _HEADROOM
    _applied = bool(leaking)
    return _applied
