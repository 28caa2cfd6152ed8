"""Prints how many malformed inputs each parser was fed (the number docs/trust.md quotes)."""

from __future__ import annotations

from tests.property._support import CASES


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not CASES:
        return
    total = sum(CASES.values())
    parts = ", ".join(f"{name} {n}" for name, n in sorted(CASES.items()))
    terminalreporter.write_line(f"property suite: {total} generated inputs ({parts})")
