"""Small messages across nodes: latency-bound calls and NCCL's tree/ring choice.

Two references. Measured: two published nccl-tests sweeps from 8 B on two InfiniBand nodes (A100 and
H100, below), with the known biases pinned. And NCCL's own cost model as NCCL prints it with
NCCL_DEBUG_SUBSYS=TUNING: NVIDIA/nccl issue #1453 (3 nodes × 8
H100, NCCL 2.22.3) logs "64 Bytes -> Algo 0 proto 0 time 25.207382", "4096 Bytes -> ... 25.874907"
and "8192 Bytes -> ... 26.549810" (algorithm 0 = tree, protocol 0 = LL). The model must reproduce
NCCL's own choice and prediction within 5%: the same constants (src/graph/tuning.cc) and the same
integer log2 of the node count.
"""

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.training.nccl import collective, log2i, tree_correction
from llmplan.core.training.placement import span


def _call(op: str, size: float, nodes: int, node: str = "dgx-h100"):
    cat = load_hardware_catalog()
    cl = cat.cluster_from(None, nodes=nodes, node_id=node)
    sp = span(cl.total_gpus, 1, cl, cat.efficiency_for(cl.gpu.id))
    return collective(op, size, sp, cl.fabric)


@pytest.mark.parametrize("size, nccl_us", [(64, 25.207382), (4096, 25.874907), (8192, 26.549810)])
def test_three_h100_nodes_small_all_reduce_is_nccl_tree_ll(size, nccl_us):
    c = _call("all-reduce", size, nodes=3)
    assert (c.algorithm, c.protocol) == ("tree", "LL")
    assert c.latency_s * 1e6 == pytest.approx(25.2, abs=0.01)  # 6.8 + 2·(7·0.6 + log2i(3)·5.0)
    assert c.seconds * 1e6 == pytest.approx(nccl_us, rel=0.05)
    assert c.limit == "latency"


def test_log2i_is_nccl_floor():
    assert [log2i(n) for n in (1, 2, 3, 4, 7, 8, 16, 17)] == [0, 1, 1, 2, 2, 3, 4, 4]


@pytest.mark.parametrize("nodes", [2, 4, 8, 16])
def test_latency_bound_busbw_grows_with_size(nodes):
    # 8 B ... 1 MiB on 2-16 DGX H100 nodes: below ~64 KiB the call costs its latency (busbw ∝ size).
    small = [_call("all-reduce", s, nodes) for s in (8, 1024, 65536)]
    assert small[1].seconds == pytest.approx(small[0].seconds, rel=0.05)
    assert all(c.latency_s > 0.5 * c.seconds for c in small)
    big = _call("all-reduce", 2**20, nodes)
    assert big.bus_bandwidth > 50 * small[1].bus_bandwidth


def test_tree_for_small_ring_for_large_and_tree_longer_with_more_nodes():
    # NCCL's rule: the tree's latency grows with log2(nodes), the ring's with nodes; the ring's bandwidth
    # is twice the tree's. So small calls take the tree, large ones the ring, and the crossover moves up
    # with the node count.
    def crossover(nodes: int) -> float:
        size = 1024.0
        while _call("all-reduce", size, nodes).algorithm == "tree" and size < 2**34:
            size *= 2
        return size

    assert _call("all-reduce", 8, 2).algorithm == "tree"
    assert _call("all-reduce", 2**33, 2).algorithm == "ring"
    assert crossover(2) < crossover(16)


def test_tree_correction_factor_is_nccl_table():
    # tuning.cc treeCorrectionFactor: LL row at 64 B is 1.0, at 64 B·2^12 = 256 KiB is 0.4; Simple at 4 MiB
    # (2^16 · 64 B) is 0.7; outside 64 B … 256 MiB it is 1.
    assert tree_correction(0, 64) == 1.0
    assert tree_correction(0, 256 * 1024) == 0.4
    assert tree_correction(2, 4 * 2**20) == 0.7
    assert tree_correction(2, 2**34) == 1.0


def test_nvls_pays_nccl_nvls_latency():
    # tuning.cc: NVLS latency is hwLatencies[NVLINK][NVLS][Simple] = 25 µs with no base latency.
    c = _call("all-reduce", 2**20, nodes=1, node="hgx-h200")
    assert c.algorithm == "nvls"
    assert c.latency_s * 1e6 == pytest.approx(25.0)
    assert c.seconds > 25e-6


