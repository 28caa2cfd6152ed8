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
    # with the node count. (DGX A100: no NVLink SHARP, so no NVLS-tree.)
    def crossover(nodes: int) -> float:
        size = 1024.0
        while _call("all-reduce", size, nodes, "dgx-a100").algorithm == "tree" and size < 2**34:
            size *= 2
        return size

    assert _call("all-reduce", 8, 2, "dgx-a100").algorithm == "tree"
    assert _call("all-reduce", 2**33, 2, "dgx-a100").algorithm == "ring"
    assert crossover(2) < crossover(16)


def test_hopper_nodes_take_nvls_tree_for_large_all_reduces():
    # tuning.cc: NVLS_TREE's bus bandwidth per NVLS channel (one per head GPU, 8 on a DGX H100) is the least of
    # NVLS's, the network's (doubled on 2 nodes) and perChMaxNVLSTreeBws[Hopper] = 57.7 GB/s on 2 nodes, 45.5 on
    # more; latency 25 µs + 2·log2i(N)·20.9 µs. On 2 nodes 8 × 57.7 = 461.6 GB/s beats the NICs' ring (376).
    c = _call("all-reduce", 2**33, 2)
    assert (c.algorithm, c.protocol) == ("nvls-tree", "Simple")
    assert c.latency_s * 1e6 == pytest.approx(25.0 + 2 * 20.9)
    assert c.bus_bandwidth / 1e9 == pytest.approx(461.6, rel=0.01)
    # on 4 nodes: 8 × 45.5 = 364 GB/s, under the ring's NVLink-bound 369: NCCL's rule keeps the ring
    assert _call("all-reduce", 2**33, 4).algorithm == "ring"
    assert _call("all-gather", 2**33, 2).algorithm == "ring"  # NVLS_TREE is all-reduce only


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
CRUSOE_A100 = {8: 27.70, 64: 28.41, 512: 30.23, 1024: 30.79, 131072: 51.08, 524288: 68.02, 1048576: 81.71, 4194304: 123.50,
               8388608: 189.42, 67108864: 854.62, 268435456: 2700.36, 2147483648: 20749.1}
NEBIUS_H100 = {8: 29.78, 64: 29.36, 512: 30.45, 1024: 31.36, 1048576: 87.08, 2097152: 99.06, 4194304: 110.14,
               8388608: 154.48, 16777216: 210.33, 33554432: 274.23, 67108864: 472.43, 134217728: 759.58,
               268435456: 1305.66, 1073741824: 4511.97, 8589934592: 34448.4}


def _ratio(node: str, size: int, measured_us: float) -> float:
    return _call("all-reduce", size, 2, node).seconds * 1e6 / measured_us


WITHIN_10 = [("dgx-a100", s) for s in (131072, 524288, 1048576, 4194304, 8388608, 67108864, 268435456, 2147483648)] + [
    ("dgx-h100", s) for s in (4194304, 8388608, 16777216, 33554432, 67108864, 134217728, 268435456, 1073741824,
                              8589934592)]


@pytest.mark.parametrize("node, size", WITHIN_10)
def test_two_node_calls_within_10_percent(node, size):
    """From 128 KiB on the A100s and 8 MiB on the H100s, within 10% of the measured time:
    - A100 128 KiB - 8 MiB (0.90-0.96): tree/LL and tree/LL128. From 512 KiB the proxy threads' posts of the
      tree's small LL128 chunks (2 µs each on the DGX A100's AMD hosts) set the pace, not the wire, and the
      chunk each network hop holds fills the pipeline (the cost model alone: 0.86-0.92 from 512 KiB to 8 MiB);
    - A100 64 MiB - 2 GiB (1.01-1.10): the ring (NCCL's AMD-host network overhead and its ring "plateau"
      factor put 128-256 MiB at +10%);
    - H100 4 MiB - 8 GiB (0.91-1.02): NVLS-tree as its kernel pipelines it. With few rounds of
      channels × heads × chunk bytes (one at 4-8 MiB, four at 32-64 MiB) filling and draining the pipeline's
      NVLink and network stages is most of the data time; the earlier model (the cost model's rate, ramped
      like a single-node NVLS call) gave 0.65 at 8 MiB and 0.80 at 64 MiB."""
    table = CRUSOE_A100 if node == "dgx-a100" else NEBIUS_H100
    assert _ratio(node, size, table[size]) == pytest.approx(1.0, abs=0.10)


@pytest.mark.parametrize("node, size, measured", [("dgx-a100", s, t) for s, t in CRUSOE_A100.items() if s <= 1024]
                         + [("dgx-h100", s, t) for s, t in NEBIUS_H100.items() if s <= 1024])
def test_two_node_latency_bound_calls_known_bias(node, size, measured):
    """8 B - 1 KiB across two nodes: NCCL's tree/LL latency (25.2 µs) is 8-20% below the measured 27.7-31.4 µs
    on both systems: NCCL's cost model leaves out the per-call launch and host work the benchmark sees. Pinned
    as a stated tolerance (the model is 0.80-0.92 of the measured time), not fitted away. (One chunk on one
    channel: no proxy posts beyond the latency's.)"""
    assert 0.80 <= _ratio(node, size, measured) <= 0.92


