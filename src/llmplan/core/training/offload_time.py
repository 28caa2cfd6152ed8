"""The time cost of offloading optimizer states (and parameters) to host memory or NVMe.

Offloading frees GPU memory but moves work to slower places, once per optimizer step
(ZeRO-Offload, Ren et al. 2021 §4; ZeRO-Infinity, Rajbhandari et al. 2021 §5):

1. The gradients go to the host over PCIe during the backward pass (each micro-batch's
   reduced partition with ZeRO-2/3 and under FSDP's CPU offload, which also keeps them off the
   GPU; once per step with ZeRO-0/1). The copy overlaps the backward; only what outlasts it is
   exposed. Megatron-Core's HybridDeviceOptimizer (``offload_style`` optimizer) keeps its gradient
   buffer on the GPU and copies it in ``step()``, after the backward: exposed in full (below).
2. The CPU runs the optimizer. DeepSpeedCPUAdam is a single fused pass over the partition, so
   its time is a roofline on the host's memory bus: per parameter it reads the fp32 master
   weight, the optimizer states and the gradient, and writes the master, the states and the
   16-bit copy for the GPU: ``2·(4 + O) + G + W`` bytes, O the engine's optimizer-state bytes
   per parameter (AdamW: 8), G its gradient bytes, W = 2 in mixed precision (fp32 training
   updates its 4-byte weights in place: W = 0). AdamW with bf16 gradients: 28 B/param. Pure 16-bit
   training has no master: the optimizer reads and writes the 16-bit weights and its states,
   ``2·(w + O) + G`` with w the weights' bytes, 14 B/param with bf16 AdamW states (torchtune:
   torch.optim.AdamW on the CPU). Every GPU of a node shares that node's memory bus, so the node's
   time is its GPUs' partitions × bytes / (host bandwidth × efficiency.host_memory_bandwidth).
3. The updated 16-bit parameters return over PCIe before the next forward (not when the
   parameters themselves live on the host: then every pass fetches them).
4. NVMe offload also reads the master weights and optimizer states from the node's drives
   and writes them back each step: (4 + O) B/param each way, read then write (DeepSpeed's
   ``pipeline_read``/``pipeline_write`` overlap is off by default).
5. ZeRO-3 parameter offload fetches each GPU's parameter partition from the host before every
   forward, backward and recomputed forward of every micro-batch; the prefetch overlaps the
   compute, so only the excess over the compute time is exposed.

Steps 2-4 are exposed: the next forward needs the updated weights (no "delayed parameter
update"; DeepSpeed leaves DPU off). Not modelled: DPU, pinned-memory limits, NUMA placement,
PCIe switches shared by two GPUs, and the host memory traffic of the PCIe copies themselves.

Megatron-Core's ``--optimizer-cpu-offload`` (``HybridDeviceOptimizer.step``, NVIDIA/Megatron-LM
megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py at d98e8a6) runs, without
``--overlap-cpu-optimizer-d2h-h2d`` (off by default; with it the copies and the CPU step are pipelined per parameter,
``grad_offload``), on the compute stream: the offloaded share F
of the fp32 main gradients is copied into pinned fp32 host buffers (4 B each); the GPU's fused Adam over the other
1 - F is queued behind the copies while the host waits for them and runs torch AdamW (``fused=True``) on the
fp32 copies, so the two steps overlap; the fp32 results then go back (a non-blocking copy into the 16-bit
parameter moves the fp32 values and converts them on the GPU: pytorch/pytorch aten/src/ATen/native/cuda/Copy.cu
``copy_kernel_cuda``, "If non_blocking is true - type conversions are performed on the GPU"): 4 B each. The
host's update writes no 16-bit copy: 2·(4 + O) + 4 B per parameter, 28 B with AdamW. Exposed: the gradient
copy + max(CPU step, GPU Adam over 1 - F) + the copy back.

torchao's ``CPUOffloadOptimizer`` (torchtune's single-device recipes; pytorch/ao torchao/optim/cpu_offload.py at
36027d8): a post-accumulate-grad hook copies each gradient to its pinned host buffer on a side stream during
the backward (every micro-batch's backward fires it: per micro-batch, hidden behind the backward as FSDP's);
``step()`` then steps each parameter's own CPU optimizer (torch AdamW, ``fused=True``) on the host copy in the
parameter's dtype, no master — 2·(w + O) + G B per parameter, 14 B in pure bf16 — and after each queues that
parameter's copy back (its own dtype, w B) on the side stream, so the copies back run while the next parameters
are stepped: only what outlasts the CPU step is exposed.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.bytes_per_param import FP32_COPY_BYTES
from llmplan.core.explain import Figure
from llmplan.core.training.grad_offload import pipelined
from llmplan.core.training.layout import Layout
from llmplan.core.training.optimizer_kernel import optimizer_rate, optimizer_time
from llmplan.core.training.states import StateBytes, grads_offloaded
from llmplan.core.workload import Scenario

MASTER_BYTES = FP32_COPY_BYTES  # the fp32 copy the optimizer updates (the weights themselves in fp32 training)
LIMITS = ("host CPU", "PCIe", "NVMe")


@dataclass(frozen=True, slots=True)
class OffloadTime:
    """Per optimizer step, seconds; the parts and what they were computed from."""

    cpu_s: float  # optimizer step on the host, per node
    grad_copy_s: float  # gradients GPU -> host, per GPU, all copies of a step
    grad_exposed_s: float  # the part that outlasts the backward
    param_copy_s: float  # updated 16-bit parameters host -> GPU
    fetch_s: float  # ZeRO-3 parameter offload: partitions fetched every pass (PCIe or NVMe, the slower)
    fetch_exposed_s: float
    nvme_s: float  # NVMe offload: states read and written, per node
    bytes_per_param: float  # what the CPU update streams per parameter
    params_per_gpu: float  # parameters whose update runs on the host, per GPU
    gpus_on_node: int
    host_bandwidth: float  # achievable bytes/s of one node (0: unknown)
    pcie_bandwidth: float  # achievable bytes/s of one GPU's host link (0: none or unknown)
    notes: tuple[str, ...] = ()
    gpu_step_s: float = 0.0  # the GPU optimizer over the share kept there (Megatron's offload fraction < 1)
    fraction: float = 1.0  # share of this GPU's optimizer parameters stepped on the host
    param_copy_hidden_s: float = 0.0  # the part of param_copy_s that runs during the CPU step (torchao)
    overlapped: bool = False  # Megatron-Core --overlap-cpu-optimizer-d2h-h2d: copies and CPU step pipelined
    largest_share: float = 0.0  # the largest tensor's share of the offloaded parameters (the pipeline's fill)

    @property
    def copies_and_step_s(self) -> float:
        """Gradient copies, CPU (and GPU) optimizer step and copies back: one after the other, or pipelined
        parameter by parameter (``grad_offload.pipelined``)."""
        if self.overlapped:
            return pipelined(self.grad_copy_s, self.cpu_s, self.param_copy_s, self.gpu_step_s, self.largest_share)
        return (self.grad_exposed_s + _larger(self.cpu_s, self.gpu_step_s) + self.param_copy_s
                - self.param_copy_hidden_s)

    @property
    def exposed_s(self) -> float:
        return self.copies_and_step_s + self.nvme_s + self.fetch_exposed_s

    @property
    def limit(self) -> str:
        """What the exposed time is mostly spent on: the host CPU's memory bus, PCIe or NVMe."""
        pcie = (_larger(self.grad_copy_s, self.param_copy_s) if self.overlapped  # both directions at once
                else self.grad_exposed_s + self.param_copy_s - self.param_copy_hidden_s)
        parts = {"host CPU": self.cpu_s, "PCIe": pcie + self.fetch_exposed_s,
                 "NVMe": self.nvme_s}
        return max(LIMITS, key=lambda k: parts[k])

    def figure(self) -> Figure:
        formula = ("exposed gradient copy (beyond the backward) + max(CPU optimizer step, GPU optimizer step over "
                   "the share kept on the GPU) "
                   "[2·(4 + optimizer B) + gradient B + 16-bit copy B; without a master 2·(weight B + optimizer B) + "
                   "gradient B] × params per GPU × GPUs per node / "
                   "(host bandwidth × efficiency.host_memory_bandwidth) + NVMe read + write of the states + "
                   "16-bit parameters back over PCIe (× efficiency.pcie; torchao: beyond the CPU step they overlap) + "
                   "parameter fetches beyond the compute; Megatron-Core with --overlap-cpu-optimizer-d2h-h2d: the "
                   "copies and the CPU step pipelined per parameter, max(D2H + q·(CPU + H2D), q·D2H + CPU + q·H2D, "
                   "q·(D2H + CPU) + H2D, GPU step + H2D), q the largest tensor's share")
        inputs = {"cpu_step_s": self.cpu_s, "grad_copy_s": self.grad_copy_s, "grad_exposed_s": self.grad_exposed_s,
                  "param_copy_s": self.param_copy_s, "param_fetch_s": self.fetch_s,
                  "param_fetch_exposed_s": self.fetch_exposed_s, "nvme_s": self.nvme_s,
                  "bytes_per_param": self.bytes_per_param, "params_per_gpu": self.params_per_gpu,
                  "gpus_on_node": self.gpus_on_node, "host_bandwidth": self.host_bandwidth,
                  "pcie_bandwidth": self.pcie_bandwidth, "limit": self.limit, "gpu_step_s": self.gpu_step_s,
                  "offload_fraction": self.fraction, "param_copy_hidden_s": self.param_copy_hidden_s}
        if self.overlapped:
            inputs.update(overlap_cpu_optimizer_copies=True, largest_tensor_share=self.largest_share,
                          copies_and_step_s=self.copies_and_step_s)
        return Figure.of(self.exposed_s, "s", formula, inputs,
                         "megatron-hybrid-offload" if self.overlapped else "zero-offload", self.notes)


