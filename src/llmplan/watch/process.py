"""The watched process: is it still running, and what is it called (for the GUI's process list).

Linux reads /proc/<pid>/stat (a zombie, state Z, has exited even before its parent reaps it);
other POSIX systems use ``os.kill(pid, 0)``. On Windows ``os.kill(pid, 0)`` would send CTRL_C to
the process, so there psutil answers when installed and otherwise the answer is "unknown" (None),
never a false "exited".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def pid_alive(pid: int, proc: Path = Path("/proc")) -> bool | None:
    """True while ``pid`` runs, False once it exited, None when this system cannot tell."""
    if pid <= 0:
        return False
    if sys.platform.startswith("linux") and proc.exists():
        try:
            stat = (proc / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
        except FileNotFoundError:
            return False
        except OSError:
            return None
        state = stat.rpartition(")")[2].split()[:1]  # the name in parentheses may hold spaces
        return not (state and state[0] in ("Z", "X"))
    if os.name == "nt":
        try:
            import psutil
        except ImportError:
            return None
        return bool(psutil.pid_exists(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OSError:
        return None
    return True


def process_name(pid: int, proc: Path = Path("/proc")) -> str:
    """A short name for a pid ("python3"), or "" when unknown."""
    try:
        return (proc / str(pid) / "comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
