"""llama.cpp on Apple Silicon against the two broad public tables: every row estimated, medians per chip family.

Table A - llama.cpp discussion #4167, "Performance of llama.cpp on Apple Silicon M-series"
(https://github.com/ggml-org/llama.cpp/discussions/4167; its summary table as quoted in public copies, read
2026-11: one full copy, its M1 Max, Ultra and M4 rows matching two partial ones): LLaMA 2 7B at
F16, Q8_0 and Q4_0, llama-bench pp512 and tg128, Metal, every M1-M4 variant by GPU-core count. The first rows
(M1 to M3 Max) were run on the reference build 8e672ef (2023-11-21); rows for chips released later (M3 Ultra,
M4 family) were added on the builds of their day, which the summary does not list. The rows run on the default
`llama-cpp` engine; `llama-cpp-2026` differs only in CUDA figures, so a row's build era cannot change its
Apple estimate (checked below). The M2 Ultra rows are the chip the Metal decode figures were solved on
(PR #2917, an earlier build); every other row is independent of the model.

Table B - XiongjieDai/GPU-Benchmarks-on-LLM-Inference README ("Apple Silicon (snapshots in May 2024)", commit
aa72e0e): Meta-Llama-3 8B/70B at Q4_K_M and F16 with ./main, flash attention off (the default then): average
speed generating N tokens (tg N) and prompt processing of N tokens (pp N), N = 512 ... 8192; "OOM" cells.

Prompts run at the Metal prompt kernel's measured share of the fp16 peak per weight type (engines.toml
`prefill_metal_share`: F16 from llama.cpp PR #5488's M2 Ultra run, the other types by their rate beside F16 in
PR #3084; neither is one of these tables). Before that model every type ran at one share, 0.6: Table A prefill
median |error| 12.5%, F16 rows -11% ... -22%. From the M3 on, the dequantisation's integer, FP16 and conversion
instructions, counted from llama.cpp's code, issue beside the multiply (`prefill_metal_coissued`,
test_metal_dequant_counts.py): Table A prefill median 5.1% -> 4.6%, quantised rows M3 -7.8% -> -3.5% (median),
M4 -13.1% -> -9.1%; Table B prefill median 8.2% -> 6.7%, its M3 Max Q4_K_M prompts -17% ... -1% -> -12% ... +6%.

Tolerances (what holds, asserted; what does not, pinned with its reason - docs/inference.md):
- Table A: decode median |error| <= 8% (measured 5.9%), prefill <= 6% (4.6%), every row <= 20% (worst 19%,
  a decode row; prompts -11.9% ... +7.8%); per family decode <= 10% and prefill <= 10% (M4 the lowest: median
  -7.5%; -10.8% before the M3+ co-issue, -17.6% with one share for every type, -27% before the M4 GPU clock was
  measured, docs/inference.md); M3 and M4 quantised prompts apart: median |error| <= 5% and <= 10%;
- Table B: the short runs (N <= 1024) within 25% except the M1 Max's K-quant decode rows, pinned at +40% ... +95%
  (2024 K-quant mat-vec kernels on the M1 Max reached 0.44-0.46 of its bandwidth, Q4_0 and F16 0.6-0.75 on the
  same chip; the M1 Max's K-quant prompts are +2% ... +29%); decode at 4096-8192 generated tokens pinned (flash
  attention off: the measured slowdown with context is several times what reading the cache at the stream rate
  costs); prompts of 1024-8192 tokens within 25% except the M1 Max laptop's F16 ones, pinned at +15% ... +30%
  (its rate falls 32% from 512 to 8192 tokens where the M2 Ultra desktop's holds within 8%: not modelled); the
  M3 Max's K-quant prompts within -15% ... +10%;
- never above the hardware roofline; every fit verdict matches the runs and OOM cells.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import ClusterSpec, GpuSpec
from llmplan.core.workload import InferenceSettings, Scenario

CAT = load_hardware_catalog()
MODELS = load_model_catalog()
LLAMA2_7B, LLAMA3_8B, LLAMA3_70B = "meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-70B"


@dataclass(frozen=True)
class Row:
    chip: str  # "M1 Max"
    cores: int  # GPU cores
    fmt: str
    pp: float  # pp512, tokens/s
    tg: float  # tg128, tokens/s

    @property
    def family(self) -> str:
        return self.chip.split()[0]

    @property
    def label(self) -> str:
        return f"{self.chip} {self.cores}c {self.fmt.upper()}"


# Table A, columns: chip, GPU cores, then (pp512, tg128) for F16, Q8_0, Q4_0; None where the row has no F16 run.
_4167 = [
    ("M1", 7, None, (108.21, 7.92), (107.81, 14.19)), ("M1", 8, None, (117.25, 7.91), (117.96, 14.15)),
    ("M1 Pro", 14, (262.65, 12.75), (235.16, 21.95), (232.55, 35.52)),
    ("M1 Pro", 16, (302.14, 12.75), (270.37, 22.34), (266.25, 36.41)),
    ("M1 Max", 24, (453.03, 22.55), (405.87, 37.81), (400.26, 54.61)),
    ("M1 Max", 32, (599.53, 23.03), (537.37, 40.20), (530.06, 61.19)),
    ("M1 Ultra", 48, (875.81, 33.92), (783.45, 55.69), (772.24, 74.93)),
    ("M1 Ultra", 64, (1168.89, 37.01), (1042.95, 59.87), (1030.04, 83.73)),
    ("M2", 8, None, (147.27, 12.18), (145.91, 21.70)), ("M2", 10, (201.34, 6.72), (181.40, 12.21), (179.57, 21.91)),
    ("M2 Pro", 16, (312.65, 12.47), (288.46, 22.70), (294.24, 37.87)),
    ("M2 Pro", 19, (384.38, 13.06), (344.50, 23.01), (341.19, 38.86)),
    ("M2 Max", 30, (600.46, 24.16), (540.15, 39.97), (537.60, 60.99)),
    ("M2 Max", 38, (755.67, 24.65), (677.91, 41.83), (671.31, 65.95)),
    ("M2 Ultra", 60, (1128.59, 39.86), (1003.16, 62.14), (1013.81, 88.64)),
    ("M2 Ultra", 76, (1401.85, 41.02), (1248.59, 66.64), (1238.48, 94.27)),
    ("M3", 10, None, (187.52, 12.27), (186.75, 21.34)), ("M3 Pro", 14, None, (272.11, 17.44), (269.49, 30.65)),
    ("M3 Pro", 18, (357.45, 9.89), (344.66, 17.53), (341.67, 30.74)),
    ("M3 Max", 30, (589.41, 19.54), (566.40, 34.30), (567.59, 56.58)),
    ("M3 Max", 40, (779.17, 25.09), (757.64, 42.75), (759.70, 66.31)),
    ("M3 Ultra", 60, (1121.80, 42.24), (1085.76, 63.55), (1073.09, 88.40)),
    ("M3 Ultra", 80, (1538.34, 39.78), (1487.51, 63.93), (1471.24, 92.14)),
    ("M4", 10, (230.18, 7.43), (223.64, 13.54), (221.29, 24.11)),
    ("M4 Pro", 16, (381.14, 17.19), (367.13, 30.54), (364.06, 49.64)),
    ("M4 Pro", 20, (464.48, 17.18), (449.62, 30.69), (439.78, 50.74)),
    ("M4 Max", 32, (736.25, 24.29), (718.56, 43.87), (713.93, 69.95)),
    ("M4 Max", 40, (922.83, 31.64), (891.94, 54.05), (885.68, 83.06)),
]
TABLE_A = [Row(chip, cores, fmt, *cols) for chip, cores, *runs in _4167
           for fmt, cols in zip(("f16", "q8_0", "q4_0"), runs, strict=True) if cols]
NO_F16 = [(chip, cores) for chip, cores, f16, *_ in _4167 if f16 is None]


def variants(chip: str, cores: int) -> list[GpuSpec]:
    """The catalog's entries for one chip and GPU-core count, smallest memory first."""
    prefix = f"apple-{chip.lower().replace(' ', '-')}-{cores}c-"
    found = [e.spec for e in CAT.gpus if e.spec.id.startswith(prefix)]
    assert found, f"no catalog entry for {chip} with {cores} GPU cores"
    return sorted(found, key=lambda g: g.memory_bytes)


