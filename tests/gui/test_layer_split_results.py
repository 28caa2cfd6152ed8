"""The results pane of a llama.cpp layer split with layers in host RAM, at 1,280 × 800 (the window's default size).

Llama-3.1-70B Q8_0 with llama.cpp on 2 × RTX 3090, the app's default request (1,024 tokens in, 256 out): 54 layers
on the cards (27 each), 26 layers, the output head and the input embedding in host RAM. Host RAM by hand from the
model's config.json (meta-llama/Llama-3.1-70B) and llama.cpp's Q8_0 block (34 B per 32 weights, norms F32; the
same arithmetic as tests/core/inference/test_identical_cards_offload.py), exact to the byte:

- a layer: (2·8192² + 2·8192·1024 + 3·8192·28672)·34/32 + 2·8192·4 = 909,180,928 B;
- the head 128,256·8192·34/32 + 8192·4 = 1,116,372,992 B, the embedding 1,116,340,224 B;
- the host layers' KV cache: 26 · 1,280 tokens · K and V · 8 heads · 128 · bf16 = 136,314,880 B;
- in all 26,007,732,224 B = 24.22 GiB, in one host: the CPU reads those layers from one pool.

The memory bar used to show it as "Offloaded (off the GPU) 12.11 GiB", the host bytes ÷ 2 GPUs, while the table
read "Host RAM per node (offload) 24.22 GiB" and the CLI printed no host RAM at all (issue 24's notes). Now the bar's
legend, the table and the CLI show the same figure under the same words.
"""

from __future__ import annotations

import os

from drive import choose, click_tab, pick_gpu, pick_model, type_into

from llmplan.cli.report import estimate_json, estimate_text

LAYER = (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) * 34 // 32 + 2 * 8192 * 4
HEAD = 128256 * 8192 * 34 // 32 + 8192 * 4
EMBED = 128256 * 8192 * 34 // 32
KV_HOST = 26 * (1024 + 256) * 2 * 8 * 128 * 2
HOST = 26 * LAYER + HEAD + EMBED + KV_HOST  # 26,007,732,224 B


def settle(qtbot, window) -> None:
    """The estimate, the fix search, the chart sweeps and Qt's layout all done: what a person sees."""
    qtbot.waitUntil(lambda: not window.state.pending, timeout=10_000)
    window.results.fixes.wait_idle()
    if window.charts is not None:
        window.charts.wait_idle()
    qtbot.wait(300)


def two_3090s_q8(window, qtbot):
    click_tab(window, 0)
    pick_model(window, "llama 3.1 70", "Llama 3.1 70B")
    pick_gpu(window, "3090", "GeForce RTX 3090 24GB")
    choose(window, "inference.engine", "llama")
    type_into(window, "inference.weight_format", "q8_0")
    type_into(window, "hardware.gpus_per_node", "2")
    out = window.state.evaluate_now()
    settle(qtbot, window)
    return out


def shot(window, name: str, tmp_path) -> None:
    """Keep the picture where ``LLMPLAN_SHOTS`` says (the pictures were looked at), else in the test's folder."""
    window.grab().save(os.path.join(os.environ.get("LLMPLAN_SHOTS") or str(tmp_path), name))


def test_host_ram_is_per_node_in_the_bar_the_table_and_the_cli(window, qtbot, tmp_path):
    assert (window.width(), window.height()) == (1280, 800)  # the default size of a first start
    out = two_3090s_q8(window, qtbot)
    assert window.results.banner.text().startswith("Fits with offload: 26 of 80 layers in CPU RAM")
    assert out.estimate.memory.host_ram.value == HOST  # exact, by hand above
    shown = window.unit.fmt_any(HOST)
    assert shown == "24.22 GiB"
    assert window.results.value_of("Host RAM per node (offload)") == shown
    bar = window.results.bar
    assert bar.off_gpu == (("Host RAM per node", HOST),)  # the whole host, not HOST / 2 (12.11 GiB)
    assert bar.legend()[-1][0] == "Host RAM per node (offload, not on a GPU) 24.22 GiB"
    assert bar.accessibleDescription().endswith("; Host RAM per node (offload, not on a GPU): 24.22 GiB")
    cli = estimate_text(estimate_json(out.estimate, out.scenario))
    line = next(x.strip() for x in cli.splitlines() if x.strip().startswith("host RAM per node (offload)"))
    assert line.split(")", 1)[1].strip() == shown
    shot(window, "banner32-two-3090s-1280.png", tmp_path)


def whole(label) -> bool:
    """The label shows all its lines: as tall as its wrapped text needs at its width, and not clipped by the pane."""
    if not label.isVisible():
        return False
    region = label.visibleRegion().boundingRect()
    return label.height() >= label.heightForWidth(label.width()) and region.height() == label.height()


def test_long_verdicts_show_whole_at_1280(window, qtbot, tmp_path):
    """The offload banner and the line under it, and the red "does not fit" banner with the This machine line
    under it (a recorded RTX 4090), wrap and show every line at 1,280 × 800. The banner that issue 24's notes
    saw cut ("Fits with offload: 26 of 80 layers in CPU…") was a picture taken before Qt had laid out the new
    text; the running window wraps it (these checks held before this change; they guard the wrap)."""
    from test_this_machine import rtx4090_report

    two_3090s_q8(window, qtbot)
    results = window.results
    assert whole(results.banner) and whole(results.cost)
    assert results.banner.height() > results.banner.fontMetrics().height() * 2  # two lines at 1,280
    window.hardware.detector.finished.emit(rtx4090_report(), "")
    window.this_machine.wait_idle()
    type_into(window, "hardware.gpus_per_node", "1")
    choose(window, "inference.engine", "vllm")
    type_into(window, "inference.weight_format", "bf16")
    window.state.evaluate_now()
    settle(qtbot, window)
    window.this_machine.wait_idle()
    qtbot.wait(200)
    assert results.banner.text().startswith("Does not fit: needs ")
    line = window.this_machine.verdict
    assert "short)" in line.text()
    assert whole(results.banner) and whole(line)
    shot(window, "banner32-does-not-fit-1280.png", tmp_path)


def test_a_long_fix_wraps_instead_of_losing_its_end(window, qtbot, tmp_path):
    """The plan's own fixes on 1 × RTX 3090 with bf16 70B on vLLM: the first read "1. Use 4 GPUs (tensor parallel
    4; from 1), and use FP8 weig…" at 1,280 × 800, the change that matters cut off. Every word of each fix now
    shows, on as many lines as it needs, each line within the button."""
    two_3090s_q8(window, qtbot)
    type_into(window, "hardware.gpus_per_node", "1")
    choose(window, "inference.engine", "vllm")
    type_into(window, "inference.weight_format", "bf16")
    window.state.evaluate_now()
    settle(qtbot, window)
    buttons = [b for b in window.results.fixes.buttons if b.isVisible()]
    assert buttons
    long = [b for b in buttons if "\n" in b.text()]
    assert long, [b.text() for b in buttons]  # at least one fix is longer than the pane is wide
    for b in buttons:
        assert b.text().split() == str(b.property("full_text")).split()  # every word, none elided
        fm = b.fontMetrics()
        lines = b.text().split("\n")
        assert all(fm.horizontalAdvance(x) <= b.width() for x in lines)
        assert b.height() >= len(lines) * fm.height()
    shot(window, "banner32-fixes-1280.png", tmp_path)
