"""What NCCL's runtime does to one call beyond its tuner's cost model.

NCCL picks an (algorithm, protocol) pair with the cost model of src/graph/tuning.cc (``nccl.collective``
follows it), then the enqueue path (src/enqueue.cc) decides how the call really runs: how many channels,
how big each pipelined chunk is, and so how many network steps each proxy thread posts. Those decisions
change the time of mid-size calls across nodes, and the cost model leaves them out. All rules and
constants here are NCCL's, NVIDIA/nccl at commit 5067397 (2026-06-11):

- **Channels** (``topoGetAlgoInfo``): a ring or tree call uses fewer of the communicator's channels while
  ``bytes < channels × threads × threadThreshold``. The tree's chunks and posts are counted on the channels
  kept; the bandwidth is not scaled with them (NCCL drops channels only where each thread would move less
  than its threshold, where more channels stop paying; no call in the data-bound range loses any).
- **Tree chunks and proxy posts** (``calcCollChunking``; src/proxy.cc): each chunk crosses the network as
  one step, and the one proxy thread of each GPU posts every send and receive of its channels. NCCL's own
  price for posting a network step is ``getNetOverhead()`` (1 µs, 2 µs on AMD hosts; tuning.cc charges it
  per ring step). Tree/LL128 shrinks its chunks to 17-71 KB for mid-size calls, so the posts, not the
  wire, set the pace there. And each network hop holds a whole chunk (the proxy sends only complete
  steps), so the tree's hops beyond the one its bandwidth counts fill and drain the pipeline.
- **NVLS-tree pipeline** (``RunWorkColl<..., NCCL_ALGO_NVLS_TREE>`` in src/device/all_reduce.h): per round
  of ``channels × heads × chunk`` bytes a chunk passes scatter (NVLink), NVLS reduce, the network up the
  tree and back down, NVLS multicast and gather (NVLink); the cost model counts only the steady-state rate.
  With few rounds (up to ~64 MiB on two nodes) filling and draining that pipeline is a large share.
"""

from __future__ import annotations

import functools
import math

# NCCL src/include/comm.h and device.h: bytes per thread below which the runtime drops channels/threads,
# and the threads per channel (tuning.cc maxThreads). Index: protocol LL, LL128, Simple.
_THREAD_THRESHOLD = (8, 8, 64)  # NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD; ring LL × nRanks
_THREADS = (512, 640, 512)  # NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS, NCCL_SIMPLE_MAX_NTHREADS
# Chunk (bytes of data) per step, from src/init.cc's default buffers over NCCL_STEPS = 8: LL 512 KiB / 8 / 2
# (half of each 16-byte line is flags), LL128 4,915,200 / 8 × 15/16 (one flag word per 128-byte line), Simple
# 4 MiB / 8. Tree steps are one chunk (chunkSteps = 1).
_TREE_CHUNK = (32768, 576000, 524288)
_LL128_GRAIN = 1920  # ncclProtoGrainSize(LL128): 32 threads × 8 elements / 16 × 15 data elements × 8 bytes
_NET_OVERHEAD_S = {False: 1.0e-6, True: 2.0e-6}  # getNetOverhead(): Intel and others, AMD hosts
# NVLS (src/transport/nvls.cc ncclNvlsTuning): channels and the NVLS-tree chunk cap. Hopper: 16 channels,
# NCCL_NVLS_CHUNKSIZE 128 KiB, tree chunk capped at 64 KiB from 4 nodes. Blackwell across nodes
# (ncclNvlsTreeSm100Tuning, taken for NICs of at least 48 GB/s, 8 GPUs a node): 32 channels on 2 nodes,
# 24 on more, 128 KiB chunks.
_NVLS_CHUNK = 128 * 1024


def runtime_channels(graph_channels: int) -> int:
    """The communicator's channels: twice the ring graph's (NCCL duplicates them; the logs of NVIDIA/nccl
    issues #1453 and #1357 show 16 on 8-GPU nodes whose graph has 8)."""
    return 2 * max(1, graph_channels)


