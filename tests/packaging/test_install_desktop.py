"""packaging/linux/install-desktop.sh, run for real into a temporary XDG data folder.

The script is what `make install-desktop` and the bundle's desktop/install-desktop.sh run; here
it installs for a fake executable in an awkward folder, and the installed entry's Exec line must
give that exact path back when a plan is double-clicked (expanded as a launcher does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.packaging.conftest import LINUX

APP_ID = "io.github.llmplan.LLMPlan"
SCRIPT = LINUX / "install-desktop.sh"

pytestmark = pytest.mark.skipif(not shutil.which("bash"), reason="install-desktop.sh is a bash script")


def run_script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def fake_app(tmp_path: Path) -> Path:
    folder = tmp_path / 'Apps "new" $x 100% back\\slash'
    folder.mkdir(parents=True)
    exe = folder / "llmplan"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_installs_entry_mime_icons_metainfo_and_the_exec_line_round_trips(tmp_path, desktop_entry):
    exe = fake_app(tmp_path)
    result = run_script(tmp_path, str(exe))
    assert result.returncode == 0, result.stderr
    data = tmp_path / "data"
    entry = desktop_entry.read(data / "applications" / f"{APP_ID}.desktop")
    plan = "/home/ada/my plan.llmplan"
    assert desktop_entry.command_for(entry, [plan]) == [str(exe), plan]
    assert entry["MimeType"] == "application/x-llmplan;"
    assert (data / "mime" / "packages" / f"{APP_ID}.xml").read_bytes() == (LINUX / f"{APP_ID}.mime.xml").read_bytes()
    assert (data / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    for size in (16, 24, 32, 48, 64, 128, 256, 512):
        assert (data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png").is_file()
        assert (data / "icons" / "hicolor" / f"{size}x{size}" / "mimetypes" / "application-x-llmplan.png").is_file()
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    if shutil.which("update-mime-database"):
        assert "application/x-llmplan:*.llmplan" in (data / "mime" / "globs2").read_text()
    if shutil.which("xdg-mime"):
        assert f"application/x-llmplan={APP_ID}.desktop" in (tmp_path / "config" / "mimeapps.list").read_text()


def test_uninstall_removes_what_install_put_there(tmp_path):
    exe = fake_app(tmp_path)
    assert run_script(tmp_path, str(exe)).returncode == 0
    result = run_script(tmp_path, "--uninstall")
    assert result.returncode == 0, result.stderr
    left = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and "llmplan" in p.name.lower()]
    assert left == []


def test_a_missing_executable_is_a_clear_error(tmp_path):
    result = run_script(tmp_path, str(tmp_path / "nowhere" / "llmplan"))
    assert result.returncode == 1
    assert "is not an executable file" in result.stderr and "make dist" in result.stderr
    assert not (tmp_path / "data" / "applications").exists()
