"""llama.cpp's quantised prompt kernels (MMQ) on NVIDIA GPUs: a rate per SM per clock, not a share of the
datasheet's int8 TOPS.

MMQ multiplies block-quantised weights by int8-quantised activations with ``mma.sync.aligned.m16n8k32
.s32.s8.s8.s32`` (ggml-cuda/mma.cuh; ``m8n8k16`` on Turing) between unpacking the blocks and applying their
scales in fp32; it has no Hopper ``wgmma`` path. It reaches a quarter of a GeForce card's dense int8 rate
(RTX 4090, llama 8B Q4_K_S pp512: 175 of 661 TOPS in llama.cpp PR #24127), so the tensor cores are not what
bounds it: the SM's four schedulers, issuing one warp instruction per clock each on every generation from
Turing to Blackwell, are kept busy by the unpacking, scaling, ``ldmatrix`` and ``mma.sync`` instructions.
The measured rate is therefore carried to other GPUs as int8 operations per SM per clock: it scales with
SMs x clock, which the catalog gives as the fp32 rate over 2 x the FP32 lanes of an SM of that compute
capability (NVIDIA CUDA C++ Programming Guide, 'Arithmetic Instructions' throughput table). The 2026 runs
on an RTX 4090 (Ada) and an RTX 5090 (Blackwell) give the same figure within 5 %, and a 2025 RTX 3090
(Ampere) run lands within 2 % of it (catalogs/engines.toml). Where a datacenter GPU's int8 TOPS are 30x
its fp32 rate (A100, H100) rather than 8x (GeForce), a share-of-int8 model would be 4x optimistic.
"""

from __future__ import annotations

from llmplan.core.hardware import GpuSpec

# FP32 lanes per SM by compute capability (CUDA C++ Programming Guide, arithmetic throughput table):
# 64 on GP100, Volta, Turing and GA100; 128 on GP10x, GA10x, Ada, Hopper and Blackwell.
_FP32_LANES_64 = ("6.0", "7.0", "7.2", "7.5", "8.0")
MMQ_MIN_CC = (7, 5)  # int8 mma.sync from Turing on; older GPUs run MMQ on dp4a


def sm_clocks_per_second(gpu: GpuSpec) -> float | None:
    """SMs x boost clock (Hz) from the fp32 rate, or None without a compute capability or an fp32 figure."""
    cc, fp32 = gpu.compute_capability, gpu.peak_flops.fp32
    if gpu.vendor != "nvidia" or not cc or not fp32:
        return None
    lanes = 64 if cc in _FP32_LANES_64 else 128
    return fp32 / (2 * lanes)


def mmq_rate(gpu: GpuSpec, ops_per_sm_clock: float) -> float | None:
    """MMQ's FLOP/s on ``gpu`` (None: not an NVIDIA GPU with int8 mma, use another rate), never above the
    card's int8 peak: MMQ runs int8 mma."""
    sm_clk = sm_clocks_per_second(gpu)
    if sm_clk is None:
        return None
    try:
        major, minor = (int(x) for x in str(gpu.compute_capability).split(".")[:2])
    except ValueError:
        return None
    if (major, minor) < MMQ_MIN_CC:
        return None
    rate = sm_clk * ops_per_sm_clock
    return min(rate, gpu.peak_flops.int8) if gpu.peak_flops.int8 else rate
