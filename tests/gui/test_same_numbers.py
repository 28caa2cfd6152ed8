"""The command line and the app print every figure they share with the same string (issue 16, item 4).

Both format through ``llmplan.core.present``; this checks it end to end on the example plans: the CLI's
text tables (``estimate_text``, what ``llmplan-cli estimate`` prints) against the app's result rows
(``llmplan.gui.report.rows``, what the results table, "Copy as text" and the Markdown export show).
"""

from __future__ import annotations

import pytest

from llmplan.cli.report import estimate_json, estimate_text
from llmplan.core.present import MemoryUnit
from llmplan.gui import report
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan
from llmplan.resources_path import resources_dir

EXAMPLES = resources_dir() / "examples"

# CLI row label -> app row label, for every figure both show
SHARED = {
    "total": "Total", "capacity": "Capacity", "weights": "Weights (per GPU)", "activations": "Activations",
    "step time": "Step time", "throughput (cluster)": "Throughput", "MFU": "MFU", "pipeline bubble": "Pipeline bubble",
    "training time": "Training time", "cost": "Cost",
    "time to first token": "Time to first token", "time per output token": "Time per output token",
    "throughput (all users)": "Throughput (all users)", "throughput per user": "Throughput per user",
    "KV cache per token": "KV cache per token", "max concurrent sequences": "Max concurrent sequences",
    "job MTBF": "Mean time between failures (job)", "checkpoint interval": "Checkpoint interval",
    "goodput": "Goodput (useful share of wall time)", "effective training time": "Effective training time (with failures)",
    "cold start (load weights)": "Cold start in all",
    "longest context that fits": "Longest context that fits", "model's trained context": "Model's trained context",
}


def _cli_rows(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("  ") and "  " in line.strip():
            label, value = line.strip().split("  ", 1)
            out[label.strip()] = value.strip()
    return out


@pytest.mark.parametrize("plan", sorted(p.name for p in EXAMPLES.glob("*.llmplan")))
def test_cli_and_app_print_the_same_strings(plan):
    scenario, est = evaluate_plan(load_plan(EXAMPLES / plan))
    cli = _cli_rows(estimate_text(estimate_json(est, scenario)))
    app: dict[str, str] = {}
    for r in report.rows(est, scenario):
        app.setdefault(r.label, r.shown(MemoryUnit("GiB")))
    compared = 0
    for cli_label, app_label in SHARED.items():
        if cli_label in cli and app_label in app:
            assert cli[cli_label] == app[app_label], (plan, cli_label)
            compared += 1
    if "checkpoint write / read" in cli and "Checkpoint save (training stalls)" in app:
        assert cli["checkpoint write / read"] == (f"{app['Checkpoint save (training stalls)']} / "
                                                  f"{app['Checkpoint load on restart']}")
        compared += 1
    assert compared >= 4, (plan, sorted(cli), sorted(app))
