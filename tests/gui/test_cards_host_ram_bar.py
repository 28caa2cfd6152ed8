"""A plan on different cards with layers in host RAM: the memory bar's legend ends with the host RAM the CLI prints.

Llama-3.1-70B Q8_0 with llama.cpp on an RTX 5090 32GB + an RTX 3090 24GB (the Inference tab's "Cards in this
machine"): the cards hold part of the layers and the rest stay in host RAM. Before (seen on branch chart33,
2026-11-28) the bar showed no host RAM entry on such a plan, since its verdict carried no off-GPU bytes. Now the
entry reads "Host RAM per node (offload, not on a GPU)" with the bytes of the CLI's layer split
(``cli.mixed_cards.mixed_json``, ``mixed_gpus.host_bytes``), exact (tolerance: none), and the CLI's text line
prints the same figure.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6.QtWidgets")

from test_machine_cards import pick

from llmplan.cli.mixed_cards import mixed_json, mixed_text
from llmplan.plan.evaluate import estimate_cards


def two_cards_plan(window, qtbot, name: str = "Untitled plan") -> None:
    """Llama-3.1-70B Q8_0 with llama.cpp on an RTX 5090 + an RTX 3090 ("Cards in this machine"), evaluated."""
    window.state.edit_many({"model.id": "meta-llama/Llama-3.1-70B", "workload": "inference",
                            "inference.engine": "llama-cpp", "inference.weight_format": "q8_0", "name": name},
                           "test plan")
    window.workload.setCurrentIndex(0)
    cards = window.workload.machine_cards
    pick(cards, "nvidia-rtx-5090-32gb")
    pick(cards, "nvidia-rtx-3090-24gb")
    window.state.evaluate_now()
    qtbot.waitUntil(lambda: not window.state.pending, timeout=10_000)


def test_cards_plan_shows_host_ram_in_the_bar(window, qtbot):
    two_cards_plan(window, qtbot)
    assert window.state.doc.hardware.card_ids() == ["nvidia-rtx-5090-32gb", "nvidia-rtx-3090-24gb"]
    plan, scenario = estimate_cards(window.state.doc)
    cli = mixed_json(plan, scenario)["mixed_gpus"]
    assert cli["host_layers"] > 0 and plan.fits  # the plan keeps layers in host RAM
    bar = window.results.bar
    assert bar.off_gpu == (("Host RAM per node", cli["host_bytes"]),)
    host = f"Host RAM per node (offload, not on a GPU) {window.unit.fmt_any(cli['host_bytes'])}"
    assert bar.legend()[-1][0] == host
    assert f"{cli['host_layers']} layers + input embedding, {window.unit.fmt(cli['host_bytes'])}" in mixed_text(
        mixed_json(plan, scenario), scenario.model.name, window.unit)
    assert window.results.banner.text().startswith("Fits with offload on 2 cards")
    # the bar's other parts are one card of the plan's GPU: the line under the banner says which entry is not
    assert f"the {cli['host_layers']} layers the cards leave there" in window.results.cost.text()
