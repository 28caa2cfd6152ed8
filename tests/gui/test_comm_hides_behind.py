"""The communication table says, in a row of its own, what compute each collective hides behind (or that it
sits on the critical path), not only in the tooltip of its "↳ exposed" row (issue 23). The same rows reach the
CSV export; the CLI's text says "hides behind …" or "on the critical path" for every collective."""

from __future__ import annotations

import os

import pytest

from llmplan.cli.report import estimate_json, estimate_text
from llmplan.gui import report
from llmplan.plan.planfile import load_plan
from llmplan.resources_path import resources_dir

pytest.importorskip("PySide6.QtWidgets")

PLAN = resources_dir() / "examples" / "pretrain-llama-3.1-405b-16k-h100.llmplan"  # TP, PP and DP across nodes


def _rows(table) -> list[str]:
    return [table.topLevelItem(i).text(0).strip() for i in range(table.topLevelItemCount())]


def test_each_collective_shows_what_it_hides_behind(window, tmp_path):
    window.state.load(load_plan(PLAN), PLAN)
    out = window.state.evaluate_now()
    assert out.ok, out.message
    cols = out.estimate.communication.collectives
    assert any(c.hides_behind for c in cols) and any(not c.hides_behind for c in cols)
    shown = _rows(window.results.table)
    for c in cols:
        line = next(t for t in shown if t.startswith(f"↳ {c.name} hides behind:"))
        assert line.endswith(c.hides_behind if c.hides_behind else "nothing: on the critical path (every call is exposed)")
    dp = next(c for c in cols if c.hides_behind)
    row = next(window.results.table.topLevelItem(i) for i in range(window.results.table.topLevelItemCount())
               if window.results.table.topLevelItem(i).text(0).strip().startswith(f"↳ {dp.name} hides behind"))
    assert row.isFirstColumnSpanned()  # a sentence across both columns, wrapped, not cut off in the value column

    csv = report.as_csv(out.estimate).splitlines()
    header, values = csv[0].split(","), csv[1]
    assert any(h.startswith("communication_") and h.endswith("_hides_behind_text") for h in header)
    assert dp.hides_behind.split(" (")[0] in values

    text = estimate_text(estimate_json(out.estimate, out.scenario))
    assert text.count("on the critical path") == sum(1 for c in cols if not c.hides_behind)
    assert text.count("hides behind") == sum(1 for c in cols if c.hides_behind)

    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        window.resize(1400, 900)
        window.results.table.scrollToItem(row)
        window.results.table.setCurrentItem(row)
        window.grab().save(os.path.join(shot, "communication-hides-behind.png"))
