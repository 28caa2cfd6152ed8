"""How fast one kernel runs: the microbenchmark-derived rates of the per-operation time model.

Every constant here comes from microbenchmarks measured on an NVIDIA H100 SXM 80GB HBM3 with
torch 2.11 / CUDA 13.0 (2026-11-24, and the GEMM sweep and clock mixes again on 2026-11-28), never from
an end-to-end training run. Other GPUs are reached by their catalog peaks and efficiencies with the
same *shape* of curve: a GEMM reaches the same share of that GPU's best-shape rate as on the H100 (less
the same fixed cost), and flash attention at a given length and head size the same share of that GPU's
GEMM rate. That is an assumption (GPUs without persistent GEMM kernels lose more to wave quantisation),
stated in every figure that uses it.

- GEMM: t = max(FLOPs / (peak · matmul · clock), bytes / bandwidth) + GEMM_FIXED_S.
  ``matmul`` is the catalog's best-shape share of peak (H100 SXM: 792.1 of 989.4 TFLOP/s, the MAMF table).
  A second sweep (H100 SXM and H200 SXM, torch 2.11 / CUDA 13.0, 2026-11-28) timed the same 109 bf16 shapes
  as the first (square 256-16,384; q/k/v/o, up, down and lm_head shapes of six model widths at 128-32,768
  tokens) by their kernel durations (torch.profiler), each call 3 ms after the last so the card held its full
  clock. Kernels of 0.2-5 ms ran at a median 790 TFLOP/s, the best-shape rate: Hopper's cuBLAS kernels are
  persistent, and the sweep shows no wave-quantisation steps worth modelling (a tile-and-wave term made the fit
  worse above 20 µs). What a short kernel loses is a fixed 3 µs (GEMM_FIXED_S: a 256³ GEMM took 2.6 µs; 3 µs
  leaves the median error of the kernels under 20 µs at +2%). With ``matmul`` 0.801 this reproduces the 95
  kernels up to 5 ms at a median error of 3.8% on both cards, without bias (tests/core/training/test_gemm_sweep.py).
  The first sweep (2026-11-24) timed each call with CUDA events around a Python call, so every timing held the
  host's dispatch latency, and it ran shapes back to back, so its long kernels ran at the power-capped clock:
  its fitted 0.740 of peak + 23 µs mixed both effects, and the time model then applied the held clock again.
- Clock: a card at its power limit lowers its clock, by how much of the step it spends in compute-bound
  kernels (``clock_factor``). With GEMMs alternating with memory-bound adds (H100 SXM, 2026-11-28; the mixes in
  catalogs/systems/efficiency.toml, source ``h100-duty-cycle-2026``), the GEMMs held the full clock while they
  were up to ~40% of the time (``Efficiency.full_clock_share``) and fell linearly to the held clock of GEMMs
  back to back (``Efficiency.sustained_clock``, 0.869) as the share rose to 100%. Real Hugging Face Llama
  blocks on the same card (pure bf16, fused AdamW, profiled) ran their GEMMs at 784, 761 and 745 TFLOP/s with
  compute-bound kernels 48%, 63% and 64% of the GPU's time, where the line gives 0.98, 0.95 and 0.94 of the
  best-shape rate. The share is taken over one micro-batch of the whole model (blocks, head and loss; the
  optimizer step and communication are left out, so the share is a little high and the clock a little low).
- Between two kernels the GPU idles KERNEL_GAP_S = 1.8 µs even when the second is already queued (the
  launch from the queue): torch.profiler on a GPU-bound Hugging Face training step of four Llama-3.1-8B
  blocks (2,048 tokens, pure bf16, fused AdamW; H100 SXM, 2026-11-28) found 1,787 kernels separated by
  gaps of at most 20 µs summing to 3.18 ms (1.78 µs each; median gap 1.8 µs). The same profile of
  Llama-3.2-1B steps gave 1.7 µs. Every kernel and GEMM call of the per-operation lists pays it
  (``PartTimes.gaps``); gaps longer than that (a host that cannot keep up) are the host model's.
- fp8 GEMMs (e4m3, ``torch._scaled_mm``, tensorwise scales): square n = 4,096 and 8,192 ran at 1,103 and
  1,428 TFLOP/s, 0.558 and 0.721 of the 1,978.9 TFLOP/s dense fp8 peak, where bf16 reached 0.703 and
  0.801 of its own. An fp8 GEMM is priced as a bf16 one of the same shape with the fp8 peak, 1-byte
  operands and FP8_MATMUL_RATIO = 0.721 / 0.801 = 0.901 of the bf16 share of peak (the best shapes'
  ratio). The same roofline at full clock + 3 µs, with the harness's 15.5 µs added back as it timed them,
  gives 115 and 789 µs for the two squares against the measured 125 and 770 µs (−8%, +2%).
- Flash attention (SDPA, causal, GQA): the measured forward and forward+backward TFLOP/s by head
  size and sequence length, as shares of the dense bf16 peak, with FLOPs counted causally
  (2·b·heads·s²·d forward, 3.5× that forward + backward).
- Cross-entropy over fp32 logits, forward + backward: 20.0 ms for 8,192 tokens × 128,256 and
  23.7 ms for 8,192 × 151,936: 19.0 ps per logit, i.e. 55 bytes per logit at the measured
  2,911 GB/s copy rate. Charged as those bytes at each GPU's achievable bandwidth.
- Elementwise kernels by kind (``elementwise_time``; H100 SXM, torch 2.11.0+cu130, 2026-11-28, CUDA-graph replay
  of 20 calls, so no host launch: tests/data/elementwise/h100_sxm_elementwise_2026-11-28.json). A kernel takes
  max(kernels × floor, bytes / rate) at its kind's rate and floor. Rates from the rows of 2^24 elements and more
  (64 MB and more: out of the 50 MB L2), as ratios to the pointwise rate, which is the catalog's
  ``efficiency.elementwise`` × peak bandwidth (H100: 3,016 GB/s, the median of 15 rows of bf16 add, mul, SiLU,
  fp32 -> bf16 cast and fp32 add): bf16 -> fp32 casts 1,960 GB/s (0.650: PyTorch runs a widening copy in its
  unrolled, not its vectorised, kernel); Hugging Face's RMSNorm, 8 kernels over 36 B per element, 2,381 GB/s
  (0.789); same-dtype copies 2,721 GB/s (0.902), the rate of every kind not measured (reductions, gathers,
  transposes, fused norms, dropout, dequantisation, fp8 casts). Floors from the rows of 2^16 elements or fewer:
  1.565 µs per pointwise kernel, 2.699 per widening cast, 1.51 per copy, 1.975 per RMSNorm kernel. Other GPUs:
  the same ratios to their own pointwise rate and the same floors (an assumption: the floor is a launch-side
  latency, set by the clock rather than the bandwidth). The sizes in between (2^18-2^22) ran faster than this
  where their tensors stayed in L2 across the graph's 20 calls (up to 5.5 TB/s at 2^22 elements): the price
  takes HBM's rate there, as for a tensor a step reads after other kernels have evicted it.
- The loss (``CE_BYTES_PER_LOGIT``) and the optimizer keep their own measurements at the catalog's achievable
  bandwidth (``efficiency.memory_bandwidth``); dequantisation, fp8 casts and the eager softmax's traffic (no
  measured kind) move at the copy rate.
"""

