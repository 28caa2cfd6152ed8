"""Two offload options that change when the offload copies run: torchao's ``offload_gradients`` and Megatron-Core's
``--overlap-cpu-optimizer-d2h-h2d``.

**torchao** ``CPUOffloadOptimizer(..., offload_gradients=True)`` (pytorch/ao torchao/optim/cpu_offload.py at 36027d8,
2026-08-21; torchtune's single-device recipes take it as their optimizer). Its post-accumulate-grad hook makes a side
stream wait for the compute stream, queues the gradient's copy to its pinned host buffer on that stream, and with
the option on calls ``p_device.grad.record_stream(self.stream)`` and drops the gradient: the caching allocator may
reuse its block only once the side stream's work queued so far — this copy and those before it — is done. So the
GPU holds the gradients whose copies have not finished. The copies are the same with the option off (the time does
not change); only the memory does. Bound, for gradients produced at an even rate over the backward of T_b seconds
and drained over PCIe at P bytes/s:

    GPU gradients ≤ min(G, 2·L + max(0, G − P·T_b))

G: this GPU's gradient bytes; L: the largest gradient tensor (the one being copied and the one the backward is
writing meanwhile); G − P·T_b: what the backward produces faster than PCIe drains, the backlog at its end. The
option cannot accumulate micro-batches (its docstring: "Not compatible with gradient accumulation": the next
micro-batch's copy overwrites the host gradient), which the estimate refuses.

**Megatron-Core** ``HybridDeviceOptimizer`` with ``overlap_cpu_optimizer_d2h_h2d=True`` (NVIDIA/Megatron-LM
megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py at d98e8a6, 2026-08-22; ``--overlap-cpu-optimizer-d2h-h2d``,
default False in megatron/training/arguments.py): ``build_cpu_optimizer_list`` gives every offloaded parameter its own
CPU optimizer; ``step()`` queues all gradient copies on a D2H stream with one event per parameter, queues the GPU's
Adam over the kept share on the compute stream, then for each parameter waits for its event, steps it on the CPU and
queues its copy back on an H2D stream that first waits for the compute stream (so behind the GPU's Adam). Three
stages run as a pipeline over the parameters, D2H a, CPU b and H2D c seconds in all; with the largest tensor a share
q of the offloaded parameters, the step's offload takes

    max(a + q·(b + c), q·a + b + q·c, q·(a + b) + c, g + c)

(the stage that limits plus one tensor of the others to fill and drain the pipeline; g the GPU Adam the copies back
wait for). Without the flag the same copies run on the compute stream one after the other: a + max(b, g) + c.
Memory: the same pinned fp32 gradient buffers and fp32 host copies in both modes (``cpu_copy_map_grad`` and
``param_update_in_fp32`` do not depend on the flag; one CPU optimizer per parameter holds the same states), so no
bytes change. The largest tensor is taken as its even share of this rank (its ZeRO shard): the distributed
optimizer's bucket ranges can give one rank more of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.params import ParamBreakdown
from llmplan.core.training.layout import Layout
from llmplan.core.training.timing import compute_times
from llmplan.core.workload import Scenario

EVEN_RATE = "gradients produced at an even rate over the backward"


@dataclass(frozen=True, slots=True)
class DrainedGradients:
    """torchao's offload_gradients: the GPU's gradient bytes at most, and what the bound was made of."""

    held: float
    all_gradients: float
    largest: float  # bytes of the largest gradient tensor
    pcie_bandwidth: float  # achievable bytes/s (0: unknown, nothing drained)
    backward_s: float  # one micro-batch's backward, the window the copies drain in

    @property
    def backlog(self) -> float:
        return max(0.0, self.all_gradients - self.pcie_bandwidth * self.backward_s)

    def inputs(self) -> dict[str, float]:
        return {"all_gradients": self.all_gradients, "largest_gradient": self.largest,
                "pcie_bandwidth": self.pcie_bandwidth, "backward_s": self.backward_s, "backlog": self.backlog}


def drained(all_gradients: float, largest: float, pcie_bandwidth: float, backward_s: float) -> DrainedGradients:
    """The module doc's bound on the gradients a GPU holds under ``offload_gradients`` (no link known: all of them)."""
    backlog = max(0.0, all_gradients - pcie_bandwidth * backward_s)
    return DrainedGradients(min(all_gradients, 2 * largest + backlog), all_gradients, largest, pcie_bandwidth,
                            backward_s)


def backward_seconds(sc: Scenario, lay: Layout, pb: ParamBreakdown) -> float:
    """One micro-batch's backward on this GPU, as the estimate reckons the window the offload copies hide behind
    (``estimate_training``: the step's compute per micro-batch × 2/3 for a full fine-tune, × 1/2 for adapters).
    An offloading step has no GPU optimizer pass, so the optimizer arguments of ``compute_times`` change nothing."""
    ct = compute_times(sc, lay, pb, 0.0, (0.0, 0.0, 0.0, 0.0, False))
    full = sc.training.method == "full"
    return (ct.total - ct.step_end) / lay.accumulation * ((2.0 if full else 1.0) / (3.0 if full else 2.0))


def pipelined(d2h, cpu, h2d, gpu_step, share):
    """Megatron-Core's overlapped offload step (module doc): floats, or the search's NumPy arrays."""
    paths = (d2h + share * (cpu + h2d), share * d2h + cpu + share * h2d, share * (d2h + cpu) + h2d, gpu_step + h2d)
    if any(hasattr(p, "shape") for p in paths):
        import numpy as np

        return np.maximum.reduce(np.broadcast_arrays(*paths))
    return max(paths)