def run(gpu: GpuSpec, model: str, fmt: str, prompt: int, output: int, engine: str = "llama-cpp"):
    sc = Scenario(model=MODELS.get(model).spec, cluster=ClusterSpec(gpu=gpu), workload="inference",
                  inference=InferenceSettings(engine=engine, weight_format=fmt, kv_dtype="fp16", prompt_tokens=prompt,
                                              output_tokens=output, gpu_layers=10_000),
                  engine_profile=engine_profile(engine))
    return estimate(sc)


@cache
def ours(row: Row, engine: str = "llama-cpp") -> tuple[float, float]:
    """(pp512, tg128) tokens/s on the largest memory configuration of the row's chip (speed does not depend on it)."""
    gpu = variants(row.chip, row.cores)[-1]
    pp = 512 / run(gpu, LLAMA2_7B, row.fmt, 512, 1, engine).inference.ttft_s.value
    tg = run(gpu, LLAMA2_7B, row.fmt, 1, 128, engine).inference.tokens_per_s_per_user.value
    return pp, tg


def errors(rows: list[Row]) -> tuple[list[float], list[float]]:
    pp = [ours(r)[0] / r.pp - 1 for r in rows]
    tg = [ours(r)[1] / r.tg - 1 for r in rows]
    return pp, tg