# Two published nccl-tests sweeps, 8 B to GiB, all_reduce_perf out-of-place time (µs), 2 nodes × 8 GPUs:
# - Crusoe, 8x A100 80GB SXM per node (VMs), eight InfiniBand HCAs (194 GB/s busbw at 2 GiB: 8 HDR NICs);
#   dstackai/dstack, examples/clusters/crusoe/README.md at commit 33be4e79 (2025-12-16).
# - Nebius, 8x H100 per node, InfiniBand; dstackai/dstack, mkdocs/docs/examples/clusters/nebius.md at
#   commit d2fdd171 (2026-05-07).
# The presets stand in for them: DGX A100 (8 HDR NICs) and DGX H100 (8 NDR NICs).
CRUSOE_A100 = {8: 27.70, 64: 28.41, 512: 30.23, 1024: 30.79, 524288: 68.02, 1048576: 81.71, 4194304: 123.50,
               8388608: 189.42, 67108864: 854.62, 268435456: 2700.36, 2147483648: 20749.1}
NEBIUS_H100 = {8: 29.78, 64: 29.36, 512: 30.45, 1024: 31.36, 1048576: 87.08, 8388608: 154.48,
               33554432: 274.23, 67108864: 472.43, 134217728: 759.58, 1073741824: 4511.97, 8589934592: 34448.4}


def _ratio(node: str, size: int, measured_us: float) -> float:
    return _call("all-reduce", size, 2, node).seconds * 1e6 / measured_us


@pytest.mark.parametrize("node, size, measured", [("dgx-a100", s, t) for s, t in CRUSOE_A100.items() if s >= 2**26]
                         + [("dgx-h100", s, t) for s, t in NEBIUS_H100.items() if 2**25 <= s <= 2**27])
def test_two_node_large_messages_within_10_percent(node, size, measured):
    assert _ratio(node, size, measured) == pytest.approx(1.0, abs=0.10)


@pytest.mark.parametrize("node, size, measured", [("dgx-a100", s, t) for s, t in CRUSOE_A100.items() if s <= 1024]
                         + [("dgx-h100", s, t) for s, t in NEBIUS_H100.items() if s <= 1024])
def test_two_node_latency_bound_calls_known_bias(node, size, measured):
    """8 B - 1 KiB across two nodes: NCCL's tree/LL latency (25.2 µs) is 8-20% below the measured 27.7-31.4 µs
    on both systems: NCCL's cost model leaves out the per-call launch and host work the benchmark sees. Pinned
    as a stated tolerance (the model is 0.80-0.92 of the measured time), not fitted away."""
    assert 0.80 <= _ratio(node, size, measured) <= 0.92


@pytest.mark.parametrize("node, size, measured, low", [
    ("dgx-a100", 524288, 68.02, 0.80), ("dgx-a100", 1048576, 81.71, 0.80), ("dgx-a100", 4194304, 123.50, 0.85),
    ("dgx-a100", 8388608, 189.42, 0.80), ("dgx-h100", 1048576, 87.08, 0.60), ("dgx-h100", 8388608, 154.48, 0.60)])
def test_two_node_mid_sizes_known_misses(node, size, measured, low):
    """512 KiB - 8 MiB: the model is faster than measured, by 8-14% on the A100 cluster (NCCL's LL cap,
    llMaxBws, brought 512 KiB - 1 MiB from 25% to 14%) and by about 30% on the H100 one: NCCL reaches less than its own
    cost model there (fewer channels and pipeline fill for mid-size calls), which the model does not describe."""
    assert low <= _ratio(node, size, measured) < 1.0


@pytest.mark.parametrize("size, measured", [(s, t) for s, t in NEBIUS_H100.items() if s >= 2**30])
def test_two_h100_nodes_huge_messages_known_miss(size, measured):
    """From 1 GiB the measured two-node H100 all-reduce (446-468 GB/s busbw) beats the eight NICs' ring bound
    (376 GB/s): on two nodes NCCL runs NVLS-tree, whose network part moves each byte once per direction.
    Not modelled; the model stays on the ring and is 20-30% slow here."""
    assert 1.15 <= _ratio("dgx-h100", size, measured) <= 1.30
