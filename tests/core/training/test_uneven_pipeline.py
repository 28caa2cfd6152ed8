"""Uneven pipeline stages in the full estimate: the worst stage's memory by hand, and the time cost."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout
from llmplan.errors import LayoutError
from llmplan.formats.hf_config import spec_from_config

from .helpers import gpt, scenario

GIB = 2**30


def test_worst_stage_memory_of_an_uneven_split_by_hand():
    """A GPT block (h 1024, 16 heads, 15 layers) on pp = 8: 15 = 8·1 + 7, so stages hold
    1, 2, 2, 2, 2, 2, 2, 2 layers. 1F1B with 16 micro-batches: stage s keeps 8 - s in flight.

    Stage 2 (2 layers × 7 micro-batches = 14 block activations) outweighs the first (1 layer × 8,
    plus the embedding) and the last (2 layers × 1 + the head and logits), so it is reported.
    Hand computation, tp = dp = 1, no ZeRO sharding possible, bf16 + fp32 gradients + Adam:
    - a block has 12h² + 13h = 12,596,224 parameters (QKV, output, 4h MLP, biases, 2 LayerNorms),
      18 bytes each (2 weight + 4 fp32 gradient + 4 master + 8 Adam);
    - a block keeps s·b·h·(34 + 5·a·s/h) bytes (Korthikanti et al. 2022 eq. 2, dropout on, no
      FlashAttention, no recompute) = 2048 · 1024 · (34 + 5·16·2048/1024) = 406,847,488;
    - buffers: the pipeline's send and receive buffers, 2 × 2·s·b·h;
    - overhead: 1 GiB + 5% of the rest (the engine's stated assumption).
    """
    h, heads, s = 1024, 16, 2048
    sc = scenario(gpt(h, heads, 15), 8, pp=8, seq_len=s, global_batch=16, dropout=0.1, flash_attention=False,
                  recompute="none")
    e = estimate(sc)
    block_params = 12 * h * h + 13 * h
    states = 2 * block_params * 18
    acts = 2 * 7 * s * h * (34 + 5 * heads * s / h)
    buffers = 2 * 2 * s * h
    expected = states + acts + buffers + GIB + 0.05 * (states + acts + buffers)
    assert e.memory.worst_gpu == "pipeline stage 2 of 8 (2 layers)"
    assert e.memory.activations.value == pytest.approx(acts, rel=1e-12)
    assert e.memory.weights.value + e.memory.gradients.value + e.memory.master_weights.value \
        + e.memory.optimizer.value == pytest.approx(states, rel=1e-12)
    assert e.memory.total.value == pytest.approx(expected, rel=1e-12)
    assert e.memory.activations.inputs["blocks"] == 2 and e.memory.activations.inputs["in_flight"] == 7


def test_uneven_stages_cost_the_slowest_stages_time():
    """15 layers on 8 stages run at the pace of a 2-layer stage: compute × 2·8/15 of an even spread."""
    sc = scenario(gpt(1024, 16, 15), 8, pp=8, seq_len=2048, global_batch=16)
    e = estimate(sc)
    ct = e.compute.compute_time_s.inputs
    assert ct["stage_imbalance"] == pytest.approx(16 / 15)
    even_matmul = ct["hardware_flops"] / ct["gpus"] / (ct["peak_flops"] * ct["matmul_efficiency"])
    assert ct["matmul_s"] == pytest.approx(even_matmul * 16 / 15, rel=1e-12)
    assert "slowest pipeline stage" in e.compute.step_time_s.formula
    assert any("uneven pipeline" in a for a in e.compute.step_time_s.assumptions)
    assert any("steps 6.7% longer than an even spread" in w for w in e.warnings)


def test_126_layers_on_16_stages_take_as_long_as_128():
    """The slowest stage sets the pace: 126 layers split 7, 8 ×14, 7 step as slowly as 128 split
    8 ×16 (both have 8-layer stages); only the smaller FLOP total of the head share differs (< 1%)."""
    def llama(layers):
        return spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096,
                                     num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=8,
                                     intermediate_size=14336))

    t126, t128 = (estimate(scenario(llama(n), 128, tp=8, pp=16, seq_len=8192, global_batch=64,
                                    recompute="full")).compute.step_time_s.value for n in (126, 128))
    assert t126 == pytest.approx(t128, rel=0.01)
    t120 = estimate(scenario(llama(120), 128, tp=8, pp=16, seq_len=8192, global_batch=64,
                             recompute="full")).compute.step_time_s.value  # 7 ×8, 8 ×8: also 8-layer stages
    assert t120 == pytest.approx(t128, rel=0.02)


def test_explicit_first_and_last_stage_layers_reach_the_estimate():
    m = gpt(1024, 16, 15)
    sc = scenario(m, 8, pp=8, seq_len=2048, global_batch=16)
    par = ParallelLayout(**{**sc.parallelism.model_dump(), "first_stage_layers": 3, "last_stage_layers": 0})
    e = estimate(sc.model_copy(update={"parallelism": par}))
    assert any("explicit first/last_stage_layers" in w and "3, 2 ×6, 0" in w for w in e.warnings)
    bad = ParallelLayout(**{**sc.parallelism.model_dump(), "first_stage_layers": 10, "last_stage_layers": 9})
    with pytest.raises(LayoutError, match="middle stages = layers"):
        estimate(sc.model_copy(update={"parallelism": bad}))
