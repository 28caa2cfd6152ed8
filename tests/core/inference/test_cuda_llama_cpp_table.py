"""llama.cpp on NVIDIA consumer, workstation and datacenter cards against one widely cited public table:
XiongjieDai/GPU-Benchmarks-on-LLM-Inference (README at aa72e0e, 2024-05-12; llama-bench, llama.cpp b2843, Llama 3
8B and 70B at Q4_K_M and F16, tg/pp 512-8192, one to eight cards split by layers; transcribed with its source in
``tests/core/inference/xiongjiedai_table.py``). The table is from May 2024, so every cell is estimated with the
default ``llama-cpp`` engine (the 2024 builds); ``python -m tests.core.inference.xiongjiedai_table [engine]`` prints
ours against every published cell. Nothing in llmplan was set from this table.

What holds and is asserted: all 747 fit verdicts (the 710 measured cells fit, the "OOM" cells do not): without
flash attention llama.cpp's compute buffer holds one micro-batch's f32 score matrix against the whole cache, and
CUDA's pool its F16 copy (core/inference/score_buffer.py), which takes the RTX 4080's F16 8192-token runs past 16 GB;
no estimate above the hardware's roofline; decode on the GDDR cards (every
GeForce and workstation card, A40, L40S) median |error| 5.2%, every row within 26%; on the HBM cards (A100, H100:
batch-1 stream share 0.613, measured on an H100 PCIe in llama.cpp issue #6763) median +13%; over the whole table 5.8%;
several cards against one of the same card (with every layer on two or more CUDA GPUs b2843 replays no CUDA graph,
105.8 µs a layer instead of 86.7, from PR #6766's runs without graphs): every GDDR rig's tg512 ratio within 6%;
prompts in scope median |error| 11.3% (GeForce 8.7%, workstation 12.8%, data centre 11.3%).
The prompt figures rest on three 2024 kernel facts (docs/inference.md, "llama.cpp / Ollama"): F16 weights run cuBLAS
with fp16 accumulate at 0.438 of that peak (RTX 4090 run of PR #4766; 0.364 on an A100 PCIe, PR #6017, carried to the
other A100s, the H100s and the H200 at the ratio of their measured GEMM efficiency: test_cublas_share_carry.py); b2843 multiplies
a prompt micro-batch above 32 tokens by block-quantised weights as dequantise-to-F16 + that same GEMM (MMQ only up to
32 rows where fp16 tensor cores exist, until PR #8075); and it runs attention without flash attention, moving 20 B
per score element.
What does not, pinned with its cause:
- decode on the 4 x A100 SXM rig with the 8B model: +41% to +46% (the only decode rows beyond 40%), four cards
  26% slower than one there, beyond the lost CUDA graphs that every other rig's slowdown matches;
- prompts on the H100 PCIe, one card +15% to +37% (Q4_K_M) and +29% to +32% (F16, 8B), four cards -9% to +40%
  (they were +35% to +59%, +47% to +62% and +13% to +63% with the A100's share carried unscaled): the card's own
  measured GEMM efficiency (0.656 of 756 TFLOP/s against the A100 PCIe's 0.822) explains part; the rest is not
  priced, and both H100 PCIe rigs of the table ran at a 310 W power limit (the notebooks' nvidia-smi) where the
  datasheet card, and the GEMM measurement, run up to 350 W; Q4_K_M prompts on the A100s are -12% to +17% (they were
  -12% to -50% with the June 2024 MMQ rate), but the 4 x A100 SXM rig's +46% to +55% (+41% to +50% before the SXM's
  GEMM efficiency was carried: the rig's F16 prompts and decode are anomalous too);
- 70B Q4_K_M prompts at 512 tokens on the A40 (+73%, four of them +54%) and the RTX 6000 Ada (+32%); the A40's runs,
  and the 4 x A100 SXM rig's 70B Q4_K_M run (+55% at pp512), get faster with the prompt's length, which a steady b2843
  run cannot, as do the five runs with anomalous F16 cells and no other run of the table;
- prompts longer than one 512-token micro-batch on several cards: llama.cpp pipelines the micro-batches across
  the cards (PR #6017), which the layer-split model does not.
"""

