"""A day in the app, as the people of the brief use it (trial of 2026-11-28): a hobbyist with a 24 GB card,
then two, then a 64 GB Mac; a researcher who forgets the network between 64 nodes; files dropped on the
window. Each test is a step that read wrong in that trial, driven through the widgets (tests/gui/drive.py),
and compared with what ``llmplan-cli estimate`` prints for the same plan where the two share a figure.
"""

from __future__ import annotations

import pytest
from drive import choose, click_tab, field, pick_gpu, pick_model, type_into

from llmplan.cli.report import estimate_json, estimate_text


def _cli_line(outcome, label: str, section: str = "") -> str:
    """The value the CLI's table prints on the line ``label`` (in ``section``) for the window's own plan."""
    text = estimate_text(estimate_json(outcome.estimate, outcome.scenario))
    lines = text.splitlines()
    if section:
        lines = lines[lines.index(section):]
    line = next(x for x in lines if x.strip().startswith(label + "  "))
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
    table = window.results.table  # one line over both columns, wrapped (the value column cut it off)
    line = next(i for i in range(table.topLevelItemCount())
                if table.topLevelItem(i).text(0).strip().startswith("Longest context that fits: "))
    assert table.tooltip(line, 0).startswith("largest T with weights + batch × KV(T, paged)")  # its formula, still


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


def test_a_second_card_splits_the_model_as_llama_cpp_does_and_as_the_cli_plans_it(window):
    """GPUs per node 1 → 2 on the hobbyist's 70B Q4_K_M with llama.cpp: the layout grew DP, two copies of the
    model each with 32 of 80 layers in CPU RAM at "~7.28 tokens/s" (two users' worth), where llama.cpp splits
    the layers over both cards by default and ``llmplan-cli estimate --gpus 2`` plans PP 2: all 80 layers on
    the GPUs, 20.82 GiB of 23.99 GiB each, 18.1 tokens/s (same engine figures, same strings)."""
    _hobbyist(window, "4090", "GeForce RTX 4090 24GB")
    window.state.evaluate_now()
    assert window.results.banner.text().startswith("Fits with offload: 32 of 80 layers in CPU RAM")
    type_into(window, "hardware.gpus_per_node", "2")
    p = window.state.doc.parallelism
    assert (p.tp, p.pp, p.dp) == (1, 2, 1)
    out = window.state.evaluate_now()
    assert window.results.banner.text() == "Fits: 20.8 of 24.0 GiB per GPU"
    assert window.results.value_of("Throughput per user") == _cli_line(out, "throughput per user") == "18.1 tokens/s"
    assert window.results.value_of("Total") == _cli_line(out, "total", "memory per GPU") == "20.82 GiB"
    # every layer on the GPUs, yet 564 MiB in host RAM: its tooltip said "layers left in host RAM" (none are)
    table = window.results.table
    host = next(i for i in range(table.topLevelItemCount())
                if table.topLevelItem(i).text(0).strip() == "Host RAM per node (offload)")
    assert table.topLevelItem(host).text(1) == "564 MiB" and "the input embedding" in table.tooltip(host, 1)
    window.undo_action.trigger()  # the count and its split are one undo step
    assert (window.state.doc.hardware.gpus_per_node, window.state.doc.parallelism.pp) == (1, 1)
    window.redo_action.trigger()
    assert (window.state.doc.hardware.gpus_per_node, window.state.doc.parallelism.pp) == (2, 2)
    type_into(window, "hardware.gpus_per_node", "1")  # and back: one GPU, not a PP 2 that needs two
    p = window.state.doc.parallelism
    assert (p.tp, p.pp, p.dp) == (1, 1, 1)
    assert window.state.evaluate_now().ok


def test_vllm_on_two_gpus_is_tensor_parallel_as_the_cli_plans_it(window):
    """The same with vLLM in bf16 on two H100s: TP 2 (the CLI's automatic layout), where DP 2 was two bf16
    copies of 141 GB that fit no H100."""
    click_tab(window, 0)
    pick_model(window, "llama 3.1 70", "Llama 3.1 70B")
    pick_gpu(window, "h100 sxm", "H100 SXM 80GB")
    type_into(window, "hardware.gpus_per_node", "2")
    p = window.state.doc.parallelism
    assert (window.state.doc.inference.engine, p.tp, p.pp, p.dp) == ("vllm", 2, 1, 1)
    out = window.state.evaluate_now()
    assert window.results.banner.text().startswith("Fits:")
    assert window.results.value_of("Total") == _cli_line(out, "total", "memory per GPU") == "67.50 GiB"


