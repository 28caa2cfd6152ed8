"""The Linux desktop integration files: desktop entry, shared-mime-info XML, AppStream metainfo."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from tests.packaging.conftest import EXAMPLES, LINUX

APP_ID = "io.github.llmplan.LLMPlan"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def test_desktop_entry_opens_plans_with_the_app(desktop_entry):
    entry = desktop_entry.read(LINUX / f"{APP_ID}.desktop.in")
    assert entry["Type"] == "Application"
    assert entry["Exec"] == "@EXEC@ %f"  # install-desktop.sh puts the quoted executable in
    assert "application/x-llmplan" in entry["MimeType"].split(";")
    assert entry["Icon"] == APP_ID
    assert entry["Terminal"] == "false"
    assert entry["Categories"].endswith(";") and entry["MimeType"].endswith(";")
    assert entry["StartupWMClass"] == "llmplan"


def test_mime_xml_registers_the_extension_and_recognises_plan_content():
    root = ET.parse(LINUX / f"{APP_ID}.mime.xml").getroot()
    assert root.tag == f"{MIME_NS}mime-info"
    (mime,) = root.findall(f"{MIME_NS}mime-type")
    assert mime.get("type") == "application/x-llmplan"
    assert [g.get("pattern") for g in mime.findall(f"{MIME_NS}glob")] == ["*.llmplan"]
    assert mime.find(f"{MIME_NS}sub-class-of").get("type") == "application/json"
    match = mime.find(f"{MIME_NS}magic/{MIME_NS}match")
    start, end = (int(x) for x in match.get("offset").split(":"))
    for plan in EXAMPLES:  # the content rule must fire on real plans, written with sorted keys
        head = plan.read_bytes()[: end + len(match.get("value"))]
        assert match.get("value").encode() in head[start:], plan.name


def test_a_freshly_saved_plan_matches_the_magic_rule(tmp_path):
    from llmplan.plan.planfile import load_plan, save_plan

    plan = load_plan(EXAMPLES[0])
    out = tmp_path / "saved.llmplan"
    save_plan(plan, out)
    match = ET.parse(LINUX / f"{APP_ID}.mime.xml").getroot().find(f".//{MIME_NS}match")
    assert match.get("value").encode() in out.read_bytes()[:256]


def test_metainfo_names_the_desktop_entry_and_the_plan_type():
    root = ET.parse(LINUX / f"{APP_ID}.metainfo.xml").getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").get("type") == "desktop-id"
    assert root.findtext("launchable") == f"{APP_ID}.desktop"
    assert root.findtext("provides/mediatype") == "application/x-llmplan"
    assert root.findtext("metadata_license") == "CC0-1.0"
    assert re.search(r'license = "Apache-2.0"', (LINUX.parents[1] / "pyproject.toml").read_text())
    assert root.findtext("project_license") == "Apache-2.0"


@pytest.mark.skipif(not shutil.which("desktop-file-validate"), reason="desktop-file-validate not installed "
                    "(apt: desktop-file-utils)")
def test_desktop_file_validate_accepts_the_installed_form(tmp_path):
    installed = tmp_path / f"{APP_ID}.desktop"
    installed.write_text((LINUX / f"{APP_ID}.desktop.in").read_text().replace("@EXEC@", '"/opt/llm plan/llmplan"'))
    out = subprocess.run(["desktop-file-validate", str(installed)], capture_output=True, text=True)
    assert out.returncode == 0 and "error" not in out.stdout, out.stdout


@pytest.mark.skipif(not shutil.which("appstreamcli"), reason="appstreamcli not installed (apt: appstream)")
def test_appstreamcli_accepts_the_metainfo():
    out = subprocess.run(["appstreamcli", "validate", "--no-net", str(LINUX / f"{APP_ID}.metainfo.xml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
