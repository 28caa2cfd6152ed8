"""How much of a weight type's dequantisation llama.cpp's Metal prompt kernel hides on the M3 and later.

Every weight type multiplies a prompt through ``kernel_mul_mm`` (ggml-metal.metal; the same tile in the
2023-11 reference build 8e672ef and in the May 2024 builds). Per 32-wide step along K, each of a threadgroup's
128 threads dequantises 16 weights (64 rows x 32 columns) to half into threadgroup memory, and each of its
four simdgroups runs 4 x 8 ``simdgroup_multiply_accumulate`` of 8x8x8: 16,384 FMAs, 512 per lane
(``MMA_ISSUES_PER_STEP``).

On M1 and M2 (Apple GPU families 7 and 8) a core's four schedulers each issue one instruction a clock, and
FFMA, integer, compare-select and bitwise instructions share one pipeline (P. Turner, metal-benchmarks,
"ALU Layout", measured on an M1 Max): every dequantisation instruction costs the matrix multiply an issue
slot. The measured per-type shares (``prefill_metal_share``, llama.cpp's own M2 Ultra runs) carry that cost.
From the M3 on (family 9) the shader core's ALUs run integer, FP32 and FP16 instructions in parallel (Apple's
tech talk "Explore GPU advancements in M3 and A17 Pro", 2023-11, as reported by AppleInsider and Gizmochina on
2023-11-10, which advise FP16 arithmetic for that reason): the multiply's FP32 FMAs (half A, float B and accumulators) no longer wait for the dequantisation's integer, FP16 and conversion
instructions. Its FP32 instructions and its device loads still take their slots. So, per step, the M1/M2
cost beyond F16, ``MMA_ISSUES_PER_STEP / share - MMA_ISSUES_PER_STEP / share_F16``, loses the ``n`` co-issued
instructions counted from the type's ``dequantize_*`` function (engines.toml ``prefill_metal_coissued``):

    share_M3 = 1 / (1 / share - n / MMA_ISSUES_PER_STEP)

An F16 tile is only loaded and stored (n = 0): its share is the same on every generation.
"""

from __future__ import annotations

import re

MMA_ISSUES_PER_STEP = 512  # 32 simdgroup 8x8x8 MMAs per simdgroup per K step = 512 FMAs per lane
COISSUE_FROM_GENERATION = 3  # M3: Apple GPU family 9 (A17 Pro, M3, M4)


def apple_generation(name: str) -> int:
    """1 for an M1, 2 for an M2 ... from the GPU's name ("Apple M2 Ultra 76-core GPU"); 1 when unnamed."""
    m = re.search(r"\bM(\d+)\b", name)
    return int(m.group(1)) if m else 1


def coissues(gpu_name: str) -> bool:
    """Whether an Apple GPU issues integer, FP16 and FP32 instructions in parallel (M3 and later)."""
    return apple_generation(gpu_name) >= COISSUE_FROM_GENERATION


def coissued_share(share: float, coissued: float) -> float:
    """The share of the fp16 peak the kernel reaches when ``coissued`` of its dequantisation instructions per
    K step no longer take the multiply's issue slots (never above the peak)."""
    return min(1.0, 1 / (1 / share - coissued / MMA_ISSUES_PER_STEP))
