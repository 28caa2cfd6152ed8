"""``llmplan-cli serve`` end to end, with test GPUs standing in for the hardware catalog."""

import json

import pytest

from llmplan.cli import cmd_serve, main
from tests.core.inference.gpus import A100, H100, L4
from tests.core.inference.models import LLAMA3_8B


@pytest.fixture
def model_path(tmp_path, monkeypatch):
    by_id = {g.id: g for g in (H100, L4, A100)}
    monkeypatch.setattr(cmd_serve, "resolve_gpu_efficiencies", lambda gpus: {})
    monkeypatch.setattr(cmd_serve, "resolve_gpus", lambda ids: [by_id[i] for i in ids.split(",")] if ids
                        else list(by_id.values()))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA3_8B))
    return str(path)


def test_serve_json(model_path, capsys):
    rc = main(["serve", "--model", model_path, "--rate", "20", "--prompt", "1024", "--output", "256",
               "--ttft", "1", "--tpot", "0.05", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["best"]["feasible"] and out["best"]["cost_per_hour_usd"] > 0
    assert any(not o["feasible"] for o in out["options"])


def test_serve_table_and_gpu_filter(model_path, capsys):
    rc = main(["serve", "--model", model_path, "--rate", "5", "--ttft", "1", "--tpot", "0.05",
               "--gpus", "nvidia-l4", "--weight-format", "awq-4bit"])
    text = capsys.readouterr().out
    assert rc == 0 and "NVIDIA L4" in text and "$" in text


def test_bad_format_is_one_line_error(model_path, capsys):
    rc = main(["serve", "--model", model_path, "--rate", "5", "--ttft", "1", "--tpot", "0.05",
               "--weight-format", "q9_z"])
    err = capsys.readouterr().err
    assert rc == 2 and "weight_format" in err and "Traceback" not in err


def test_serve_with_a_request_mix(model_path, capsys, monkeypatch):
    monkeypatch.setattr(cmd_serve, "resolve_gpu_efficiencies", lambda gpus: {})
    rc = main(["serve", "--model", model_path, "--rate", "10", "--ttft", "1.5", "--tpot", "0.06",
               "--mix", "256:64:3,4000:500", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["best"]["feasible"]


def test_bad_mix_and_bad_rate_are_clear(model_path, capsys):
    assert main(["serve", "--model", model_path, "--rate", "10", "--ttft", "1", "--tpot", "0.05",
                 "--mix", "256-64"]) == 2
    assert "PROMPT:OUTPUT" in capsys.readouterr().err
    assert main(["serve", "--model", model_path, "--rate", "-1", "--ttft", "1", "--tpot", "0.05"]) == 2
    assert "rate_per_s" in capsys.readouterr().err


def test_top_limits_the_table_and_says_how_many_more(capsys):
    from llmplan.cli import main

    rc = main(["serve", "--model", "meta-llama/Llama-3.1-8B", "--rate", "20", "--ttft", "1", "--tpot", "0.05",
               "--top", "2"])
    out = capsys.readouterr().out.splitlines()
    priced = [line for line in out if line.strip().startswith("$")]
    assert rc == 0 and len(priced) == 2 and "cheapest" in priced[0]
    assert "more options meet the SLOs" in out[-1]


def test_top_must_be_at_least_one(capsys):
    """trial33: ``--top 0`` and ``--top -3`` were taken (and showed one row); argparse refuses them now."""
    for bad in ("0", "-3"):
        with pytest.raises(SystemExit) as exc:
            main(["serve", "--model", "meta-llama/Llama-3.1-8B", "--rate", "1", "--ttft", "1", "--tpot", "0.05",
                  "--top", bad])
        assert exc.value.code == 2 and "argument --top: must be at least 1" in capsys.readouterr().err


def test_an_engine_that_cannot_load_the_format_is_refused(capsys):
    """trial33: ``serve --engine llama-cpp --weight-format awq-4bit`` ranked 30 options, while ``estimate`` refuses
    the same pair (llama.cpp loads GGUF and float weights only: catalogs/engines.toml ``weight_formats``)."""
    code = main(["serve", "--model", "meta-llama/Llama-3.1-8B", "--rate", "1", "--ttft", "1", "--tpot", "0.05",
                 "--engine", "llama-cpp", "--weight-format", "awq-4bit"])
    err = capsys.readouterr().err
    assert code == 2 and "llama.cpp does not load awq-4bit weights" in err and "Traceback" not in err
