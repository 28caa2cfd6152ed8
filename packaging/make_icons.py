"""Render the app icon SVG into the PNG sizes, ICO and ICNS the bundles need.

Run after editing resources/appicon/llmplan.svg:  .venv/bin/python packaging/make_icons.py
The outputs are committed, so building a bundle needs no SVG renderer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from icon_files import write_icns, write_ico

ICON_DIR = Path(__file__).resolve().parents[1] / "resources" / "appicon"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)  # committed PNGs: the hicolor theme sizes
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)  # what Windows shows, from list view to jumbo
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)  # Finder, with the @2x Retina variants


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def main() -> int:
    QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICON_DIR / "llmplan.svg"))
    if not renderer.isValid():
        print("cannot read llmplan.svg", file=sys.stderr)
        return 1
    pngs = {size: png_bytes(render(renderer, size)) for size in sorted({*SIZES, *ICO_SIZES, *ICNS_SIZES})}
    for size in SIZES:
        (ICON_DIR / f"llmplan-{size}.png").write_bytes(pngs[size])
    (ICON_DIR / "llmplan.ico").write_bytes(write_ico({s: pngs[s] for s in ICO_SIZES}))
    (ICON_DIR / "llmplan.icns").write_bytes(write_icns({s: pngs[s] for s in ICNS_SIZES}))
    print(f"wrote {len(SIZES)} PNGs, llmplan.ico and llmplan.icns to {ICON_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
