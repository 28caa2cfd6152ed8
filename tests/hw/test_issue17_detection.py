"""Issue 17 #9: detection is bounded. A tool that prints endlessly, one that forks and leaves children,
200,000 nvidia-smi rows, and an NVML call that never returns: each ends within its budget, with a
reason, and leaves nothing running inside the app."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

import pytest

from llmplan.hw import _run, nvidia
from llmplan.hw._run import call_in_child, run_command

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups")


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@posix_only
def test_a_tool_that_prints_endlessly_is_capped_and_stopped():
    before = _rss_bytes()
    start = time.monotonic()
    out = run_command([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"], 5.0)
    assert out.reason and "printed more than" in out.reason
    assert time.monotonic() - start < 5.0
    assert _rss_bytes() - before < 64 * 2**20  # was 4 GB within the 5 s timeout


@posix_only
def test_a_tool_that_forks_leaves_no_child_after_its_timeout(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = ("import os, time\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    time.sleep(60)\n"
              f"    os._exit(0)\n"
              f"open({str(pidfile)!r}, 'w').write(str(pid))\n"
              "time.sleep(60)\n")
    out = run_command([sys.executable, "-c", script], 1.5)
    assert out.reason and "timed out" in out.reason
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, os.WNOHANG)
        time.sleep(0.05)
    else:
        pytest.fail(f"the tool's child {child} still runs after the timeout")


@posix_only
def test_a_tool_that_exits_but_leaves_a_child_holding_the_pipe_is_not_waited_for():
    script = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\nprint('done')\n"
    start = time.monotonic()
    out = run_command([sys.executable, "-c", script], 2.0)
    assert time.monotonic() - start < 5
    assert out.reason is None or "kept running" in out.reason


def test_200000_nvidia_smi_rows_are_refused_quickly():
    row = "0, GPU-1, NVIDIA H100 80GB HBM3, 81559, 0, 81559, 550.54, 9.0, 5, 16, [N/A]\n"
    start = time.monotonic()
    with pytest.raises(ValueError, match="more than"):
        nvidia.parse_nvidia_smi_csv(row * 200_000)
    assert time.monotonic() - start < 2


@posix_only
def test_an_nvml_call_that_never_returns_leaves_nothing_running(install_fake_pynvml):
    install_fake_pynvml(None, hang_s=30.0)
    threads_before = {t.ident for t in threading.enumerate()}
    start = time.monotonic()
    result = nvidia._probe_nvml(1.0)
    assert time.monotonic() - start < 5
    assert any("timed out" in r for r in result.reasons)
    time.sleep(0.2)
    spinning = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    assert not spinning, f"threads left running inside the app: {spinning}"  # was a thread at 100% CPU
    import multiprocessing

    assert not multiprocessing.active_children()


def test_call_in_child_returns_values_errors_and_timeouts():
    assert call_in_child(lambda: 42, 10).value == 42
    err = call_in_child(lambda: 1 / 0, 10).error
    assert isinstance(err, ZeroDivisionError)
    assert call_in_child(lambda: time.sleep(30), 0.5).timed_out


def test_the_output_cap_is_per_stream():
    out = run_command([sys.executable, "-c", "print('a' * 1000)"], 10.0, max_bytes=100)
    assert out.reason and "printed more than 100 bytes" in out.reason
    assert _run.MAX_OUTPUT_BYTES >= 1 << 20
