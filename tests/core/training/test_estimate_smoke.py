"""End-to-end shape of a training Estimate: every part present, internally consistent."""

from llmplan.core.engine import estimate
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))


def test_dense_estimate_is_complete_and_consistent():
    sc = scenario(LLAMA3_8B, 16, tp=2, pp=2, seq_len=8192, global_batch=128)
    e = estimate(sc)
    parts = e.memory.parts()
    assert abs(sum(p.value for p in parts.values()) - e.memory.total.value) < 1
    # 8.03B params over tp=2·pp=2 (+ the embedding imbalance) at 2 B each: ~3.7 GiB of bf16 weights
    assert 3.5 * 2**30 < e.memory.weights.value < 4.2 * 2**30
    assert e.compute is not None and e.communication is not None
    assert e.compute.step_time_s.value > e.compute.compute_time_s.value > 0
    assert 0 < e.compute.mfu.value < e.compute.hfu.value < 1
    assert {c.group for c in e.communication.collectives} == {"tp", "pp", "dp"}
    assert e.bottleneck.statement
    assert e.memory.total.formula.startswith("memory per GPU =")
    for f in (e.compute.step_time_s, e.compute.mfu, e.memory.activations, e.memory.optimizer):
        assert f.formula and f.source
