"""Keyboard use: every Alt+letter mnemonic in view is unique (two controls on one letter
make Qt fire neither), and the new controls carry accessible names and tooltips with units."""

from __future__ import annotations

import re

import pytest
from PySide6.QtWidgets import QAbstractButton, QGroupBox, QLabel, QTabWidget, QWidget

_MNEMONIC = re.compile(r"&([^&\s])")


def _letter(text: str) -> str | None:
    found = _MNEMONIC.search(text.replace("&&", ""))
    return found.group(1).lower() if found else None


def _mnemonics_in_view(window) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for action in window.menuBar().actions():
        out.append((_letter(action.text()), f"menu {action.text()}"))
    for w in window.findChildren(QWidget):
        if not w.isVisibleTo(window):
            continue
        if isinstance(w, QAbstractButton):
            out.append((_letter(w.text()), f"button {w.text()}"))
        elif isinstance(w, QLabel) and w.buddy() is not None:
            out.append((_letter(w.text()), f"label {w.text()}"))
        elif isinstance(w, QGroupBox):
            out.append((_letter(w.title()), f"group {w.title()}"))
        elif isinstance(w, QTabWidget):
            out += [(_letter(w.tabText(i)), f"tab {w.tabText(i)}") for i in range(w.count())]
    return [(k, what) for k, what in out if k]


@pytest.mark.parametrize("tab", [0, 1, 2])
def test_alt_letters_are_unique_in_every_workload_tab(window, tab):
    window.workload.setCurrentIndex(tab)
    seen: dict[str, str] = {}
    for key, what in _mnemonics_in_view(window):
        assert key not in seen, f"Alt+{key} is both {seen[key]!r} and {what!r}"
        seen[key] = what


def test_cluster_and_power_editors_are_named_and_explained(window):
    window.workload.setCurrentIndex(2)
    editors = [w for w in window.workload.findChildren(QWidget) if w.objectName().startswith("system.")
               and w.isVisibleTo(window)]
    assert {w.objectName() for w in editors} >= {
        "system.storage", "system.data_storage", "system.offload_storage", "system.failures", "system.pue",
        "system.electricity_price", "system.grid_intensity", "system.price_per_kwh", "system.kg_co2_per_kwh",
        "system.async_save", "system.interval_s", "system.restart_overhead_s", "system.pretokenized"}
    for w in editors:
        assert w.accessibleName(), w.objectName()
        assert f"plan field: {w.objectName()}" in w.toolTip()
    units = {"system.price_per_kwh": "USD", "system.kg_co2_per_kwh": "kg CO2", "system.interval_s": "Seconds",
             "system.restart_overhead_s": "Seconds", "system.storage": "bytes/s"}
    for w in editors:
        if w.objectName() in units:
            assert units[w.objectName()] in w.toolTip(), w.objectName()
