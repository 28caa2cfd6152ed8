"""Light and dark palettes, and the colours every panel shares (memory parts, stages).

"system" follows the operating system's light/dark setting (Qt's ``styleHints().colorScheme()``),
at start-up and when it changes; both palettes grey out disabled controls, so a knob that does
not apply (QLoRA double quantisation in a LoRA plan) looks it.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

# One colour per memory component, in MemoryBreakdown.parts() order (colour-blind-safe-ish
# Tableau 10), so the memory bar, its legend and the charts agree.
PART_COLOURS = {
    "weights": "#4e79a7",
    "master_weights": "#a0cbe8",
    "gradients": "#f28e2b",
    "optimizer": "#e15759",
    "activations": "#59a14f",
    "kv_cache": "#b07aa1",
    "buffers": "#edc948",
    "overhead": "#9c755f",
}
PART_LABELS = {
    "weights": "Weights",
    "master_weights": "Master weights",
    "gradients": "Gradients",
    "optimizer": "Optimizer states",
    "activations": "Activations",
    "kv_cache": "KV cache",
    "buffers": "Buffers",
    "overhead": "Overhead",
}
# What an offloading plan keeps off the GPUs, per node as the estimate reports it (never split per GPU: llama.cpp's
# host layers are one pool the CPU reads). The results table's rows, the memory bar's legend and the CLI's lines
# (cli.report) use these words.
OFF_GPU_LABELS = {"host_ram": "Host RAM per node", "nvme": "NVMe per node"}


OFF_GPU_NOTE = "(offload, not on a GPU)"  # after an ``OFF_GPU_LABELS`` label where the figure is not a bar part


def off_gpu_entry(label: str, n_bytes: float, unit) -> str:
    """'Host RAM per node (offload, not on a GPU) 16.56 GiB': what a plan keeps off its GPUs (``label``, from
    ``OFF_GPU_LABELS``), in the words of the memory bar's legend, the exports and the CLI's line."""
    return f"{label} {OFF_GPU_NOTE} {unit.fmt_any(n_bytes)}"


def offload_label(key: str) -> str:
    """'Host RAM per node (offload)': the results table's row and the memory charts' curve of ``key``."""
    return f"{OFF_GPU_LABELS[key]} (offload)"


# Pipeline stages get distinct hues; tensor ranks inside a stage get lighter shades of it.
STAGE_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#bab0ac"]
OK_COLOUR = "#2e7d32"
BAD_COLOUR = "#c62828"
WARN_COLOUR = "#ef6c00"


def stage_colour(stage: int, tp_rank: int = 0, tp: int = 1) -> QColor:
    base = QColor(STAGE_COLOURS[stage % len(STAGE_COLOURS)])
    if tp <= 1:
        return base
    return base.lighter(100 + int(60 * tp_rank / max(tp - 1, 1)))


def is_dark() -> bool:
    app = QApplication.instance()
    if app is None:
        return False
    return app.palette().color(QPalette.ColorRole.Window).lightness() < 128


def os_prefers_dark() -> bool:
    """The operating system's light/dark setting (Unknown, e.g. offscreen, counts as light)."""
    return QApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def resolved_theme(theme: str) -> str:
    """'light' or 'dark' for a preference of 'light', 'dark' or 'system'."""
    if theme in ("light", "dark"):
        return theme
    return "dark" if os_prefers_dark() else "light"


def chart_colours() -> tuple[str, str]:
    """(background, foreground) for charts in the current palette."""
    return ("#202124", "#e8eaed") if is_dark() else ("#ffffff", "#202124")


def apply_theme(app: QApplication, theme: str) -> None:
    """'light', 'dark' or 'system' (the operating system's light/dark setting). Charts drawn from now
    on take the matching colours; ``restyle_plot`` recolours existing ones."""
    app.setStyle("Fusion")
    app.setPalette(_dark_palette() if resolved_theme(theme) == "dark" else _light_palette())
    global _THEMED
    _THEMED = True
    pg = sys.modules.get("pyqtgraph")  # not imported for this: the charts import it after the first paint
    if pg is not None:
        configure_pyqtgraph(pg)


_THEMED = False  # apply_theme has run: plots made from now on take its colours


def configure_pyqtgraph(pg) -> None:
    """pyqtgraph's defaults for plots made from now on, once a theme is applied: the theme's chart colours,
    antialiased (``apply_theme``; the charts call this when they import pyqtgraph, after the first paint)."""
    if not _THEMED:
        return
    background, foreground = chart_colours()
    pg.setConfigOptions(background=background, foreground=foreground, antialias=True)


def restyle_plot(plot) -> None:
    """Give an existing pyqtgraph PlotWidget the current theme's background, axes and titles."""
    background, foreground = chart_colours()
    plot.setBackground(background)
    item = plot.getPlotItem()
    item.titleLabel.setText(item.titleLabel.text, color=foreground)
    for side in ("left", "bottom"):
        axis = item.getAxis(side)
        axis.setPen(foreground)
        axis.setTextPen(foreground)
        axis.setLabel(axis.labelText, axis.labelUnits, color=foreground)


def _light_palette() -> QPalette:
    p = QPalette()
    R = QPalette.ColorRole
    for role, colour in ((R.Window, "#f5f5f5"), (R.WindowText, "#202124"), (R.Base, "#ffffff"),
                         (R.AlternateBase, "#f0f0f0"), (R.Text, "#202124"), (R.Button, "#eeeeee"),
                         (R.ButtonText, "#202124"), (R.Highlight, "#1a73e8"), (R.HighlightedText, "#ffffff"),
                         (R.ToolTipBase, "#ffffe0"), (R.ToolTipText, "#202124"), (R.PlaceholderText, "#80868b"),
                         (R.Link, "#1a73e8")):
        p.setColor(role, QColor(colour))
    for role in (R.Text, R.WindowText, R.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#9aa0a6"))
    return p


def _dark_palette() -> QPalette:
    p = QPalette()
    R = QPalette.ColorRole
    for role, colour in ((R.Window, "#2b2b2b"), (R.WindowText, "#e8eaed"), (R.Base, "#1e1e1e"),
                         (R.AlternateBase, "#262626"), (R.Text, "#e8eaed"), (R.Button, "#3a3a3a"),
                         (R.ButtonText, "#e8eaed"), (R.Highlight, "#8ab4f8"), (R.HighlightedText, "#202124"),
                         (R.ToolTipBase, "#3c4043"), (R.ToolTipText, "#e8eaed"), (R.PlaceholderText, "#9aa0a6"),
                         (R.Link, "#8ab4f8")):
        p.setColor(role, QColor(colour))
    for role in (R.Text, R.WindowText, R.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7f7f7f"))
    return p
