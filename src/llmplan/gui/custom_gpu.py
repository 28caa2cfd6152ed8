"""A dialog to describe a GPU that is not in the catalog. The spec goes into the plan
inline (``hardware.gpu_spec``), so the plan stays self-contained; it can also be
saved to the user's hardware catalog (``llmplan.catalog.hardware.save_user_gpu``)."""

from __future__ import annotations

import re

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QWidget,
)

from llmplan.core.hardware import GpuSpec, PeakFlops
from llmplan.gui.dialogs import error_and_buttons


def _spin(lo: float, hi: float, value: float, suffix: str, decimals: int = 1) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setDecimals(decimals)
    s.setValue(value)
    s.setSuffix(f" {suffix}")
    s.setAccessibleName(suffix)
    return s


class CustomGpuDialog(QDialog):
    accepted_spec = Signal(object)  # GpuSpec

    def __init__(self, base: GpuSpec | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Custom GPU")
        f = QFormLayout(self)
        self.name = QLineEdit(f"Custom {base.name}" if base else "My GPU")
        self.name.setAccessibleName("GPU name")
        self.vendor = QComboBox()
        for v in ("nvidia", "amd", "intel", "apple", "google", "other"):
            self.vendor.addItem(v)
        if base:
            self.vendor.setCurrentText(base.vendor)
        self.memory = _spin(0.1, 100_000, base.memory_bytes / 1024**3 if base else 24.0, "GiB")
        self.bandwidth = _spin(1, 100_000, base.memory_bandwidth / 1e9 if base else 1000.0, "GB/s", 0)
        self.bf16 = _spin(0.1, 100_000, base.peak_flops.for_dtype("bf16") / 1e12 if base else 100.0,
                          "TFLOP/s (dense BF16)")
        self.fp8 = _spin(0, 100_000, (base.peak_flops.fp8 or 0) / 1e12 if base else 0.0, "TFLOP/s (dense FP8, 0: none)")
        self.link = _spin(0, 10_000, base.nvlink_bandwidth / 1e9 if base else 0.0, "GB/s GPU-to-GPU (0: PCIe only)", 0)
        self.pcie = _spin(1, 1_000, base.pcie_bandwidth / 1e9 if base and base.pcie_bandwidth else 32.0,
                          "GB/s host link", 0)
        self.price = _spin(0, 10_000, base.price_per_hour or 0.0 if base else 0.0, "USD/hour (0: unknown)", 2)
        self.save_user = QCheckBox("Also add it to my GPU catalog")
        for label, w in (("Name", self.name), ("Vendor", self.vendor), ("Memory", self.memory),
                         ("Memory bandwidth", self.bandwidth), ("Peak BF16", self.bf16), ("Peak FP8", self.fp8),
                         ("GPU-to-GPU link", self.link), ("Host link", self.pcie), ("Price", self.price)):
            f.addRow(label, w)
        f.addRow(self.save_user)
        self.error = error_and_buttons(f, self._ok, self.reject)

    def spec(self) -> GpuSpec:
        name = self.name.text().strip() or "My GPU"
        gpu_id = "custom-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu")
        bf16 = self.bf16.value() * 1e12
        return GpuSpec(id=gpu_id, name=name, vendor=self.vendor.currentText(),
                       memory_bytes=int(self.memory.value() * 1024**3), memory_bandwidth=self.bandwidth.value() * 1e9,
                       peak_flops=PeakFlops(bf16=bf16, fp8=self.fp8.value() * 1e12 or None),
                       nvlink_bandwidth=self.link.value() * 1e9, pcie_bandwidth=self.pcie.value() * 1e9,
                       price_per_hour=self.price.value() or None)

    def _ok(self) -> None:
        try:
            spec = self.spec()
        except Exception as exc:
            self.error.setText(str(exc))
            return
        if self.save_user.isChecked():
            from llmplan.catalog.hardware import save_user_gpu

            try:
                save_user_gpu(spec, match_names=(spec.name,), notes="added in the desktop app")
            except Exception as exc:
                self.error.setText(f"Could not save it to your catalog: {exc}")
                return
        self.accepted_spec.emit(spec)
        self.accept()
