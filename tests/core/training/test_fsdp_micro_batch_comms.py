"""ZeRO-3 and FSDP's SHARD_GRAD_OP communicate per block in every micro-batch, gathering 16-bit weights.

What the frameworks' code does (``comms`` module doc): FSDP FULL_SHARD frees a block's gathered weights
after its forward and after its backward (PyTorch FSDP ``_should_free_in_backward``), so each micro-batch
gathers them twice; the gradients are reduce-scattered at the end of each backward (Composer calls no
``no_sync`` under FSDP: mosaicml/composer trainer.py at 2deccf2c; DeepSpeed refuses ``no_sync`` with
partitioned gradients). The gather moves ``param_dtype``: FSDP's mixed precision casts the local fp32 shard
before the all-gather. SHARD_GRAD_OP (``reshard_after_forward=False``) keeps the forward's weights for the
backward: one gather a micro-batch. DeepSpeed's ZeRO-2 instead reduces in buckets and all-gathers the
updated weights after the step. Every figure below is counted exactly (tolerance 1e-9) or, for the search's
quick model against the engine, to 1e-6 (the same functions, test_sync_grid.py's tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.params import count_params
from llmplan.core.search.planner import scenario_for
from llmplan.core.search.quick import evaluate
from llmplan.core.search.shape import model_shape
from llmplan.core.search.space import layout_of, training_columns
from llmplan.core.training.comms import OVERLAP_SLOWDOWN
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

from .test_llm_foundry_table import mpt

GPU = "nvidia-a100-sxm4-80gb"


def run(framework: str, zero: int, micro_batch: int, global_batch: int, network: str = "roce-200"):
    """MPT-7B on two 8-GPU nodes, FSDP over all 16, 2,048 tokens a sequence."""
    hw = load_hardware_catalog()
    tr = TrainingSettings(framework=framework, seq_len=2048, micro_batch=micro_batch, global_batch=global_batch,
                          zero_stage=zero, recompute="none", flash_attention=True)
    return Scenario.model_validate(dict(
        model=mpt("7b", 2048), cluster=hw.cluster_from(GPU, gpus_per_node=8, nodes=2, network_id=network),
        workload="pretrain", training=tr, parallelism=ParallelLayout(dp=16), efficiency=hw.efficiency_for(GPU),
        framework_profile=framework_profile(framework)))


def dp_calls(sc):
    return {c.name: c for c in estimate(sc).communication.collectives}


@pytest.mark.parametrize("framework", ["composer", "fsdp2", "deepspeed"])
def test_zero3_gathers_twice_and_reduces_once_per_block_and_micro_batch_in_16_bits(framework):
    sc = run(framework, 3, micro_batch=2, global_batch=16 * 2 * 4)  # 4 micro-batches
    calls = dp_calls(sc)
    gather = calls["ZeRO-3 weight all-gather (forward and backward, per layer)"]
    reduce = calls["ZeRO-3 gradient reduce-scatter (per layer)"]
    layers = sc.model.num_layers
    assert gather.calls == 2 * layers * 4 and reduce.calls == layers * 4
    per_layer = count_params(sc.model).total / layers
    assert gather.message_bytes == pytest.approx(per_layer * 2, rel=1e-9)  # bf16, whatever the stored dtype


def test_zero3_communication_grows_with_the_micro_batches_of_a_step():
    """Same tokens per step, 8 micro-batches of 1 against 1 of 8: eight times the calls and the time."""
    one = dp_calls(run("composer", 3, micro_batch=8, global_batch=128))
    eight = dp_calls(run("composer", 3, micro_batch=1, global_batch=128))
    for name, c in one.items():
        assert eight[name].calls == 8 * c.calls
        assert eight[name].time_s.value == pytest.approx(8 * c.time_s.value, rel=1e-9)


def test_fsdp_shard_grad_op_gathers_at_each_forward_where_deepspeeds_zero2_gathers_after_the_step():
    fsdp = dp_calls(run("composer", 2, micro_batch=2, global_batch=16 * 2 * 4))
    layers = 32
    assert fsdp["FSDP SHARD_GRAD_OP weight all-gather (forward, per layer)"].calls == layers * 4
    assert fsdp["FSDP SHARD_GRAD_OP gradient reduce-scatter (per layer)"].calls == layers * 4
    assert not any("after the optimizer step" in name for name in fsdp)
    ds = dp_calls(run("deepspeed", 2, micro_batch=2, global_batch=16 * 2 * 4))
    assert "DP weight all-gather after the optimizer step" in ds and "DP gradient reduce-scatter" in ds


@pytest.mark.parametrize("framework", ["composer", "deepspeed"])
@pytest.mark.parametrize("zero", [2, 3])
def test_quick_model_prices_per_micro_batch_communication_as_the_engine(framework, zero):
    """On 100 GbE (one port a node) the data-parallel traffic is exposed, so a miscount shows."""
    sc = run(framework, zero, micro_batch=1, global_batch=64, network="eth-100")
    tr, shape = sc.training, model_shape(sc.model, sc.training)
    cols = training_columns(shape, [16], 8, tr.seq_len, tr.global_batch, offload=False)
    rows = np.nonzero((cols.tp == 1) & (cols.pp == 1) & (cols.cp == 1) & (cols.zero == zero)
                      & (cols.recompute == 0) & (cols.accum > 1))[0]
    assert len(rows)
    quick = evaluate(cols, shape, sc.cluster, tr, sc.efficiency, prof=sc.framework).tokens_per_s
    for i in rows:
        p, t = layout_of(cols, int(i), tr)
        e = estimate(scenario_for(sc, p, t))
        assert e.communication.exposed_time_s.value > 0.05 * e.compute.step_time_s.value
        assert quick[i] == pytest.approx(e.compute.tokens_per_s.value, rel=1e-6)


def test_zero3_reduce_scatters_hide_only_behind_the_compute_the_gathers_left():
    """The gathers and the reduce-scatters of ZeRO-3 run on one communicator over the same links while the same
    layers compute (``comms.shared_window``): together they cannot hide behind more than the step's compute. On
    100 GbE their sum exceeds it, so at least the excess is exposed, which two independent windows would hide.
    A hidden second is charged ``OVERLAP_SLOWDOWN`` (0.189 s: the compute beside it runs slower; comms module
    doc, Lee et al. 2025, arXiv 2507.03114), so the gather's exposed time is its unhidden part + 0.189 × its
    hidden part, and the compute it used is (time − exposed) / (1 − 0.189)."""
    calls = dp_calls(run("composer", 3, micro_batch=1, global_batch=64, network="eth-100"))
    gather = calls["ZeRO-3 weight all-gather (forward and backward, per layer)"]
    reduce = calls["ZeRO-3 gradient reduce-scatter (per layer)"]
    window = gather.exposed_s.inputs["overlappable_s"]
    hidden_by_gather = (gather.time_s.value - gather.exposed_s.value) / (1.0 - OVERLAP_SLOWDOWN)
    assert 0.0 < hidden_by_gather <= window * (1 + 1e-12)
    assert reduce.exposed_s.inputs["overlappable_s"] == pytest.approx(max(0.0, window - hidden_by_gather),
                                                                      rel=1e-12, abs=1e-12)
    assert gather.time_s.value + reduce.time_s.value > window  # the premise: together they do not fit the compute
    exposed = gather.exposed_s.value + reduce.exposed_s.value
    assert exposed >= gather.time_s.value + reduce.time_s.value - window - 1e-9
