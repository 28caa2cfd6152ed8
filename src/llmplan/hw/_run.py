"""Bounded calls: every external command and every NVML call runs under a time limit.

The GUI calls detection from a background thread and must never wait on a wedged driver,
so nothing here blocks past its timeout and nothing raises into the caller: a failure
comes back as a short human reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


def read_small(path: str, limit: int = 1024) -> str:
    """The first ``limit`` characters of a small sysfs file; "" when it cannot be read (never raises)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return ""


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


MAX_OUTPUT_BYTES = 4 * 1024 * 1024  # nvidia-smi for 64 GPUs prints ~10 KB, system_profiler ~100 KB


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the tool and everything it started (its own process group, made by ``start_new_session``)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _pump(stream, buf: bytearray, cap: int, over: threading.Event) -> None:
    """Copy a pipe into ``buf`` up to ``cap`` bytes; past that, flag it and stop reading."""
    try:
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                return
            room = cap - len(buf)
            buf += chunk[:room]
            if len(chunk) > room:
                over.set()
                return
    except (OSError, ValueError):
        return


def run_command(argv: list[str], timeout_s: float, max_bytes: int = MAX_OUTPUT_BYTES) -> CommandOutput:
    """Run ``argv`` with a timeout; never raises. ``reason`` explains a command that could not run.

    Bounded in every way a tool can misbehave: output is read as it comes and capped at ``max_bytes``
    per stream (a tool printing endlessly reached 4 GB within 5 s with ``capture_output``), and at the
    timeout or the cap the tool's whole process group is killed, so children it forked do not outlive it.
    """
    exe = argv[0]
    if shutil.which(exe) is None:
        return CommandOutput(-1, "", "", reason=f"{exe} not installed")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=os.name == "posix")
    except PermissionError:
        return CommandOutput(-1, "", "", reason=f"{exe}: permission denied")
    except OSError as exc:
        return CommandOutput(-1, "", "", reason=f"{exe} could not run: {exc.strerror or exc}")
    out, err, over = bytearray(), bytearray(), threading.Event()
    pumps = [threading.Thread(target=_pump, args=(stream, buf, max_bytes, over), daemon=True,
                              name="llmplan-tool-output") for stream, buf in ((proc.stdout, out), (proc.stderr, err))]
    for t in pumps:
        t.start()
    deadline = time.monotonic() + max(timeout_s, 0.01)
    reason = None
    try:
        while reason is None:
            if over.is_set():
                reason = f"{exe} printed more than {max_bytes:,} bytes; output ignored"
                break
            try:
                proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    reason = f"{exe} timed out after {timeout_s:g} s"
                continue
            # the tool exited; a child it left behind may still hold the pipes open
            for t in pumps:
                t.join(max(deadline - time.monotonic(), 0.0))
            if any(t.is_alive() for t in pumps):
                reason = f"{exe} timed out after {timeout_s:g} s (a process it started kept running)"
            elif over.is_set():
                reason = f"{exe} printed more than {max_bytes:,} bytes; output ignored"
            break
    finally:
        _kill_group(proc)  # the tool and any child it forked, also after a normal exit
        for t in pumps:
            t.join(1.0)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
    if reason:
        return CommandOutput(-1, "", "", reason=reason)
    return CommandOutput(proc.returncode, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"))


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


def call_in_child(fn: Callable[[], T], timeout_s: float) -> CallOutcome:
    """Run ``fn`` in a forked child process and wait at most ``timeout_s``; the child is killed after.

    For calls into a driver library (NVML) that may never return: a thread cannot be stopped, and an
    abandoned one kept spinning at 100% CPU and growing memory inside the app after detection returned.
    A child process can be killed. ``fn``'s value must pickle; an exception comes back as a
    ``RuntimeError`` carrying its text (driver exception classes need not pickle). Where ``fork`` is
    not available (Windows) this falls back to ``call_with_timeout``.
    """
    if not hasattr(os, "fork"):
        return call_with_timeout(fn, timeout_s)
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(fn, send), daemon=True, name="llmplan-hw-probe")
    try:
        proc.start()
    except OSError as exc:
        return CallOutcome(error=RuntimeError(f"could not start a probe process: {exc.strerror or exc}"))
    send.close()
    try:
        if not receive.poll(max(timeout_s, 0.0)):
            return CallOutcome(timed_out=True)
        try:
            kind, payload = receive.recv()
        except (EOFError, OSError):
            return CallOutcome(error=RuntimeError(f"the probe process died (exit code {proc.exitcode})"))
        if kind == "value":
            return CallOutcome(value=payload)
        return CallOutcome(error=payload if isinstance(payload, BaseException) else RuntimeError(str(payload)))
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(1.0)
        receive.close()


def _child_main(fn: Callable[[], object], send) -> None:
    try:
        try:
            result: tuple[str, object] = ("value", fn())
        except BaseException as exc:
            result = ("error", exc)
        try:
            send.send(result)
        except Exception as exc:  # an unpicklable exception or value: send its text
            send.send(("error", f"{type(result[1]).__name__}: {result[1]}" if result[0] == "error" else
                       f"the probe's result could not be sent back ({exc})"))
    finally:
        os._exit(0)  # never run the parent's atexit handlers or Qt teardown in the child


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
