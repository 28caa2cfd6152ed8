"""gpt-oss-120b with llama.cpp on one RTX 3090 in the app (issue 24, --n-cpu-moe): the plan leaves the experts'
place open, so the estimate keeps the experts of the first 24 layers in host RAM with every layer on the card, the
banner and the results say so in the CLI's words, and the Inference tab's "Experts in host RAM" control (shown for
llama.cpp on an MoE model only) pins it.
"""

from __future__ import annotations

import os

from drive import choose, click_tab, field, pick_gpu, pick_model, type_into

from llmplan.cli.report import estimate_json, estimate_text


def _experts_row_shown(window) -> bool:
    from PySide6.QtWidgets import QComboBox

    box = next(w for w in window.findChildren(QComboBox) if w.accessibleName().startswith("Experts in host RAM"))
    return box.isVisibleTo(window)


def test_gpt_oss_120b_on_a_3090_keeps_experts_in_host_ram(window, qtbot, tmp_path):
    click_tab(window, 0)
    pick_model(window, "gpt-oss-120", "gpt-oss-120b")
    pick_gpu(window, "3090", "GeForce RTX 3090 24GB")
    choose(window, "inference.engine", "llama")
    out = window.state.evaluate_now()
    banner = window.results.banner.text()
    assert banner.startswith("Fits with offload: experts of 24 layers in host RAM (--n-cpu-moe 24)"), banner
    assert window.results.value_of("Layers on the GPU") == "36"
    assert window.results.value_of("Routed experts") == "experts of 24 layers in host RAM (--n-cpu-moe 24)"
    cli = estimate_text(estimate_json(out.estimate, out.scenario))
    row = next(x for x in cli.splitlines() if x.strip().startswith("routed experts"))
    assert row.split("experts", 1)[1].strip() == window.results.value_of("Routed experts")
    assert _experts_row_shown(window)
    shots = os.environ.get("LLMPLAN_SHOTS")  # set to keep the picture (the trial looked at it)
    qtbot.wait(300)
    window.grab().save(os.path.join(shots or str(tmp_path), "experts-in-host.png"))
    # --cpu-moe: every layer's experts in host RAM, far less on the card
    type_into(window, "inference.cpu_moe_layers", "all")
    window.state.evaluate_now()
    assert window.results.value_of("Routed experts") == "every layer's experts in host RAM (--cpu-moe)"
    assert window.state.doc.inference.cpu_moe_layers == "all"
    # a dense model hides the control
    type_into(window, "inference.cpu_moe_layers", "24")
    window.state.evaluate_now()
    assert window.state.doc.inference.cpu_moe_layers == 24
    box = field(window, "inference.cpu_moe_layers")
    box.setCurrentIndex(box.findText("automatic"))
    assert window.state.doc.inference.cpu_moe_layers is None
    pick_model(window, "qwen3 8b", "Qwen3 8B")
    window.state.evaluate_now()
    assert not _experts_row_shown(window)
