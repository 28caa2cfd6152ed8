"""Groups placed on the cluster in Megatron's rank order, and what each gets of the network.

Sources: Megatron-LM's rank order (tensor parallel innermost, pipeline outermost, RankGenerator);
NCCL's ring spreading channels over all a node's NICs (A. Laddy, NVIDIA/nccl #812: a DGX A100 ring
reaches 192 GB/s busbw = eight 200 Gb/s NICs); its tuning model's latencies (src/graph/tuning.cc).
Exact checks of our own arithmetic unless a tolerance is given.
"""

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.hardware import NetworkSpec
from llmplan.core.training.nccl import collective
from llmplan.core.training.placement import bus_bandwidth, crosses_nodes, span

CAT = load_hardware_catalog()


def _dgx(nodes: int, node: str = "dgx-h100"):
    cl = CAT.cluster_from(None, nodes=nodes, node_id=node)
    return cl, CAT.efficiency_for(cl.gpu.id)


def test_tp_across_two_nodes_gets_each_nodes_whole_network():
    cl, eff = _dgx(2)
    tp16 = span(16, 1, cl, eff)
    assert (tp16.per_node, tp16.nodes) == (8, 2)
    assert tp16.net == pytest.approx(8 * 50e9 * 0.94)  # all eight NICs, not one GPU's
    dp = span(2, 8, cl, eff)  # TP=8 inside the node: 8 DP rings of 2 ranks share the node's NICs
    assert (dp.per_node, dp.nodes) == (1, 2)
    assert dp.net == pytest.approx(50e9 * 0.94)


def test_fewer_nics_than_gpus_is_an_inline_spec():
    net = NetworkSpec(id="4x200", name="4 x HDR", nics_per_node=4, nic_bandwidth=25e9)
    cl = CAT.cluster_from("nvidia-a100-sxm4-80gb", gpus_per_node=8, nodes=2, network_id="ib-hdr-200").model_copy(
        update={"network": net})
    eff = CAT.efficiency_for(cl.gpu.id)
    assert span(16, 1, cl, eff).net == pytest.approx(100e9 * 0.94)
    assert span(2, 8, cl, eff).net == pytest.approx(100e9 * 0.94 / 8)
    with pytest.raises(ValueError, match="nics_per_node needs nic_bandwidth"):
        NetworkSpec(nics_per_node=4)


def test_legacy_per_gpu_spec_keeps_its_meaning():
    old = NetworkSpec(id="old", name="old", bandwidth_per_gpu=25e9)
    assert old.node_bandwidth(8) == 200e9 and old.per_gpu(8) == 25e9


def test_spine_crossing_costs_latency_and_bandwidth_only_where_few_ranks_share_a_leaf():
    """A ring of 64 consecutive nodes over two 32-node leaves sends 1/32 of its bytes across the spine: a 1:2
    spine carries that at full speed, so only the hops cost. A group with one node per leaf (stride = a whole
    leaf) sends everything up and pays the whole 1:2."""
    cl, eff = _dgx(64 * 32)
    net = cl.network.model_copy(update={"oversubscription": 2.0})
    cl = cl.model_copy(update={"network": net})
    inside, across = span(32, 8, cl, eff), span(64, 8, cl, eff)  # 32 nodes per leaf (SuperPOD unit)
    assert across.net == pytest.approx(inside.net)
    assert across.hop_s == pytest.approx(2 * net.latency_s) and inside.hop_s == 0
    sparse = span(64, 8 * 32, cl, eff)  # one rank on every 32nd node: one node per leaf
    assert sparse.net == pytest.approx(inside.net / 2) and sparse.nic == pytest.approx(inside.nic / 2)
    assert bus_bandwidth(64, 8 * 32, cl, eff) == pytest.approx(inside.net / 2)
    assert bus_bandwidth(64, 8, cl, eff) == pytest.approx(inside.net)


def _meta(nodes: int):
    """Llama 3's RoCE cluster preset (arXiv 2407.21783 §3.3.1): 384-node pods, 1:7 above them, ToRs per rack."""
    cl = CAT.cluster_from(None, nodes=nodes, node_id="dgx-h100", network_id="meta-roce-24k")
    return cl, CAT.efficiency_for(cl.gpu.id)


def test_meta_preset_is_what_the_paper_states():
    n = CAT.network("meta-roce-24k")
    assert (n.gbit_per_port, n.ports_per, n.nodes_per_leaf * 8, n.oversubscription, n.rail_optimized) == (
        400, "gpu", 3072, 7, False)


def test_a_dp_group_with_24_replicas_per_pod_loses_nothing_to_the_1_to_7_spine():
    """Hand example, 16,384 GPUs placed as Llama 3 places them ([TP, CP, PP, DP], DP outermost, §3.3.2): a DP
    group is 128 ranks TP·PP = 128 GPUs (16 nodes) apart, so 384 / 16 = 24 of its nodes sit in each pod, one
    after another in its ring. Per pod, one of the ring's 24 edges leaves: each node sends 1/24 of its ring
    bytes above the pod, under the 1/7 the aggregation layer carries, so the group keeps its whole NIC share
    (exact) and pays four more switch hops (ToR, pod, aggregation, pod, ToR) on every step. The same group on
    a pod-sized stride (one node per pod) sends every byte up and gets 1/7; three nodes per pod, 3/7."""
    cl, eff = _meta(2048)
    dp = span(128, 128, cl, eff)
    assert (dp.per_node, dp.nodes) == (1, 128)
    assert dp.net == pytest.approx(50e9 * 0.94)  # 8 DP groups of a node share its eight 400 Gb/s NICs
    assert dp.hop_s == pytest.approx(4 * cl.network.latency_s)
    one_per_pod = span(5, 384 * 8, cl, eff)
    assert one_per_pod.net == pytest.approx(50e9 * 0.94 / 7) and one_per_pod.nic == pytest.approx(50e9 * 0.94 / 7)
    three_per_pod = span(16, 128 * 8, cl, eff)  # Megatron's order: a PP group 128 nodes apart at 16K GPUs
    assert three_per_pod.net == pytest.approx(50e9 * 0.94 * 3 / 7)