def median_abs(xs: list[float]) -> float:
    return statistics.median(abs(x) for x in xs)


def test_table_a_medians_and_worst_row():
    for r in TABLE_A:
        pp, tg = ours(r)
        print(f"{r.label:22s} pp512 {r.pp:8.1f} ours {pp:8.1f} ({pp / r.pp - 1:+6.1%})   "
              f"tg128 {r.tg:6.2f} ours {tg:6.2f} ({tg / r.tg - 1:+6.1%})")
    pp, tg = errors(TABLE_A)
    print(f"all {len(TABLE_A)} rows: prefill median |error| {median_abs(pp):.1%}, decode {median_abs(tg):.1%}")
    assert median_abs(tg) <= 0.08
    assert median_abs(pp) <= 0.06
    assert max(map(abs, pp + tg)) <= 0.20, "a row beyond 20%"


@pytest.mark.parametrize("family", ["M1", "M2", "M3", "M4"])
def test_table_a_per_family(family):
    rows = [r for r in TABLE_A if r.family == family]
    pp, tg = errors(rows)
    print(f"{family}: {len(rows)} rows, prefill median {statistics.median(pp):+.1%} (|.| {median_abs(pp):.1%}), "
          f"decode median {statistics.median(tg):+.1%} (|.| {median_abs(tg):.1%})")
    assert median_abs(tg) <= 0.10
    assert median_abs(pp) <= 0.10


@pytest.mark.parametrize(("family", "bound"), [("M3", 0.05), ("M4", 0.10)])
def test_table_a_quantised_prompts_on_m3_and_m4(family, bound):
    """The chips that co-issue (Apple GPU family 9), their Q8_0 and Q4_0 prompts apart: M3 median -3.5% (range
    -7.8% ... +2.6%), M4 -9.1% (-11.9% ... -5.8%); before the co-issue -7.8% and -13.1%. The M4 rows sit as far
    under as its F16 rows (median -6.9%): the co-issue leaves the M4's quantised/F16 ratio right, its level is the
    M4 clock's (docs/inference.md)."""
    rows = [r for r in TABLE_A if r.family == family and r.fmt != "f16"]
    pp, _ = errors(rows)
    print(f"{family} quantised: {len(rows)} rows, prompt median {statistics.median(pp):+.1%}, "
          f"{min(pp):+.1%} ... {max(pp):+.1%}")
    assert median_abs(pp) <= bound
    assert max(map(abs, pp)) <= 0.15


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_table_a_rate_beside_f16_by_generation(fmt):
    """The table's own quantised/F16 prompt ratio on each chip that has both, against the model's: on M1/M2 the
    measured shares' (PR #3084, M2 Ultra: Q8_0 0.904, Q4_0 0.920), from the M3 on the co-issued ones (0.942,
    0.964). Measured medians: M1 0.895 / 0.883, M2 0.897 / 0.892, M3 0.967 / 0.957, M4 0.968 / 0.960 - within 5%
    by family (worst M1 Q4_0, +4.2%: the reference build's Q4_0 ran a little slower than PR #3084's on M1/M2, as
    PR #3648's run of 2023-10 did; from the M3 on Q8_0 -2.6%, Q4_0 within 1%)."""
    for family in ("M1", "M2", "M3", "M4"):
        pairs = [(r, f) for r in TABLE_A for f in TABLE_A
                 if r.family == family and (r.chip, r.cores) == (f.chip, f.cores) and r.fmt == fmt and f.fmt == "f16"]
        measured = statistics.median(r.pp / f.pp for r, f in pairs)
        model = statistics.median(ours(r)[0] / ours(f)[0] for r, f in pairs)
        print(f"{family} {fmt}/F16: table {measured:.3f}, ours {model:.3f}")
        assert model == pytest.approx(measured, rel=0.05)


