"""Collective volumes (NCCL ring: all-reduce 2(n-1)/n, all-gather/reduce-scatter (n-1)/n) and links."""

import pytest

from llmplan.core.engine import estimate
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
MIXTRAL = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                num_local_experts=8, num_experts_per_tok=2))


def _by_group(e):
    return {c.group: c for c in e.communication.collectives}


def test_tp_all_reduce_volume_and_link():
    s, b, h, L = 4096, 1, 4096, 32
    e = estimate(scenario(LLAMA3_8B, 16, tp=8, seq_len=s, micro_batch=b, global_batch=8, recompute="selective"))
    tp = _by_group(e)["tp"]
    m = 8 // 2  # micro-batches per replica: global 8 / (micro 1 · dp 2)
    assert tp.bytes_per_step.value == pytest.approx(4 * 2 * 7 / 8 * s * b * h * 2 * L * m)
    assert tp.link == "intra-node"
    assert tp.exposed_s.value == tp.time_s.value  # on the critical path
    # full recompute re-runs the forward and its 2 all-reduces per block: 6 instead of 4
    e_full = estimate(scenario(LLAMA3_8B, 16, tp=8, seq_len=s, global_batch=8, recompute="full"))
    assert _by_group(e_full)["tp"].bytes_per_step.value == pytest.approx(tp.bytes_per_step.value * 6 / 4)


def test_tp_across_nodes_uses_the_network():
    e = estimate(scenario(LLAMA3_8B, 16, tp=16, seq_len=4096))
    assert _by_group(e)["tp"].link == "inter-node"
    assert e.communication.bottleneck_link == "inter-node"


def test_dp_all_reduce_and_zero3_is_one_and_a_half_times_zero2():
    common = dict(seq_len=2048, global_batch=16, fp32_grad_accumulation=False)
    e0 = estimate(scenario(LLAMA3_8B, 16, zero_stage=0, **common))
    dp = _by_group(e0)["dp"]
    n = e0.params.total
    assert dp.bytes_per_step.value == pytest.approx(2 * 15 / 16 * n * 2)
    assert dp.link == "inter-node"
    e2 = estimate(scenario(LLAMA3_8B, 16, zero_stage=2, **common))
    e3 = estimate(scenario(LLAMA3_8B, 16, zero_stage=3, **common))
    v2 = sum(c.bytes_per_step.value for c in e2.communication.collectives if c.group == "dp")
    v3 = sum(c.bytes_per_step.value for c in e3.communication.collectives if c.group == "dp")
    assert v2 == pytest.approx(dp.bytes_per_step.value)  # reduce-scatter + all-gather = all-reduce
    assert v3 == pytest.approx(1.5 * v2)  # Rajbhandari et al. §7.2.2: 3Ψ vs 2Ψ


def test_single_node_dp_stays_on_nvlink_and_hides_behind_backward():
    e = estimate(scenario(LLAMA3_8B, 8, seq_len=4096, global_batch=64))
    dp = _by_group(e)["dp"]
    assert dp.link == "intra-node"
    assert dp.exposed_s.value < dp.time_s.value


def test_moe_all_to_all_and_context_ring():
    e = estimate(scenario(MIXTRAL, 64, tp=2, pp=4, ep=8, seq_len=4096, global_batch=64))
    ep = _by_group(e)["ep"]
    assert ep.group_size == 8 and ep.bytes_per_step.value > 0
    e_cp = estimate(scenario(LLAMA3_8B, 16, tp=2, cp=4, seq_len=32768))
    cp = _by_group(e_cp)["cp"]
    assert cp.link == "intra-node" and cp.bytes_per_step.value > 0
    assert e_cp.communication.intra_node_bandwidth_needed.value > 0


def test_bottleneck_kinds():
    bubble = estimate(scenario(LLAMA3_8B, 8, pp=8, seq_len=2048, global_batch=1))
    assert bubble.bottleneck.kind == "pipeline bubble"
    assert bubble.compute.bubble_fraction.value == pytest.approx(7.0)  # (p-1)/m with m = 1
    net = estimate(scenario(LLAMA3_8B, 32, tp=32, seq_len=8192, micro_batch=4))
    assert net.bottleneck.kind == "network"
    compute = estimate(scenario(LLAMA3_8B, 8, tp=2, seq_len=8192, global_batch=256))
    assert compute.bottleneck.kind == "compute"


def test_hybrid_sharding_keeps_the_shards_in_a_node():
    # FSDP HYBRID_SHARD: ZeRO-3 within each 8-GPU node, replicas all-reduce the shards across 4 nodes
    from llmplan.core.training.layout import resolve
    from llmplan.errors import LayoutError

    e = estimate(scenario(LLAMA3_8B, 32, seq_len=4096, zero_stage=3, shard_group=8, fp32_grad_accumulation=False))
    assert e.memory.weights.value == pytest.approx(2 * e.params.total / 8)
    colls = [c for c in e.communication.collectives if c.group == "dp"]
    links = {c.name.split(" (")[0]: (c.link, c.group_size) for c in colls}
    assert links["DP gradient reduce-scatter + weight all-gather"] == ("intra-node", 8)
    assert links["DP all-reduce of gradient shards across replicas"] == ("inter-node", 4)
    with pytest.raises(LayoutError, match="shard_group divides dp·cp"):
        resolve(scenario(LLAMA3_8B, 32, seq_len=4096, zero_stage=3, shard_group=3))
