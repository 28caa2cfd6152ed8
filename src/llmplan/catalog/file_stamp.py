"""Cache catalog files by what is on disk, so a GUI knob change does not re-parse TOML.

A catalog is rebuilt only when one of its files is added, removed or changed (path,
modification time in ns and size): the user editing a file in their data folder sees the
change on the next estimate, and nothing stale survives.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

Stamp = tuple[tuple[str, int, int], ...]


def files_stamp(paths: Iterable[Path]) -> Stamp:
    out: list[tuple[str, int, int]] = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            try:  # a dangling or looping link stays in: its reader then says why it was skipped
                st = path.lstat()
            except OSError:  # missing or removed while we looked: absent from the stamp
                continue
        out.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(out)
