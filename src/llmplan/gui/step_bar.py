"""One training step of the slowest GPU, stacked by what it spends its time on.

Beside the memory bar: ``ComputeReport.breakdown`` (GEMMs, attention, memory-bound kernels, loss,
dequantisation, fp8 casts, gradient clipping, optimizer, launch overhead, exposed communication, pipeline bubble, offload) as
coloured segments that add up to the step time. Hover shows the part's seconds and the step-time
formula, so a person sees *why* a step takes what it takes.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from llmplan.core.result import ComputeReport
from llmplan.gui.memory_bar import LEGEND_ROW_H, paint_legend
from llmplan.gui.tooltips import wrap_tip

BAR_H = 22
PARTS = {  # breakdown key -> (label, colour)
    "gemm": ("GEMMs", "#4e79a7"),
    "attention": ("Attention", "#76b7b2"),
    "memory_bound": ("Memory-bound kernels", "#f28e2b"),
    "loss": ("Loss", "#edc948"),
    "dequantisation": ("NF4 dequantisation", "#b07aa1"),
    "fp8_casts": ("fp8 casts (amax, cast, transpose)", "#a0cbe8"),
    "kernel_gaps": ("Idle between kernels", "#86bcb6"),
    "gradient_clipping": ("Gradient clipping", "#ff9d9a"),
    "optimizer": ("Optimizer step", "#e15759"),
    "launch_overhead": ("Host CPU, beyond the GPU (host-bound)", "#9c755f"),
    "exposed_communication": ("Exposed communication", "#59a14f"),
    "pipeline_bubble": ("Pipeline bubble", "#bab0ac"),
    "offload": ("Offload", "#ff9da7"),
    "host_transfers": ("Host transfers (activation offload, paged optimizer)", "#d4a6c8"),
}


def fmt_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


class StepTimeBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.compute: ComputeReport | None = None
        self.setMouseTracking(True)
        self.setMinimumHeight(BAR_H + 2 * LEGEND_ROW_H + 10)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Step time per GPU")
        self._segments: list[tuple[QRectF, str]] = []

    def set_compute(self, compute: ComputeReport | None) -> None:
        self.compute = compute
        self.setAccessibleDescription(self.summary())
        self.setVisible(compute is not None and bool(compute.breakdown))
        self.update()

    def parts(self) -> list[tuple[str, float]]:
        if self.compute is None:
            return []
        return [(k, v) for k, v in self.compute.breakdown.items() if v > 0 and k in PARTS]

    def summary(self) -> str:
        if self.compute is None:
            return "no estimate"
        return ", ".join(f"{PARTS[k][0]} {fmt_seconds(v)}" for k, v in self.parts())

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        self._segments = []
        total = sum(v for _, v in self.parts())
        if not total:
            return
        w = self.width() - 2
        x = 1.0
        for key, value in self.parts():
            rect = QRectF(x, 2, w * value / total, BAR_H)
            p.fillRect(rect, QColor(PARTS[key][1]))
            self._segments.append((rect, key))
            x += rect.width()
        p.setPen(self.palette().windowText().color())
        p.drawRect(QRectF(1, 2, w - 1, BAR_H))
        paint_legend(self, p, [(f"{PARTS[k][0]} {fmt_seconds(v)}", PARTS[k][1]) for k, v in self.parts()],
                     BAR_H + 8)

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        for rect, key in self._segments:
            if rect.contains(pos) and self.compute is not None:
                value = self.compute.breakdown[key]
                share = value / self.compute.step_time_s.value if self.compute.step_time_s.value else 0.0
                own = self.compute.grad_clip_s if key == "gradient_clipping" else None  # a part with its own figure
                QToolTip.showText(event.globalPosition().toPoint(),
                                  wrap_tip(f"{PARTS[key][0]}: {fmt_seconds(value)} ({share:.0%} of the step)\n"
                                           f"{(own or self.compute.step_time_s).describe()}"), self)
                return
        QToolTip.hideText()
