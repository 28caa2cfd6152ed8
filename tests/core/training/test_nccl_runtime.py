"""NCCL's runtime rules for one call (``nccl_runtime``), each checked against the code it follows:
NVIDIA/nccl at commit 5067397 (2026-06-11), src/enqueue.cc (``topoGetAlgoInfo``, ``calcCollChunking``),
src/transport/nvls.cc (``ncclNvlsTuning``), src/graph/tuning.cc (``getNetOverhead``) and
src/device/all_reduce.h (the NVLS-tree kernel). Exact values (integer rules) unless a tolerance is stated.
"""

import pytest

from llmplan.core.training.nccl_runtime import (
    btree_peers,
    enqueue_channels,
    nvls_tree_chunk,
    nvls_tree_seconds,
    nvls_tree_setup,
    runtime_channels,
    tree_chunk,
    tree_fill_seconds,
    tree_peers,
    tree_proxy_seconds,
)

LL, LL128, SIMPLE = 0, 1, 2


def test_runtime_channels_are_twice_the_graphs():
    assert runtime_channels(8) == 16
    assert runtime_channels(0) == 2


@pytest.mark.parametrize("size, ring, p, ranks, expected", [
    (2**20, False, LL128, 16, 16),  # 1 MiB ≥ 16 × 640 threads × 8 B: all channels
    (65536, False, LL128, 16, 12),  # 65536 // 5120
    (4096, False, LL, 16, 1),  # under one channel's 512 × 8 B: one channel
    (2**20, True, LL, 16, 16),  # ring LL threshold 8 B × 16 ranks: 16 × 512 × 128 = 1 MiB
    (2**18, True, LL, 16, 4),
    (2**18, True, SIMPLE, 16, 8),  # 512 threads × 64 B
])
def test_enqueue_drops_channels_for_small_calls(size, ring, p, ranks, expected):
    assert enqueue_channels(size, 16, ring, p, ranks) == expected


@pytest.mark.parametrize("size, expected", [
    (2**19, 17280), (2**20, 17280), (2**21, 17280), (2**22, 34560), (2**23, 71040), (2**30, 576000)])
def test_tree_ll128_chunk_shrinks_for_mid_sizes(size, expected):
    # 16 channels, 2 nodes of 8: nstepsLL128 = 1 + 1 + 0.8; 576,000 halves to 72,000 while a channel holds
    # fewer than 22.4 chunks, then to 18,000 while fewer than 5.6; aligned down to the 1,920-byte grain.
    assert tree_chunk(size, 16, 2, 8, LL128) == expected


def test_tree_ll_and_simple_keep_their_step():
    assert tree_chunk(2**20, 16, 2, 8, LL) == 32768
    assert tree_chunk(2**20, 16, 2, 8, SIMPLE) == 524288


def test_tree_proxy_posts():
    # 1 MiB on 2 nodes of 8 GPUs, 16 channels over 8 proxy threads: 2 channels × 4 chunks of 17,280 B, a send
    # and a receive each, less the first (in the latency): 7 × 2 posts at 1 µs (Intel host), 2 µs (AMD host).
    assert tree_proxy_seconds(2**20, 16, 8, 2, 8, LL128, False) == pytest.approx(14e-6)
    assert tree_proxy_seconds(2**20, 16, 8, 2, 8, LL128, True) == pytest.approx(28e-6)
    # 4 nodes: the busiest node has two tree peers per channel (below)
    assert tree_proxy_seconds(2**20, 16, 8, 4, 8, LL128, False) == pytest.approx(28e-6)
    # 3 nodes: 1.5 (the chunks are the same 17,280 B: nstepsLL128 uses log2i(3) = 1, like 2 nodes)
    assert tree_proxy_seconds(2**20, 16, 8, 3, 8, LL128, False) == pytest.approx(21e-6)