from __future__ import annotations

import bisect
import math

GEMM_FIXED_S = 3.0e-6  # GPU-side fixed cost of one GEMM kernel (module doc)
KERNEL_GAP_S = 1.8e-6  # GPU idle between two queued kernels (module doc)
HARNESS_LATENCY_S = 15.5e-6  # the first sweep's one-element add_: host dispatch + a trivial kernel (fp8 squares)
CE_BYTES_PER_LOGIT = 55.4
# queries per flash-attention tile: kBlockM of flash-attention 2's forward for head sizes 64 and 128 on sm90
# (csrc/flash_attn/src/flash_fwd_launch_template.h, run_mha_fwd_hdim64 / hdim128, Dao-AILab/flash-attention at 0251105)
FLASH_QUERY_TILE = 128.0
H100_MATMUL = 0.801  # the catalog's H100 figure the attention shares are measured against
FP8_MATMUL_RATIO = (1427.5 / 1978.9) / (792.1 / 989.4)  # fp8 8192³ share of its peak / bf16's (module doc)

# elementwise kinds (module doc): rate as a share of the pointwise rate, floor in seconds per kernel
EW_POINTWISE, EW_UPCAST, EW_NORM, EW_COPY = "pointwise", "upcast", "rmsnorm_eager", "copy"
EW_RATIO = {EW_POINTWISE: 1.0, EW_UPCAST: 1960.2 / 3016.4, EW_NORM: 2381.3 / 3016.4, EW_COPY: 2720.6 / 3016.4}
EW_FLOOR_S = {EW_POINTWISE: 1.565e-6, EW_UPCAST: 2.699e-6, EW_NORM: 1.975e-6, EW_COPY: 1.51e-6}


def elementwise_time(moved: float, kernels: float, kind: str, pointwise_rate: float, upcast: float = 0.0) -> float:
    """Seconds of an elementwise op of ``kernels`` launches moving ``moved`` bytes: max(kernels × floor, bytes at the
    kind's rate), where ``upcast`` of the bytes (and that share of the kernels, for the floor) are bf16 -> fp32 casts
    inside the op, at their own rate and floor (module doc)."""
    floor = kernels * (EW_FLOOR_S[kind] * (1.0 - upcast) + EW_FLOOR_S[EW_UPCAST] * upcast)
    if moved <= 0:
        return floor
    rate = pointwise_rate * EW_RATIO[kind]
    stream = moved * (1.0 - upcast) / rate + (moved * upcast / (pointwise_rate * EW_RATIO[EW_UPCAST]) if upcast else 0.0)
    return max(floor, stream)


