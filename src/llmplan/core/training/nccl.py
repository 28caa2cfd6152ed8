"""One collective call as NCCL runs it: algorithm, protocol, latency and the bus bandwidth it reaches.

A call moves S bytes (nccl-tests' convention, doc/PERFORMANCE.md: the all-reduce buffer, the whole
gathered buffer of an all-gather or reduce-scatter, what one rank sends in an all-to-all or a p2p
send) over a group of n ranks, r on each of N nodes (``Span``, from ``placement``). Its time is the
bus volume S·k over the bus bandwidth it reaches, k = 2(n-1)/n for all-reduce and (n-1)/n for
all-gather, reduce-scatter and all-to-all (the same PERFORMANCE.md), plus latency:

- **Inside a node** NCCL's rings (and NVLS, NVLink SHARP, on Hopper NVSwitch systems) run over
  NVLink. The share of the NVLink bus bandwidth a call of S bytes reaches is the node fabric's
  published nccl-tests curve (``FabricSpec.ramp_*``, cited in catalogs/systems/nodes.toml: an 8-GPU
  all-reduce, so its own latency is in the curve); a group of more than 8 ranks pays NCCL's
  per-step latency for its extra steps.
- **Across nodes** the ring is hierarchical in effect: it visits every GPU of a node over NVLink
  and leaves through a NIC, one ring per channel, the channels spread over all the node's NICs.
  So the ring's network stage runs at the group's share of the node's NIC bandwidth
  (``Span.net``), and the call takes the slower of its NVLink stage and its network stage
  (they pipeline, chunk by chunk). The network stage pays NCCL's latency model: per protocol
  (LL, LL128, Simple) a base latency plus per-step hardware latencies, 2(N-1) network steps for an
  all-reduce ring, 2·log2i(N) for the tree, log2i being NCCL's integer (floor) log (NVIDIA/nccl
  src/graph/tuning.cc, ``ncclTunerConstantsDefaults`` and ``ncclTopoTuneModel``, commit 5067397,
  2026-06-11). The tree's bandwidth is scaled by NCCL's ``treeCorrectionFactor`` for the message
  size (``ncclTopoGetAlgoTime``), which is what moves NCCL from the tree to the ring between
  a few hundred KiB and a few MiB; LL's bus bandwidth across nodes is capped by ``llMaxBws`` (its row
  chosen by the host CPU vendor, as is the per-step network overhead), LL128 and the tree per channel
  (``perChMax*Bws`` times the channels of NCCL's graph, ``placement.channels``), and a Simple ring
  all-reduce's latency is ×1.4 (NCCL's "plateau effect of ring", ``ncclTopoGetAlgoTime``).
- **NVLS-tree** across NVSwitch nodes with NVLS (Hopper or later; all-reduce): the least of the NVLS, network
  (doubled on two nodes) and per-channel bandwidths, 25 µs + 2·log2i(N)·20.9 µs of latency (``_nvls_tree``).
- **NVLS** (NVLink SHARP) pays NCCL's NVLS latency, 25 µs on NVLink and no base latency (the same
  table): a call cannot finish sooner than that plus its bytes at the NVLS bandwidth.
- **Algorithm choice**: NCCL predicts every (algorithm, protocol) pair's time with that model
  and runs the fastest; so does this module, and says which it took. Across nodes the call then takes
  the time NCCL's runtime gives it (``nccl_runtime``): a tree no faster than its proxy threads post its
  chunks' network steps, plus its pipeline's fill, NVLS-tree as its kernel pipelines its rounds (fill and
  drain included).
- **All-to-all** is point-to-point sends; it cannot aggregate a node's NICs, so each rank's
  remote part runs at its own NIC share (S. Jeaugey, NVIDIA/nccl-tests issue #267).
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_left
from dataclasses import dataclass
from typing import Literal

from llmplan.core.hardware import FabricSpec
from llmplan.core.training.nccl_runtime import (
    enqueue_channels,
    nvls_tree_seconds,
    runtime_channels,
    tree_fill_seconds,
    tree_proxy_seconds,
)

Op = Literal["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "p2p"]
PROTOCOLS = ("LL", "LL128", "Simple")

# NCCL src/graph/tuning.cc, ncclTunerConstantsDefaults (µs). Index: protocol LL, LL128, Simple.
_BASE = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)}
_HW = {  # hwLatencies[link][algorithm][protocol]
    "nvlink": {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)},
    "pcie": {"ring": (1.0, 2.5, 5.7), "tree": (1.0, 1.9, 4.0)},
    "net": {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0)},
}
_NVLS_LAT = 25.0  # hwLatencies[NVLINK][NVLS][Simple]; baseLatencies[NVLS] are 0
_NVLS_TREE_LAT = (25.0, 20.9)  # hwLatencies[NVLINK][NVLS_TREE][Simple], hwLatencies[NET][NVLS_TREE][Simple]
_NET_OVERHEAD = {False: 1.0, True: 2.0}  # getNetOverhead(): µs per step, 2 on AMD hosts, 1 otherwise; ×3 for Simple
_PLATEAU = (1.9, 1.4)  # ncclTopoGetAlgoTime: ring/Simple all-reduce latency × this across nodes (compCap < 80, ≥ 80)
# Bandwidth factor per protocol (ncclTopoTuneModel's model refinements): LL sends 8-byte lines with a
# 4-byte flag (×0.5), LL128 120 of every 128 bytes (×0.92); the tree's all-reduce ×0.92 and its algbw
# half its busbw.
_RING_PROTO = (0.5, 0.92, 1.0)
# llMaxBws (GB/s of bus bandwidth) caps LL across nodes; for multi-node NCCL indexes the row by the host CPU
# vendor: Intel and others {39.0 for 2 nodes, 20.4 for 3 or more}, AMD {22.5, 19.0}. RCCL's tuning.cc has the
# same rows and the same rule (ROCm/rccl src/graph/tuning.cc, llMaxBws and index1, commit 0cbce2a7). The node
# preset's ``host_cpu_vendor`` picks the row; unknown hosts get the default one.
_LL_MAX_NET = {False: (39.0e9, 20.4e9), True: (22.5e9, 19.0e9)}
# Per-channel caps (GB/s), rows by compute capability (Volta, Ampere, Hopper, Blackwell), columns by nodes
# (1, 2, 3 or more): perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws.
_PER_CH_RING_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
_PER_CH_TREE_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
_PER_CH_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
_PER_CH_NVLS_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
_MAX_NVLS_ARITY = 32  # NCCL_MAX_NVLS_ARITY (src/include/device.h): NVLS heads, one channel each
_TREE_PROTO = (1.0 / 3.8 * 0.92, 120.0 / 128.0 * 0.92, 0.92)
_REF_RANKS = 8  # the fabric curves are 8-GPU all-reduces
# tuning.cc treeCorrectionFactor[protocol][log2i(bytes >> 6)], powers of two from 64 B to 256 MiB.
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)


def log2i(x: float) -> int:
    """NCCL's integer log2 (floor; 0 for x < 2)."""
    return max(0, int(x).bit_length() - 1)