def test_inside_a_pod_only_the_tor_hops_cost():
    cl, eff = _meta(384)
    pod = span(128, 8, cl, eff)  # 128 consecutive nodes: one pod, no spine
    assert pod.net == pytest.approx(50e9 * 0.94) and pod.hop_s == pytest.approx(2 * cl.network.latency_s)
    # TP 16 over a rack's two servers: the model does not know racks, so it charges the pod tier's two hops
    # that a rack's shared ToR would spare (a few µs per step; conservative)
    rack = span(16, 1, cl, eff)
    assert rack.net == pytest.approx(8 * 50e9 * 0.94) and rack.hop_s == pytest.approx(2 * cl.network.latency_s)


def test_nccl_picks_tree_for_small_messages_on_many_nodes_and_ring_for_large():
    cl, eff = _dgx(32)
    sp = span(32, 8, cl, eff)  # a DP group of one GPU per node over 32 nodes (one leaf)
    small, large = collective("all-reduce", 1 << 20, sp, cl.fabric), collective("all-reduce", 1 << 30, sp, cl.fabric)
    assert small.algorithm == "tree" and large.algorithm == "ring"
    # ring latency of 62 network steps at NCCL's 14 µs (Simple) is what the tree avoids; NCCL multiplies a
    # multi-node Simple ring all-reduce's latency by 1.4 on Ampere and later ("plateau effect of ring",
    # ncclTopoGetAlgoTime)
    assert large.latency_s == pytest.approx(1.4 * (8.4e-6 + 62 * 14e-6), rel=1e-9)


def test_one_node_collectives_use_nvls_on_hopper_and_rings_on_ampere():
    h, eff_h = _dgx(1)
    a, eff_a = _dgx(1, "dgx-a100")
    assert collective("all-reduce", 1 << 28, span(8, 1, h, eff_h), h.fabric).algorithm == "nvls"
    assert collective("all-reduce", 1 << 28, span(8, 1, a, eff_a), a.fabric).algorithm == "ring"
    assert collective("all-gather", 1 << 28, span(8, 1, h, eff_h), h.fabric).algorithm == "ring"


def test_all_to_all_cannot_aggregate_nics():
    # S. Jeaugey, nccl-tests #267: all-to-all sees one NIC's bandwidth per rank
    cl, eff = _dgx(2)
    c = collective("all-to-all", 1 << 30, span(16, 1, cl, eff), cl.fabric)
    assert c.limit == "network"
    assert c.seconds == pytest.approx(c.latency_s + (1 << 30) * 8 / 16 / (50e9 * 0.94), rel=1e-9)


def test_quick_model_bandwidth_matches_the_engine_placement():
    cl, eff = _dgx(4)
    for size, stride in ((8, 1), (16, 1), (4, 8), (32, 1)):
        sp = span(size, stride, cl, eff)
        expected = sp.nvlink if sp.nodes == 1 else (min(sp.nvlink, sp.net) if sp.per_node > 1 else sp.net)
        assert float(bus_bandwidth(size, stride, cl, eff)) == pytest.approx(expected)


def test_crossing_rule():
    assert not crosses_nodes(8, 1, 8) and crosses_nodes(16, 1, 8) and crosses_nodes(2, 8, 8)
    assert not crosses_nodes(1, 64, 8)


def test_nccl_graph_channels_and_per_channel_caps():
    # NCCL's ring graph on an 8-GPU node: one channel per NIC, at least one per rank; the logs show 16 runtime
    # channels (twice the graph's 8) on 8-NIC H100 nodes (NVIDIA/nccl #1453) and on 4-NIC ones (#1357).
    cl, eff = _dgx(2)
    full = span(16, 1, cl, eff)
    assert (full.channels, full.arch, full.amd_host) == (8, 2, False)  # Hopper row, Intel Xeon host
    four = cl.model_copy(update={"network": NetworkSpec(id="x4", nics_per_node=4, nic_bandwidth=50e9)})
    assert span(16, 1, four, eff).channels == 8
    # one rank per node: one channel, doubled (ncclTopoDupChannels) when it carries >= 25 GB/s
    assert span(2, 8, cl, eff).channels == 2  # one NDR NIC: 47 GB/s
    assert span(2, 8, *_dgx(2, "dgx-a100")).channels == 1  # one HDR NIC: 23.5 GB/s
    assert span(8, 1, cl, eff).channels == 0  # inside a node: no network channels
    # tuning.cc: LL128 on a ring is capped at channels × perChMaxRingLL128Bws[Hopper] = 8 × 36.7 GB/s, under
    # the NICs' 376 × 0.92 = 346 GB/s
    from llmplan.core.training.nccl import _ring_bw, _tree_bw

    assert _ring_bw(1, full) == pytest.approx(8 * 36.7e9)
    assert _tree_bw(2, full) == pytest.approx(8 * 41.4e9)  # perChMaxTreeBws[Hopper][2 nodes]
    assert _tree_bw(1, full) == pytest.approx(8 * 36.7e9)  # perChMaxTreeLL128Bws[Hopper][2 nodes]
