"""``llmplan.formats.atomic.atomic_write``: every writer's one atomic write.

Checked: the content lands; the mode of an existing file is kept and a new one gets
0666 minus the umask; a symlink is written through (the link stays a link); the file
and its folder are fsynced, the file before the rename; a failed write leaves the old
file and no temp file; every writer in the package goes through it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from llmplan.formats import atomic
from llmplan.formats.atomic import atomic_write

posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX modes, symlinks and folder fsync")


def test_writes_text_as_utf8_and_bytes_as_is(tmp_path):
    atomic_write(tmp_path / "a.txt", "µs ✓\n")
    atomic_write(tmp_path / "b.bin", b"\x00\xff")
    assert (tmp_path / "a.txt").read_bytes() == "µs ✓\n".encode()
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\xff"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]  # no temp file left


@posix_only
def test_keeps_the_mode_of_an_existing_file(tmp_path):
    target = tmp_path / "plan.llmplan"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@posix_only
def test_a_new_file_gets_0666_minus_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "new.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640


@posix_only
def test_writes_through_a_symlink_and_the_link_stays(tmp_path):
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    real = real_dir / "calibration.json"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "calibration.json"
    link.symlink_to(real)
    written = atomic_write(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and written == real
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert [p.name for p in real_dir.iterdir()] == ["calibration.json"]  # the temp file lived beside the real one


@posix_only
def test_fsyncs_the_file_before_the_rename_and_the_folder_after(tmp_path, monkeypatch):
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        mode = os.fstat(fd).st_mode
        events.append("fsync folder" if stat.S_ISDIR(mode) else "fsync file")
        real_fsync(fd)

    def replace(src, dst):
        events.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic.os, "replace", replace)
    atomic_write(tmp_path / "x.json", "{}")
    assert events == ["fsync file", "replace", "fsync folder"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "plan.llmplan"
    target.write_text("old")

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        atomic_write(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.llmplan"]


def test_make_folder_creates_missing_parents(tmp_path):
    atomic_write(tmp_path / "a" / "b" / "c.json", "{}", make_folder=True)
    assert (tmp_path / "a" / "b" / "c.json").read_text() == "{}"


def test_every_writer_in_the_package_uses_it():
    """No other module opens a file for writing, renames, or fsyncs: one atomic write for all."""
    src = Path(atomic.__file__).resolve().parents[1]
    forbidden = ("write_text(", "write_bytes(", "os.fsync(", "tempfile.mkstemp(", '"w")', '"wb")', "'w')")
    offenders = []
    for path in src.rglob("*.py"):
        if path.name == "atomic.py" and path.parent.name == "formats":
            continue
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(src)}: {f}" for f in forbidden if f in text]
        if "os.replace(" in text and "unreadable" not in text:  # autosave recovery renames a bad copy aside
            offenders.append(f"{path.relative_to(src)}: os.replace(")
    assert offenders == []
