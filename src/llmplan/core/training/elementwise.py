"""One memory-bound op of the per-operation list (``ops``): the bytes its kernels move and how many there are,
forward and backward, and what kind of kernel they are (``kernel_rates.elementwise_time`` prices it)."""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.training.kernel_rates import EW_COPY

BACKWARD_FACTOR = 2.0  # ops without a stated factor, and the eager softmax's s×s traffic


@dataclass(frozen=True, slots=True)
class Elementwise:
    name: str
    bytes: float  # forward reads + writes per micro-batch (one layer, or the head); backward_only: the backward's
    kernels: float  # forward launches
    backward: float = BACKWARD_FACTOR  # backward bytes / forward bytes (``ops`` module doc)
    backward_kernels: float = -1.0  # backward launches where the code's count is known; < 0: backward · kernels, ≥ 1
    kind: str = EW_COPY  # what its kernels do, for their rate and floor (``kernel_rates.elementwise_time``)
    upcast: float = 0.0  # share of the forward's bytes in bf16 -> fp32 casts (priced at their own rate)
    backward_upcast: float = 0.0  # the same share of the backward's bytes
    # kernels autograd runs in the backward only (``autograd_kernels``): no forward, nothing recomputed
    backward_only: bool = False
