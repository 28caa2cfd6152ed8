"""The PyInstaller spec, run with recording stand-ins for PyInstaller's build classes.

PyInstaller is only installed for `make dist` (requirements-dist.txt), so this test executes
packaging/llmplan.spec the way PyInstaller does (exec with SPECPATH and workpath defined) but
with fake Analysis/PYZ/EXE/COLLECT/BUNDLE that record their arguments. It checks what the
bundle will contain on each platform without spending a minute building it; `make dist-check`
checks the real build.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

import llmplan
from tests.packaging.conftest import APPICON, PACKAGING, REPO


class Recorder:
    calls: list[Recorder]

    def __init__(self, *args, **kwargs) -> None:
        self.args, self.kwargs = args, kwargs
        self.pure, self.scripts, self.binaries, self.datas = [], [], [], []
        Recorder.calls.append(self)


def _kind(name: str) -> type:
    return type(name, (Recorder,), {})


def run_spec(monkeypatch, tmp_path: Path, *, darwin: bool = False, win: bool = False) -> dict:
    Recorder.calls = []
    compat = types.ModuleType("PyInstaller.compat")
    compat.is_darwin, compat.is_win = darwin, win
    bindepend = types.ModuleType("PyInstaller.depend.bindepend")
    bindepend.get_imports = lambda filename, search_paths=None: []
    for name, module in {"PyInstaller": types.ModuleType("PyInstaller"), "PyInstaller.compat": compat,
                         "PyInstaller.depend": types.ModuleType("PyInstaller.depend"),
                         "PyInstaller.depend.bindepend": bindepend}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the spec prepends packaging/
    for name in ("bundle_meta", "prune"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    namespace = {name: _kind(name) for name in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")}
    namespace.update(SPECPATH=str(PACKAGING), workpath=str(tmp_path / "build"), __file__="llmplan.spec")
    exec(compile((PACKAGING / "llmplan.spec").read_text(encoding="utf-8"), "llmplan.spec", "exec"), namespace)
    for name in ("bundle_meta", "prune"):
        sys.modules.pop(name, None)
    return {kind: [c for c in Recorder.calls if type(c).__name__ == kind]
            for kind in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")}


def test_one_analysis_ships_catalogs_and_resources_where_resources_path_looks(monkeypatch, tmp_path):
    calls = run_spec(monkeypatch, tmp_path)
    (analysis,) = calls["Analysis"]
    assert analysis.args[0] == [str(PACKAGING / "launch.py")]
    datas = dict((dest, Path(src)) for src, dest in analysis.kwargs["datas"])
    # llmplan.resources_path finds them as importlib.resources.files("llmplan") / name
    assert datas == {"llmplan/catalogs": REPO / "catalogs", "llmplan/resources": REPO / "resources"}
    assert all(p.is_dir() for p in datas.values())
    assert "pynvml" in analysis.kwargs["hiddenimports"]  # imported by name in llmplan.hw.nvidia
    assert {"tkinter", "pyqtgraph.opengl", "torch", "pytest"} <= set(analysis.kwargs["excludes"])
    assert analysis.kwargs["pathex"] == [str(REPO / "src")]


def test_linux_folder_holds_the_app_and_the_cli_without_a_mac_bundle(monkeypatch, tmp_path):
    calls = run_spec(monkeypatch, tmp_path)
    names = [(e.kwargs["name"], e.kwargs["console"]) for e in calls["EXE"]]
    assert names == [("llmplan", False), ("llmplan-cli", True)]
    (collect,) = calls["COLLECT"]
    assert collect.kwargs["name"] == "llmplan"
    assert collect.args[:2] == tuple(calls["EXE"])  # the GUI first: macOS takes the first as the app's
    assert all(e.kwargs["icon"] is None and e.kwargs["version"] is None for e in calls["EXE"])
    assert not calls["BUNDLE"]
    assert not (tmp_path / "build").exists()


def test_macos_app_declares_the_plan_document_type_and_version(monkeypatch, tmp_path):
    calls = run_spec(monkeypatch, tmp_path, darwin=True)
    (bundle,) = calls["BUNDLE"]
    kw = bundle.kwargs
    assert kw["name"] == "llmplan.app"
    assert kw["bundle_identifier"] == "io.github.llmplan.LLMPlan"
    assert kw["version"] == llmplan.__version__
    assert Path(kw["icon"]) == APPICON / "llmplan.icns"
    plist = kw["info_plist"]
    assert plist["CFBundleShortVersionString"] == llmplan.__version__
    assert plist["CFBundleDocumentTypes"][0]["LSItemContentTypes"] == ["io.github.llmplan.plan"]
    assert plist["UTExportedTypeDeclarations"][0]["UTTypeTagSpecification"]["public.filename-extension"] == ["llmplan"]
    assert all(e.kwargs["argv_emulation"] is False for e in calls["EXE"])  # Qt's FileOpen event instead


def test_windows_exes_get_the_icon_and_a_version_resource(monkeypatch, tmp_path):
    calls = run_spec(monkeypatch, tmp_path, win=True)
    for exe in calls["EXE"]:
        assert Path(exe.kwargs["icon"]) == APPICON / "llmplan.ico"
        text = Path(exe.kwargs["version"]).read_text(encoding="utf-8")
        assert f"StringStruct('ProductVersion', '{llmplan.__version__}')" in text


@pytest.mark.parametrize(("exe", "module"), [("llmplan-cli", "llmplan.cli"), ("llmplan", "llmplan.gui.app"),
                                             ("LLMPLAN-CLI.exe", "llmplan.cli")])
def test_the_launcher_picks_the_front_end_by_executable_name(monkeypatch, exe, module):
    import importlib

    target = importlib.import_module(module)
    seen = []
    monkeypatch.setattr(target, "main", lambda: seen.append(module) or 7)
    monkeypatch.setattr(sys, "executable", f"/opt/llmplan/{exe}")
    with pytest.raises(SystemExit) as stop:
        exec(compile((PACKAGING / "launch.py").read_text(encoding="utf-8"), "launch.py", "exec"), {})
    assert stop.value.code == 7 and seen == [module]