def test_tree_peers_are_the_busiest_node_of_nccls_double_binary_tree():
    # NVIDIA/nccl src/graph/trees.cc at 5067397, ncclGetBtree's illustration for 14 ranks: 8 under the root 0,
    # 4 and 12 under 8, 2 and 6 under 4, 10 and 13 under 12, the other odd ranks leaves under 2, 6 and 10.
    assert btree_peers(14) == [1, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1]
    assert btree_peers(3) == [1, 1, 2]  # 0 - 2 - 1
    # Two nodes: one peer each. Three: the shifted tree makes node 0 (root, 1 peer) play node 2 (2 peers) and
    # node 2 play node 1 (1 peer): the busiest has 3 over two channels. From four on an interior node (3
    # peers) is a leaf (1) in the other tree, mirrored (even) or shifted (odd).
    assert [tree_peers(n) for n in (1, 2, 3, 4, 5, 8, 13, 64, 1023)] == [0, 1, 1.5, 2, 2, 2, 2, 2, 2]
    # one chunk on one channel: nothing beyond the latency
    assert tree_proxy_seconds(8, 1, 8, 2, 8, LL, True) == 0.0


def test_tree_fill_holds_a_chunk_per_hop():
    # 2 nodes: up and down, one hop beyond the one the bandwidth counts, a 17,280 B chunk at 376/16 GB/s
    assert tree_fill_seconds(2**20, 16, 2, 8, LL128, 376e9, 369e9) == pytest.approx(17280 * 16 / 376e9)
    # 8 nodes: 2·3 - 1 network hops
    chunk = tree_chunk(2**20, 16, 8, 8, LL128)
    assert tree_fill_seconds(2**20, 16, 8, 8, LL128, 376e9, 369e9) == pytest.approx(5 * chunk * 16 / 376e9)
    # a channel's part smaller than the chunk travels whole
    assert tree_fill_seconds(8192, 16, 2, 8, LL, 376e9, 369e9) == pytest.approx(8192 / 376e9)
    # Simple also holds its 512 KiB step at each of the chain's 2·7 NVLink hops
    simple = tree_fill_seconds(2**30, 16, 2, 8, SIMPLE, 376e9, 369e9)
    assert simple == pytest.approx(524288 * 16 / 376e9 + 14 * 524288 * 16 / 369e9)


def test_nvls_setup_follows_ncclNvlsTuning():
    assert nvls_tree_setup(2, 2) == (16, 131072)  # Hopper: 16 channels, NCCL_NVLS_CHUNKSIZE 128 KiB
    assert nvls_tree_setup(2, 4) == (16, 65536)  # tree chunk capped at 64 KiB from 4 nodes
    assert nvls_tree_setup(3, 2) == (32, 131072)  # Blackwell across 2 nodes
    assert nvls_tree_setup(3, 8) == (24, 131072)


@pytest.mark.parametrize("size, expected", [
    (2**22, 32768), (2**23, 65536), (2**25, 65536), (2**26, 131072), (2**30, 131072)])
def test_nvls_tree_chunk(size, expected):
    # 16 channels × 8 heads = 128 concurrent chunks; 128 KiB shrinks to 64 KiB under 4 × 128 × 128 KiB = 64 MiB
    # and to 32 KiB under 128 × 64 KiB = 8 MiB.
    assert nvls_tree_chunk(size, 128, 131072) == expected


def test_nvls_tree_pipeline_fill_and_steady_rate():
    nvlink, net = 369e9, 376e9
    # 8 MiB: one round (128 chunks of 64 KiB), so the time is every stage once: scatter and gather of 7/8 of
    # it over NVLink, NVLS reduce and multicast of 1/8, and the network up and down.
    size = 2**23
    one = nvls_tree_seconds(size, 1e-9, 8, 2, 2, nvlink, net)
    stages = 2 * size * 7 / 8 / nvlink + 2 * size / 8 / nvlink + 2 * size / net
    assert one == pytest.approx(stages, rel=1e-9)
    # 8 GiB: 512 rounds; the fill and drain are one round's stages beyond the cost model's steady time
    size = 2**33
    bus_s = size * 15 / 8 / 461.6e9
    t = nvls_tree_seconds(size, bus_s, 8, 2, 2, nvlink, net)
    round_bytes = size / 512
    fill = 2 * round_bytes * 7 / 8 / nvlink + 2 * round_bytes / 8 / nvlink + 2 * round_bytes / net
    assert t == pytest.approx(bus_s - bus_s / 512 + fill, rel=1e-9)
    assert t / bus_s == pytest.approx(1.0, abs=0.01)