def tree_correction(p: int, size: float) -> float:
    """NCCL's size-dependent tree bandwidth factor (``ncclTopoGetAlgoTime``: applied for 0 ≤ log2i(S/64) < 23)."""
    i = log2i(size / 64) if size >= 64 else -1
    return _TREE_CORRECTION[p][i] if 0 <= i < 23 else 1.0


@dataclass(frozen=True, slots=True)
class Span:
    """A communicating group placed on the cluster (``placement.span``)."""

    ranks: int  # n
    per_node: int  # r: ranks of the group on each node it touches
    nodes: int  # N
    nvlink: float  # achieved large-message NVLink bus bandwidth per GPU, bytes/s
    net: float  # achieved network bandwidth this group's rings get per node, bytes/s (its NIC share)
    nic: float  # achieved network bandwidth of one rank's own share (all-to-all, p2p), bytes/s
    link: str  # "nvlink" or "pcie": what the intra-node hops are
    hop_s: float = 0.0  # extra switch latency per network step (tiers crossed), seconds
    nvls: float = 0.0  # achieved NVLS all-reduce bus bandwidth, bytes/s (0: none)
    channels: int = 0  # NCCL's graph channels for the group's rings across nodes (0: unknown, no per-channel caps)
    arch: int = -1  # NCCL's compute-capability row: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell; -1 not NVIDIA
    amd_host: bool = False  # AMD host CPUs: NCCL's (and RCCL's) lower LL cap and 2 µs network overhead

    @property
    def inter_node(self) -> bool:
        return self.nodes > 1