NONE = OffloadTime(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0.0)


def cpu_update_bytes(precision: str, optimizer_bytes: float, grad_bytes: float, master_bytes: float = MASTER_BYTES,
                     weight_bytes: float = 2.0, writes_copy: bool = True) -> float:
    """Bytes one parameter's CPU update moves over the host memory bus (module doc, step 2). Without a separate
    master (fp32 or pure 16-bit training: torch.optim.AdamW steps the weights themselves, as torchtune's
    ``fsdp_cpu_offload`` does with ``dtype: bf16``) the weights are read and written in their own dtype and no
    16-bit copy is made: 2·(W + O) + G, 14 B for bf16 weights, gradients and AdamW states. ``writes_copy`` False:
    the host writes no 16-bit copy (Megatron-Core's HybridDeviceOptimizer sends the fp32 values back)."""
    separate = master_bytes > 0  # a bool, or an array of them (the search's quick model prices many layouts)
    copy = 0.0 if precision == "fp32" or not writes_copy else 2.0
    updated = separate * master_bytes + (1 - separate) * weight_bytes
    return 2 * (updated + optimizer_bytes) + grad_bytes + separate * copy


def _larger(a, b):
    """max(a, b) of floats or NumPy arrays (the search's quick model calls ``offload_time`` on arrays of
    candidate layouts, one call per ZeRO stage and recompute setting)."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def _smaller(a, b):
    """min(a, b) of floats or NumPy arrays (see ``_larger``)."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def params_updated_per_gpu(sc: Scenario, st: StateBytes, trainable: float, expert_share: float) -> float:
    """Trainable parameters whose optimizer state this GPU owns (its ZeRO partition, or all of them)."""
    tr = sc.training
    if not (tr.zero_stage >= 1 or tr.distributed_optimizer):
        return trainable
    return trainable * ((1 - expert_share) / st.shard_dense + expert_share / st.shard_expert)


