"""Themes: disabled controls look disabled, "system" follows the OS, and charts follow a switch."""

from __future__ import annotations

from PySide6.QtGui import QPalette

from llmplan.gui import theme
from llmplan.gui.preferences import Preferences


def _text(palette: QPalette, group: QPalette.ColorGroup) -> str:
    return palette.color(group, QPalette.ColorRole.Text).name()


def test_both_palettes_grey_out_disabled_controls():
    """The light palette once painted disabled text like enabled text: QLoRA's option looked usable
    in a LoRA plan (README screenshot). Disabled text must differ from active text in both themes."""
    for palette in (theme._light_palette(), theme._dark_palette()):
        assert _text(palette, QPalette.ColorGroup.Disabled) != _text(palette, QPalette.ColorGroup.Active)


def test_system_theme_follows_the_operating_system(qapp, monkeypatch):
    monkeypatch.setattr(theme, "os_prefers_dark", lambda: True)
    theme.apply_theme(qapp, "system")
    assert theme.is_dark() and theme.chart_colours()[0] == "#202124"
    monkeypatch.setattr(theme, "os_prefers_dark", lambda: False)
    theme.apply_theme(qapp, "system")
    assert not theme.is_dark()


def test_switching_theme_recolours_the_charts_already_drawn(window):
    plot = window.charts.seq_plot
    window.apply_preferences(Preferences(theme="dark"))
    assert plot.backgroundBrush().color().name() == "#202124"
    assert plot.getPlotItem().getAxis("left").textPen().color().name() == "#e8eaed"
    window.apply_preferences(Preferences(theme="light"))
    assert plot.backgroundBrush().color().name() == "#ffffff"
    assert plot.getPlotItem().getAxis("left").textPen().color().name() == "#202124"