def enqueue_channels(size: float, channels: int, ring: bool, p: int, ranks: int) -> int:
    """Channels a ring or tree call of ``size`` bytes runs on (``topoGetAlgoInfo``): one fewer while
    ``size < channels × threads × threshold``, at least one."""
    per_channel = _THREADS[p] * _THREAD_THRESHOLD[p] * (ranks if ring and p == 0 else 1)
    return max(1, min(channels, int(size // per_channel)))


def tree_chunk(size: float, channels: int, nodes: int, per_node: int, p: int) -> int:
    """Bytes of one tree chunk (``calcCollChunking``): LL128 halves its 576,000 bytes while a channel holds
    fewer than 64/ppn × (1 + log2i(nodes) + 0.1·ppn) of them (down to 131,072), then while fewer than 16/ppn ×
    that (down to 32,768), and aligns to its grain; LL and Simple keep their step."""
    chunk = _TREE_CHUNK[p]
    if p != 1:
        return chunk
    steps = 1 + max(0, int(nodes).bit_length() - 1) + 0.1 * per_node
    while int(size) // (channels * chunk) < steps * 64 / per_node and chunk > 131072:
        chunk //= 2
    while int(size) // (channels * chunk) < steps * 16 / per_node and chunk > 32768:
        chunk //= 2
    return chunk // _LL128_GRAIN * _LL128_GRAIN


def btree_peers(nodes: int) -> list[int]:
    """Network peers of each node in NCCL's binary tree (``ncclGetBtree``, src/graph/trees.cc): node 0 is the
    root with one child; every other node has a parent, and a node whose lowest set bit is b > 1 has children
    r - b/2 and, when r + 1 < nodes, a second one (b/2 or less above it)."""
    peers = []
    for r in range(nodes):
        if r == 0:
            peers.append(1 if nodes > 1 else 0)
            continue
        half = (r & -r) >> 1
        peers.append(1 + (0 if half == 0 else 1 + (r + 1 < nodes)))
    return peers


@functools.lru_cache(maxsize=256)
def tree_peers(nodes: int) -> float:
    """Network peers per channel of the busiest node in NCCL's double binary tree (``ncclGetDtree``): half the
    channels run the binary tree, half its mirror (even node counts, node r plays N - 1 - r) or its shift by one
    (odd counts, node r plays r - 1), so a node's peers per channel average over its two roles. The busiest
    node has 1 on two nodes, 1.5 on three (3 peers over its two roles) and 2 from four nodes on (interior,
    with a parent and two children, in one tree and a leaf in the other)."""
    one = btree_peers(nodes)
    other = [one[nodes - 1 - r] for r in range(nodes)] if nodes % 2 == 0 else [one[r - 1] for r in range(nodes)]
    return max(a + b for a, b in zip(one, other, strict=True)) / 2


def tree_proxy_seconds(size: float, channels: int, graph_channels: int, nodes: int, per_node: int, p: int,
                       amd_host: bool) -> float:
    """Seconds the busiest proxy thread spends posting a tree all-reduce's network steps beyond the first
    (whose post the cost model's per-hop latency holds): its channels × chunks per channel, less one, × posts
    per chunk, ``getNetOverhead()`` each. A node posts a send and a receive per chunk and tree peer
    (``tree_peers``: the reduction receives from each child and sends to the parent, the broadcast receives
    from the parent and sends to each child). The channels spread over the GPUs that hold the graph's NICs
    (one proxy thread each)."""
    chunks = math.ceil(size / channels / tree_chunk(size, channels, nodes, per_node, p))
    proxies = max(1, min(per_node, graph_channels))
    return (math.ceil(channels / proxies) * chunks - 1) * 2 * tree_peers(nodes) * _NET_OVERHEAD_S[amd_host]


def tree_fill_seconds(size: float, channels: int, nodes: int, per_node: int, p: int, net: float,
                      nvlink: float) -> float:
    """The tree's pipeline fill: a proxy sends a chunk only once the GPU has written all of it, and the
    receiving GPU reads it only once all of it has arrived, so each network hop of the tree (log2i(nodes) up,
    as many down) holds the chunk for its wire time at the channel's share of the NICs (``net`` / channels).
    Simple does the same on each NVLink hop of the node's chain (it signals whole steps; LL and LL128 pass
    their lines on as each line's flag arrives). The cost model's bandwidth counts one network stage per
    chunk; the other stages fill and drain the pipeline."""
    chunk = min(tree_chunk(size, channels, nodes, per_node, p), size / channels)
    hops = 2 * max(1, int(nodes).bit_length() - 1)
    fill = (hops - 1) * chunk * channels / net
    if p == 2 and per_node > 1:
        fill += 2 * (per_node - 1) * chunk * channels / nvlink
    return fill


def nvls_tree_setup(arch: int, nodes: int) -> tuple[int, int]:
    """(NVLS channels, largest NVLS-tree chunk) from ``ncclNvlsTuning``."""
    if arch >= 3:
        return (32 if nodes == 2 else 24), _NVLS_CHUNK
    return 16, (65536 if nodes >= 4 else _NVLS_CHUNK)


def nvls_tree_chunk(size: float, concurrent: int, max_chunk: int) -> int:
    """``calcCollChunking`` for NVLS_TREE: the chunk shrinks to 256, 128, 64 and 32 KiB while the call is under
    32, 16, 4 and 1 × (channels × heads) chunks."""
    chunk = max_chunk
    for mult, floor in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if size < mult * concurrent * chunk and chunk > floor:
            chunk = floor
    return chunk


def nvls_tree_seconds(size: float, bus_s: float, heads: int, nodes: int, arch: int, nvlink: float,
                      net: float) -> float:
    """An NVLS-tree all-reduce's data time (no latency) as the pipeline the kernel runs. ``bus_s``: the cost
    model's steady-state time (bus volume over its bandwidth). Per round of ``channels × heads × chunk`` bytes
    R, each GPU scatters R·(r-1)/r to the heads over NVLink, each head reduces R/r through NVLS, sends it up
    the tree and receives it back (2·log2i(nodes) network stages of R/r at a head's NIC share, net/r) and
    multicasts it, and each GPU gathers R·(r-1)/r. Pipeline of m rounds: every stage once (fill and drain)
    plus m - 1 times the slowest, which is the cost model's rate unless one stage is slower still."""
    channels, max_chunk = nvls_tree_setup(arch, nodes)
    concurrent = channels * heads
    chunk = nvls_tree_chunk(size, concurrent, max_chunk)
    rounds = max(1, math.ceil(size / (concurrent * chunk)))
    r_bytes = size / rounds
    nv_stage = r_bytes * (heads - 1) / heads / nvlink
    nvls_stage = r_bytes / heads / nvlink
    net_stage = r_bytes / net
    hops = 2 * max(1, int(nodes).bit_length() - 1)
    stages = 2 * nv_stage + 2 * nvls_stage + hops * net_stage
    slowest = max(bus_s / rounds, nv_stage, net_stage)
    return (rounds - 1) * slowest + stages
