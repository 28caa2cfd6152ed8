"""``estimate ... --split-mode row``: llama.cpp's row split from the command line (core/inference/row_split.py,
bytes by hand in tests/core/inference/test_row_split.py): identical cards given as --gpus N reach the same split as
the cards listed one by one, the JSON names the split mode, and one card or another engine gets one clear line."""

import json

import pytest

from llmplan.cli import main

BASE = ["estimate", "--model", "meta-llama/Llama-3.1-70B", "--workload", "inference",
        "--set", "inference.weight_format=q4_k_m", "--set", "inference.engine=llama-cpp"]
G = "nvidia-rtx-3090-24gb"


def run_json(capsys, *extra):
    assert main([*BASE, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_gpus_n_row_is_the_machine_s_cards(capsys):
    a = run_json(capsys, "--gpu", G, "--gpus", "2", "--split-mode", "row")
    b = run_json(capsys, "--gpu", G, "--gpu", G, "--split-mode", "row")
    assert a["mixed_gpus"] == b["mixed_gpus"] and a["mixed_gpus"]["split_mode"] == "row"
    layer = run_json(capsys, "--gpu", G, "--gpu", G)
    assert layer["mixed_gpus"]["split_mode"] == "layer"
    # the same cards hold the same layers' KV either way; the weights differ (rows of every layer vs whole layers)
    assert [c["layers"] for c in a["mixed_gpus"]["cards"]] == [c["layers"] for c in layer["mixed_gpus"]["cards"]]
    assert a["inference"]["tokens_per_s"] > layer["inference"]["tokens_per_s"]  # 17.6 vs 16.5 (docs/inference.md)
    assert main([*BASE, "--gpu", G, "--gpus", "2", "--split-mode", "row"]) == 0
    assert "inference on 2 GPUs in one machine (llama-cpp, q4_k_m, row split)" in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (("--gpu", G, "--split-mode", "row"), "inference.split_mode=row splits each matrix over several cards"),
    (("--gpu", G, "--gpus", "2", "--split-mode", "row", "--set", "inference.engine=ollama"),
     "Ollama exposes no split mode"),
])
def test_bad_input_is_one_line(capsys, extra, message):
    assert main([*BASE, *extra]) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