def offload_time(sc: Scenario, lay: Layout, st: StateBytes, trainable: float, expert_share: float,
                 compute_s: float, backward_per_mb_s: float, largest_tensor: float = 0.0) -> OffloadTime:
    """The offload path's time per optimizer step (module doc); ``NONE`` without offload.

    ``compute_s`` is one GPU's compute time per step, ``backward_per_mb_s`` one micro-batch's
    backward (the window the gradient copy hides behind). The per-layout figures (``lay.gpus``,
    ``lay.accumulation``, ``st``'s bytes, ``trainable``, ``expert_share`` and the two times) may be NumPy
    arrays of candidate layouts of one ZeRO stage and recompute setting: the search's quick model prices
    offload with this function (``search.quick._offload``). ``largest_tensor``: elements of the model's largest
    parameter tensor on this GPU before ZeRO sharding (its TP share), the pipeline's fill and drain under
    Megatron-Core's overlapped copies (``grad_offload``).
    """
    tr, cl, eff = sc.training, sc.cluster, sc.efficiency
    if tr.offload == "none":
        return NONE
    notes: list[str] = []
    prof = sc.framework
    owned = params_updated_per_gpu(sc, st, trainable, expert_share)
    hybrid = prof.offload_style == "optimizer"  # Megatron-Core: fp32 gradients in, fp32 values back (module doc)
    fraction = tr.optimizer_offload_fraction if hybrid else 1.0
    n = owned * fraction
    torchao = prof.offload_style == "torchao"  # no master: the host copy in the parameter's dtype (module doc)
    per_param = (cpu_update_bytes(tr.precision, st.optimizer_bytes, MASTER_BYTES, MASTER_BYTES, writes_copy=False)
                 if hybrid else
                 cpu_update_bytes(tr.precision, st.optimizer_bytes, st.grad_bytes, 0.0 if torchao else st.master_bytes,
                                  st.weight_bytes))
    gpus_on_node = _larger(1, _smaller(cl.gpus_per_node, lay.gpus))
    host_bw = (cl.host_memory_bandwidth or 0.0) * eff.host_memory_bandwidth
    cpu = per_param * n * gpus_on_node / host_bw if host_bw else 0.0
    if not host_bw:
        notes.append("host memory bandwidth unknown: the CPU optimizer step is not charged; "
                     "set hardware.host_memory_bandwidth (bytes/s per node) or choose a node preset")
    gpu = cl.gpu
    pcie_bw = 0.0 if gpu.unified_memory else gpu.pcie_bandwidth * eff.pcie
    if not pcie_bw and not gpu.unified_memory:
        notes.append(f"{gpu.name} has no PCIe bandwidth in its spec: host<->GPU copies are not charged")
    copy_bytes = st.weight_bytes if torchao else 4.0 if tr.precision == "fp32" or hybrid else 2.0

    def over_pcie(nbytes: float) -> float:
        return nbytes / pcie_bw if pcie_bw else 0.0

    grad_one = over_pcie((MASTER_BYTES if hybrid else st.grad_bytes) * n)
    if grads_offloaded(tr.zero_stage, prof):  # each micro-batch's reduced partition, behind its backward
        copies = lay.accumulation
        grad_exposed = copies * _larger(0.0, grad_one - backward_per_mb_s)
    elif prof.offload_style == "optimizer":  # Megatron-Core: copied from the GPU buffer in step(), after the
        copies = 1                           # backward: nothing to hide behind
        grad_exposed = grad_one
    else:  # DeepSpeed ZeRO-0/1: once per step, from the last backward
        copies = 1
        grad_exposed = _larger(0.0, grad_one - backward_per_mb_s)
    fetched = st.offloaded_weights
    param_back = over_pcie(copy_bytes * n) * (fetched == 0)  # fetched parameters come back every pass instead
    passes = lay.accumulation * (3 if tr.recompute == "full" else 2)  # forward, backward (+ recomputed forward)
    fetch = over_pcie(fetched * passes)
    nvme = 0.0
    if tr.offload == "nvme":
        read, write = cl.nvme_read_bandwidth, cl.nvme_write_bandwidth
        if read and write:
            states = (MASTER_BYTES + st.optimizer_bytes) * n * gpus_on_node
            nvme = states / read + states / write
            fetch = _larger(fetch, fetched * gpus_on_node * passes / read)
        else:
            notes.append("NVMe offload drive bandwidth unknown: their reads and writes are not charged; "
                         "choose system.offload_storage")
    gpu_step = gpu_share_step(sc, st, owned * (1 - fraction)) if hybrid and fraction < 1 else 0.0
    hidden = _smaller(param_back, cpu) if torchao else 0.0  # each parameter's copy back behind the next one's step
    overlapped = hybrid and tr.overlap_cpu_optimizer_copies
    share = 0.0
    if overlapped:  # the largest tensor's even share of this rank (its ZeRO shard), of the offloaded parameters
        mine = largest_tensor / st.shard_dense if (tr.zero_stage >= 1 or tr.distributed_optimizer) else largest_tensor
        share = _smaller(1.0, mine / _larger(n, 1.0))
    return OffloadTime(cpu, copies * grad_one, grad_exposed, param_back, fetch, _larger(0.0, fetch - compute_s), nvme,
                       per_param, n, gpus_on_node, host_bw, pcie_bw, tuple(notes), gpu_step, fraction, hidden,
                       overlapped, share)


def gpu_share_step(sc: Scenario, st: StateBytes, params: float) -> float:
    """The GPU optimizer's pass over the ``params`` whose states stay on the GPU under a partial offload: the fused
    Adam kernel at its measured rate (``optimizer_kernel``), over the fp32 copies ``param_update_in_fp32`` makes and
    the main gradients, writing the 16-bit parameters after (the estimate's own optimizer pricing)."""
    separate = st.master_bytes > 0
    master = separate * st.master_bytes + (1 - separate) * st.weight_bytes
    return optimizer_time(params, master, st.grad_bytes, st.optimizer_bytes, separate * st.weight_bytes, True,
                          optimizer_rate(sc.cluster.gpu, sc.efficiency, sc.training, sc.framework))
