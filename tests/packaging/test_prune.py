"""packaging/prune.py: dropping the GTK theme plugin also drops the libraries only it needed."""

from __future__ import annotations

import importlib.util
import sys
import types

from tests.packaging.conftest import PACKAGING

NEEDS = {
    "/src/libqgtk3.so": ["libcairo.so.2", "libglib-2.0.so.0", "libQt6Gui.so.6"],
    "/src/libcairo.so.2": ["libpixman-1.so.0"],
    "/src/libQt6Gui.so.6": ["libglib-2.0.so.0", "libGL.so.1"],
    "/src/libqxcb.so": ["libQt6Gui.so.6"],
}
BINARIES = [
    ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", "/src/libqgtk3.so", "BINARY"),
    ("PySide6/Qt/plugins/platforms/libqxcb.so", "/src/libqxcb.so", "BINARY"),
    ("PySide6/Qt/lib/libQt6Gui.so.6", "/src/libQt6Gui.so.6", "BINARY"),
    ("libcairo.so.2", "/src/libcairo.so.2", "BINARY"),
    ("libpixman-1.so.0", "/src/libpixman-1.so.0", "BINARY"),
    ("libglib-2.0.so.0", "/src/libglib-2.0.so.0", "BINARY"),
    ("libssl.so.3", "/src/libssl.so.3", "BINARY"),  # needed by nothing listed (dlopen): must stay
]


def load_prune(monkeypatch):
    bindepend = types.ModuleType("PyInstaller.depend.bindepend")
    bindepend.get_imports = lambda filename, search_paths=None: [(n, "/x/" + n) for n in NEEDS.get(filename, [])]
    for name in ("PyInstaller", "PyInstaller.depend"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "PyInstaller.depend.bindepend", bindepend)
    spec = importlib.util.spec_from_file_location("_llmplan_packaging_prune_test", PACKAGING / "prune.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gtk_plugin_and_its_private_libraries_go_shared_ones_stay(monkeypatch):
    prune = load_prune(monkeypatch)
    kept = {dest for dest, _, _ in prune.drop_plugins(BINARIES)}
    assert "PySide6/Qt/plugins/platformthemes/libqgtk3.so" not in kept
    assert "libcairo.so.2" not in kept and "libpixman-1.so.0" not in kept  # only the GTK plugin reached them
    assert {"libglib-2.0.so.0", "libssl.so.3", "PySide6/Qt/plugins/platforms/libqxcb.so"} <= kept


def test_nothing_changes_when_no_plugin_matches(monkeypatch):
    prune = load_prune(monkeypatch)
    others = [b for b in BINARIES if "qgtk3" not in b[0]]
    assert prune.drop_plugins(others) == others