from __future__ import annotations

import itertools
import statistics

import pytest

from tests.core.inference.xiongjiedai_table import (
    HBM,
    OOM,
    Cell,
    anomalous,
    card_class,
    cells,
    estimate_cell,
    report,
)

MEASURED = [c for c in cells() if c.measured is not None]


def error(c: Cell, engine: str = "llama-cpp") -> float:
    return estimate_cell(c, engine).tokens_per_s / c.measured - 1


def errors(sel, engine: str = "llama-cpp") -> list[float]:
    return [error(c, engine) for c in MEASURED if sel(c)]


def in_scope(c: Cell) -> bool:
    """Cells the model claims to cover: all but the anomalous runs and the multi-card prompts of several
    micro-batches (pipelined, not modelled)."""
    return not anomalous(c) and not (c.kind == "pp" and c.cards > 1 and c.tokens > 512)


def test_table_as_transcribed():
    assert len(MEASURED) == 89 * 8 - 2 == 710  # 89 rows of 8 cells; the RTX 4080's F16 8192 cells are "OOM"
    assert len(OOM) == 35  # the overview's other "OOM" combinations
    h100 = {(c.model, c.fmt, c.kind, c.tokens): c.measured for c in MEASURED
            if c.gpu == "nvidia-h100-pcie-80gb" and c.cards == 1}
    assert h100[("8B", "Q4_K_M", "pp", 512)] == 8125.45  # the notebook's llama-bench line: 8125.45 ± 23.37
    assert h100[("70B", "Q4_K_M", "tg", 512)] == 25.03


def test_anomalous_runs_are_the_f16_prompts_slower_than_their_q4():
    odd = {(c.gpu, c.cards) for c in MEASURED if anomalous(c)}
    assert odd == {("nvidia-l40s-48gb", 1), ("nvidia-l40s-48gb", 4), ("nvidia-a100-sxm4-80gb", 1),
                   ("nvidia-a100-sxm4-80gb", 4), ("nvidia-rtx-5000-ada-32gb", 4)}


def test_every_measured_cell_fits():
    assert not [c.label for c in MEASURED if not estimate_cell(c).fits]


@pytest.mark.parametrize("combo", OOM, ids=lambda o: f"{o[1]}x {o[0]} {o[2]} {o[3]}")
def test_every_oom_cell_does_not_fit(combo):
    gpu, cards, model, fmt = combo
    assert not estimate_cell(Cell(gpu, cards, model, fmt, "tg", 1024, None)).fits


@pytest.mark.parametrize("kind", ["tg", "pp"])
def test_rtx_4080_f16_at_8192_tokens_does_not_fit(kind):
    """b2843 runs without flash attention: at n_ctx 8192 the f32 score matrix of one micro-batch (8,192 x 512 x 32
    heads x 4 B = 512 MiB) is in llama.cpp's compute buffer, and its F16 copy (256 MiB) in ggml-cuda's pool. With
    flash attention assumed the card had 406-480 MiB to spare; counted, it is 64 (tg) and 120 (pp) MiB short.
    The notebook's run failed earlier, at the reservation of the 560 MiB compute buffer itself ("failed to allocate
    CUDA0 buffer of size 587206656", 4080_v3.ipynb), so on that card less than 560 MiB was free after weights and
    cache: its CUDA context took more than the 300 MiB the profile assumes. The verdict is right; the pool copy that
    decides it here is a prompt's, which that run never reached."""
    assert not estimate_cell(Cell("nvidia-rtx-4080-16gb", 1, "8B", "F16", kind, 8192, None)).fits


def test_six_3090s_hold_70b_f16_at_8192_only_with_a_smaller_micro_batch():
    """3090_6_v3.ipynb: with the default n_ubatch 512 the n_ctx 8192 context could not be created (card 0's compute
    buffer, 1,216 MiB, failed to allocate); the published tg8192 / pp8192 cells ran with -ub 128 (``UBATCH``). The
    cards holding 14 of the 80 layers are the fullest (llama.cpp's split counts the head as an 81st layer)."""
    default = Cell("nvidia-rtx-3090-24gb", 6, "70B", "F16", "tg", 8192, None)
    assert not estimate_cell(default).fits
    assert estimate_cell(Cell("nvidia-rtx-3090-24gb", 6, "70B", "F16", "tg", 8192, None, ubatch=128)).fits


