"""One version number everywhere, and the bundle metadata derived from it (packaging/bundle_meta.py)."""

from __future__ import annotations

import ast
import plistlib
import re
import xml.etree.ElementTree as ET

import pytest

import llmplan
from tests.packaging.conftest import LINUX, REPO


def test_the_spec_reads_the_same_version_the_package_reports(meta):
    assert meta.read_version() == llmplan.__version__


def test_pyproject_takes_its_version_from_the_package():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in text
    assert re.search(r'\[tool\.hatch\.version\]\s*path = "src/llmplan/__init__.py"', text)


def test_a_missing_version_line_is_a_clear_error(meta, tmp_path):
    (tmp_path / "src" / "llmplan").mkdir(parents=True)
    (tmp_path / "src" / "llmplan" / "__init__.py").write_text('"""no version here"""\n')
    with pytest.raises(ValueError, match="no __version__"):
        meta.read_version(tmp_path)


@pytest.mark.parametrize(("version", "expected"), [
    ("0.1.0", (0, 1, 0, 0)), ("1.2", (1, 2, 0, 0)), ("1.2.3rc1", (1, 2, 3, 0)), ("2.0.1.7", (2, 0, 1, 7)),
])
def test_windows_wants_four_numbers(meta, version, expected):
    assert meta.version_tuple(version) == expected


@pytest.mark.parametrize("version", ["v1.0", "", "1.70000.0"])
def test_versions_windows_cannot_hold_are_refused(meta, version):
    with pytest.raises(ValueError, match="version"):
        meta.version_tuple(version)


def test_info_plist_carries_the_version_and_owns_the_plan_type(meta):
    plist = meta.info_plist(llmplan.__version__)
    plistlib.loads(plistlib.dumps(plist))  # serialisable as PyInstaller will write it
    assert plist["CFBundleShortVersionString"] == llmplan.__version__
    assert plist["CFBundleVersion"] == llmplan.__version__
    (doc_type,) = plist["CFBundleDocumentTypes"]
    assert doc_type["LSItemContentTypes"] == [meta.PLAN_UTI]
    assert doc_type["CFBundleTypeRole"] == "Editor" and doc_type["LSHandlerRank"] == "Owner"
    (uti,) = plist["UTExportedTypeDeclarations"]
    assert uti["UTTypeIdentifier"] == meta.PLAN_UTI
    assert "public.json" in uti["UTTypeConformsTo"]
    assert uti["UTTypeTagSpecification"]["public.filename-extension"] == ["llmplan"]
    assert uti["UTTypeTagSpecification"]["public.mime-type"] == ["application/x-llmplan"]
    assert doc_type["CFBundleTypeIconFile"] == "llmplan.icns"  # BUNDLE copies the app icon under this name


def test_windows_version_resource_is_the_text_pyinstaller_evaluates(meta):
    text = meta.windows_version_info("1.2.3")
    tree = ast.parse(text, mode="eval")  # PyInstaller eval()s it with its version-info classes
    assert isinstance(tree.body, ast.Call) and tree.body.func.id == "VSVersionInfo"
    names = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert {"FixedFileInfo", "StringFileInfo", "StringTable", "StringStruct", "VarFileInfo", "VarStruct"} <= names
    assert "filevers=(1, 2, 3, 0)" in text and "prodvers=(1, 2, 3, 0)" in text
    assert "StringStruct('ProductVersion', '1.2.3')" in text
    assert "StringStruct('OriginalFilename', 'llmplan.exe')" in text


def test_metainfo_newest_release_is_this_version():
    root = ET.parse(LINUX / "io.github.llmplan.LLMPlan.metainfo.xml").getroot()
    releases = root.findall("./releases/release")
    assert releases, "metainfo needs a <release> for the current version"
    assert releases[0].get("version") == llmplan.__version__, "add a <release> on top when bumping __version__"
    dates = [r.get("date") for r in releases]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in dates)
    assert dates == sorted(dates, reverse=True), "releases go newest first"


def test_a_new_plan_file_records_the_app_version():
    import json

    from llmplan.plan.document import PlanDocument
    from llmplan.plan.planfile import dumps_plan

    doc = PlanDocument.model_validate({"model": {"id": "meta-llama/Meta-Llama-3-8B"}})
    assert json.loads(dumps_plan(doc))["app_version"] == llmplan.__version__


def test_about_box_names_the_version():
    pytest.importorskip("PySide6.QtWidgets")
    from llmplan.gui import backend
    from llmplan.gui.help_dialog import about_text

    assert backend.version() == llmplan.__version__
    assert f"llmplan {llmplan.__version__}" in about_text(backend.version())
