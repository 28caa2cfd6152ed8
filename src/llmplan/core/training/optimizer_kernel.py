"""The optimizer step on the GPU: one pass of its kernel over the parameters, gradients and states.

The estimate (``timing``) and the layout search (``search.quick_time``) both price the step here, so
they cannot drift apart.

Fused AdamW (torch ``AdamW(fused=True)``: one multi-tensor kernel) reads and writes the parameter it
updates and both moments and reads the gradient, 7 tensor accesses per parameter: 28 B with fp32 tensors,
14 B with 16-bit ones. Measured rates, as shares of the GPU's peak memory bandwidth on those bytes
(``Efficiency.adamw_fp32``/``adamw_16bit``); the fused Adam of Apex, Transformer Engine and DeepSpeed
(Megatron, DeepSpeed profiles) is another multi-tensor kernel, priced the same (an assumption, unmeasured):

- fp32 on an H100 SXM (torch 2.11, 2026-11-24): 2^28 parameters in 2.931 ms, 0.765 of 3,350 GB/s;
- bf16 on an H100 SXM and an H200 SXM (profiled Hugging Face Llama steps, torch 2.11, 2026-11-28):
  0.561 and 0.441 (about 1.88 and 2.12 TB/s): per parameter the 16-bit kernel takes 0.68 of the fp32
  kernel's time on the H100, not half.

Why (pytorch/pytorch ``aten/src/ATen/native/cuda/MultiTensorApply.cuh``, ``fused_adam_utils.cuh``): each
thread loads 4 elements of each tensor as one vector (kILP = 4) and does the update in fp32 whatever the
storage dtype (two powers for the bias corrections, a square root and a division per element). The
elements in flight per thread are fixed, so 16-bit tensors have half the bytes in flight, and the kernel
is bound by its latency and its arithmetic rather than by HBM: it gains little from a faster memory.

A step whose tensors mix dtypes (an fp32 master and moments with 16-bit gradients, bf16 moments beside
fp32 parameters, a 16-bit copy of the master written after the update) is priced by its bytes per
parameter b: between 14 and 28 B the time per parameter runs linearly from the 16-bit kernel's to the
fp32 kernel's; above 28 B (a separate 16-bit copy written) the extra bytes move at the fp32 kernel's rate.

Other optimizers (SGD, Lion, Adafactor, Muon, bitsandbytes' 8-bit and paged AdamW) and torch's foreach
AdamW (``FrameworkProfile.optimizer_intermediates`` > 0) run other kernels that were not measured: they
keep one pass over their bytes at the achievable bandwidth, + 4 B per parameter that the fp32 fused AdamW
microbenchmark moved beyond its counted bytes at the H100's copy rate (2,911 GB/s; 32 B against 28).
"""

from __future__ import annotations

from typing import NamedTuple

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.workload import TrainingSettings

FP32_BYTES = 28.0  # fused AdamW, fp32: parameter and both moments read and written, gradient read, 4 B each
BYTES_16BIT = 14.0  # the same accesses at 2 B
UNCOUNTED_BYTES = 4.0  # the other optimizers' pass: the fp32 microbenchmark's bytes beyond those counted


class OptimizerRate(NamedTuple):
    """How fast this GPU's optimizer step runs: the fused AdamW kernel's seconds per parameter with 16-bit
    and with fp32 tensors (0 where the optimizer is another kernel), and the achievable bandwidth. A named
    tuple: an estimate builds one per step it prices, and a frozen dataclass costs more to build."""

    bandwidth: float  # achievable bytes/s: the pass of the optimizers without a measured kernel
    s16: float = 0.0  # fused AdamW, 16-bit tensors: seconds per parameter
    s32: float = 0.0  # fused AdamW, fp32 tensors


def fused_adamw(tr: TrainingSettings, prof: FrameworkProfile | None) -> bool:
    """Whether the step runs a fused multi-tensor AdamW kernel (module doc): AdamW, not bitsandbytes' paged
    AdamW, and not torch's foreach implementation (which allocates intermediates; the profiles' default is
    the fused one)."""
    foreach = prof is not None and prof.optimizer_intermediates > 0
    return tr.optimizer == "adamw" and not tr.paged_optimizer and not foreach


def optimizer_rate(gpu, eff, tr: TrainingSettings, prof: FrameworkProfile | None) -> OptimizerRate:
    """The rates of ``gpu`` (a ``GpuSpec``) under ``eff`` (an ``Efficiency``: the catalog's per-GPU-class
    shares, ``adamw_fp32`` and ``adamw_16bit``) for this training's optimizer."""
    bandwidth = gpu.memory_bandwidth * eff.memory_bandwidth
    if not fused_adamw(tr, prof):
        return OptimizerRate(bandwidth)
    return OptimizerRate(bandwidth, BYTES_16BIT / (gpu.memory_bandwidth * eff.adamw_16bit),
                         FP32_BYTES / (gpu.memory_bandwidth * eff.adamw_fp32))


def counted_bytes(master_bytes, grad_bytes, state_bytes, weight_bytes, separate_master: bool):
    """Bytes per parameter of one pass: the parameter (or master copy) read and written, the gradient read,
    the states read and written, and, where the 16-bit weights are a separate copy, the new weights written."""
    return 2 * master_bytes + grad_bytes + 2 * state_bytes + (weight_bytes if separate_master else 0.0)


def seconds_per_param(counted, rate: OptimizerRate):
    """Seconds per parameter at ``counted`` bytes each (module doc). Floats or NumPy arrays (the search)."""
    if not rate.s16:
        return (counted + UNCOUNTED_BYTES) / rate.bandwidth
    inside = (min(max(counted, BYTES_16BIT), FP32_BYTES) if isinstance(counted, (float, int))
              else counted.clip(BYTES_16BIT, FP32_BYTES))
    per = rate.s16 + (inside - BYTES_16BIT) / (FP32_BYTES - BYTES_16BIT) * (rate.s32 - rate.s16)
    return per * counted / inside  # below 14 B or above 28 B: at the nearer measured kernel's bytes per second


def optimizer_time(trainable_on_gpu, master_bytes, grad_bytes, state_bytes, weight_bytes, separate_master: bool,
                   rate: OptimizerRate):
    """Seconds of the optimizer step over this GPU's ``trainable_on_gpu`` parameters (after ZeRO sharding)."""
    counted = counted_bytes(master_bytes, grad_bytes, state_bytes, weight_bytes, separate_master)
    return trainable_on_gpu * seconds_per_param(counted, rate)
