"""One atomic write for every file llmplan saves: a crash leaves the old file or the new one.

Plans, user catalog entries (GPUs, models), calibrations, exports and the app's recovery
copies all go through ``atomic_write``. The steps, and why each is there:

1. Write through a symlink: the real file is replaced and the link stays a link (``os.replace``
   on the link itself would turn a dotfile-managed link into a plain file).
2. A temp file in the *same folder* as the real file, so ``os.replace`` is a rename on one file
   system (atomic on POSIX and Windows), never a copy.
3. The existing file's permission bits are kept; a new file gets 0666 minus the umask, as
   ``open()`` would (``mkstemp`` alone creates 0600).
4. ``fsync`` of the file before the rename, so the rename never points at unwritten blocks
   (ext4/XFS delayed allocation), and of the folder after it, so the rename itself is durable.
   Windows cannot open folders and does not need it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path: str | os.PathLike[str], data: str | bytes, make_folder: bool = False) -> Path:
    """Write ``data`` (str as UTF-8) to ``path`` atomically; returns the path written (the link's target
    for a symlink). ``make_folder`` creates missing parent folders. Raises ``OSError`` as the OS does."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if make_folder:
        folder.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = _file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if not hasattr(os, "fchmod"):  # Windows: only the read-only bit exists
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)
    return target


def _file_mode(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets 0666 minus the umask, like open() would."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); Windows cannot open folders, and needs not."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
