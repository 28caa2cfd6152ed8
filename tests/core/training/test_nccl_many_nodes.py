"""All-reduce on 4 and 8 nodes against published nccl-tests sweeps: the tree's proxy posts on many nodes.

NCCL's runtime (``nccl_runtime``) makes mid-size tree/LL128 calls on 3+ nodes much slower than NCCL's cost
model: each proxy thread posts a send and a receive per chunk and tree peer (two peers on average from 3
nodes), and the LL128 chunks shrink to 17 KB. These sweeps check that on DGX H100-class nodes (8 × H100 SXM,
8 × 400 Gb/s InfiniBand NICs, the ``dgx-h100`` preset). All from NVIDIA/nccl-tests issue #309
(https://github.com/NVIDIA/nccl-tests/issues/309), ``all_reduce_perf -f 2 -g 1``, float sum, out-of-place time
(µs) unless said otherwise:

- ``SPT_4``: qoofyk, 2025-05-22. 4 × Dell XE9680 (8 × H100 80GB HBM3, 8 × ConnectX-7 InfiniBand 400 Gb/s,
  Intel hosts; run in VMs), NCCL 2.26.2, 8 B - 16 GiB. The poster's nodes reach about 470 GB/s busbw on two
  nodes and 480 GB/s on one, and these 4 nodes 366 GB/s at 16 GiB: the fabric runs at its NICs' rate.
- ``AION_4`` and ``AION_8``: gj-aion, 2025-06-18. 4 and 8 of the same 8 nodes (8 × H100 80GB HBM3 each,
  InfiniBand 400 Gb/s), 1 MiB - 8 GiB, NCCL version not stated. Their plateau (320-325 GB/s busbw) is 12%
  under the 4-node sweep above on the same class of hardware; NVIDIA's reply in the thread puts that on the
  network's settings (adaptive routing, NCCL_IB_QPS_PER_CONNECTION, NCCL_MIN_CTAS raised it towards 380).

Nothing in the model was fitted to these sweeps: every rule and constant is NCCL's (NVIDIA/nccl at 5067397).
Tolerance: within 10% where the model meets the sweep; elsewhere the ratio (model ÷ measured) is pinned to
±0.03 with the reason, so a change that moves it is seen.
"""

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.training.nccl import collective
from llmplan.core.training.nccl_runtime import (
    enqueue_channels,
    runtime_channels,
    tree_fill_seconds,
    tree_proxy_seconds,
)
from llmplan.core.training.placement import span

SPT_4 = {131072: 55.87, 262144: 67.82, 524288: 72.88, 1048576: 82.17, 2097152: 191.3, 4194304: 151.1,
         8388608: 217.3, 16777216: 259.6, 33554432: 376.0, 67108864: 579.1, 134217728: 990.7, 268435456: 1768.0,
         536870912: 3109.0, 1073741824: 5808.8, 2147483648: 11508.0, 4294967296: 22890.0, 8589934592: 45606.0}
SPT_4_IN_PLACE = {2097152: 132.2}
AION_4 = {1048576: 317.0, 2097152: 226.8, 4194304: 231.3, 8388608: 239.0, 16777216: 304.5, 33554432: 413.7,
          67108864: 624.1, 134217728: 1055.3, 268435456: 2219.3, 536870912: 3600.8, 1073741824: 6460.4,
          2147483648: 12893.0, 4294967296: 25605.0, 8589934592: 51285.0}
AION_8 = {1048576: 117.0, 2097152: 143.4, 4194304: 203.8, 8388608: 1272.4, 16777216: 378.1, 33554432: 509.6,
          67108864: 718.1, 134217728: 1159.1, 268435456: 1955.1, 536870912: 3517.3, 1073741824: 7370.5,
          2147483648: 13252.0, 4294967296: 26438.0, 8589934592: 52733.0}
SWEEPS = {"spt4": (4, SPT_4), "aion4": (4, AION_4), "aion8": (8, AION_8)}
MiB = 2**20


