"""llama.cpp's row split on identical cards gives one answer everywhere: ``estimate --gpu X --gpus N --split-mode
row`` (the machine's cards, ``split_cards``), ``search`` (its one llama.cpp layout, ``core.inference.row_estimate``),
and the app's pipeline (``plan.evaluate.evaluate_plan``); ``--this-machine``: tests/fit/test_fit_row_split.py.

Before, the search and the app refused the plan ("no layout fits") while ``estimate`` priced it. The figures are
those of ``core/inference/row_split.py`` (bytes by hand in tests/core/inference/test_row_split.py; 2 × RTX 3090,
Llama-3.1-70B Q4_K_M: 17.6 tokens/s per user, docs/inference.md "Row split"); here they must agree exactly
(relative tolerance 1e-12: one function, the same floats)."""

import json

import pytest

from llmplan.cli import main
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.planfile import load_plan

G = "nvidia-rtx-3090-24gb"
PLAN = ["--model", "meta-llama/Llama-3.1-70B", "--workload", "inference", "--set", "inference.weight_format=q4_k_m"]
ROWS = "engine chosen: llama.cpp, which splits every weight matrix's rows across the cards"


def run_json(capsys, *args):
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_search_and_the_app_pipeline_agree(capsys, tmp_path):
    est = run_json(capsys, "estimate", *PLAN, "--gpu", G, "--gpus", "2", "--split-mode", "row",
                   "--save", str(tmp_path / "row.llmplan"))
    found = run_json(capsys, "search", *PLAN, "--gpu", G, "--gpus", "2", "--split-mode", "row")
    tps = est["inference"]["tokens_per_s"]
    assert est["fits"] and est["mixed_gpus"]["split_mode"] == "row" and est["automatic"] == ROWS
    assert round(tps, 1) == 17.6  # docs/inference.md, Row split: 2 × RTX 3090
    best = found["best"][0]
    assert best["tokens_per_s"] == pytest.approx(tps, rel=1e-12) and best["gpus"] == 2
    assert found["automatic"] == ROWS and "row split over the machine's 2 cards, as the plan states" in found["note"]
    fullest = max(c["total"] for c in est["mixed_gpus"]["cards"])
    assert best["memory_per_gpu_bytes"] == pytest.approx(fullest, rel=1e-12)
    # the app's pipeline on the plan the estimate saved (its cards listed) and on the identical-GPU plan
    saved = load_plan(tmp_path / "row.llmplan")
    identical = saved.model_copy(update={"hardware": saved.hardware.model_copy(
        update={"cards": (), "tensor_split": None, "gpu": G, "gpus_per_node": 2})})
    _, ev = evaluate_plan(identical)
    assert ev.fits and ev.inference.tokens_per_s.value == pytest.approx(tps, rel=1e-12)
    assert ev.memory.total.value == pytest.approx(fullest, rel=1e-12)


def test_an_open_format_goes_down_the_same_ladder_in_estimate_and_search(capsys):
    # Llama-3.1-70B, no format named, 2 x RTX 3090 by rows: bf16 offloads, so both take the first format of
    # llama.cpp's ladder that fits on the cards (core.search.policy), Q5_K_M at 16.3 tokens/s, not bf16 with offload
    base = ["--model", "meta-llama/Llama-3.1-70B", "--workload", "inference", "--gpu", G, "--gpus", "2",
            "--split-mode", "row"]
    est = run_json(capsys, "estimate", *base)
    found = run_json(capsys, "search", *base)
    assert est["inference"]["weight_format"] == "q5_k_m" and "auto: weight format q5_k_m" in est["automatic"]
    assert est["mixed_gpus"]["host_layers"] == 0
    assert found["best"][0]["tokens_per_s"] == pytest.approx(est["inference"]["tokens_per_s"], rel=1e-12)
    assert "showing q5_k_m" in found["note"]


def test_search_and_estimate_refuse_what_the_row_split_cannot_run_by_the_field(capsys):
    for cmd in ("search", "estimate"):
        assert main([cmd, *PLAN, "--gpu", G, "--split-mode", "row"]) != 0
        err = capsys.readouterr().err
        assert "inference.split_mode=row splits each matrix over several cards" in err and "no layout" not in err
        assert main([cmd, *PLAN, "--gpu", G, "--gpus", "2", "--nodes", "2", "--network", "ib-ndr-400",
                     "--split-mode", "row"]) != 0
        err = capsys.readouterr().err
        assert "over the cards of one machine" in err and "no layout" not in err


@pytest.mark.parametrize("cards,mode,words", [
    ((G, G), "row", "which splits every weight matrix's rows across the cards"),
    ((G, G), "layer", "which splits layers across the cards"),
    ((G, "nvidia-rtx-4090-24gb"), "layer", "which splits layers across unequal cards"),
])
def test_the_header_says_how_these_cards_are_split(capsys, cards, mode, words):
    gpus = [a for g in cards for a in ("--gpu", g)]
    assert main(["estimate", *PLAN, *gpus, "--split-mode", mode]) == 0
    out = capsys.readouterr().out
    assert f"(engine chosen: llama.cpp, {words})" in out
