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
one eighth of it. Fabric tiers: a group whose nodes reach further than one leaf (pod) of
``nodes_per_leaf`` nodes crosses the spine, whose bandwidth is the pod's / ``oversubscription``; only
the edges of its ring or pipeline between pods cross, so it loses bandwidth only when it has fewer
nodes in a pod than the oversubscription (``spine_scale``), and it pays ``latency_s`` per extra
switch hop on every network step; on a fabric that is not rail-optimised, rings leave the rail
and climb a tier too (two more hops inside a pod, four across pods).
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
        step = node_step(stride, gpn)
        if topo.nodes_per_leaf and (nodes - 1) * step + 1 > topo.nodes_per_leaf:
            scale = spine_scale(step, topo.nodes_per_leaf, topo.oversubscription)
            share *= scale
            nic *= scale
            hops += 2 if topo.rail_optimized else 4  # leaf -> spine -> leaf, or ToR -> pod -> spine -> pod -> ToR
        elif not topo.rail_optimized:
            hops += 2
    nvls = topo.nvls if per_node == size or (nodes > 1 and per_node > 1) else 0.0
    ch = channels(per_node, share, topo) if nodes > 1 else 0
    return Span(size, per_node, nodes, topo.nvlink, share, nic, topo.link, hops * topo.latency_s, nvls, ch,
                topo.arch, topo.amd_host)


def node_step(stride: int, gpus_per_node: int) -> int:
    """Nodes between consecutive nodes a group touches: 1 for a stride under a node, stride / GPUs per node
    beyond (a DP group of TP·PP = 128 ranks apart on 8-GPU nodes touches every 16th node)."""
    return max(1, stride // gpus_per_node)


def spine_scale(step: int, nodes_per_leaf: int, oversubscription: float) -> float:
    """The share of its NIC bandwidth a group keeps when it spans more than one leaf (pod).

    Its ranks fill each pod in rank order, so m = nodes_per_leaf / step of its nodes sit in one pod, one after
    another in its ring (NCCL chains a ring's nodes in communicator order) or its pipeline. Of the m edges
    that leave those nodes, one crosses the spine: a node's rings send 1/m of their bytes above the pod, whose
    uplinks carry 1/oversubscription of what its nodes inject. So the spine slows the group only when
    1/m > 1/oversubscription, to m/oversubscription of its share: a DP group with 24 ranks per pod on a 1:7
    spine sends 1/24 of its bytes up and loses nothing; one rank per pod (m = 1) pays the whole 1:7. All
    groups of a kind cross at once, so each pod's uplinks are shared as its NICs are."""
    m = max(1, nodes_per_leaf // step)
    return min(1.0, m / oversubscription)


def span_stride(stride, gpus_per_node, nodes_per_leaf: int = 0):
    """The part of a stride ``span`` reads: without a leaf tier any stride of a whole node or more puts one rank
    on each node, so ``span(size, stride) == span(size, span_stride(stride, gpus_per_node, nodes_per_leaf))``
    (ints or NumPy arrays). With one (``nodes_per_leaf`` > 0) the stride also says how many pods the group
    spans, so it is kept. The search prices each distinct group once by it."""
    import numpy as np

    return np.asarray(stride) if nodes_per_leaf else np.minimum(stride, gpus_per_node)


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
        step = np.maximum(1.0, np.floor(stride / gpn))
        kept = np.minimum(1.0, np.maximum(1.0, np.floor(net.nodes_per_leaf / step)) / net.oversubscription)
        share = np.where((nodes > 1) & ((nodes - 1) * step + 1 > net.nodes_per_leaf), share * kept, share)
    nvlink = cluster.intra_bandwidth * eff.intra_node
    if p2p:
        share = share / per_node
    inter = np.where(per_node > 1, np.minimum(nvlink, share), share)
    return np.maximum(np.where(nodes > 1, inter, nvlink), 1.0)
