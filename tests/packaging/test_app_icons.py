"""The app icon set in resources/appicon: PNG sizes, and the ICO/ICNS containers around them."""

from __future__ import annotations

import pytest

from tests.packaging.conftest import APPICON, load

icon_files = load("icon_files")


@pytest.mark.parametrize("size", [16, 24, 32, 48, 64, 128, 256, 512])
def test_each_hicolor_png_has_its_size(size):
    assert icon_files.png_size((APPICON / f"llmplan-{size}.png").read_bytes()) == (size, size)


def test_ico_holds_every_windows_size_as_png():
    images = icon_files.read_ico((APPICON / "llmplan.ico").read_bytes())
    assert sorted(images) == [16, 24, 32, 48, 64, 128, 256]
    for size, png in images.items():
        assert icon_files.png_size(png) == (size, size)


def test_icns_holds_the_finder_sizes_with_retina_variants():
    elements = icon_files.read_icns((APPICON / "llmplan.icns").read_bytes())
    expected = dict(icon_files.ICNS_TYPES)
    assert set(elements) == set(expected)
    for kind, png in elements.items():
        assert icon_files.png_size(png) == (expected[kind], expected[kind]), kind


def test_qt_reads_the_containers_back():
    pytest.importorskip("PySide6.QtGui")
    from PySide6.QtGui import QImageReader

    for name, count in (("llmplan.ico", 7), ("llmplan.icns", 11)):
        reader = QImageReader(str(APPICON / name))
        assert reader.canRead(), name
        assert reader.imageCount() == count, name


def test_writers_refuse_mislabelled_images():
    png16 = (APPICON / "llmplan-16.png").read_bytes()
    with pytest.raises(ValueError, match="32x32"):
        icon_files.write_ico({32: png16})
    with pytest.raises(ValueError, match="at most 256"):
        icon_files.write_ico({512: (APPICON / "llmplan-512.png").read_bytes()})
    with pytest.raises(ValueError, match="not a PNG"):
        icon_files.write_icns({16: b"GIF89a" + bytes(30)})
    with pytest.raises(ValueError, match="not an ICNS"):
        icon_files.read_icns(b"GIF89a")
    with pytest.raises(ValueError, match="truncated"):
        icon_files.read_icns(b"icns\x00\x00\x00\x09x")
    with pytest.raises(ValueError, match="truncated"):
        icon_files.read_ico((APPICON / "llmplan.ico").read_bytes()[:200])


def test_the_svg_source_is_the_scalable_icon():
    text = (APPICON / "llmplan.svg").read_text(encoding="utf-8")
    assert 'viewBox="0 0 256 256"' in text