def _span(nodes: int):
    cat = load_hardware_catalog()
    cl = cat.cluster_from(None, nodes=nodes, node_id="dgx-h100")
    return span(cl.total_gpus, 1, cl, cat.efficiency_for(cl.gpu.id)), cl.fabric


def _call(size: int, nodes: int):
    sp, fabric = _span(nodes)
    return collective("all-reduce", size, sp, fabric)


def _ratio(sweep: str, size: int) -> float:
    nodes, table = SWEEPS[sweep]
    return _call(size, nodes).seconds * 1e6 / table[size]


WITHIN_10 = ([("spt4", s) for s in (262144, 524288, 33554432, 67108864, 134217728, 268435456, 536870912,
                                    1073741824, 2147483648, 4294967296, 8589934592)]
             + [("aion4", s) for s in (16 * MiB, 32 * MiB, 1024 * MiB)]
             + [("aion8", s) for s in (1 * MiB, 2 * MiB, 4 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 512 * MiB)])


@pytest.mark.parametrize("sweep, size", WITHIN_10)
def test_many_node_all_reduce_within_10_percent(sweep, size):
    """Model ÷ measured within 10%: tree/LL128 at 256-512 KiB on 4 nodes (1.06, 1.09) and 1-4 MiB on 8 nodes
    (0.98-1.03, where the proxy posts set the pace), NVLS-tree from 16-32 MiB (0.90-1.00) and the ring from
    2 GiB on the 4-node sweep whose network reaches its NICs' rate (0.99-1.00)."""
    assert _ratio(sweep, size) == pytest.approx(1.0, abs=0.10)


def test_two_mib_on_four_nodes_in_place():
    # 2 MiB out of place took 191.3 µs, slower than 4 MiB (151.1 µs): a stray; in place it took 132.2 µs.
    assert _call(2 * MiB, 4).seconds * 1e6 / SPT_4_IN_PLACE[2 * MiB] == pytest.approx(1.0, abs=0.10)


@pytest.mark.parametrize("size, measured", [(1 * MiB, 117.0), (2 * MiB, 143.4), (4 * MiB, 203.8)])
def test_eight_node_mid_sizes_run_at_the_proxy_posts(size, measured):
    """1-4 MiB on 8 DGX H100 (Intel hosts: 1 µs per post): NCCL's cost model takes tree/LL128 (82.5 µs of
    latency), and its data part (15-45 µs) is below what the busiest proxy thread needs to post the 17,280-byte
    chunks: 2 channels × (4, 8, 16) chunks, less one, × 2 peers × a send and a receive = 28, 60, 124 µs. So the
    call is latency + posts + the pipeline's fill, and that meets the sweep within 5% (the cost model alone,
    before the runtime was modelled: 0.83, 0.79, 0.63)."""
    sp, fabric = _span(8)
    c = collective("all-reduce", size, sp, fabric)
    assert (c.algorithm, c.protocol) == ("tree", "LL128")
    assert c.latency_s * 1e6 == pytest.approx(82.5)
    used = enqueue_channels(size, runtime_channels(sp.channels), False, 1, sp.ranks)
    posts = tree_proxy_seconds(size, used, sp.channels, sp.nodes, sp.per_node, 1, sp.amd_host)
    fill = tree_fill_seconds(size, used, sp.nodes, sp.per_node, 1, sp.net, sp.nvlink)
    assert posts * 1e6 == pytest.approx({1 * MiB: 28.0, 2 * MiB: 60.0, 4 * MiB: 124.0}[size])
    assert c.seconds == pytest.approx(c.latency_s + posts + fill)
    assert c.seconds * 1e6 / measured == pytest.approx(1.0, abs=0.05)


