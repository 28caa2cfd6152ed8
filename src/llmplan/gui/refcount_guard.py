"""A guard against a reference-count bug in the installed PySide6 build: calls drop references to None/True.

Measured here with PySide6 6.12.0 on CPython 3.11 (``sys.getrefcount`` before and after 100 calls):
every void method called from Python (``QPolygonF.resize``, ``QGraphicsPathItem.setPath``,
``setVisible`` ...) leaves ``None`` with one reference fewer, and every ``SignalInstance.emit`` does the
same to ``True``. In CPython before 3.12 these singletons are ordinary objects: once their count
reaches zero Python aborts ("Fatal Python error: none_dealloc" / "bool_dealloc"). A short session
never gets there; a Watch panel redrawing 8 GPUs every second makes hundreds of such calls a tick
and would abort within the hour.

`guard_singletons` checks for the leak with a few harmless calls and, only where it is found (and
only on CPython < 3.12, where these objects are not immortal), adds 2**40 to the three counts in
place — what CPython 3.12 does for them by making them immortal. Nothing is allocated; the objects
are never freed in a running interpreter anyway.
"""

from __future__ import annotations

import ctypes
import sys

EXTRA_REFERENCES = 2**40  # ~10^12: at 10^4 dropped references a second, more than three years
_guarded = False


def qt_drops_references(calls: int = 20) -> bool:
    """True when void Qt calls or signal emits from Python lose references to None or True."""
    from PySide6.QtCore import QObject, Signal
    from PySide6.QtGui import QPolygonF

    class _Probe(QObject):
        ping = Signal()

    probe, poly = _Probe(), QPolygonF()
    none0, true0 = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(calls):
        poly.resize(1)
        probe.ping.emit()
    return sys.getrefcount(None) < none0 - calls // 2 or sys.getrefcount(True) < true0 - calls // 2


def guard_singletons() -> bool:
    """Apply the guard once per process where the leak is present; returns whether it is applied."""
    global _guarded
    if _guarded:
        return True
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12) or not qt_drops_references():
        return False
    for obj in (None, True, False):
        ctypes.c_ssize_t.from_address(id(obj)).value += EXTRA_REFERENCES  # ob_refcnt is PyObject's first field
    _guarded = True
    return True
