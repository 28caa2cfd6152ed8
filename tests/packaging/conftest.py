"""Helpers for the packaging tests: load the stdlib-only modules in packaging/ by path.

packaging/ is not a Python package (PyInstaller runs its files from there), so each module is
loaded from its file under a private name; nothing is left on sys.path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging"
LINUX = PACKAGING / "linux"
APPICON = REPO / "resources" / "appicon"
EXAMPLES = sorted((REPO / "resources" / "examples").glob("*.llmplan"))


def load(name: str):
    module_name = f"_llmplan_packaging_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def meta():
    return load("bundle_meta")


@pytest.fixture(scope="session")
def desktop_entry():
    return load("desktop_entry")
