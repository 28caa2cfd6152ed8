"""Inference cold start: read the weights from storage, then copy them over PCIe.

The two stages are added, not overlapped: common loaders (safetensors via mmap, then
``tensor.to(device)``) read a file before copying it, so the sum is the honest figure
for a first start; a warm page cache removes the storage part.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.system.settings import StoragePreset


@dataclass(frozen=True, slots=True)
class ColdStart:
    weight_bytes: Figure
    storage_read_s: Figure
    pcie_copy_s: Figure
    total_s: Figure


def cold_start(*, weight_bytes: float, nodes: int, gpus: int, pcie_bandwidth: float,
               storage: StoragePreset) -> ColdStart:
    """Time to load ``weight_bytes`` spread over ``gpus`` GPUs on ``nodes`` nodes."""
    read_bw = storage.bandwidth("read", max(1, nodes))
    read_s = weight_bytes / read_bw
    per_gpu = weight_bytes / max(1, gpus)
    copy_s = per_gpu / pcie_bandwidth if pcie_bandwidth > 0 else 0.0
    return ColdStart(
        weight_bytes=Figure.of(weight_bytes, "B", "weights of the chosen format", {}, "checkpoint"),
        storage_read_s=Figure.of(read_s, "s", "weight bytes / storage read bandwidth",
                                 {"bytes": weight_bytes, "read_bandwidth": read_bw, "storage": storage.id},
                                 storage.source),
        pcie_copy_s=Figure.of(copy_s, "s", "(weight bytes / GPUs) / PCIe bandwidth (GPUs copy in parallel)",
                              {"per_gpu": per_gpu, "pcie_bandwidth": pcie_bandwidth}),
        total_s=Figure.of(read_s + copy_s, "s", "storage read + PCIe copy (not overlapped)",
                          {"read_s": read_s, "copy_s": copy_s}, "assumption"),
    )
