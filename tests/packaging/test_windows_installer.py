"""packaging/windows/llmplan.iss: the Windows file association and version, read as text.

Inno Setup runs only on Windows, so the installer is not built here; this checks that the
script associates .llmplan with the app, takes the version from the build, and points at
files that exist.
"""

from __future__ import annotations

import re

from tests.packaging.conftest import PACKAGING, REPO

ISS = PACKAGING / "windows" / "llmplan.iss"


def sections() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in ISS.read_text(encoding="utf-8").splitlines():
        if re.fullmatch(r"\[\w+\]", line.strip()):
            current = line.strip()[1:-1]
            out[current] = []
        elif current and line.strip() and not line.lstrip().startswith(";"):
            out[current].append(line.strip())
    return out


def test_dot_llmplan_opens_with_llmplan_exe():
    registry = "\n".join(sections()["Registry"])
    assert 'Subkey: "Software\\Classes\\.llmplan"; ValueType: string; ValueName: ""; ValueData: "{#ProgId}"' in registry
    assert '"Software\\Classes\\{#ProgId}\\shell\\open\\command"' in registry
    assert 'ValueData: """{app}\\{#AppExe}"" ""%1"""' in registry  # quoted exe and quoted file
    assert "application/x-llmplan" in registry
    setup = sections()["Setup"]
    assert "ChangesAssociations=yes" in setup  # Explorer refreshes its icons and handlers after install


def test_version_comes_from_the_build_not_the_script():
    text = ISS.read_text(encoding="utf-8")
    assert "#ifndef AppVersion" in text and "#error" in text
    assert "AppVersion={#AppVersion}" in sections()["Setup"]
    code = "\n".join(line for lines in sections().values() for line in lines)
    assert not re.search(r"\b\d+\.\d+\.\d+\b", code), "no hard-coded version numbers"


def test_paths_point_at_the_bundle_and_the_icon():
    setup = dict(line.split("=", 1) for line in sections()["Setup"])
    assert (ISS.parent / setup["SetupIconFile"].replace("\\", "/")).resolve() == REPO / "resources/appicon/llmplan.ico"
    assert (ISS.parent / setup["OutputDir"].replace("\\", "/")).resolve() == REPO / "dist"
    assert re.fullmatch(r"\{\{[0-9A-F]{8}(-[0-9A-F]{4}){3}-[0-9A-F]{12}\}", setup["AppId"])
    files = sections()["Files"]
    assert files == ['Source: "..\\..\\dist\\llmplan\\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs '
                     'createallsubdirs']