def test_a_gguf_dropped_on_the_fine_tune_plan_is_planned_for_inference(window, isolated):
    """The window opens on a LoRA fine-tune; a hobbyist drops a Q4_K_M GGUF on it. The status line said
    "weights q4_k_m" while the Fine-tune tab went on planning a bf16 LoRA of it, where the Q4_K_M counts for
    nothing. Now the plan runs the file (llama.cpp, which reads GGUF), one undo step with the import."""
    from test_drops import drop, write_gguf

    assert window.state.doc.workload == "finetune"
    drop(window, [write_gguf(isolated / "Tiny-Q4_K_M.gguf", "Tiny Q4", 15)])  # 15: LLAMA_FTYPE_MOSTLY_Q4_K_M
    doc = window.state.doc
    assert (doc.workload, doc.inference.engine, doc.inference.weight_format) == ("inference", "llama.cpp", "q4_k_m")
    assert window.workload.tabText(window.workload.currentIndex()).replace("&", "") == "Inference"
    assert window.state.evaluate_now().ok
    assert window.results.value_of("Layers on the GPU") == "1"  # the one block of the test file, on the GPU
    window.undo_action.trigger()
    assert (window.state.doc.workload, window.state.doc.model.id) == ("finetune", "meta-llama/Meta-Llama-3-8B")


def test_a_64_gb_mac_says_why_the_gpu_has_48(window):
    """The banner reads "Fits: 39.8 of 48.0 GiB per GPU" on a 64 GB Mac with nothing in the window saying
    why 48; the CLI prints the reason under its memory table (macOS wires 3/4 of unified memory above
    32 GiB for the GPU: docs/fit.md). The results table now says it in the same words."""
    _hobbyist(window, "m1 max 64", "M1 Max 32-core GPU, 64 GB")
    out = window.state.evaluate_now()
    assert window.results.banner.text() == "Fits: 39.8 of 48.0 GiB per GPU"
    table = window.results.table
    lines = [table.topLevelItem(i).text(0).strip() for i in range(table.topLevelItemCount())]
    cli = estimate_text(estimate_json(out.estimate, out.scenario))
    note = next(x.strip() for x in cli.splitlines() if x.strip().startswith("unified memory: "))
    assert note == ("unified memory: the GPU may use 48.00 GiB of the 64.00 GiB by default "
                    "(raise it with sudo sysctl iogpu.wired_limit_mb)")
    assert "Unified memory: " + note.removeprefix("unified memory: ") in lines
    window.state.edit("hardware.gpu", "nvidia-rtx-4090-24gb")  # a card with memory of its own: no such line
    window.state.evaluate_now()
    assert not any(x.strip().startswith("Unified memory") for x in
                   (table.topLevelItem(i).text(0) for i in range(table.topLevelItemCount())))


def test_a_saved_plan_reopens_with_the_model_named_as_before(window, isolated, fake_dialogs, settings, qtbot):
    """Save, then open the file (or recover the autosave, written the same way): the model line under the
    picker read "meta-llama/Llama-3.1-70B — 70.6 B params" instead of "Llama 3.1 70B — …", because the
    saved plan carries the catalog's config.json inline and an inline config was named by the id."""
    from llmplan.gui.main_window import MainWindow

    pick_model(window, "llama 3.1 70", "Llama 3.1 70B")
    window.state.evaluate_now()
    assert window.models.arch.text().startswith("<b>Llama 3.1 70B</b> — 70.6 B params")
    fake_dialogs.save_result = isolated / "mine.llmplan"
    assert window.save_as()
    other = MainWindow(settings=settings, detect=False, charts=False)
    qtbot.addWidget(other)
    assert other.open_path(isolated / "mine.llmplan")
    out = other.state.evaluate_now()
    assert other.state.doc.model.config is not None  # self-contained: the config.json is in the file
    assert out.scenario.model.name == "Llama 3.1 70B"
    assert other.models.arch.text().startswith("<b>Llama 3.1 70B</b> — 70.6 B params")
    assert out.estimate.memory.total.value == window.state.evaluate_now().estimate.memory.total.value


def test_the_two_llama_cpp_entries_say_which_builds_they_follow(window):
    """The engine list offers "llama.cpp (2025+ build)" above "llama.cpp"; nothing on screen said that the
    plain one plans the 2024 builds of the published llama-bench tables. Each entry's tooltip now carries the
    catalog's ``describes`` (catalogs/engines.toml) before its source."""
    from PySide6.QtCore import Qt

    click_tab(window, 0)
    combo = field(window, "inference.engine")
    tips = {combo.itemText(i): combo.itemData(i, Qt.ItemDataRole.ToolTipRole) for i in range(combo.count())}
    assert tips["llama.cpp"].startswith("llama.cpp (llama-cpp): llama.cpp builds of 2024")
    assert tips["llama.cpp (2025+ build)"].startswith("llama.cpp (2025+ build) (llama-cpp-2026): a llama.cpp build "
                                                      "from late 2025 on")
    assert "Source: vLLM engine arguments documentation" in tips["vLLM"]