# Model ÷ measured where the model misses by more than 10%, pinned (±0.03), with the reason.
KNOWN_MISSES = {
    # 4 nodes, healthy fabric. Tree/LL at 128 KiB, 11% slow: NCCL's latency (35.2 µs) and its data time at the
    # LL cap for 3+ nodes (20.4 GB/s, treeCorrectionFactor 0.5: 25.7 µs) and 1 µs of the pipeline's fill.
    ("spt4", 128 * 1024): 1.109,
    # Tree/LL128 at 1 and 4 MiB is 17% and 27% slow, 8 MiB 11% fast: the posts (28, 124, 124 µs) are right on
    # 8 nodes (above) but too many on this 4-node sweep at 4 MiB; the other 4-node sweep (AION_4) took 231 µs
    # there, 53% longer than this one, and the model (192 µs) lies between the two. Measured 4 MiB < 8 MiB by
    # 66 µs; the model has them equal (its 4 MiB call posts twice as many half-size chunks).
    ("spt4", 1 * MiB): 1.165,
    ("spt4", 4 * MiB): 1.269,
    ("spt4", 8 * MiB): 0.892,
    # NVLS-tree at 16 MiB: two rounds of 16 channels × 8 heads × 64 KiB, the pipeline's fill and drain most of it.
    ("spt4", 16 * MiB): 1.109,
    # AION_4 (4 of the 8 nodes) below 16 MiB is noisy: 1 MiB took 317 µs out of place and 93.3 µs in place
    # (model 95.7); 2-8 MiB barely grow (227-239 µs). Its plateau is 325 GB/s of busbw (the model's ring: 369).
    ("aion4", 1 * MiB): 0.302,
    ("aion4", 2 * MiB): 0.563,
    ("aion4", 4 * MiB): 0.829,
    ("aion4", 8 * MiB): 0.811,
    ("aion4", 64 * MiB): 0.891,
    ("aion4", 128 * MiB): 0.865,
    ("aion4", 256 * MiB): 0.733,  # the sweep dips here: 234 GB/s busbw after 246 at 128 MiB
    ("aion4", 512 * MiB): 0.849,
    ("aion4", 2048 * MiB): 0.889,
    ("aion4", 4096 * MiB): 0.881,
    ("aion4", 8192 * MiB): 0.879,
    # AION_8: 8 MiB out of place took 1272 µs (in place 321 µs); from 128 MiB the cluster's 320 GB/s plateau.
    ("aion8", 8 * MiB): 0.168,
    ("aion8", 128 * MiB): 0.872,
    ("aion8", 256 * MiB): 0.888,
    ("aion8", 1024 * MiB): 0.827,  # a dip in the sweep: 287 GB/s between 301 and 319
    ("aion8", 2048 * MiB): 0.898,
    ("aion8", 4096 * MiB): 0.882,
    ("aion8", 8192 * MiB): 0.869,
}


@pytest.mark.parametrize("sweep, size", list(KNOWN_MISSES))
def test_many_node_known_misses(sweep, size):
    assert _ratio(sweep, size) == pytest.approx(KNOWN_MISSES[(sweep, size)], abs=0.03)


def test_every_sweep_row_is_tested():
    # Each row of the three sweeps is either within 10% or pinned above, never left out.
    rows = {(name, s) for name, (_, table) in SWEEPS.items() for s in table}
    tested = set(WITHIN_10) | set(KNOWN_MISSES) | {("spt4", 2 * MiB)}
    assert rows == tested


SPT_4_BUSBW = {2048 * MiB: 361.56, 4096 * MiB: 363.54, 8192 * MiB: 364.93}  # the same rows' busbw (GB/s)


def test_network_bound_rows_of_the_healthy_sweep():
    # 2-8 GiB on 4 nodes run the ring at the NICs' rate: the model's 369 GB/s busbw against 362-365 measured.
    for size in (2048 * MiB, 4096 * MiB, 8192 * MiB):
        c = _call(size, 4)
        assert (c.algorithm, c.protocol) == ("ring", "Simple")
        assert c.bus_bandwidth / 1e9 == pytest.approx(SPT_4_BUSBW[size], rel=0.03)