def test_no_estimate_above_the_roofline():
    over = [c.label for c in MEASURED if (o := estimate_cell(c)).tokens_per_s > o.peak_bound]
    assert not over


def test_decode_on_gddr_cards():
    """Every card but the A100s and the H100: median |error| 0.052 (0.047 before several cards paid the floor
    without CUDA graphs), every row within 26% (RTX 3090 8B Q4_K_M at 8,192 tokens +25%). Tolerances: median 10%,
    rows 30%."""
    e = errors(lambda c: c.kind == "tg" and not c.gpu.startswith(HBM))
    assert statistics.median(abs(x) for x in e) <= 0.10
    assert max(abs(x) for x in e) <= 0.30


@pytest.mark.parametrize("cls", ["geforce", "workstation"])
def test_decode_median_per_class(cls):
    e = errors(lambda c: c.kind == "tg" and card_class(c.gpu) == cls)
    assert statistics.median(abs(x) for x in e) <= 0.10  # measured 0.052 and 0.054


def test_decode_median_over_the_table():
    """The acceptance figure for decode (≤ 15%) over every measured NVIDIA cell: 5.8% (5.7% before the HBM share,
    5.2% between it and the multi-card floor: the single-card rows of the Ada cards read 5-10% low, and the multi-card
    rows, lacking their graph cost, used to land nearer by chance; test_several_cards_cost_the_cuda_graphs_they_lose
    checks the multi-card cost itself)."""
    assert statistics.median(abs(x) for x in errors(lambda c: c.kind == "tg")) <= 0.15


def test_hbm_decode():
    """A100 PCIe/SXM and H100 PCIe: ours -15% to +46%, median +13% (it was +19% to +96%, median +50%, 40 rows beyond
    50%, with the copy share 0.869 on every card). The HBM cards now stream at 0.613 of bandwidth at batch 1,
    measured on an H100 PCIe by llama.cpp issue #6763, not taken from this table. Tolerances: median 20%, every row
    but those pinned below within 40% (worst: 4 x A100 SXM 70B Q4_K_M tg8192, +32%)."""
    e = errors(lambda c: c.kind == "tg" and c.gpu.startswith(HBM))
    assert 0.05 < statistics.median(e) < 0.20
    assert min(e) > -0.20
    assert max(x for c, x in zip(hbm_decode_cells(), e, strict=True) if not four_a100_sxm_8b(c)) < 0.40


def hbm_decode_cells() -> list[Cell]:
    return [c for c in MEASURED if c.kind == "tg" and c.gpu.startswith(HBM)]


def four_a100_sxm_8b(c: Cell) -> bool:
    return c.gpu == "nvidia-a100-sxm4-80gb" and c.cards == 4 and c.model == "8B"


def test_four_a100_sxm_small_model_decode_pinned():
    """Pinned, not accepted: the 4 x A100 SXM rig's 8B rows, +41% to +46% (+48% to +58% before several cards paid the
    floor without CUDA graphs); they are the only decode rows of the table beyond 40%, none is beyond 50%. There four
    cards decode 8B Q4_K_M 26% slower than one card of the same table (99.73 against 135.04 t/s at tg512), while
    4 x H100 PCIe lose 15% (123.08 against 145.55) and the GDDR rigs 4-10%; the lost CUDA graphs explain the GDDR
    rigs (next test), not this one. The same rig's F16 prompts are anomalous (above)."""
    e = [error(c) for c in hbm_decode_cells() if four_a100_sxm_8b(c)]
    assert min(e) > 0.35 and max(e) < 0.50
    beyond = {c.label for c in MEASURED if c.kind == "tg" and abs(error(c)) > 0.4}
    assert beyond == {f"4x nvidia-a100-sxm4-80gb 8B {f} tg{n}" for f in ("Q4_K_M", "F16") for n in (512, 1024, 4096, 8192)}


