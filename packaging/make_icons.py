"""Render the app icon SVG into the PNG sizes, ICO and ICNS the bundles need.

Run after editing resources/appicon/llmplan.svg:  .venv/bin/python packaging/make_icons.py
The outputs are committed, so building a bundle needs no SVG renderer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICON_DIR = Path(__file__).resolve().parents[1] / "resources" / "appicon"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICON_DIR / "llmplan.svg"))
    if not renderer.isValid():
        print("cannot read llmplan.svg", file=sys.stderr)
        return 1
    for size in SIZES:
        render(renderer, size).save(str(ICON_DIR / f"llmplan-{size}.png"))
    big = render(renderer, 256)
    if not big.save(str(ICON_DIR / "llmplan.ico")):
        print("could not write ICO", file=sys.stderr)
        return 1
    if not render(renderer, 512).save(str(ICON_DIR / "llmplan.icns")):
        print("could not write ICNS", file=sys.stderr)
        return 1
    print(f"wrote {len(SIZES)} PNGs, llmplan.ico and llmplan.icns to {ICON_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
