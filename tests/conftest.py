"""Test-wide setup: Qt offscreen before any QApplication exists (TOOLCHAIN.md gotcha 1)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTEST_QT_API", "pyside6")