# (head_dim, seq) -> (forward, forward+backward) TFLOP/s share of the 989.4 TFLOP/s bf16 peak
_SDPA_SEQ = (512, 2048, 8192, 32768)
_SDPA = {
    64: ((166.3, 85.0), (287.3, 251.6), (420.5, 391.3), (480.4, 447.6)),
    128: ((273.4, 135.2), (458.1, 347.3), (571.2, 521.3), (612.5, 587.4)),
}
_H100_PEAK = 989.4


def gemm_rate(peak: float, matmul_eff: float) -> float:
    """FLOP/s of a GEMM at the GPU's full clock: the best-shape share of peak (module doc)."""
    return peak * matmul_eff


def clock_factor(compute_share: float, sustained_clock: float, full_clock_share: float) -> float:
    """Share of its full clock a power-limited GPU holds when compute-bound kernels take ``compute_share`` of
    its time: 1 up to ``full_clock_share``, then linearly down to ``sustained_clock`` at 1 (module doc)."""
    if compute_share <= full_clock_share or sustained_clock >= 1.0:
        return 1.0
    return 1.0 - (1.0 - sustained_clock) * (min(compute_share, 1.0) - full_clock_share) / (1.0 - full_clock_share)


def gemm_time(m: float, n: float, k: float, rate: float, bandwidth: float, elem_bytes: float = 2.0,
              out_bytes: float | None = None, group: float = 1.0, fixed: float = 1.0) -> float:
    """Seconds of one (m × k) · (k × n) GEMM on the GPU: roofline of FLOPs and operand bytes + fixed cost.
    ``rate``: ``gemm_rate`` (the step's clock factor is applied to the sum, ``PartTimes.clocked``). ``out_bytes``: bytes per output element where they differ from
    the operands' (fp8 GEMMs write bf16).
    ``group``: one call running that many GEMMs of this shape, each with its own weight (a mixture of experts'
    local experts: ``ops.expert_grouping``): their FLOPs and bytes add up, at the rate of one GEMM
    (the assumption that a grouped GEMM over the combined rows runs as fast as a plain GEMM of its size), and
    the call pays ``fixed`` fixed costs."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    flops = 2.0 * m * n * k
    return group * max(flops / rate, gemm_bytes(m, n, k, elem_bytes, out_bytes) / bandwidth) + fixed * GEMM_FIXED_S


def gemm_bytes(m: float, n: float, k: float, elem_bytes: float = 2.0, out_bytes: float | None = None) -> float:
    """Bytes one (m × k) · (k × n) GEMM moves: both operands and its output (``gemm_time``'s roofline)."""
    return (elem_bytes * (m * k + k * n + m * n) if out_bytes is None
            else elem_bytes * (m * k + k * n) + out_bytes * m * n)


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


def window_share(seq: float, window: float, head_dim: float, backward: bool) -> float:
    """Share of the dense peak a sliding-window layer's flash attention reaches, its FLOPs counted over the keys
    inside the window (``window`` keys per query). The kernel skips the key tiles wholly outside the window
    (flash-attention's ``n_block_min`` with ``window_size_left``, csrc/flash_attn/src/flash_fwd_kernel.h,
    Dao-AILab/flash-attention at 0251105), so a tile of M = FLASH_QUERY_TILE queries computes window + M keys,
    as many as a causal attention of length 2·window + M does per query tile on average, of which it counts
    the window: that length's measured share (``flash_share``; the 512-token row below 512) times 2·window /
    (2·window + M). A window of half the sequence or more leaves causal attention as it is. The same tiling
    for cuDNN's fused attention is an assumption (its kernels are closed)."""
    eq = 2.0 * window + FLASH_QUERY_TILE
    if eq >= seq:
        return flash_share(seq, head_dim, backward)
    return flash_share(eq, head_dim, backward) * 2.0 * window / eq


def flash_share(seq: float, head_dim: float, backward: bool) -> float:
    """Share of the dense peak flash attention reaches on the H100 at this length and head size.
    Head sizes between the measured 64 and 128 interpolate; larger ones use 128's row."""
    which = 1 if backward else 0
    lo, hi = _interp(seq, _SDPA[64], which), _interp(seq, _SDPA[128], which)
    f = min(max((head_dim - 64) / 64, 0.0), 1.0)
    return (lo * (1 - f) + hi * f) / _H100_PEAK
