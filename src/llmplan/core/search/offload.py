"""The search's offload term: the engine's offload time (``core/training/offload_time.py``), vectorised.

Without it the quick model charged an offloaded layout only its PCIe copies, so the search
ranked offload layouts as if the CPU optimizer step were free. Same formulas as the engine:
the CPU step streams ``2·(4 + O) + G + W`` bytes per parameter over the node's host memory
bus (all the node's GPUs share it), the gradient copy hides behind each backward, the
16-bit parameters come back over PCIe, and ZeRO-3 parameter offload fetches each GPU's
partition every forward, backward and recomputed forward, hidden behind the compute.
NVMe drives are not in the quick model (the search only tries CPU offload).
"""

from __future__ import annotations

import numpy as np

from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.training.offload_time import cpu_update_bytes
from llmplan.core.workload import TrainingSettings


def offload_seconds(trainable: np.ndarray, stage_params: np.ndarray, shard: np.ndarray, zero: np.ndarray,
                    gpus: np.ndarray, m: np.ndarray, t_compute_mb: np.ndarray, recompute: np.ndarray,
                    opt_bytes: float, grad_bytes: float, wbytes: float, cluster: ClusterSpec, eff: Efficiency,
                    t: TrainingSettings) -> np.ndarray:
    """Exposed offload seconds per step for each candidate (arrays of equal length).

    ``trainable``/``stage_params``: parameters on one GPU of the slowest stage; ``shard``: the ZeRO
    group; ``gpus``: GPUs of the layout; ``m``: micro-batches; ``t_compute_mb``: one micro-batch's
    compute; ``recompute``: 0 none, 1 selective, 2 full.
    """
    n = np.where(zero >= 1, trainable / shard, trainable)  # parameters whose update runs on the host
    on_node = np.minimum(gpus, cluster.gpus_per_node)
    host = (cluster.host_memory_bandwidth or 0.0) * eff.host_memory_bandwidth
    per_param = cpu_update_bytes(t.precision, opt_bytes, grad_bytes)
    cpu = per_param * n * on_node / host if host else np.zeros_like(n)
    gpu = cluster.gpu
    pcie = 0.0 if gpu.unified_memory else gpu.pcie_bandwidth * eff.pcie
    if not pcie:
        return cpu
    copy = 4.0 if t.precision == "fp32" else 2.0
    copies = np.where(zero >= 2, m, 1.0)
    backward = (2.0 / 3.0 if t.method == "full" else 0.5) * t_compute_mb
    grads = copies * np.maximum(0.0, grad_bytes * n / pcie - backward)
    params_off = (zero >= 3) & bool(t.offload_params)
    passes = m * np.where(recompute == 2, 3.0, 2.0)
    fetch = np.maximum(0.0, passes * wbytes * stage_params / shard / pcie - m * t_compute_mb)
    back = copy * n / pcie
    return cpu + grads + np.where(params_off, fetch, back)