def test_both_build_eras_give_the_same_apple_estimates():
    """`llama-cpp-2026` carries only new CUDA figures, so the era of a Metal row cannot change its estimate."""
    for r in TABLE_A[::7]:
        assert ours(r, "llama-cpp-2026") == pytest.approx(ours(r), rel=1e-9)


def test_no_estimate_above_the_roofline():
    """Decode can stream the weights no faster than the peak bandwidth (less the embedding, a lookup); a prompt
    token needs at least 2 FLOP per weight outside the embedding at the GPU's peak."""
    spec = MODELS.get(LLAMA2_7B).spec
    embed = spec.vocab_size * spec.hidden_size
    for r in TABLE_A:
        gpu = variants(r.chip, r.cores)[-1]
        weights = run(gpu, LLAMA2_7B, r.fmt, 1, 1).inference.weight_bytes.value
        pp, tg = ours(r)
        assert tg <= gpu.memory_bandwidth / (weights - embed * 2), r.label
        assert pp <= gpu.peak_flops.for_dtype("fp16") / (2 * (6.74e9 - embed)), r.label


def test_fit_verdicts_of_table_a():
    """Every published run fits on its chip's largest configuration; the rows without an F16 run are chips whose
    base memory cannot hold LLaMA 2 7B F16 (12.55 GiB) under macOS's 2/3 wired-memory limit (8 GB -> 5.33 GiB,
    18 GB -> 12 GiB)."""
    for r in TABLE_A:
        assert run(variants(r.chip, r.cores)[-1], LLAMA2_7B, r.fmt, 512, 128).fits, r.label
    for chip, cores in NO_F16:
        assert not run(variants(chip, cores)[0], LLAMA2_7B, "f16", 512, 128).fits, (chip, cores)


# ---- Table B: Meta-Llama-3 with long prompts (May 2024, ./main, flash attention off) ----------------------

LENGTHS = (512, 1024, 4096, 8192)
# (catalog GPU, model, format, tg N for N in LENGTHS, pp N for N in LENGTHS); None = "OOM" in the table
TABLE_B = [
    ("apple-m1-7c-8gb", LLAMA3_8B, "q4_k_m", (10.20, 9.72, 11.77, None), (94.48, 87.26, 96.53, None)),
    ("apple-m1-max-32c-64gb", LLAMA3_8B, "q4_k_m", (35.73, 34.49, 31.18, 26.84), (408.23, 355.45, 329.84, 302.92)),
    ("apple-m1-max-32c-64gb", LLAMA3_8B, "f16", (18.75, 18.43, 16.33, 15.03), (517.34, 418.77, 374.09, 351.46)),
    ("apple-m1-max-32c-64gb", LLAMA3_70B, "q4_k_m", (4.34, 4.09, 4.09, 3.71), (34.96, 33.01, 32.64, 30.97)),
    ("apple-m2-ultra-76c-192gb", LLAMA3_8B, "q4_k_m", (78.81, 76.28, 64.58, 54.13), (994.04, 1023.89, 979.47, 913.55)),
    ("apple-m2-ultra-76c-192gb", LLAMA3_8B, "f16", (36.90, 36.25, 33.67, 30.68), (1175.40, 1202.74, 1194.21, 1103.44)),
    ("apple-m2-ultra-76c-192gb", LLAMA3_70B, "q4_k_m", (12.48, 12.13, 10.75, 9.34), (118.79, 117.76, 109.53, 108.57)),
    ("apple-m2-ultra-76c-192gb", LLAMA3_70B, "f16", (4.76, 4.71, 4.48, 4.23), (147.58, 145.82, 133.75, 135.15)),
    ("apple-m3-max-40c-64gb", LLAMA3_8B, "q4_k_m", (48.97, 50.74, 44.21, 36.12), (693.32, 678.04, 573.09, 505.32)),
    ("apple-m3-max-40c-64gb", LLAMA3_8B, "f16", (22.04, 22.39, 20.72, 18.74), (769.84, 751.49, 609.97, 515.15)),
    ("apple-m3-max-40c-64gb", LLAMA3_70B, "q4_k_m", (7.65, 7.53, 6.58, 5.60), (70.19, 62.88, 64.90, 61.96)),
]
OOM_B = [("apple-m1-7c-8gb", LLAMA3_8B, "f16", 512), ("apple-m1-7c-8gb", LLAMA3_70B, "q4_k_m", 512),
         ("apple-m1-max-32c-64gb", LLAMA3_70B, "f16", 512), ("apple-m3-max-40c-64gb", LLAMA3_70B, "f16", 512)]