def several_vs_one(tokens: int = 512) -> list[tuple[Cell, float, float]]:
    """(multi-card decode cell, measured t/s of several cards over one of the same card, ours over measured - 1 for
    that ratio), for every multi-card tg cell with a one-card row: the single-card error cancels out."""
    one = {(c.gpu, c.model, c.fmt, c.tokens): c for c in MEASURED if c.cards == 1 and c.kind == "tg"}
    out = []
    for c in MEASURED:
        o = one.get((c.gpu, c.model, c.fmt, c.tokens))
        if c.kind == "tg" and c.cards > 1 and c.tokens == tokens and o:
            ratio = c.measured / o.measured
            out.append((c, ratio, estimate_cell(c).tokens_per_s / estimate_cell(o).tokens_per_s / ratio - 1))
    return out


def test_several_cards_cost_the_cuda_graphs_they_lose():
    """Several cards of one kind against one, tg512 (the single-card error cancels): with all layers split over two or
    more CUDA GPUs b2843 pipelines the split and replays no CUDA graph (engines.toml, decode_layer_s_pipelined: 105.8
    µs a layer from PR #6766's runs without graphs, against 86.7 with them; PR #13814 lifted it in 2025). Ours over
    measured for the ratio, GDDR rigs: -5.3% to +2.9% (it was -3.4% to +10.3%, growing with the number of cards: 8B
    Q4_K_M on 2 / 4 / 6 x RTX 3090 +2.9 / +5.7 / +10.3%, now -4.0 / -1.4 / +2.9%; the low end is 4 x A40 70B, measured
    3% faster than one A40). Nothing per hop is added: the
    hidden state a card hands on is 16-32 KB, and once the graph floor is paid no GDDR rig shows a trend with its number
    of cards. Left: 4 x A100 PCIe and 4 x H100 PCIe 8B Q4_K_M +7.6% and +7.8%, 4 x A100 SXM +12% to +23% (pinned
    above). Tolerance: GDDR rigs within 6%, HBM PCIe rigs within 10%."""
    rows = several_vs_one()
    print("\n".join(f"{c.label:48s} measured {r:.3f} of one card, ours {e:+.1%}" for c, r, e in rows))
    gddr = [e for c, _, e in rows if not c.gpu.startswith(HBM)]
    assert len(gddr) == 28 and max(abs(e) for e in gddr) < 0.06
    hbm_pcie = [e for c, _, e in rows if c.gpu.startswith(HBM) and "sxm" not in c.gpu]
    assert max(abs(e) for e in hbm_pcie) < 0.10
    sxm = [e for c, _, e in rows if "sxm" in c.gpu]
    assert min(sxm) > 0.10 and max(sxm) < 0.30


def test_prompt_median_over_the_table():
    """The acceptance figure for prompts (≤ 20%) over the cells in scope: 11.3% (11.5% with the A100 PCIe's cuBLAS share
    carried to the H100 PCIe unscaled; 38.6% with F16 prompts at the plan's
    best-GEMM efficiency and no score-matrix traffic; 17.4% with Q4_K_M prompts at the June 2024 MMQ rate)."""
    e = errors(lambda c: c.kind == "pp" and in_scope(c))
    assert statistics.median(abs(x) for x in e) <= 0.15


@pytest.mark.parametrize(("cls", "median", "worst"), [("geforce", 0.12, 0.30), ("workstation", 0.16, 0.55),
                                                      ("datacenter", 0.15, 0.80)])
def test_prompt_median_per_class(cls, median, worst):
    """GeForce: median 8.7%, worst +24% (RTX 4080 F16 pp512); workstation: median 12.8%, worst +49% (RTX 6000 Ada F16
    pp1024); data centre: median 11.3% (11.5% before the cuBLAS share was carried by GEMM efficiency, 33.8% before the
    dequantise path), worst +73% (A40 70B Q4_K_M, pinned)."""
    e = errors(lambda c: c.kind == "pp" and card_class(c.gpu) == cls and in_scope(c))
    assert statistics.median(abs(x) for x in e) <= median
    assert max(abs(x) for x in e) <= worst