@dataclass(frozen=True, slots=True)
class Cost:
    """One call's time and how NCCL gets it."""

    op: str
    algorithm: str  # "ring", "tree", "nvls", "p2p"
    protocol: str
    seconds: float
    latency_s: float  # the latency part of ``seconds``
    bus_bandwidth: float  # S·k / seconds: what nccl-tests would print as busbw, bytes/s
    limit: str  # "NVLink", "network" or "latency"


def bus_factor(op: str, n: int) -> float:
    if n <= 1:
        return 0.0
    if op == "all-reduce":
        return 2.0 * (n - 1) / n
    if op == "p2p":
        return 1.0
    return (n - 1) / n


def ramp(fabric: FabricSpec, size: float) -> float:
    """Share of the large-message NVLink bus bandwidth a call of ``size`` bytes reaches (fabric curve,
    log-size interpolation; below the curve's first point the time stays that point's: latency-bound)."""
    xs, ys = fabric.ramp_bytes, fabric.ramp_share
    if not xs or size >= xs[-1]:
        return 1.0
    if size <= xs[0]:
        return ys[0] * size / xs[0]
    i = bisect_left(xs, size)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    f = math.log(size / x0) / math.log(x1 / x0)
    return y0 + f * (y1 - y0)


def _col(nodes: int) -> int:
    """NCCL's node-count column of its per-channel tables (``index2``): 1 node, 2 nodes, 3 or more."""
    return min(nodes, 3) - 1


def _per_channel(table, sp: Span) -> float:
    """``channels × table[arch][nodes]`` in bytes/s; infinite where the channels or the GPU are unknown."""
    if sp.channels <= 0 or sp.arch < 0:
        return math.inf
    return sp.channels * table[sp.arch][_col(sp.nodes)] * 1e9


def _ring_bw(p: int, sp: Span) -> float:
    """The ring's network bus bandwidth per protocol as ``ncclTopoTuneModel`` refines it: LL ×0.5 under
    ``llMaxBws``, LL128 ×0.92 under its per-channel cap, Simple the NIC share itself."""
    if p == 0:
        return min(sp.net * _RING_PROTO[0], _LL_MAX_NET[sp.amd_host][0 if sp.nodes <= 2 else 1])
    if p == 1:
        return min(sp.net * _RING_PROTO[1], _per_channel(_PER_CH_RING_LL128, sp))
    return sp.net


def _tree_bw(p: int, sp: Span) -> float:
    """The tree all-reduce's bus bandwidth: ×0.92 under ``perChMaxTreeBw``, then LL /3.8 under ``llMaxBws``,
    LL128 ×120/128 under ``perChMaxTreeLL128Bw``."""
    base = min(sp.net * _TREE_PROTO[2], _per_channel(_PER_CH_TREE, sp))
    if p == 0:
        return min(base / 3.8, _LL_MAX_NET[sp.amd_host][0 if sp.nodes <= 2 else 1])
    if p == 1:
        return min(base * 120.0 / 128.0, _per_channel(_PER_CH_TREE_LL128, sp))
    return base


def _ring_latency(op: str, sp: Span, p: int) -> float:
    n, N = sp.ranks, sp.nodes
    steps = 2 * (n - 1) if op == "all-reduce" else n - 1
    inter_steps = 0 if N == 1 else (2 * (N - 1) if op == "all-reduce" else N - 1)
    intra = _HW[sp.link]["ring"][p]
    if N > 1:
        intra = max(intra, _NET_OVERHEAD[sp.amd_host] * (3 if p == 2 else 1))
    inter = (_HW["net"]["ring"][p] if sp.per_node > 1 else _HW["net"]["tree"][p]) * 1e-6 + sp.hop_s
    return _BASE["ring"][p] * 1e-6 + (steps - inter_steps) * intra * 1e-6 + inter_steps * inter


