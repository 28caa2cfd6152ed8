"""How fast one kernel runs: the microbenchmark-derived rates of the per-operation time model.

Every constant here comes from microbenchmarks measured on an NVIDIA H100 SXM 80GB HBM3 with
torch 2.11 / CUDA 13.0 on 2026-11-24 (CUDA-event-timed medians of single kernels), never from
an end-to-end training run. Other GPUs are reached by their catalog peaks and efficiencies with
the same *shape* of curve: a GEMM of a given (m, n, k) reaches the same share of that GPU's
large-GEMM rate as it did on the H100, and flash attention at a given length and head size the
same share of that GPU's GEMM rate. That is an assumption (wave quantisation differs with the
SM count), stated in every figure that uses it.

- GEMM: t = max(FLOPs / (peak · matmul · SWEEP_SHARE · sustained), bytes / bandwidth) + GEMM_FIXED_S.
  A least-squares fit over the 85 bf16 GEMMs of the sweep that take longer than 45 µs (square
  256-16,384; q/k/v/o, up, down and lm_head shapes of six model widths at 128-32,768 tokens):
  0.740 of the dense peak plus 23 µs per GEMM (median error 0.4%, worst 26%). That 23 µs is not all
  GPU time: the harness records its start event, then calls the GEMM from Python, on an idle GPU, so
  every timed call also holds the host's dispatch latency; the same harness timed a one-element
  ``add_`` (dispatch plus a trivial kernel) at 15.5 µs (``HARNESS_LATENCY_S``). In a training step the
  host runs ahead of the GPU and its issue time is charged apart (``FrameworkProfile.launch_s``,
  ``gemm_launch_s``: max(GPU, host)), so the GPU side of a GEMM keeps 23 − 15.5 = 7.5 µs. That is an
  upper bound: ``F.linear`` dispatches more host code than ``add_`` (its fastest call, 3.3 GFLOP, took
  25.6 µs in all). The slope of a least-squares line does not move when a constant leaves every
  point, so the rate below stands; compare a GEMM with the sweep as gemm_time + HARNESS_LATENCY_S.
  (The flash-attention timings hold the same latency once per call, 1.6-5% of a head-size-128 forward
  at 2,048-8,192 tokens and 12% at 512, and are used as measured: slightly slow at short lengths.)
  The sweep's best shape reached 0.801 (8192³, 792 TFLOP/s), the figure the catalog's MAMF column holds, so the
  sweep-wide rate is 0.740 / 0.801 = 0.924 of the catalog's. ``sustained`` is each GPU's own
  ``Efficiency.sustained_clock`` (catalogs/systems/efficiency.toml): under load that lasts seconds a
  power-limited card drops its clocks (the H100 SXM: 688 TFLOP/s at n = 8192 over 0.78 s against 792
  in a short burst, 0.869), while a GeForce card holds its boost clock (RTX 4090: 158.6 TFLOP/s in a
  3 s run of n = 8192 against its 162.4 short-run figure, 0.977).
- fp8 GEMMs (e4m3, ``torch._scaled_mm``, tensorwise scales): square n = 4,096 and 8,192 ran at 1,103 and
  1,428 TFLOP/s, 0.558 and 0.721 of the 1,978.9 TFLOP/s dense fp8 peak, where bf16 reached 0.703 and
  0.801 of its own. An fp8 GEMM is priced as a bf16 one of the same shape with the fp8 peak, 1-byte
  operands and FP8_MATMUL_RATIO = 0.721 / 0.801 = 0.901 of the bf16 share of peak (the best shapes'
  ratio). The same roofline + 23 µs (GEMM_FIXED_S + HARNESS_LATENCY_S, as the harness timed it) then
  gives 127 and 857 µs for the two squares against the measured 125 and 770 µs (+2%, +11%; bf16's
  8192³, the sweep's best shape, comes out +10% the same way).
- Flash attention (SDPA, causal, GQA): the measured forward and forward+backward TFLOP/s by head
  size and sequence length, as shares of the dense bf16 peak, with FLOPs counted causally
  (2·b·heads·s²·d forward, 3.5× that forward + backward).
- Cross-entropy over fp32 logits, forward + backward: 20.0 ms for 8,192 tokens × 128,256 and
  23.7 ms for 8,192 × 151,936: 19.0 ps per logit, i.e. 55 bytes per logit at the measured
  2,911 GB/s copy rate. Charged as those bytes at each GPU's achievable bandwidth.
- Memory-bound kernels move their bytes at the catalog's achievable bandwidth (H100: a 1 GiB
  device copy ran at 2,911 GB/s, 0.869 of 3,350 GB/s).
"""

