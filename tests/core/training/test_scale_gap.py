"""What is missing at scale: the engine figures docs/training.md "What is missing at scale (open)" quotes.

Large multi-GPU published runs read 5-30% fast (the estimate is faster than the run). This file recomputes the
engine numbers that section uses to rank the candidate causes, so the section cannot silently go stale. Nothing
here changes the engine; every published figure comes from the row's own test module, which cites it:
- NVIDIA/dgxc-benchmarking v25.02 (commit 8f5cbb3), DGX Cloud recipes on DGX H100, NeMo 24.12, bf16 step times at
  8 to 2,048 GPUs (test_dgxc_h100_recipes.py);
- NVIDIA/Megatron-LM README at f2e5db402c (2024-07-15), Megatron-Core r0.8.0 on H100, model TFLOP/s per GPU
  (test_megatron_core_h100.py);
- MegaScale, Jiang et al., NSDI 2024 (arXiv:2402.15627), Table 2 step times of GPT 175B (test_megascale_2024.py).

Three readings are pinned, each to ±0.5 points (0.005) around the value recorded 2026-11-28 (after clock30):
1. How the error grows with the GPU count inside one recipe. A term that grows with the number of GPUs that wait
   for each other (stragglers, per-GPU clock spread, jitter, synchronisation) can only show up as that growth. The
   DGX Cloud recipes run the same per-GPU work from their smallest to their largest cluster, so published growth
   over our growth is what such a term has to explain there.
2. The slowest-of-N reading of that growth: if each GPU's speed were an independent draw with spread sigma and the
   slowest GPU set every step's pace, the step would be sigma * E[max of N standard normals] longer than the
   typical GPU's. The growth between N1 and N2 GPUs then gives sigma, and sigma * E_max(N1) is what the same
   term would add at the smallest cluster. This is a reading of the published table, not a model input: nothing
   in the engine is fitted to it.
3. The compute deficit: the missing time (published step - ours) over our GEMM + attention time, i.e. how much
   slower the compute-bound kernels would have to run if they alone were the gap.
Then what the candidates the doc ranks would move: the DP traffic serialised behind one hardware queue (an upper
bound), the price audit's bounded kernel terms added in full, and the engine's figures for the one-node runs the
doc proposes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from . import test_dgxc_h100_recipes as dgxc
from . import test_megascale_2024 as megascale
from . import test_megatron_core_h100 as mcore

TOL = 0.005  # ±0.5 points, as docs/training.md quotes them


def expected_max_of_normals(n: int) -> float:
    """E[max of n independent standard normal draws], by numerical integration of x · n·φ(x)·Φ(x)^(n-1)."""
    x = np.linspace(-12.0, 12.0, 48_001)
    phi = np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    density = n * phi * cdf ** (n - 1)
    return float(np.sum(x * density) * (x[1] - x[0]))


def test_expected_max_matches_known_values():
    # E[max of 2] = 1/sqrt(pi) exactly; E[max of 16] = 1.7660 (order-statistics tables, e.g. Harter 1961)
    assert expected_max_of_normals(1) == pytest.approx(0.0, abs=1e-9)
    assert expected_max_of_normals(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert expected_max_of_normals(16) == pytest.approx(1.7660, abs=1e-3)


def _span(key: str) -> tuple[int, int]:
    gpus = sorted(dgxc.RECIPES[key].steps)
    return gpus[0], gpus[-1]


def _step(key: str, gpus: int) -> float:
    return dgxc._estimate(key, gpus, "bf16").compute.step_time_s.value


def residual_growth(key: str) -> float:
    """Published step growth from the smallest to the largest cluster, over ours (bf16): what a term growing with
    the GPU count has to explain in that recipe."""
    a, b = _span(key)
    published = dgxc.published(key, b, "bf16") / dgxc.published(key, a, "bf16")
    ours = _step(key, b) / _step(key, a)
    return published / ours - 1


def slowest_of_n(key: str) -> tuple[float, float]:
    """(sigma, what sigma adds at the smallest cluster) under the slowest-of-N reading (module doc, point 2)."""
    a, b = _span(key)
    e_a, e_b = expected_max_of_normals(a), expected_max_of_normals(b)
    sigma = residual_growth(key) / (e_b - e_a)
    return sigma, sigma * e_a


def compute_deficit(estimate, published_step: float) -> float:
    b = estimate.compute.breakdown
    return (published_step - estimate.compute.step_time_s.value) / (b["gemm"] + b["attention"])


# recipe: (error at the smallest cluster, residual growth, sigma, slowest-of-N level at the smallest cluster),
# recorded 2026-11-28 after clock30
DGXC = {
    "nemotron4-15b": (0.105, 0.008, 0.005, 0.008),
    "gpt3-175b": (0.149, 0.019, 0.023, 0.058),
    "llama3.1-8b": (0.058, 0.030, 0.026, 0.036),
    "llama3.1-70b": (0.109, 0.013, 0.012, 0.028),
}


@pytest.mark.parametrize("key", sorted(DGXC))
def test_dgx_cloud_gap_is_mostly_there_at_the_smallest_cluster(key):
    err_a, growth, sigma, level = DGXC[key]
    a, _ = _span(key)
    assert dgxc.error(key, a, "bf16") == pytest.approx(err_a, abs=TOL)
    assert residual_growth(key) == pytest.approx(growth, abs=TOL)
    s, lv = slowest_of_n(key)
    assert s == pytest.approx(sigma, abs=TOL)
    assert lv == pytest.approx(level, abs=TOL)
    # the pattern the doc draws from it: at the smallest cluster (8 to 128 GPUs) a term that grows with the GPU count
    # explains 8% (Nemotron-4 15B) to 62% (Llama 3.1 8B) of the error, never all of it
    assert lv < 0.7 * err_a


def test_megascale_fixed_batch_rows_lose_more_as_gpus_grow():
    """At a fixed global batch of 768 the error grows 7-8 points from 256 to 1,024 GPUs; at 6,144 it grows under 2
    from 3,072 to 12,288 (the growth is the error at the larger count minus the error at the smaller)."""
    def grow(system: str, a: int, b: int) -> float:
        return megascale.error(f"{system}-175b-{b}") - megascale.error(f"{system}-175b-{a}")

    assert grow("megatron", 256, 1024) == pytest.approx(0.083, abs=TOL)
    assert grow("megascale", 256, 1024) == pytest.approx(0.069, abs=TOL)
    assert grow("megatron", 3072, 12288) == pytest.approx(0.018, abs=TOL)
    assert grow("megascale", 3072, 12288) == pytest.approx(0.006, abs=TOL)


# row: (compute deficit), recorded 2026-11-28 after ops34's kernels outside the modules (after clock30: 0.423, 0.306,
# 0.121, 0.163, 0.064, 0.120)
DEFICITS = {
    ("mcore", "1.7B", 48): 0.413,
    ("mcore", "7.1B", 96): 0.300,
    ("dgxc", "nemotron4-15b", 16): 0.116,
    ("dgxc", "gpt3-175b", 128): 0.162,
    ("dgxc", "llama3.1-8b", 8): 0.061,
    ("dgxc", "llama3.1-70b", 64): 0.119,
}


def row_case(row: tuple[str, str, int]):
    """(scenario, our estimate, published step seconds) of a Megatron-Core README row ("mcore", label, GPUs) or a
    DGX Cloud bf16 row ("dgxc", recipe, GPUs). The README publishes TFLOP/s per GPU counted as we count FLOPs, so
    its step is ours × (1 + error)."""
    source, key, gpus = row
    if source == "mcore":
        e = mcore._estimate(key)
        return mcore.run(mcore.BY_LABEL[key]), e, e.compute.step_time_s.value * (1 + mcore.error(key))
    return dgxc.run(key, gpus, "bf16"), dgxc._estimate(key, gpus, "bf16"), dgxc.published(key, gpus, "bf16")


@pytest.mark.parametrize("row", sorted(DEFICITS), ids=lambda r: f"{r[1]}-{r[2]}")
def test_compute_deficit(row):
    _, e, published_step = row_case(row)
    assert compute_deficit(e, published_step) == pytest.approx(DEFICITS[row], abs=TOL)


def test_the_slowest_of_n_reading_at_each_rows_gpu_count():
    """What the slowest-of-N term would add at the GPU count of the rows the doc ranks, at the smallest and largest
    sigma the four DGX Cloud recipes imply (0.5%, Nemotron-4 15B, and 2.6%, Llama 3.1 8B)."""
    lo, hi = slowest_of_n("nemotron4-15b")[0], slowest_of_n("llama3.1-8b")[0]
    for gpus, (want_lo, want_hi) in {48: (0.011, 0.057), 16384: (0.019, 0.102), 12288: (0.019, 0.100)}.items():
        e = expected_max_of_normals(gpus)
        assert lo * e == pytest.approx(want_lo, abs=TOL)
        assert hi * e == pytest.approx(want_hi, abs=TOL)


def _serial_dp(scenario):
    """The same plan with the data-parallel gradient reduction and weight gather not overlapped: what traces of
    Megatron runs with ``CUDA_DEVICE_MAX_CONNECTIONS=1`` show (NVIDIA/Megatron-LM issues #1468, 2025-03, and #827,
    2024-05; alibaba/Megatron-LLaMA issue #43, 2023-10). An upper bound of that candidate: issue #636 (2023-12)
    saw part of the reduction overlap under the same setting."""
    from llmplan.core.engine import estimate

    prof = scenario.framework_profile.model_copy(update={"overlap_grad_reduce": False, "overlap_param_gather": False})
    tr = scenario.training.model_copy(update={"overlap_grad_reduce": False})
    return estimate(scenario.model_copy(update={"framework_profile": prof, "training": tr}))


# row: error with the DP traffic serialised (published / ours - 1), recorded 2026-11-28 after ops34 (after clock30:
# 0.206, 0.069, -0.128, 0.042, 0.020, 0.129, 0.051, 0.101); the rows' errors as charged today are pinned in their
# own modules (1.7B +31.3%, 7.1B +25.2%)
SERIAL_DP = {
    ("mcore", "1.7B", 48): 0.197,
    ("mcore", "7.1B", 96): 0.064,
    ("mcore", "16B", 192): -0.130,
    ("dgxc", "nemotron4-15b", 16): 0.038,
    ("dgxc", "nemotron4-15b", 2048): 0.018,
    ("dgxc", "gpt3-175b", 128): 0.127,
    ("dgxc", "llama3.1-8b", 8): 0.048,
    ("dgxc", "llama3.1-70b", 64): 0.099,
}


@pytest.mark.parametrize("row", sorted(SERIAL_DP), ids=lambda r: f"{r[1]}-{r[2]}")
def test_dp_traffic_serialised_behind_one_hardware_queue(row):
    scenario, _, published_step = row_case(row)
    err = published_step / _serial_dp(scenario).compute.step_time_s.value - 1
    assert err == pytest.approx(SERIAL_DP[row], abs=TOL)


def test_serialised_dp_overshoots_nemotrons_growth():
    """With all DP traffic serialised, our Nemotron-4 15B step grows 4.8% from 16 to 2,048 GPUs, against the 2.7%
    measured (and 1.9% with it overlapped, as charged): the full serialisation is too much at scale."""
    def step(gpus: int) -> float:
        return _serial_dp(dgxc.run("nemotron4-15b", gpus, "bf16")).compute.step_time_s.value

    assert step(2048) / step(16) - 1 == pytest.approx(0.048, abs=TOL)
    assert dgxc.published("nemotron4-15b", 2048, "bf16") / dgxc.published("nemotron4-15b", 16, "bf16") - 1 == (
        pytest.approx(0.027, abs=TOL))
    assert _step("nemotron4-15b", 2048) / _step("nemotron4-15b", 16) - 1 == pytest.approx(0.019, abs=TOL)


@pytest.mark.parametrize("label, share, want", [("1.7B", 0.032 + 0.014, 0.238), ("7.1B", 0.045 + 0.014, 0.165)])
def test_the_bounded_kernel_terms_leave_most_of_the_compute_only_gap(label, share, want):
    """The price audit's bounds (docs/training.md, "Auditing the per-operation prices"): the fp32 ``main_grad``
    epilogue at most 3.2% (1.7B) and 4.5% (7.1B) of the measured step, per-kernel queueing at most 1.4%. Added to
    our step in full, the rows still read +23.8% and +16.5% (+24.9% and +17.1% before ops34 added the kernels outside
    the modules)."""
    ours = mcore._estimate(label).compute.step_time_s.value
    published_step = ours * (1 + mcore.error(label))
    assert published_step / (ours + share * published_step) - 1 == pytest.approx(want, abs=TOL)


def one_node_plan(gpus: int):
    """The README's 1.7B row on one DGX H100 (DP8) or one H100 (DP1), at its 4 micro-batches of 4,096 tokens per
    GPU: the runs docs/training.md proposes to settle the gap, with the engine's figures to hold them against."""
    from llmplan.catalog.hardware import load_hardware_catalog

    cat = load_hardware_catalog()
    base = mcore.run(mcore.BY_LABEL["1.7B"])
    cluster = (cat.cluster_from(None, nodes=1, node_id="dgx-h100") if gpus == 8
               else cat.cluster_from("nvidia-h100-sxm-80gb", 1, nodes=1))
    return base.model_copy(update={"cluster": cluster,
                                   "training": base.training.model_copy(update={"global_batch": 4 * gpus}),
                                   "parallelism": base.parallelism.model_copy(update={"dp": gpus})})


def test_the_proposed_one_node_runs_as_the_engine_prices_them():
    """Step seconds, ±5 ms: 0.362 on one GPU (its optimizer step and its gradient clipping unsharded: Megatron's
    --clip-grad 1.0 reads and scales 1.7 B fp32 main grads, 8.2 ms; 0.354 before clipping was priced), 0.342 on 8
    with the DP traffic overlapped and 0.368 with it serialised; the 48-GPU row measured 0.452 (408.8 TFLOP/s)
    against our 0.342."""
    from llmplan.core.engine import estimate

    one = estimate(one_node_plan(1))
    assert one.fits and one.compute.step_time_s.value == pytest.approx(0.362, abs=0.005)
    assert estimate(one_node_plan(8)).compute.step_time_s.value == pytest.approx(0.342, abs=0.005)
    assert _serial_dp(one_node_plan(8)).compute.step_time_s.value == pytest.approx(0.367, abs=0.005)
    row = mcore._estimate("1.7B").compute.step_time_s.value
    assert row == pytest.approx(0.341, abs=0.005)
    assert row * (1 + mcore.error("1.7B")) == pytest.approx(0.452, abs=0.005)
