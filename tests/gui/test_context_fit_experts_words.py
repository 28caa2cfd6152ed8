"""The CLI and the app's results say the same longest context for gpt-oss-120b on one RTX 3090 under llama.cpp
with the experts' placement open: "176,128 tokens with --n-cpu-moe 27" (one function, ``context_fit.
longest_context``, one sentence, ``present.context_fit``; the bytes by hand in
tests/core/inference/test_context_fit_experts.py)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("PySide6.QtWidgets")

from tests.core.inference.test_cpu_moe import scenario

from llmplan.cli import main
from llmplan.core.engine import estimate
from llmplan.gui.report import rows

WORDS = "176,128 tokens with --n-cpu-moe 27 (those layers' routed experts in host RAM, the rest on the GPU)"


def test_cli_and_app_say_the_same_longest_context(capsys):
    args = ["estimate", "--workload", "inference", "--model", "openai/gpt-oss-120b", "--gpu", "nvidia-rtx-3090-24gb",
            "--set", "inference.engine=llama-cpp-2026", "--set", "inference.weight_format=mxfp4_moe",
            "--set", "inference.kv_dtype=fp16", "--set", "inference.prompt_tokens=1024",
            "--set", "inference.output_tokens=256"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"longest context that fits  {WORDS}" in text
    assert main([*args, "--json"]) == 0
    inf = json.loads(capsys.readouterr().out)["inference"]
    assert inf["longest_context_tokens"] == 176_128 and inf["longest_context_cpu_moe_layers"] == 27
    assert inf["longest_context_experts_flag"] == "--n-cpu-moe 27"

    sc = scenario("openai/gpt-oss-120b", "mxfp4_moe", None)
    app = {r.label: r.text for r in rows(estimate(sc), sc)}
    assert app["Longest context that fits"] == WORDS
