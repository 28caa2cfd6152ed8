"""Where a parallel group's ranks sit on the cluster, and what network share it gets.

Ranks are numbered as Megatron-LM numbers them (``RankGenerator``, order "tp-cp-ep-dp-pp" for the
dense groups, with tensor parallel innermost): consecutive ranks fill a node first, so a TP group of
8 on 8-GPU nodes is one node, a DP group strides across nodes. A group of ``size`` ranks ``stride``
apart therefore has r = min(size, GPUs per node / stride) ranks on each node it touches (1 when the
stride is a whole node or more) and spans N = size / r nodes.

All groups of one kind communicate at the same time (every DP replica reduces its gradients
together; every TP group all-reduces in the same layer), so the gpn / r groups of that kind in a
node share its NICs: each group's rings get r / gpn of the node's network bandwidth. A TP group of
16 across two 8-GPU nodes gets each node's whole network; each of the 8 DP rings of a node gets
one eighth of it. Fabric tiers: a group spanning more nodes than sit under one leaf switch crosses
the spine, whose bandwidth is the leaf's / ``oversubscription``, and pays ``latency_s`` per extra
switch hop on every network step; on a fabric that is not rail-optimised, rings leave the rail
and climb a tier too.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.training.nccl import Span


@dataclass(frozen=True, slots=True)
class Topology:
    """The cluster's figures every span needs, read once per estimate."""

    gpus_per_node: int
    node_net: float  # achieved bytes/s of a node's NICs
    nodes_per_leaf: int
    oversubscription: float
    rail_optimized: bool
    latency_s: float
    link: str  # "nvlink" or "pcie"
    nvlink: float  # achieved NVLink bus bandwidth per GPU
    nvls: float  # achieved NVLS all-reduce bus bandwidth (0: none)
    nics: int = 0  # NICs per node
    arch: int = -1  # NCCL's compute-capability row (``nccl_arch``)
    amd_host: bool = False


def nccl_arch(cluster: ClusterSpec) -> int:
    """NCCL's compute-capability row of its tuning tables: 0 Volta, 1 Ampere (8.x), 2 Hopper (9.x), 3 Blackwell
    (10 and later); -1 for GPUs NCCL does not drive (RCCL's own tuning differs beyond the LL cap)."""
    cc = cluster.gpu.compute_capability
    if cluster.gpu.vendor != "nvidia" or not cc:
        return -1
    major = int(cc.split(".")[0])
    return 3 if major >= 10 else 2 if major >= 9 else 1 if major >= 8 else 0


def topology(cluster: ClusterSpec, eff: Efficiency) -> Topology:
    net, fabric, gpn = cluster.network, cluster.fabric, cluster.gpus_per_node
    link = "pcie" if fabric.kind == "pcie" else "nvlink"
    nics = net.nics_per_node or (gpn if net.bandwidth_per_gpu > 0 else 0)
    return Topology(gpn, net.node_bandwidth(gpn) * eff.network, net.nodes_per_leaf, net.oversubscription,
                    net.rail_optimized, net.latency_s, link, cluster.intra_bandwidth * eff.intra_node,
                    cluster.intra_bandwidth * fabric.nvls_share, nics, nccl_arch(cluster),
                    cluster.host_cpu_vendor == "amd")


def channels(per_node: int, share: float, topo: Topology) -> int:
    """The channels of NCCL's ring graph for a group with ``per_node`` ranks on each node and ``share`` bytes/s
    of its NICs: one per NIC the group reaches and at least one per rank (NCCL's search gives 8 on 8-GPU nodes
    with 8 or with 4 NICs: 16 runtime channels, twice the graph's, in the logs of NVIDIA/nccl issues #1453 and
    #1357), doubled when there are at most 4 of at least 25 GB/s each (``ncclTopoDupChannels``)."""
    reached = max(1, round(topo.nics * per_node / topo.gpus_per_node)) if topo.nics else 1
    ch = max(per_node, reached)
    if ch <= 4 and share / ch >= 25e9:
        ch *= 2
    return ch


def span(size: int, stride: int, cluster: ClusterSpec | Topology, eff: Efficiency | None = None) -> Span:
    """The ``Span`` of a group of ``size`` ranks ``stride`` apart in rank order."""
    topo = cluster if isinstance(cluster, Topology) else topology(cluster, eff or Efficiency())
    gpn = topo.gpus_per_node
    per_node = 1 if stride >= gpn else max(1, min(size, gpn // max(stride, 1)))
    nodes = max(1, -(-size // per_node))
    share = topo.node_net * per_node / gpn
    nic = topo.node_net / gpn
    hops = 0
    if nodes > 1:
        if topo.nodes_per_leaf and nodes > topo.nodes_per_leaf:
            share /= topo.oversubscription
            nic /= topo.oversubscription
            hops += 2  # leaf -> spine -> leaf
        elif not topo.rail_optimized:
            hops += 2
    nvls = topo.nvls if per_node == size or (nodes > 1 and per_node > 1) else 0.0
    ch = channels(per_node, share, topo) if nodes > 1 else 0
    return Span(size, per_node, nodes, topo.nvlink, share, nic, topo.link, hops * topo.latency_s, nvls, ch,
                topo.arch, topo.amd_host)


def span_stride(stride, gpus_per_node):
    """The part of a stride ``span`` reads: any stride of a whole node or more puts one rank on each node, so
    ``span(size, stride) == span(size, span_stride(stride, gpus_per_node))`` (ints or NumPy arrays). The search
    prices each distinct group once by it."""
    import numpy as np

    return np.minimum(stride, gpus_per_node)


def crosses_nodes(size: int, stride: int, gpus_per_node: int) -> bool:
    """Whether a group of ``size`` ranks ``stride`` apart leaves its node."""
    return size > 1 and stride * size > gpus_per_node


def bus_bandwidth(size, stride, cluster: ClusterSpec, eff: Efficiency, p2p: bool = False):
    """Large-message bus bandwidth of groups (``size``, ``stride``: ints or NumPy arrays), for the search's
    explanations (why TP stays in a node): the same placement and NIC sharing as ``span``, without latency
    or message-size effects.
    ``p2p``: point-to-point exchanges (CP ring, PP), which leave the node through one rank's NIC share."""
    import numpy as np

    gpn = cluster.gpus_per_node
    size = np.asarray(size, dtype=float)
    stride = np.asarray(stride, dtype=float)
    per_node = np.where(stride >= gpn, 1.0, np.clip(np.floor(gpn / np.maximum(stride, 1.0)), 1.0, size))
    nodes = np.ceil(size / per_node)
    net = cluster.network
    share = net.node_bandwidth(gpn) * eff.network * per_node / gpn
    if net.nodes_per_leaf:
        share = np.where(nodes > net.nodes_per_leaf, share / net.oversubscription, share)
    nvlink = cluster.intra_bandwidth * eff.intra_node
    if p2p:
        share = share / per_node
    inter = np.where(per_node > 1, np.minimum(nvlink, share), share)
    return np.maximum(np.where(nodes > 1, inter, nvlink), 1.0)