def _tree_latency(sp: Span, p: int) -> float:
    intra, inter = _HW[sp.link]["tree"][p] * 1e-6, _HW["net"]["tree"][p] * 1e-6 + sp.hop_s
    return _BASE["tree"][p] * 1e-6 + 2 * ((sp.per_node - 1) * intra + log2i(sp.nodes) * inter)


def _intra_ring_extra(op: str, sp: Span) -> float:
    """Latency of a single-node ring beyond what the measured 8-GPU curve already holds (Simple)."""
    ref = Span(_REF_RANKS, _REF_RANKS, 1, sp.nvlink, 0.0, 0.0, sp.link)
    return max(0.0, _ring_latency(op, sp, 2) - _ring_latency("all-reduce", ref, 2))


@functools.lru_cache(maxsize=8192)
def collective(op: Op, size: float, sp: Span, fabric: FabricSpec) -> Cost:
    """The fastest (algorithm, protocol) NCCL would pick for one call of ``size`` bytes on ``sp``
    (cached: the search and the app re-estimate the same groups and messages many times)."""
    n = sp.ranks
    k = bus_factor(op, n)
    if n <= 1 or size <= 0:
        return Cost(op, "none", "-", 0.0, 0.0, 0.0, "latency")
    vol = size * k
    eta = ramp(fabric, size)
    nv = sp.nvlink * eta if sp.per_node > 1 else math.inf
    if op in ("all-to-all", "p2p"):
        return _point_to_point(op, size, sp, nv, vol)
    if not sp.inter_node:
        extra = _intra_ring_extra(op, sp)
        best = Cost(op, "ring", "measured curve", vol / nv + extra, extra, 0.0, "NVLink")
        if op == "all-reduce" and sp.nvls > 0:
            lat = _NVLS_LAT * 1e-6 + extra
            t = max(vol / (sp.nvls * eta) + extra, lat + vol / sp.nvls)
            if t < best.seconds:
                best = Cost(op, "nvls", "Simple", t, lat, 0.0, "NVLink")
        return _with_busbw(best, vol)
    # Across nodes the NVLink stage is pipelined chunk by chunk with the network stage, and its per-step
    # latencies are in the NCCL latency model below: it runs at the large-message NVLink rate (the
    # single-node curve would count the measured 8-GPU latency a second time). NCCL picks the pair its cost
    # model predicts fastest; the call then takes what its runtime does (``nccl_runtime``).
    t_nv = vol / sp.nvlink if sp.per_node > 1 else 0.0
    best: tuple[float, Cost] | None = None
    for p in range(len(PROTOCOLS)):
        lat = _ring_latency(op, sp, p)
        if p == 2 and op == "all-reduce" and sp.arch >= 0 and size / (2 * max(sp.channels, 1) * n) >= 64:
            lat *= _PLATEAU[sp.arch >= 1]  # NCCL's "plateau effect of ring" (runtime channels: twice the graph's)
        data = vol / _ring_bw(p, sp)
        if best is None or max(t_nv, lat + data) < best[0]:
            best = (max(t_nv, lat + data), _runtime(op, "ring", p, size, sp, lat, data, t_nv))
        if op == "all-reduce":
            lat = _tree_latency(sp, p)
            data = size / (0.5 * _tree_bw(p, sp) * tree_correction(p, size))
            if max(t_nv, lat + data) < best[0]:
                best = (max(t_nv, lat + data), _runtime(op, "tree", p, size, sp, lat, data, t_nv))
    assert best is not None
    if op == "all-reduce":
        nvls_tree = _nvls_tree(size, vol, sp)
        if nvls_tree is not None and nvls_tree[0] < best[0]:
            best = nvls_tree
    cost = best[1]
    if cost.latency_s > cost.seconds - cost.latency_s:
        cost = Cost(cost.op, cost.algorithm, cost.protocol, cost.seconds, cost.latency_s, 0.0, "latency")
    return _with_busbw(cost, vol)


