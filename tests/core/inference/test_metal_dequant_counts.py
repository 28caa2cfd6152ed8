"""The dequantisation work of llama.cpp's Metal prompt kernel per weight type, counted from its code, and what the
M3 and later hide of it (engines.toml ``prefill_metal_coissued``; core/inference/metal_dequant.py).

Source: ggml-metal.metal at 7bd4ffb (ggerganov/llama.cpp, 2024-05-11, the builds of the May 2024 tables);
``kernel_mul_mm`` and the ``dequantize_*`` bodies for Q4_0, Q4_1 and Q8_0 are the same in the #4167 reference
build 8e672ef (2023-11-21), and the K-quant ones differ from PR #3084's (2023-09-11, whose M2 Ultra runs set
the shares) only in computing their block scales in float rather than half. Counted per thread and 32-wide K
step (16 weights), from the source, not a compiled binary: a compiler may fuse or split a few instructions, so
each count is good to a few instructions; at the counts here a change of 10 moves an M3 share by 1-2%.

Instruction classes (P. Turner, metal-benchmarks, "ALU Layout" and "Instruction Throughputs", M1 Max):
- integer: AND, OR, shifts, compare-selects, address offsets (the FP32/integer/conditional pipeline);
- FP16: half multiplies of the block scale;
- conversions: integer to float or half (the integer and complex-math pipeline);
- FP32: float FMAs and multiplies;
- loads: device loads beyond an F16 tile's two 16-byte loads.
On M1/M2 every one takes an issue slot from the multiply; from the M3 on the first three issue in parallel
with the multiply's FP32 FMAs (Apple, "Explore GPU advancements in M3 and A17 Pro", 2023-11).
The Q4_K* row counts Q4_K's kernel; a Q4_K_M file keeps about a sixth of its weights in Q6_K (attn_v and
ffn_down of about half the layers, the output head), whose count (63 for the mix) would raise its M3 share by
about 1%: left out, within the counts' own uncertainty.
Tolerances: the derived shares are the stated arithmetic to 0.001.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.inference.backend import metal_prompt_rate
from llmplan.core.inference.metal_dequant import (
    MMA_ISSUES_PER_STEP,
    apple_generation,
    coissued_share,
    coissues,
)
from llmplan.core.quant import parse_weight_format

LLAMA = engine_profile("llama-cpp")
SHARES = dict(LLAMA.prefill_metal_share)
COISSUED = dict(LLAMA.prefill_metal_coissued)
CAT = load_hardware_catalog()

# type: {class: count} per thread per K step, with the lines they come from
COUNTS = {
    # reg = qs[i + 16*il] * d: one offset; 16 x (int8 -> half conversion, half multiply); 16 byte loads + d
    "Q8_0": dict(integer=1, fp16=16, conversion=16, fp32=0, loads=15),
    # d1 = il ? d/16.h : d (half multiply, select); d2 = d1/256.f (FP32); md = -8.h*d (half multiply);
    # mask0 select, mask1 = mask0 << 8; 8 x 2 x (AND, u16 -> float conversion, FP32 FMA); 8 ushort loads + d
    "Q4_0": dict(integer=3 + 16, fp16=2, conversion=16, fp32=1 + 16, loads=7),
    # as Q4_0 with m loaded instead of md computed
    "Q4_1": dict(integer=3 + 16, fp16=1, conversion=16, fp32=1 + 16, loads=8),
    # is = (il/4)*2 (2); q += (il/4)*32 + 16*(il&1) (6); il &= 3, il/2 (2); get_scale_min_k4_just2: 4 (j < 4)
    # or 11 (j >= 4) integer ops, 7.5 on average over il, + its branch (1); d select (1, its /16.h is FP16);
    # mask select (1); 16 AND. Conversions: sc[0], sc[1] and 16 quants; FP32: dl, ml and 16 FMAs.
    # Loads: 16 quant bytes, 2.5 scale bytes on average, d, dmin.
    "Q4_K*": dict(integer=2 + 6 + 2 + 7.5 + 1 + 1 + 1 + 16, fp16=1, conversion=2 + 16, fp32=2 + 16, loads=18.5),
    # as Q4_K (20.5 before the loop) + qh offset (2) + ul = 1 << (il/2) (2) + qh_val select (1);
    # 16 x (q & mask, qh & ul, select 16 or 0); FP32: d/16.f, dl, ml, 16 x (add, FMA); loads add 16 qh bytes
    "Q5_K*": dict(integer=20.5 + 2 + 2 + 1 + 48, fp16=0, conversion=2 + 16, fp32=3 + 32, loads=34.5),
    # ql offset 64*(il/8) + 32*((il/2)&1) + 16*(il&1) (10); qh offset (3); il = (il/2)&3 (2); kmask1 (3),
    # kmask2 (1) and coef (1) selects; the il&1 branch (1); 16 x (AND, AND, shift, OR). Conversions: the
    # int8 scale and 16 quants (to half); FP32: d_all*sc, *32, *coef and 16 FMAs. Loads: 16 ql, 16 qh, scale, d
    "Q6_K": dict(integer=10 + 3 + 2 + 3 + 1 + 1 + 1 + 64, fp16=0, conversion=1 + 16, fp32=3 + 16, loads=32),
}


def hidden(counts: dict) -> float:
    return counts["integer"] + counts["fp16"] + counts["conversion"]


def test_the_tile_gives_512_fma_issues_per_16_weights():
    """kernel_mul_mm: BLOCK_SIZE_M 64 x BLOCK_SIZE_K 32 weights per step over 128 threads = 16 each; each of 4
    simdgroups runs 4 (ik) x 8 simdgroup_multiply_accumulate of 8x8x8 per step = 512 FMAs per lane."""
    assert 64 * 32 // 128 == 16
    assert 4 * 8 * 8 * 8 * 8 // 32 == MMA_ISSUES_PER_STEP == 512


@pytest.mark.parametrize("pattern", COUNTS)
def test_engine_data_are_the_counted_instructions(pattern):
    assert COISSUED[pattern] == hidden(COUNTS[pattern])


@pytest.mark.parametrize("pattern", COUNTS)
def test_counts_fit_inside_the_measured_cost_on_m1_and_m2(pattern):
    """On M2 (PR #3084's M2 Ultra) a type's measured cost beyond F16, in issue slots per step, must hold at least
    every instruction counted (all of them wait there), and after the M3 hides its co-issued ones, at least its
    FP32 instructions and loads: a check of the counts against measurement that can fail."""
    c = COUNTS[pattern]
    beyond_f16 = MMA_ISSUES_PER_STEP / SHARES[pattern] - MMA_ISSUES_PER_STEP / SHARES["F16"]
    counted = hidden(c) + c["fp32"] + c["loads"]
    print(f"{pattern:6s} measured {beyond_f16:6.1f} issue slots per step, counted {counted:6.1f} "
          f"(co-issued on M3 {hidden(c)}, staying {c['fp32'] + c['loads']})")
    assert counted <= beyond_f16 * 1.05
    assert c["fp32"] + c["loads"] <= beyond_f16 - hidden(c)


@pytest.mark.parametrize(("pattern", "m3_share"), [("Q8_0", 0.656), ("Q4_0", 0.671), ("Q4_1", 0.669),
                                                   ("Q4_K*", 0.602), ("Q5_K*", 0.594), ("Q6_K", 0.603)])
def test_shares_from_the_m3_on(pattern, m3_share):
    assert coissued_share(SHARES[pattern], COISSUED[pattern]) == pytest.approx(m3_share, abs=0.001)


@pytest.mark.parametrize(("gid", "fmt", "share"), [
    ("apple-m3-max-40c-64gb", "q4_k_m", 0.602), ("apple-m4-max-40c-128gb", "q8_0", 0.656),
    ("apple-m3-max-40c-64gb", "f16", 0.696),   # F16 tiles are only loaded: the same share on every generation
    ("apple-m2-ultra-76c-192gb", "q4_k_m", 0.565), ("apple-m1-max-32c-64gb", "q4_0", 0.640),  # M1/M2: measured
])
def test_rate_by_generation(gid, fmt, share):
    gpu = CAT.gpu(gid).spec
    rate = metal_prompt_rate(LLAMA, gpu, "metal", parse_weight_format(fmt))
    assert rate == pytest.approx(share * gpu.peak_flops.for_dtype("fp16"), rel=0.002)


def test_which_gpus_coissue():
    assert [coissues(n) for n in ("Apple M1 Max", "Apple M2 Ultra 76-core GPU", "Apple M3 Pro", "Apple M4")] == [
        False, False, True, True]
    assert apple_generation("an unnamed GPU") == 1


def test_every_profile_with_metal_shares_carries_the_counts():
    for name in ("llama-cpp-2026", "ollama"):
        assert engine_profile(name).prefill_metal_coissued == LLAMA.prefill_metal_coissued


@pytest.mark.parametrize("rows", ["[['Q4_0', 512]]", "[['', 10]]", "[['Q4_0', -1]]"])
def test_a_bad_user_row_is_skipped_naming_the_field(tmp_path, monkeypatch, rows):
    from llmplan.catalog.engines import engine_problems, load_engine_profiles

    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "engines.toml").write_text(f"[llama-cpp]\nprefill_metal_coissued = {rows}\n")
    assert load_engine_profiles()["llama-cpp"].prefill_metal_coissued == LLAMA.prefill_metal_coissued
    (problem,) = engine_problems()
    assert "prefill_metal_coissued" in problem and "skipped" in problem