def _b_errors():
    """{(gpu, model, fmt, N): (decode error, prefill error)} for every measured cell of table B."""
    out = {}
    for gpu_id, model, fmt, tgs, pps in TABLE_B:
        gpu = CAT.gpu(gpu_id).spec
        for n, tg, pp in zip(LENGTHS, tgs, pps, strict=True):
            if tg is None:
                continue
            t = run(gpu, model, fmt, 1, n).inference.tokens_per_s_per_user.value
            p = n / run(gpu, model, fmt, n, 1).inference.ttft_s.value
            out[(gpu_id, model, fmt, n)] = (t / tg - 1, p / pp - 1)
    return out


def test_table_b_short_runs_and_pinned_gaps():
    errs = _b_errors()
    for key, (t, p) in errs.items():
        print(f"{key[0]:26s} {key[1].split('/')[1]:18s} {key[2]:7s} N={key[3]:5d} tg {t:+6.1%} pp {p:+6.1%}")
    m1_kquant = {k: v for k, v in errs.items() if k[0] == "apple-m1-max-32c-64gb" and k[2] == "q4_k_m"}
    rest = {k: v for k, v in errs.items() if k not in m1_kquant}
    short = [v for k, v in rest.items() if k[3] <= 1024]
    assert max(abs(x) for v in short for x in v) <= 0.25
    assert median_abs([v[0] for v in short]) <= 0.10 and median_abs([v[1] for v in short]) <= 0.15
    # Pinned: the M1 Max laptop's F16 prompts of 1024-8192 tokens (its measured rate falls 517 -> 351 t/s from 512 to
    # 8192 tokens, the M2 Ultra desktop's 1175 -> 1103): the fall with length is not modelled on Metal.
    m1_f16_long = {k: v for k, v in rest.items() if k[0] == "apple-m1-max-32c-64gb" and k[2] == "f16" and k[3] > 512}
    assert all(0.15 <= v[1] <= 0.30 for v in m1_f16_long.values())
    assert all(abs(v[1]) <= 0.25 for k, v in rest.items() if k not in m1_f16_long)  # prompts up to 8192 tokens
    # Pinned: the M1 Max's K-quant decode in May 2024 builds (kernels since improved: see the 2026 row below).
    assert all(0.40 <= v[0] <= 0.95 for v in m1_kquant.values())
    # The M3 Max's K-quant prompts (co-issued dequantisation): -11.8% ... +5.9%, before it -17.2% ... -0.6%.
    m3_kquant = [v[1] for k, v in errs.items() if k[0].startswith("apple-m3") and k[2] == "q4_k_m"]
    assert all(-0.15 <= p <= 0.10 for p in m3_kquant)
    assert median_abs([v[1] for v in errs.values()]) <= 0.08  # every prompt cell: 6.7% (8.2% before)
    # Pinned: decode over 4096-8192 generated tokens with flash attention off slows more than the cache reads.
    long_tg = [v[0] for k, v in rest.items() if k[3] >= 4096]
    assert max(long_tg) <= 0.45 and statistics.median(long_tg) >= 0.05


