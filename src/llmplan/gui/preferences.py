"""Preferences (memory unit, theme, default efficiencies), kept apart from UI state.

Preferences live under the ``prefs/`` group of QSettings, window geometry and splitter
positions under ``ui/`` (``main_window``), so resetting one never touches the other.

The settings file is text anyone (or an older build) may have written: every value is
checked on load, and one that is not a number, not finite, or out of range (a matmul
efficiency of 5.0 gave an MFU of 260% and a plan that could not be reopened) falls back to
its default with a notice naming the key, the stored value and what was used instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFormLayout, QWidget

from llmplan.gui.tooltips import wrap_tip

MEMORY_UNITS = ("GiB", "GB")
THEMES = ("system", "light", "dark")


@dataclass(frozen=True, slots=True)
class Preferences:
    memory_unit: str = "GiB"  # or "GB"
    theme: str = "system"  # "light" | "dark" | "system"
    matmul: float = 0.0  # 0: the catalog's default; else the default override for new plans
    memory_bandwidth: float = 0.0
    network: float = 0.0

    @classmethod
    def load(cls, s: QSettings, problems: list[str] | None = None) -> Preferences:
        """The stored preferences; a bad value falls back to its default and is described in ``problems``."""
        problems = [] if problems is None else problems
        d = cls()

        def choice(key: str, allowed: tuple[str, ...]) -> str:
            raw = s.value(f"prefs/{key}", getattr(d, key))
            if isinstance(raw, str) and raw in allowed:
                return raw
            problems.append(f"Preference {key} = {str(raw)[:40]!r} is not one of {', '.join(allowed)}; "
                            f"using {getattr(d, key)}")
            return getattr(d, key)

        def fraction(key: str) -> float:
            raw = s.value(f"prefs/{key}", getattr(d, key))
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = math.nan
            if math.isfinite(value) and 0.0 <= value <= 1.0:
                return value
            problems.append(f"Preference {key} efficiency = {str(raw)[:40]!r} is not a fraction between 0 and 1; "
                            "using the catalog default")
            return getattr(d, key)

        return cls(memory_unit=choice("memory_unit", MEMORY_UNITS), theme=choice("theme", THEMES),
                   matmul=fraction("matmul"), memory_bandwidth=fraction("memory_bandwidth"),
                   network=fraction("network"))

    def save(self, s: QSettings) -> None:
        for key in ("memory_unit", "theme", "matmul", "memory_bandwidth", "network"):
            s.setValue(f"prefs/{key}", getattr(self, key))

    def efficiency_overrides(self) -> dict[str, float | None]:
        return {k: (v or None) for k, v in (("matmul", self.matmul), ("memory_bandwidth", self.memory_bandwidth),
                                            ("network", self.network))}


class PreferencesDialog(QDialog):
    def __init__(self, prefs: Preferences, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        form = QFormLayout(self)
        self.unit = QComboBox()
        self.unit.addItem("GiB (1024³ bytes)", "GiB")
        self.unit.addItem("GB (10⁹ bytes)", "GB")
        self.unit.setCurrentIndex(max(self.unit.findData(prefs.memory_unit), 0))
        self.unit.setAccessibleName("Memory unit")
        self.theme = QComboBox()
        for value, text in (("system", "System"), ("light", "Light"), ("dark", "Dark")):
            self.theme.addItem(text, value)
        self.theme.setCurrentIndex(max(self.theme.findData(prefs.theme), 0))
        self.theme.setAccessibleName("Theme")
        form.addRow("Memory unit", self.unit)
        form.addRow("Theme", self.theme)
        self.effs = {}
        for key, label, tip in (("matmul", "Matmul efficiency", "Fraction of dense peak FLOP/s large GEMMs reach"),
                                ("memory_bandwidth", "Memory bandwidth efficiency", "Fraction of peak HBM bandwidth"),
                                ("network", "Network efficiency", "Fraction of link bandwidth collectives reach")):
            spin = QDoubleSpinBox()
            spin.setRange(0.0, 1.0)
            spin.setSingleStep(0.05)
            spin.setSpecialValueText("catalog default")
            spin.setValue(getattr(prefs, key))
            spin.setToolTip(wrap_tip(tip + " (default for new plans; 'catalog default' keeps the GPU's own)"))
            spin.setAccessibleName(label)
            form.addRow(label, spin)
            self.effs[key] = spin
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def result_prefs(self) -> Preferences:
        return Preferences(self.unit.currentData(), self.theme.currentData(),
                           *(self.effs[k].value() for k in ("matmul", "memory_bandwidth", "network")))