def test_hbm_q4_prompts_run_the_dequantise_path():
    """Q4_K_M prompts on the A100 PCIe and SXM (one card and 4 x A100 PCIe): -12% to +17% (they were -12% to -50%
    with the June 2024 MMQ rate, which b2843 did not use above 32 tokens; -15% to +14% before the SXM's cuBLAS share
    was carried at its GEMM efficiency, 0.380 rather than the PCIe card's 0.364). Tolerance 20%."""
    e = errors(lambda c: c.kind == "pp" and in_scope(c) and c.fmt == "Q4_K_M" and c.gpu.startswith("nvidia-a100")
               and not (c.cards == 4 and "sxm" in c.gpu))
    assert len(e) == 18 and max(abs(x) for x in e) < 0.20


def test_prompt_errors_outside_the_bands_pinned():
    """Pinned, not accepted (module docstring): the H100 PCIe's prompts, one and four cards, +12% to +40% (Q4_K_M, and
    8B F16) -- they were +32% to +63% with the A100's cuBLAS share carried unscaled; the card's measured GEMM
    efficiency (0.656 against the A100 PCIe's 0.822, catalogs/systems/efficiency.toml) now scales it, and the rest
    is not priced (both H100 PCIe rigs ran at a 310 W power limit); the 4 x A100 SXM rig's Q4_K_M prompts +46% to
    +55% (+41% to +50% before the SXM's GEMM efficiency was carried); 70B Q4_K_M at 512 tokens on the 300 W 48 GB
    cards up to +73% (A40). The A40 and the 4 x A100 SXM rig hold the only prompt cells in scope beyond 50%
    (next test: their runs get faster with length)."""
    h100 = errors(lambda c: c.kind == "pp" and in_scope(c) and c.gpu == "nvidia-h100-pcie-80gb"
                  and (c.fmt == "Q4_K_M" or c.model == "8B"))
    sxm4 = errors(lambda c: c.kind == "pp" and in_scope(c) and c.fmt == "Q4_K_M" and c.gpu == "nvidia-a100-sxm4-80gb"
                  and c.cards == 4)
    big = errors(lambda c: c.kind == "pp" and in_scope(c) and c.model == "70B" and c.fmt == "Q4_K_M" and c.gpu in (
        "nvidia-rtx-6000-ada-48gb", "nvidia-a40-48gb", "nvidia-l40s-48gb") and c.tokens == 512)
    assert min(h100) > 0.10 and max(h100) < 0.45
    assert min(sxm4) > 0.40 and max(sxm4) < 0.60
    assert 0.6 < max(big) < 0.8 and min(big) > 0
    beyond = {c.gpu for c in MEASURED if c.kind == "pp" and in_scope(c) and abs(error(c)) > 0.5}
    assert beyond == {"nvidia-a100-sxm4-80gb", "nvidia-a40-48gb"}


def speeds_up_with_length(run: tuple[str, int, str, str]) -> bool:
    """Whether a published prompt run gets faster from 4,096 to 8,192 tokens (one card: between any two lengths).
    b2843 does the same weight GEMMs for every 512-token micro-batch and adds attention against a growing cache, so
    a steady run's tokens/s can only fall with length; several cards pipeline micro-batches, which lifts 1,024 and
    4,096 over 512 but not 8,192 over 4,096."""
    speeds = [c.measured for c in sorted(MEASURED, key=lambda c: c.tokens)
              if c.kind == "pp" and (c.gpu, c.cards, c.model, c.fmt) == run]
    pairs = list(itertools.pairwise(speeds))
    return any(b > a for a, b in (pairs if run[1] == 1 else pairs[-1:]))


