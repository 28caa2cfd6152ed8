"""Memory knobs move the figures the way their definitions say."""

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.activations import in_flight
from llmplan.core.training.layout import resolve
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
LLAMA3_70B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=8192, num_hidden_layers=80,
                                   num_attention_heads=64, num_key_value_heads=8, intermediate_size=28672))


def test_interleaved_in_flight_factor():
    # Korthikanti §4.2.3: the first stage holds p micro-batches × (1 + (p-1)/(p·v)) with interleaving
    lay = resolve(scenario(LLAMA3_8B, 32, tp=2, pp=4, vp=2, seq_len=4096, global_batch=64))
    assert in_flight(lay) == pytest.approx(4 * (1 + 3 / 8))
    lay = resolve(scenario(LLAMA3_8B, 32, tp=2, pp=4, seq_len=4096, global_batch=8))  # m = 2 < p
    assert in_flight(lay) == 2


def test_recompute_orders_activation_memory():
    acts = [estimate(scenario(LLAMA3_8B, 8, tp=8, seq_len=8192, recompute=rc, flash_attention=False))
            .memory.activations.value for rc in ("none", "selective", "full")]
    assert acts[0] > acts[1] > acts[2]


def test_optimizer_bytes_per_parameter():
    def opt(name):
        e = estimate(scenario(LLAMA3_8B, 1, seq_len=1024, optimizer=name, zero_stage=0))
        return e.memory.optimizer.value / e.params.total

    assert opt("sgd") == 0
    assert opt("momentum") == pytest.approx(4)
    assert opt("lion") == pytest.approx(4)
    assert opt("adamw") == pytest.approx(8)
    assert opt("adam8bit") == pytest.approx(2 + 8 / 2048)  # bitsandbytes: 2 states + fp32 absmax per 2048
    assert 4 < opt("muon") < 5  # 4 B for block matrices, 8 B (AdamW) for embeddings, head and norms
    assert opt("adafactor") < 0.01  # rows + cols per matrix only


def test_fp8_keeps_bf16_weights_plus_fp8_copies_and_fp32_has_no_master():
    e8 = estimate(scenario(LLAMA3_8B, 1, seq_len=1024, precision="fp8", zero_stage=0))
    assert e8.memory.weights.value == pytest.approx(3 * e8.params.total)
    e32 = estimate(scenario(LLAMA3_8B, 1, seq_len=1024, precision="fp32", zero_stage=0))
    assert e32.memory.master_weights.value == 0
    assert e32.memory.weights.value == pytest.approx(4 * e32.params.total)


def test_cpu_offload_moves_states_to_host_ram_per_node():
    e = estimate(scenario(LLAMA3_70B, 8, seq_len=2048, zero_stage=3, offload="cpu", offload_params=True))
    mem = e.memory
    assert mem.optimizer.value == 0 and mem.master_weights.value == 0 and mem.weights.value == 0
    # 70.6B params × (2 weights + 4 fp32 grads + 4 master + 8 Adam) over one node of 8 GPUs
    assert mem.host_ram.value == pytest.approx(18 * e.params.total, rel=1e-9)
    assert any("host RAM" in w for w in e.warnings)
    nv = estimate(scenario(LLAMA3_70B, 8, seq_len=2048, zero_stage=3, offload="nvme"))
    assert nv.memory.nvme.value == pytest.approx(16 * nv.params.total, rel=1e-9)


def test_does_not_fit_names_the_shortfall():
    e = estimate(scenario(LLAMA3_70B, 1, seq_len=4096, zero_stage=0))
    assert not e.fits
    assert e.bottleneck.kind == "memory capacity"
    assert any(w.startswith("does not fit:") and "GiB over" in w for w in e.warnings)


def test_worst_stage_is_reported():
    # pp=2: the first stage holds 2 micro-batches in flight, the last the 128k-vocabulary logits in fp32
    e = estimate(scenario(LLAMA3_8B, 2, pp=2, seq_len=8192, global_batch=8))
    assert e.memory.worst_gpu in ("pipeline stage 1 of 2 (first, with the embedding, 16 layers)",
                                  "pipeline stage 2 of 2 (last, with the head and loss, 16 layers)")
    assert e.memory.weights.inputs["stage"] == e.memory.worst_gpu


def test_adafactor_keeps_row_and_column_statistics():
    # Shazeer & Stern 2018: the factored second moment of an n×m matrix is n + m numbers; vectors keep n.
    from llmplan.core.params import count_params

    e = estimate(scenario(LLAMA3_8B, 1, seq_len=1024, optimizer="adafactor", zero_stage=0))
    pb = count_params(LLAMA3_8B)
    expected = 4 * sum(((g.shape[0] + g.shape[1]) if len(g.shape) == 2 else g.numel) * g.count for g in pb.groups)
    assert e.memory.optimizer.value == pytest.approx(expected)


def test_context_parallel_splits_activations_and_ep_splits_experts():
    base = estimate(scenario(LLAMA3_8B, 8, tp=2, seq_len=32768, flash_attention=True))
    cp = estimate(scenario(LLAMA3_8B, 8, tp=2, cp=4, seq_len=32768, flash_attention=True))
    # block activations scale with the local sequence s/cp; the fp32 logits too
    assert cp.memory.activations.value == pytest.approx(base.memory.activations.value / 4, rel=0.01)
    mixtral = spec_from_config(dict(model_type="mixtral", vocab_size=32000, hidden_size=4096, num_hidden_layers=32,
                                    num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336,
                                    num_local_experts=8, num_experts_per_tok=2))
    e1 = estimate(scenario(mixtral, 8, seq_len=2048, zero_stage=0))
    e8 = estimate(scenario(mixtral, 8, ep=8, seq_len=2048, zero_stage=0))
    experts = 32 * 8 * 3 * 4096 * 14336
    assert e1.memory.weights.value - e8.memory.weights.value == pytest.approx(2 * experts * 7 / 8)
