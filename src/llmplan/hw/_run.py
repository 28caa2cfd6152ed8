"""Bounded calls: every external command and every NVML call runs under a time limit.

The GUI calls detection from a background thread and must never wait on a wedged driver,
so nothing here blocks past its timeout and nothing raises into the caller: a failure
comes back as a short human reason.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class CommandOutput:
    """A command that ran: its exit status and text. ``reason`` is set when it did not run."""

    returncode: int
    stdout: str
    stderr: str
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None and self.returncode == 0


def run_command(argv: list[str], timeout_s: float) -> CommandOutput:
    """Run ``argv`` with a timeout; never raises. ``reason`` explains a command that could not run."""
    exe = argv[0]
    if shutil.which(exe) is None:
        return CommandOutput(-1, "", "", reason=f"{exe} not installed")
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=max(timeout_s, 0.01), check=False,
            stdin=subprocess.DEVNULL, errors="replace",
        )
    except subprocess.TimeoutExpired:
        return CommandOutput(-1, "", "", reason=f"{exe} timed out after {timeout_s:g} s")
    except PermissionError:
        return CommandOutput(-1, "", "", reason=f"{exe}: permission denied")
    except OSError as exc:
        return CommandOutput(-1, "", "", reason=f"{exe} could not run: {exc.strerror or exc}")
    return CommandOutput(proc.returncode, proc.stdout or "", proc.stderr or "")


@dataclass(frozen=True)
class CallOutcome:
    """The result of a call made in a worker thread: a value, an exception, or a timeout."""

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False


def call_with_timeout(fn: Callable[[], T], timeout_s: float) -> CallOutcome:
    """Run ``fn`` in a daemon thread and wait at most ``timeout_s``.

    A call that hangs (a GPU driver stuck in the kernel) is abandoned, not killed: the
    thread is a daemon, so it cannot keep the process alive, and the caller moves on.
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # reported to the caller, never re-raised in the thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="llmplan-hw-probe", daemon=True)
    worker.start()
    worker.join(max(timeout_s, 0.0))
    if worker.is_alive():
        return CallOutcome(timed_out=True)
    err = box.get("error")
    return CallOutcome(value=box.get("value"), error=err if isinstance(err, BaseException) else None)


class Budget:
    """A probe's time budget shared by the commands it runs one after another.

    Without it, a probe that tries NVML and then nvidia-smi could take twice its timeout and be
    cut off by ``detect_all`` before it can say which of the two hung.
    """

    def __init__(self, total_s: float):
        self.total_s = total_s
        self._end = time.perf_counter() + total_s

    def left(self, floor_s: float = 0.05) -> float:
        """Seconds remaining (at least ``floor_s``, so a last command still gets a chance to fail fast)."""
        return max(self._end - time.perf_counter(), floor_s)