def test_cells_beyond_half_come_from_runs_that_speed_up_with_length():
    """Every prompt cell in scope beyond 50% belongs to a run whose speed rises with the prompt length, which a steady
    b2843 run cannot do (speeds_up_with_length), as do all five runs with anomalous F16 cells and no other run of the
    table. A40 70B Q4_K_M: 209 -> 240 -> 269 -> 291 t/s from pp512 to pp8192 (four A40s: 301 -> 312 from
    4,096 to 8,192), with spreads of 9.1 t/s at pp512 and 1.43 t/s at tg512 in its notebook where its 8B runs show
    0.02-0.19 t/s. Its build (2833) takes the same path as the RTX A6000's (2824) and the H100's (2843): MMQ up to 32
    tokens, dequantise + cuBLAS above. The RTX A6000, the same GA102 with 84 SMs at 300 W, is 1.07-1.14x the A40 on the
    8B prompts (its 768 against 696 GB/s, 1,800 against 1,740 MHz) and 2.30x on this pp512 (1.17x at pp8192, where ours
    is -4%). No hardware figure of the A40 (datasheet: GDDR6 with ECC on, 300 W) separates it from the A6000 there, so
    the cell is pinned, not priced; nothing is excluded from the medians for it."""
    beyond = {(c.gpu, c.cards, c.model, c.fmt) for c in MEASURED if c.kind == "pp" and in_scope(c)
              and abs(error(c)) > 0.5}
    assert beyond == {("nvidia-a40-48gb", 1, "70B", "Q4_K_M"), ("nvidia-a40-48gb", 4, "70B", "Q4_K_M"),
                      ("nvidia-a100-sxm4-80gb", 4, "70B", "Q4_K_M")}
    assert all(speeds_up_with_length(run) for run in beyond)
    runs = {(c.gpu, c.cards, c.model, c.fmt) for c in MEASURED if c.kind == "pp"}
    odd = {(c.gpu, c.cards, c.model, c.fmt) for c in MEASURED if anomalous(c)}
    assert len(odd) == 5 and all(speeds_up_with_length(run) for run in odd)
    assert {run for run in runs - odd if speeds_up_with_length(run)} == beyond
    a40 = [error(c) for c in MEASURED if (c.gpu, c.cards, c.model, c.fmt, c.kind) == ("nvidia-a40-48gb", 1, "70B",
                                                                                        "Q4_K_M", "pp")]
    assert 0.6 < a40[0] < 0.8 and abs(a40[-1]) < 0.10


def test_several_cards_do_not_pipeline_long_prompts_pinned():
    """8 x RTX 4090, 8B Q4_K_M, pp4096: measured 2.9x one card (15,089 vs 5,266 t/s: llama.cpp pipelines the
    prompt's 512-token micro-batches across the cards); the layer-split model runs the cards one after another, so
    its eight cards are no faster than one (1.1x: the split's prompt time counts the weights' FLOP, not attention's)."""
    one = Cell("nvidia-rtx-4090-24gb", 1, "8B", "Q4_K_M", "pp", 4096, 5265.68)
    eight = Cell("nvidia-rtx-4090-24gb", 8, "8B", "Q4_K_M", "pp", 4096, 15089.45)
    assert eight.measured / one.measured > 2.5
    assert estimate_cell(eight).tokens_per_s < 1.2 * estimate_cell(one).tokens_per_s


def test_this_table_is_closer_to_the_2024_engine():
    """Why the default stays on 2024 figures: over the cells in scope the current-build engine is further off.
    Medians |error| (default / llama-cpp-2026): decode 0.058 / 0.170, prompts 0.115 / 0.448."""
    scope = [c for c in MEASURED if in_scope(c)]
    for kind in ("tg", "pp"):
        old = statistics.median(abs(error(c)) for c in scope if c.kind == kind)
        new = statistics.median(abs(error(c, "llama-cpp-2026")) for c in scope if c.kind == kind)
        assert old < new


def test_report_prints_every_measured_cell():
    """``python -m tests.core.inference.xiongjiedai_table`` prints ours beside each published cell."""
    lines = report().splitlines()
    assert len(lines) == 1 + len(MEASURED)
    assert "nvidia-h100-pcie-80gb 8B Q4_K_M pp512" in lines[1 + [c.label for c in MEASURED].index(
        "nvidia-h100-pcie-80gb 8B Q4_K_M pp512")]
    assert sum("(anomalous run)" in line for line in lines) == sum(anomalous(c) for c in MEASURED) == 19
