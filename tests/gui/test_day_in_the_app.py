"""A day in the app, as the people of the brief use it (trial of 2026-11-28): a hobbyist with a 24 GB card,
then two, then a 64 GB Mac; a researcher who forgets the network between 64 nodes; files dropped on the
window. Each test is a step that read wrong in that trial, driven through the widgets (tests/gui/drive.py),
and compared with what ``llmplan-cli estimate`` prints for the same plan where the two share a figure.
"""

from __future__ import annotations

import pytest
from drive import choose, click_tab, pick_gpu, pick_model, type_into

from llmplan.cli.report import estimate_json, estimate_text


def _cli_line(outcome, label: str) -> str:
    """The value the CLI's table prints on the line ``label`` for the window's own plan."""
    text = estimate_text(estimate_json(outcome.estimate, outcome.scenario))
    line = next(x for x in text.splitlines() if x.strip().startswith(label + "  "))
    return line.strip()[len(label):].strip()


def _hobbyist(window, words: str, row: str) -> None:
    click_tab(window, 0)
    pick_model(window, "llama 3.1 70", "Llama 3.1 70B")
    pick_gpu(window, words, row)
    choose(window, "inference.engine", "llama")
    type_into(window, "inference.weight_format", "q4_k_m")


@pytest.mark.parametrize(("words", "row", "expected"), [
    # 42.5 GB of Q4_K_M weights on a 24 GB card: llama.cpp keeps 32 of 80 layers in CPU RAM, so with every
    # layer on the GPU no context fits (the table read a bare "0")
    ("4090", "GeForce RTX 4090 24GB", "none with every layer on the GPU (the weights alone do not fit)"),
    # 48 of the 64 GB are the GPU's (macOS wires 3/4 of unified memory): the table read "20,736", no unit
    ("m1 max 64", "M1 Max 32-core GPU, 64 GB", "20,736 tokens (every layer on the GPU)"),
], ids=["rtx4090", "mac64"])
def test_longest_context_says_tokens_and_what_it_assumes_as_the_cli_does(window, words, row, expected):
    _hobbyist(window, words, row)
    out = window.state.evaluate_now()
    shown = window.results.value_of("Longest context that fits")
    assert shown == expected
    assert shown == _cli_line(out, "longest context that fits")
    assert window.results.value_of("Model's trained context") == "131,072 tokens"  # Llama 3.1's config.json


def test_64_nodes_without_a_network_say_which_control_to_use(window, fake_dialogs):
    """A researcher sets 8 H100s × 64 nodes and has not picked a network yet: the banner said "set
    hardware.network to a catalog network id" (a plan-file path), and Auto… said the plan needed "a model
    and a GPU", which it had."""
    click_tab(window, 2)
    pick_model(window, "llama 3 70", "Llama 3 70B")
    pick_gpu(window, "h100 sxm", "H100 SXM 80GB")
    type_into(window, "hardware.gpus_per_node", "8")
    type_into(window, "hardware.nodes", "64")
    window.state.evaluate_now()
    banner = window.results.banner.text()
    assert banner == ("Cannot estimate: 64 nodes need a network between them: pick one in Hardware ▸ Network "
                      "(or a node preset)")
    window.auto_search()
    assert fake_dialogs.errors == [("Auto layout", "Fix the plan first: 64 nodes need a network between them: "
                                    "pick one in Hardware ▸ Network (or a node preset)")]
    window.hardware.network.setCurrentIndex(1)  # the first catalog network
    assert window.state.evaluate_now().ok
