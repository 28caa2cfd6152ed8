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