@pytest.mark.parametrize("node, size, low, high", [
    ("dgx-h100", 1048576, 0.69, 0.77), ("dgx-h100", 2097152, 0.76, 0.84)])
def test_two_node_mid_sizes_known_misses(node, size, low, high):
    """Still fast, pinned: on the H100s 1 MiB (0.73) and 2 MiB (0.80), where NCCL's cost model takes tree/LL128
    (48.5 µs of latency, its data part at 0.6 of the tree's bandwidth by treeCorrectionFactor) and its
    runtime's posts of the 17 KB chunks and the pipeline's fill add 3 and 7 µs. The sweep itself is noisy there
    (512 KiB out-of-place 97.9 µs, slower than 1 MiB; 1 MiB in place 77.8 µs, 0.80 of it)."""
    table = CRUSOE_A100 if node == "dgx-a100" else NEBIUS_H100
    assert low <= _ratio(node, size, table[size]) < high


def test_nccl_picks_by_its_cost_model_and_runs_its_runtime():
    # 4 MiB on two DGX H100: NCCL's cost model predicts NVLS-tree (66.8 µs + 4 MiB·15/8 at 461.6 GB/s = 83.8 µs)
    # a hair under tree/LL128 (48.5 + 35.7 = 84.2 µs), so NCCL runs NVLS-tree, whose one-round pipeline takes
    # 111.8 µs (measured: 110.1 µs). The model reports NCCL's choice at its runtime's time.
    c = _call("all-reduce", 4 * 2**20, 2)
    assert (c.algorithm, c.protocol) == ("nvls-tree", "Simple")
    assert c.seconds * 1e6 == pytest.approx(111.8, abs=0.2)
    assert c.seconds * 1e6 / 110.14 == pytest.approx(1.0, abs=0.05)  # nebius.md sweep, 4 MiB out of place


def test_amd_hosts_get_nccls_lower_ll_cap():
    # tuning.cc (NCCL) and src/graph/tuning.cc (ROCm/rccl, commit 0cbce2a7): across nodes llMaxBws is indexed by
    # the host CPU vendor, {39.0, 20.4} GB/s (2 nodes, more) by default and {22.5, 19.0} on AMD hosts, and
    # getNetOverhead() is 2 µs per network step on AMD hosts, 1 µs otherwise. The DGX A100 has AMD EPYC 7742 hosts.
    cat = load_hardware_catalog()
    cl = cat.cluster_from(None, nodes=2, node_id="dgx-a100")
    eff = cat.efficiency_for(cl.gpu.id)
    amd = span(16, 1, cl, eff)
    other = span(16, 1, cl.model_copy(update={"host_cpu_vendor": "intel"}), eff)
    assert amd.amd_host and not other.amd_host
    size = 2**17  # 128 KiB: tree/LL, bandwidth-limited by the cap
    a, o = collective("all-reduce", size, amd, cl.fabric), collective("all-reduce", size, other, cl.fabric)
    assert (a.algorithm, a.protocol) == (o.algorithm, o.protocol) == ("tree", "LL")
    # (+ the pipeline's fill: each channel's 8 KiB held once more at a network hop, 16 channels at 188 GB/s)
    fill = size / amd.net
    assert a.seconds - a.latency_s == pytest.approx(size / (0.5 * 22.5e9) / tree_correction(0, size) + fill, rel=1e-6)
    assert o.seconds - o.latency_s == pytest.approx(size / (0.5 * 39.0e9) / tree_correction(0, size) + fill, rel=1e-6)
    # the Crusoe A100 sweep at 128 KiB (51.08 µs): 0.76 of it with the default row, 0.96 with the AMD one
    assert a.seconds * 1e6 / CRUSOE_A100[131072] == pytest.approx(0.96, abs=0.02)
    # Simple rings pay 3 × the overhead per intra-node step when it exceeds NVLink's 3.4 µs: 6 µs on AMD hosts
    big_a, big_o = collective("all-gather", 2**30, amd, cl.fabric), collective("all-gather", 2**30, other, cl.fabric)
    assert big_a.latency_s - big_o.latency_s == pytest.approx((15 - 1) * (6.0 - 3.4) * 1e-6, rel=1e-6)


def test_many_node_tree_pays_its_proxy_posts():
    # 4 MiB on 4 DGX A100 (AMD hosts): NCCL's cost model takes tree/LL128, latency 14 + 2·(7·1.25 + 2·8.5) = 65.5 µs.
    # Its runtime cuts LL128 chunks to 17,280 B (nstepsLL128 = 1 + log2i(4) + 0.8), so each of the 8 proxy threads
    # posts 2 channels × 16 chunks, less one, × 2 peers × a send and a receive, at 2 µs: 248 µs, above the cost
    # model's 78.5 µs of data time; the chunk held at 3 more network hops (2·log2i(4) - 1) at 188/16 GB/s adds
    # 4.4 µs. No mid-size sweep of 3+ A100 nodes was found; test_nccl_many_nodes checks the rule on 4 and 8 H100 nodes.
    c = _call("all-reduce", 4 * 2**20, 4, "dgx-a100")
    assert (c.algorithm, c.protocol) == ("tree", "LL128")
    assert c.latency_s * 1e6 == pytest.approx(65.5)
    assert c.seconds * 1e6 == pytest.approx(65.5 + 248.0 + 3 * 17280 * 16 / 188e9 * 1e6)
