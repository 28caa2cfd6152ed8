"""Shared helpers of the issue 17 regression tests ("Hardening, second round")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from llmplan.resources_path import catalogs_dir, resources_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = resources_dir() / "examples" / "serve-llama-3.1-70b-tp4-h100.llmplan"
MODEL = "meta-llama/Meta-Llama-3-8B"


def llama_config() -> dict:
    """A real config.json (Llama 3 8B, as shipped in the catalog)."""
    return dict(json.loads((catalogs_dir() / "models" / "meta-llama__Meta-Llama-3-8B.json").read_text())["config"])


def example_plan() -> dict:
    return json.loads(EXAMPLE.read_text("utf-8"))


def env(data_dir: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.update(PYTHONPATH=str(ROOT / "src"), LLMPLAN_DATA_DIR=str(data_dir))
    return e


def cli(args: list[str], data_dir: Path, timeout: float = 60, stdin: bytes | None = None,
        ) -> subprocess.CompletedProcess:
    """``llmplan-cli ARGS`` in a fresh process (so a hang is a timeout, not a stuck test run)."""
    return subprocess.run([sys.executable, "-m", "llmplan", *args], capture_output=True, env=env(data_dir),
                          timeout=timeout, input=stdin)


def one_clean_error(proc: subprocess.CompletedProcess) -> str:
    """The run failed with exit 2 and exactly one error line, no traceback; returns that line."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and err.count("\n") == 1, err[-2000:]
    return err


def returns_within(seconds: float, fn):
    """``fn()``'s value or exception; fails the test instead of hanging when it does not return."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not return within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")