def _runtime(op: str, algo: str, p: int, size: float, sp: Span, lat: float, data: float, t_nv: float) -> Cost:
    """A ring or tree call as NCCL's runtime runs it: the tree no faster than its proxy threads post its
    network steps, plus its pipeline's fill (network hops that hold a whole chunk), counted on the channels
    the enqueue path keeps for its size. The ring keeps the cost model's time (NCCL's ring latency already
    charges the network overhead on each of its steps), as do unknown graphs (no channel count) and other
    vendors' GPUs."""
    if algo == "tree" and sp.channels > 0 and sp.arch >= 0:
        used = enqueue_channels(size, runtime_channels(sp.channels), False, p, sp.ranks)
        data = max(data, tree_proxy_seconds(size, used, sp.channels, sp.nodes, sp.per_node, p, sp.amd_host))
        data += tree_fill_seconds(size, used, sp.nodes, sp.per_node, p, sp.net, sp.nvlink)
    t = max(t_nv, lat + data)
    return Cost(op, algo, PROTOCOLS[p], t, lat, 0.0, "network" if lat + data >= t_nv else "NVLink")


def _nvls_tree(size: float, vol: float, sp: Span) -> tuple[float, Cost] | None:
    """NCCL's NVLS_TREE all-reduce across nodes (Hopper and later NVSwitch nodes): NVLink SHARP reduces inside
    each node, a tree of the nodes' NICs joins them, NVLS multicasts the result back. ``ncclTopoTuneModel``:
    per NVLS channel (one per NVLS head, a GPU with its NIC) the bus bandwidth is the least of the NVLS
    bandwidth, the network's (doubled on two nodes, where each byte crosses the network once per direction)
    and ``perChMaxNVLSTreeBw``; latency hwLatencies[NVLINK][NVLS_TREE] + 2·log2i(N)·hwLatencies[NET][NVLS_TREE]
    (no base latency). Returns the cost model's time (NCCL's choice) and the time of the kernel's pipeline
    (``nccl_runtime.nvls_tree_seconds``)."""
    if sp.nvls <= 0 or sp.per_node < 2 or sp.arch < 2:
        return None
    heads = min(sp.per_node, _MAX_NVLS_ARITY)
    cap = heads * _PER_CH_NVLS_TREE[sp.arch][_col(sp.nodes)] * 1e9
    bw = min(sp.nvls, sp.net * (2 if sp.nodes <= 2 else 1), cap)
    if bw <= 0:
        return None
    lat = (_NVLS_TREE_LAT[0] + 2 * log2i(sp.nodes) * _NVLS_TREE_LAT[1]) * 1e-6 + 2 * log2i(sp.nodes) * sp.hop_s
    t = lat + nvls_tree_seconds(size, vol / bw, heads, sp.nodes, sp.arch, sp.nvlink, sp.net)
    limit = "network" if bw == sp.net * (2 if sp.nodes <= 2 else 1) else "NVLink"
    return lat + vol / bw, Cost("all-reduce", "nvls-tree", "Simple", t, lat, 0.0, limit)


def _point_to_point(op: str, size: float, sp: Span, nv: float, vol: float) -> Cost:
    """All-to-all: each rank sends (n-1)/n of S, (r-1)/n over NVLink and (n-r)/n through its NIC
    share, at once; p2p: S over one link. One step of latency (the sends are concurrent)."""
    link = "net" if sp.inter_node else sp.link
    lat = (_BASE["ring"][2] + _HW[link]["ring"][2]) * 1e-6 + (sp.hop_s if sp.inter_node else 0.0)
    if op == "p2p":
        bw = sp.nic if sp.inter_node else nv
        t = lat + size / bw
        return _with_busbw(Cost(op, "p2p", "Simple", t, lat, 0.0, "network" if sp.inter_node else "NVLink"), vol)
    n, r = sp.ranks, sp.per_node
    t_nv = size * (r - 1) / n / nv if r > 1 else 0.0
    t_net = size * (n - r) / n / sp.nic if n > r else 0.0
    limit = "network" if t_net >= t_nv else "NVLink"
    return _with_busbw(Cost(op, "p2p", "Simple", lat + max(t_nv, t_net), lat, 0.0, limit), vol)


def _with_busbw(c: Cost, vol: float) -> Cost:
    return Cost(c.op, c.algorithm, c.protocol, c.seconds, c.latency_s, vol / c.seconds if c.seconds else 0.0,
                c.limit)