from __future__ import annotations

import bisect
import math

SWEEP_SHARE = 0.740 / 0.801
SWEEP_FIXED_S = 23e-6  # the sweep's fitted intercept, host dispatch included
HARNESS_LATENCY_S = 15.5e-6  # the harness's one-element add_: host dispatch + a trivial kernel
GEMM_FIXED_S = SWEEP_FIXED_S - HARNESS_LATENCY_S  # the GPU-side part (an upper bound; module doc)
CE_BYTES_PER_LOGIT = 55.4
H100_MATMUL = 0.801  # the catalog's H100 figure the attention shares are measured against
FP8_MATMUL_RATIO = (1427.5 / 1978.9) / (792.1 / 989.4)  # fp8 8192³ share of its peak / bf16's (module doc)

# (head_dim, seq) -> (forward, forward+backward) TFLOP/s share of the 989.4 TFLOP/s bf16 peak
_SDPA_SEQ = (512, 2048, 8192, 32768)
_SDPA = {
    64: ((166.3, 85.0), (287.3, 251.6), (420.5, 391.3), (480.4, 447.6)),
    128: ((273.4, 135.2), (458.1, 347.3), (571.2, 521.3), (612.5, 587.4)),
}
_H100_PEAK = 989.4


def gemm_rate(peak: float, matmul_eff: float, sustained_clock: float) -> float:
    """FLOP/s a typical GEMM shape sustains in a training step (module doc): the short-run matmul rate, the
    sweep's share of it, and the share of that clock the GPU holds over seconds of load."""
    return peak * matmul_eff * SWEEP_SHARE * sustained_clock


def gemm_time(m: float, n: float, k: float, rate: float, bandwidth: float, elem_bytes: float = 2.0,
              out_bytes: float | None = None, group: float = 1.0, fixed: float = 1.0) -> float:
    """Seconds of one (m × k) · (k × n) GEMM on the GPU: roofline of FLOPs and operand bytes + fixed cost.
    ``out_bytes``: bytes per output element where they differ from the operands' (fp8 GEMMs write bf16).
    ``group``: one call running that many GEMMs of this shape, each with its own weight (a mixture of experts'
    local experts: ``ops.expert_grouping``): their FLOPs and bytes add up, at the rate of one GEMM (the
    assumption that a grouped GEMM over the combined rows runs as fast as a plain GEMM of its size; the sweep's
    rate is already flat in shape above the fixed cost), and the call pays ``fixed`` fixed costs."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    flops = 2.0 * m * n * k
    moved = (elem_bytes * (m * k + k * n + m * n) if out_bytes is None
             else elem_bytes * (m * k + k * n) + out_bytes * m * n)
    return group * max(flops / rate, moved / bandwidth) + fixed * GEMM_FIXED_S


def _interp(seq: float, column: tuple[tuple[float, float], ...], which: int) -> float:
    xs = [math.log2(s) for s in _SDPA_SEQ]
    x = math.log2(max(seq, 1.0))
    if x <= xs[0]:
        return column[0][which]
    if x >= xs[-1]:
        return column[-1][which]
    i = bisect.bisect_right(xs, x) - 1
    f = (x - xs[i]) / (xs[i + 1] - xs[i])
    return column[i][which] * (1 - f) + column[i + 1][which] * f


def flash_share(seq: float, head_dim: float, backward: bool) -> float:
    """Share of the dense peak flash attention reaches on the H100 at this length and head size.
    Head sizes between the measured 64 and 128 interpolate; larger ones use 128's row."""
    which = 1 if backward else 0
    lo, hi = _interp(seq, _SDPA[64], which), _interp(seq, _SDPA[128], which)
    f = min(max((head_dim - 64) / 64, 0.0), 1.0)
    return (lo * (1 - f) + hi * f) / _H100_PEAK
