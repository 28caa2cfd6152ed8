"""Fixtures for the hw tests (helpers and the fake pynvml live in hw_fixtures.py)."""

from __future__ import annotations

import json
import sys

import pytest
from hw_fixtures import NVMLError, build_fake_pynvml, data_text


@pytest.fixture
def install_fake_pynvml(monkeypatch):
    """install(name_or_None, init_error=None, hang_s=0) puts a fake pynvml in sys.modules."""

    def install(recording: str | None = None, init_error: NVMLError | None = None, hang_s: float = 0.0):
        rec = json.loads(data_text(recording)) if recording else None
        fake = build_fake_pynvml(rec, init_error=init_error, hang_s=hang_s)
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        return fake

    return install


@pytest.fixture
def fake_commands(monkeypatch):
    """Replace every probe's command runner: ``{argv[0]: CommandOutput}``; unknown tools are not installed."""
    from llmplan.hw import _run, amd, apple, host, intel, nvidia

    def install(table: dict):
        def fake_run(argv, timeout_s):
            key = " ".join(argv[:2]) if " ".join(argv[:2]) in table else argv[0]
            if key not in table:
                return _run.CommandOutput(-1, "", "", reason=f"{argv[0]} not installed")
            value = table[key]
            return value(argv, timeout_s) if callable(value) else value

        for mod in (nvidia, amd, apple, host, intel):
            monkeypatch.setattr(mod, "run_command", fake_run)

    return install
