"""``search``, its Pareto front and ``estimate`` without a layout give one answer (issue 26, one truth).

Three plans a new user asks about: Llama-3.2-1B pre-training on one H100 SXM 80GB (where the fastest layout,
micro-batch 8, is tight and micro-batch 4 is chosen: ``core.search.room``), Llama-3-8B LoRA on 8 H100 and
Llama-3-70B inference on 2 × H100. For each, ``search --objective time``'s #1, the front's point at the plan's GPU
count and the layout ``estimate`` chooses are the same layout with the same tokens/s: all three are the
engine's own figures for one scenario, so they must agree exactly (relative 1e-9; nothing is fitted).
"""

from __future__ import annotations

import json

import pytest

from llmplan.cli import main

H100 = "nvidia-h100-sxm-80gb"
PLANS = {
    "Llama-3.2-1B pre-training on one H100": (["--model", "meta-llama/Llama-3.2-1B", "--gpu", H100,
                                               "--workload", "pretrain"], 1),
    "Llama-3-8B LoRA on 8 H100": (["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", H100, "--gpus", "8",
                                   "--workload", "finetune", "--set", "training.method=lora"], 8),
    "Llama-3-70B inference on 2 H100": (["--model", "meta-llama/Meta-Llama-3-70B", "--gpu", H100, "--gpus", "2",
                                         "--workload", "inference"], 2),
}
LAYOUT = ("tp", "pp", "dp", "cp", "ep", "virtual_stages")
KNOBS = ("micro_batch", "zero_stage", "recompute", "offload")


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_search_front_and_estimate_agree(plan, capsys):
    args, gpus = PLANS[plan]
    found = _json(capsys, ["search", *args, "--objective", "time"])
    est = _json(capsys, ["estimate", *args])
    best = found["best"][0]
    assert est["layout"]["chosen_by"] == "auto" and est["fits"]
    assert {k: est["layout"][k] for k in LAYOUT} == {k: best["layout"][k] for k in LAYOUT}
    inference = est["inference"] is not None
    if not inference:
        assert {k: est["training"][k] for k in KNOBS} == {k: best["training"][k] for k in KNOBS}
    speed = est["inference"]["tokens_per_s"] if inference else est["compute"]["tokens_per_s"]
    assert speed == pytest.approx(best["tokens_per_s"], rel=1e-9)
    (point,) = [p for p in found["pareto_gpus"] if p["gpus"] == gpus]
    label = best["label"].split(" (one replica")[0]  # the front labels a serving replica "TP2 PP1"
    assert point["label"] == label and point["tokens_per_s"] == pytest.approx(speed, rel=1e-9)
    assert best["gpus"] == gpus