def test_table_b_never_above_the_roofline():
    for gpu_id, model, fmt, _, _ in TABLE_B:
        gpu, spec = CAT.gpu(gpu_id).spec, MODELS.get(model).spec
        embed = spec.vocab_size * spec.hidden_size * 2  # at most 2 bytes a weight (F16), a lookup not a read
        for n in LENGTHS[:2]:
            est = run(gpu, model, fmt, n, n)
            inf = est.inference
            assert inf.tokens_per_s_per_user.value <= gpu.memory_bandwidth / (inf.weight_bytes.value - embed)
            assert n / inf.ttft_s.value <= gpu.peak_flops.for_dtype("fp16") / (2 * est.params.non_embedding)


def test_m1_max_kquant_in_a_current_build():
    """brand-o/normiebench issue #40 (2026-03-08, llama.cpp Metal, M1 Max 64 GB): Llama 3.1 8B Q4_K_M pp512
    499.58 and tg128 46.2 t/s - the K-quant decode gap of 2024 is gone; decode within 15%. The prompt is pinned
    at -20% ... -10% (measured -16.6%): Q4_K_M prompts run at PR #3084's 0.81 of the F16 rate (2023 kernels);
    no per-type Metal prompt run of a current build was found to say how much of that gap remains."""
    gpu = CAT.gpu("apple-m1-max-32c-64gb").spec
    for engine in ("llama-cpp", "llama-cpp-2026"):  # both eras keep the same Metal figures
        pp = 512 / run(gpu, LLAMA3_8B, "q4_k_m", 512, 1, engine).inference.ttft_s.value
        print(f"{engine}: pp512 {pp:.1f} vs 499.58 ({pp / 499.58 - 1:+.1%})")
        assert -0.20 <= pp / 499.58 - 1 <= -0.10
    assert run(gpu, LLAMA3_8B, "q4_k_m", 1, 128).inference.tokens_per_s_per_user.value == pytest.approx(46.2, rel=0.15)


def test_m4_kquant_in_a_current_build():
    """brand-o/normiebench issue #3 (2026-03-08, llama.cpp Metal, Mac mini M4, 10-core GPU, 16 GB): Llama 3.1 8B
    Q4_K_M pp512 224.81 and tg128 20.87 t/s. Decode within 10% (-4.8%). The prompt is pinned at -28% ... -18%
    (measured -23.3%; -28.0% before the M3+ co-issue): the M4's F16 and Q4_0 prompts of the #4167 table sit
    -7% and -6% under (its clock, docs/inference.md), and the M1 Max's current-build K-quant prompt above sits
    -17% under: current builds run K-quant prompts faster than the May 2024 kernels both eras' figures come from,
    by an amount no per-type run of a current build was found to measure."""
    gpu = CAT.gpu("apple-m4-10c-16gb").spec
    pp = 512 / run(gpu, LLAMA3_8B, "q4_k_m", 512, 1, "llama-cpp-2026").inference.ttft_s.value
    print(f"pp512 {pp:.1f} vs 224.81 ({pp / 224.81 - 1:+.1%})")
    assert -0.28 <= pp / 224.81 - 1 <= -0.18
    tg = run(gpu, LLAMA3_8B, "q4_k_m", 1, 128, "llama-cpp-2026").inference.tokens_per_s_per_user.value
    assert tg == pytest.approx(20.87, rel=0.10)


def test_fit_verdicts_of_table_b():
    """The 8 GB M1 (5.33 GiB wired) held 8B Q4_K_M with a 4096-token context and ran out at 8192; the 64 GB
    machines (48 GiB wired) cannot hold 70B F16; every measured cell fits."""
    for gpu_id, model, fmt, tgs, _ in TABLE_B:
        for n, tg in zip(LENGTHS, tgs, strict=True):
            fits = run(CAT.gpu(gpu_id).spec, model, fmt, n, 1).fits
            assert fits == (tg is not None), (gpu_id, model, fmt, n)
    for gpu_id, model, fmt, n in OOM_B:
        assert not run(CAT.gpu(gpu_id).spec, model, fmt, n, 1).fits, (gpu_id, model, fmt)
