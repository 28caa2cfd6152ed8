"""Which cost the dense vLLM rows miss: host work per step, or mat-vec kernels below the copy rate?

The dense rows of serving_published.py (vLLM's nightly latency test: batch 8, 32 tokens in, 128 out) read
20-34% fast (test_serving_decode_published.py). These tests pin the two facts docs/inference.md ("Small-batch
decode on the GPU serving engines", "What the dense rows miss") draws its answer from; neither sets a constant.

1. The weight GEMMs' share of the bandwidth, from measurements independent of the rows: the kernel-timed bf16
   sweeps in tests/data/gemm (H100 SXM 80GB and H200 SXM 141GB, torch 2.11.0+cu130 / cuBLAS, 2026-11-28,
   torch.profiler kernel durations, each call 3 ms after the last). At 128 tokens -- the fewest the sweep has;
   no sweep at 1-8 tokens exists -- the Llama 3 8B MLP GEMMs, whose 117 MB of weights cannot stay in the 50 MB
   L2 between calls, read them at 0.70-0.82 of the datasheet bandwidth. vLLM's decode is priced at 0.80
   (``efficiency.memory_bandwidth``); at the sweep's shares the 8B MLP would take 2-3% longer; the rows are 27-53% slower than the estimate.
   (Smaller shapes of the sweep can keep their weights in L2 between calls -- some read "faster than HBM" --
   so they say nothing about HBM.)
2. The missing time per decode step (measured - estimated, over the 128 steps) of the three 8B rows is nearly
   the same number of milliseconds on three GPU generations whose estimated step differs 2.3x, which a fixed
   cost per step does and a bandwidth share (a cost in proportion to the step) does not.
"""

from __future__ import annotations

import json

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from tests.core.inference.serving_published import ROWS, estimate_row
from tests.core.training.test_gemm_sweep import DATA, SWEEPS

MLP_8B = {"gate/up": (14336, 4096), "down": (4096, 14336)}  # (n, k) of Llama 3 8B's MLP GEMMs


def _shares(gpu_id: str) -> dict[str, float]:
    """Bytes a 128-token GEMM moves (weights + activations in and out, bf16) / kernel time / datasheet bandwidth."""
    peak = load_hardware_catalog().gpu(gpu_id).spec.memory_bandwidth
    rows = {(n, k): us for m, n, k, us in json.loads((DATA / SWEEPS[gpu_id]).read_text())["rows"] if m == 128}
    return {name: 2 * (n * k + 128 * (n + k)) / (rows[(n, k)] * 1e-6) / peak for name, (n, k) in MLP_8B.items()}


@pytest.mark.parametrize("gpu_id", SWEEPS)
def test_mlp_gemms_at_128_tokens_read_weights_near_the_priced_share(gpu_id):
    """H100: gate/up 0.820, down 0.705; H200: 0.811, 0.728 (±0.02 each)."""
    want = {"nvidia-h100-sxm-80gb": (0.820, 0.705), "nvidia-h200-sxm-141gb": (0.811, 0.728)}[gpu_id]
    got = _shares(gpu_id)
    assert (got["gate/up"], got["down"]) == pytest.approx(want, abs=0.02)


@pytest.mark.parametrize("gpu_id", SWEEPS)
def test_the_gemm_share_explains_a_few_percent_not_a_quarter(gpu_id):
    """vLLM's fused gate_up reads twice the bytes of down: at the sweep's shares the MLP's weight time is
    1.03x (H100) and 1.02x (H200) what the priced 0.80 gives, where the 8B rows are 1.27-1.53x slower than
    the estimate."""
    s = _shares(gpu_id)
    harmonic = 1 / (2 / 3 / s["gate/up"] + 1 / 3 / s["down"])
    priced = load_hardware_catalog().efficiency_for(gpu_id).memory_bandwidth
    assert 1.0 < priced / harmonic < 1.05


def _gap_per_step(key: str) -> tuple[float, float]:
    """(measured - estimated request latency) / output tokens, and that over the estimated step (TPOT)."""
    row = next(r for r in ROWS if r.key == key)
    gap = (row.measured_s - estimate_row(row)) / row.output
    return gap, gap / (estimate_row(row) / row.output)


def test_8b_rows_miss_a_fixed_time_per_step():
    """H200, H100, A100: 2.25, 1.82 and 2.64 ms a step (±0.3 ms), against estimated request latencies of 547,
    765 and 1,242 ms. As a share of the estimated step the gap spreads 0.53 / 0.30 / 0.27 (1.9x); in milliseconds
    it spreads 1.45x."""
    keys = ("vllm-8b-h200", "vllm-8b-h100", "vllm-8b-a100")
    gaps = [_gap_per_step(k) for k in keys]
    assert [g for g, _ in gaps] == pytest.approx([2.25e-3, 1.82e-3, 2.64e-3], abs=0.3e-3)
    ms = [g for g, _ in gaps]
    share = [s for _, s in gaps]
    assert max(ms) / min(ms) < max(share) / min(share)
