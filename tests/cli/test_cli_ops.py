"""``estimate … --ops``: the step's operation list as a table and as JSON (``cli/ops_table``).

Source: the real engine on the shipped ZeRO-3 fine-tune example; the JSON rows must add up to the estimate's own
step time (the same plan's ``estimate --json``), tolerance 1e-9 relative (float rounding only).
"""

import json

import pytest

from llmplan.cli import main
from llmplan.cli.ops_table import ROW_KEYS
from llmplan.resources_path import resources_dir

EXAMPLES = resources_dir() / "examples"
ZERO3 = str(EXAMPLES / "finetune-llama-3.1-70b-zero3-8xh100.llmplan")


def test_json_rows_add_up_to_the_step_time(capsys):
    assert main(["estimate", ZERO3, "--json"]) == 0
    step = json.loads(capsys.readouterr().out)["compute"]["step_time_s"]
    assert main(["estimate", ZERO3, "--ops", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(tuple(r) == ROW_KEYS for r in data["rows"])
    assert sum(r["seconds"] for r in data["rows"]) == pytest.approx(step, rel=1e-9)
    assert sum(r["share"] for r in data["rows"]) == pytest.approx(1.0, rel=1e-9)


def test_table_shows_top_n_and_sums_the_rest(capsys):
    assert main(["estimate", ZERO3, "--ops", "5"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, s in enumerate(lines) if s.startswith("operation"))
    body = lines[header + 2:]
    assert body[5].split()[1:3] == ["more", "operations"]
    assert "mlp.gate_up_proj" in out and "compute time" in out


def test_inference_plan_is_refused(capsys):
    assert main(["estimate", str(EXAMPLES / "serve-llama-3.1-70b-tp4-h100.llmplan"), "--ops"]) != 0
    assert "training step" in capsys.readouterr().err
