"""The host side of a node: RAM, NVMe space and PCIe traffic of offloading.

ZeRO-Offload (Ren et al. 2021, §4) keeps fp32 master weights and optimizer states in CPU
memory and runs the optimizer there: each step, every GPU sends its share of fp16
gradients to the host (2 bytes/param) and receives the updated fp16 parameters back
(2 bytes/param). Offloading the parameters too (ZeRO-Infinity, Rajbhandari et al. 2021)
moves each GPU's fp16 parameter partition over PCIe again in the forward and in the
backward pass (2 × 2 bytes/param). NVMe offload (ZeRO-Infinity §5) adds the optimizer's
trips between host memory and the drives: every step the fp32 master weights and the
optimizer states of each GPU's partition are read from NVMe and written back, over the
node's drives (the offload storage preset), not the GPU's link. Read and write are added,
not overlapped: a conservative bound (DeepSpeed overlaps part of it with the next step).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core import bytes_per_param as facts
from llmplan.core.explain import Figure
from llmplan.core.system.settings import HostProfile, StoragePreset
from llmplan.core.workload import Scenario


@dataclass(frozen=True, slots=True)
class HostReport:
    ram_per_node: Figure  # offloaded states + processes + data-loader workers + pinned buffers
    offload_ram_per_node: Figure  # from the estimate's memory.host_ram
    pinned_per_node: Figure  # pinned staging for async checkpoints
    nvme_per_node: Figure  # from the estimate's memory.nvme
    pcie_bytes_per_step: Figure  # per GPU, host<->device, for offload
    pcie_time_per_step: Figure  # at the GPU's PCIe bandwidth
    pcie_load: Figure  # PCIe time / step time (> 1: PCIe is the bottleneck)
    nvme_bytes_per_step: Figure  # per node, read + written, for NVMe offload
    nvme_time_per_step: Figure  # at the offload drives' bandwidth
    nvme_load: Figure  # NVMe time / step time (> 1: the drives are the bottleneck)


def offload_pcie_bytes(scenario: Scenario, trainable_params: int) -> tuple[float, str]:
    """Host<->GPU bytes per GPU per step for the scenario's offload setting, with its formula."""
    t = scenario.training
    if scenario.workload == "inference" or t.offload == "none":
        return 0.0, "0 (nothing offloaded)"
    par = scenario.parallelism
    shard = trainable_params / (par.tp * par.pp * par.dp)
    grad_and_param = 4.0 * shard  # fp16 gradients out, fp16 parameters back
    formula = "4 B × params / (tp·pp·dp)"
    if t.offload_params:
        grad_and_param += 4.0 * shard
        formula = "8 B × params / (tp·pp·dp) (parameters fetched in forward and backward)"
    return grad_and_param, formula


def nvme_offload_bytes(scenario: Scenario, trainable_params: int) -> float:
    """Bytes each node reads (and writes again) from its NVMe per step: fp32 master + optimizer states."""
    t = scenario.training
    if scenario.workload == "inference" or t.offload != "nvme":
        return 0.0
    par = scenario.parallelism
    shard = trainable_params / (par.tp * par.pp * par.dp)
    return facts.host_update_bytes(t.optimizer) * shard * scenario.cluster.gpus_per_node


def host_report(scenario: Scenario, *, host_ram: float, nvme: float, trainable_params: int, step_time_s: float,
                profile: HostProfile, pinned_per_gpu: float, offload_storage: StoragePreset | None = None) -> HostReport:
    gpn = scenario.cluster.gpus_per_node
    workers = profile.dataloader_workers_per_gpu * profile.ram_per_dataloader_worker * gpn
    procs = profile.ram_per_gpu_process * gpn
    pinned = pinned_per_gpu * gpn
    total = host_ram + workers + procs + pinned
    pcie_bytes, formula = offload_pcie_bytes(scenario, trainable_params)
    pcie_bw = scenario.cluster.gpu.pcie_bandwidth
    pcie_time = pcie_bytes / pcie_bw if pcie_bw > 0 else 0.0
    load = pcie_time / step_time_s if step_time_s > 0 else 0.0
    nvme_read = nvme_offload_bytes(scenario, trainable_params)
    nvme_time = 0.0
    if nvme_read and offload_storage is not None:
        nvme_time = (nvme_read / offload_storage.bandwidth("read", 1)
                     + nvme_read / offload_storage.bandwidth("write", 1))
    nvme_load = nvme_time / step_time_s if step_time_s > 0 else 0.0
    nvme_src = offload_storage.source if offload_storage else "zero-infinity"
    return HostReport(
        ram_per_node=Figure.of(total, "B", "offloaded states + processes + data-loader workers + pinned buffers",
                               {"offload": host_ram, "processes": procs, "workers": workers, "pinned": pinned},
                               profile.source),
        offload_ram_per_node=Figure.of(host_ram, "B", "the estimate's memory.host_ram", {}, "zero-offload"),
        pinned_per_node=Figure.of(pinned, "B", "per-GPU checkpoint share × GPUs per node (async save only)",
                                  {"per_gpu": pinned_per_gpu, "gpus_per_node": gpn}),
        nvme_per_node=Figure.of(nvme, "B", "the estimate's memory.nvme", {}, "zero-infinity"),
        pcie_bytes_per_step=Figure.of(pcie_bytes, "B", formula, {"params": trainable_params,
                                                                  "offload": scenario.training.offload},
                                      "zero-offload"),
        pcie_time_per_step=Figure.of(pcie_time, "s", "PCIe bytes / GPU PCIe bandwidth",
                                     {"bytes": pcie_bytes, "pcie_bandwidth": pcie_bw}, "zero-offload"),
        pcie_load=Figure.of(load, "1", "PCIe time / step time", {"pcie_time_s": pcie_time,
                                                                  "step_time_s": step_time_s}),
        nvme_bytes_per_step=Figure.of(nvme_read, "B", "(4 + optimizer bytes) × params / (tp·pp·dp) × GPUs per node, "
                                      "read and written each step", {"params": trainable_params,
                                                                     "offload": scenario.training.offload},
                                      "zero-infinity"),
        nvme_time_per_step=Figure.of(nvme_time, "s", "bytes / drive read bandwidth + bytes / drive write bandwidth",
                                     {"bytes": nvme_read, "drives": offload_storage.id if offload_storage else "none"},
                                     nvme_src),
        nvme_load=Figure.of(nvme_load, "1", "NVMe time / step time", {"nvme_time_s": nvme_time,
                                                                      "step_time_s": step_time_s}),
    )
