"""The bounded runners every probe uses: real commands, real timeouts."""

from __future__ import annotations

import sys
import time

from llmplan.hw import _run
from llmplan.hw._run import call_with_timeout, run_command


def test_missing_tool_is_not_installed():
    out = run_command(["llmplan-no-such-tool-xyz", "--version"], 1.0)
    assert out.reason == "llmplan-no-such-tool-xyz not installed" and not out.ok


def test_real_command_and_timeout():
    ok = run_command([sys.executable, "-c", "print('hi')"], 10.0)
    assert ok.ok and ok.stdout == "hi\n"
    start = time.perf_counter()
    slow = run_command([sys.executable, "-c", "import time; time.sleep(5)"], 0.3)
    assert slow.reason.endswith("timed out after 0.3 s") and time.perf_counter() - start < 3


def test_permission_denied(monkeypatch):
    def deny(*_a, **_k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_run.subprocess, "Popen", deny)
    assert run_command([sys.executable], 1.0).reason.endswith(": permission denied")


def test_nonzero_exit_is_reported_not_raised():
    out = run_command([sys.executable, "-c", "import sys; print('boom'); sys.exit(9)"], 10.0)
    assert out.returncode == 9 and out.reason is None and not out.ok


def test_call_with_timeout_value_error_and_hang():
    assert call_with_timeout(lambda: 42, 1.0).value == 42
    err = call_with_timeout(lambda: 1 / 0, 1.0).error
    assert isinstance(err, ZeroDivisionError)
    start = time.perf_counter()
    assert call_with_timeout(lambda: time.sleep(3), 0.1).timed_out
    assert time.perf_counter() - start < 1.5

