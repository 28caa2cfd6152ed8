"""Per-parameter facts live in one place (issue 16): the engine, the search and the checkpoint code
give the same numbers because they call ``core.bytes_per_param``."""

from __future__ import annotations

import pytest

from llmplan.core import bytes_per_param as facts
from llmplan.core.params import count_params
from llmplan.core.search.shape import model_shape
from llmplan.core.system.checkpoint import checkpoint_size
from llmplan.core.training.lora import adapter_params
from llmplan.core.workload import TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

ALL = ("q", "k", "v", "o", "gate", "up", "down")


def _scenario(model: str, **training):
    doc = PlanDocument(name="t", model=ModelRef(id=model), hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb"),
                       workload="finetune", training=TrainingSettings(**training))
    return resolve(doc)


@pytest.mark.parametrize(("experts", "per_expert"), [
    ("per_expert_modules", 3 * (6144 + 16384)),  # transformers 4: each expert's gate, up and down a Linear
    ("target_parameters", (6144 + 2 * 16384) + (16384 + 6144)),  # stacked gate_up_proj [E, 2F, H], down_proj
    ("auto", 2 * (6144 + 2 * 16384) + (16384 + 6144)),  # PEFT's conversion: gate_up_proj at rank 2r
])
def test_mixtral_lora_params_are_one_number_experts_included(experts, per_expert):
    # Mixtral-8x22B (config.json): 56 layers, hidden 6144, 8 KV heads × 128, 8 experts of 16,384.
    # Rank 16 on every projection, r·(in + out) per matrix (Hu et al. 2022 §4.1), per expert as each
    # training.lora_experts layout adapts them (core.lora_modules; PEFT's ParamWrapper: r·E·(in + out)):
    # attention (6144+6144) + 2·(6144+1024) + (6144+6144), experts 8 × per_expert. Exact.
    per_layer = 16 * ((6144 + 6144) * 2 + (6144 + 1024) * 2 + 8 * per_expert)
    expected = 56 * per_layer
    if experts == "per_expert_modules":
        assert expected == 519_307_264
    sc = _scenario("mistralai/Mixtral-8x22B-v0.1", method="lora", lora_rank=16, lora_targets=ALL,
                   lora_experts=experts)
    pb = count_params(sc.model)
    how = "peft_converted" if experts == "auto" else experts
    assert facts.lora_params(pb, 16, ALL, experts=how) == expected
    assert adapter_params(pb, sc.model, None, sc.training) == expected  # the training engine
    assert model_shape(sc.model, sc.training).trainable_params == expected  # the search
    assert checkpoint_size(sc, pb).trainable_params.value == expected  # the checkpoint


def test_attention_only_targets_leave_the_experts_alone():
    sc = _scenario("mistralai/Mixtral-8x22B-v0.1")
    per_layer = 16 * ((6144 + 6144) * 2 + (6144 + 1024) * 2)
    assert facts.lora_params(count_params(sc.model), 16, ("q", "k", "v", "o")) == 56 * per_layer


@pytest.mark.parametrize(("precision", "weight", "saved", "master"), [
    ("bf16", 2, 2, 4), ("fp16", 2, 2, 4), ("fp8", 3, 2, 4), ("fp32", 4, 4, 0)])
def test_bytes_per_weight_and_master(precision, weight, saved, master):
    # ZeRO §3.1 (2 + 4 B in mixed precision); Transformer Engine keeps a cached fp8 copy beside bf16
    assert facts.weight_bytes(precision) == weight
    assert facts.saved_weight_bytes(precision) == saved
    assert facts.master_bytes(precision) == master


@pytest.mark.parametrize(("optimizer", "per_param"), [
    ("sgd", 0), ("momentum", 4), ("lion", 4), ("adamw", 8), ("adam8bit", 2 + 8 / 2048)])
def test_flat_optimizer_states(optimizer, per_param):
    assert facts.optimizer_state_bytes(optimizer, 1000.0) == pytest.approx(1000 * per_param, rel=1e-12)


def test_shape_dependent_optimizer_states():
    # Adafactor: 4 B per (rows + cols) entry; Muon: 4 B on matrices, AdamW's 8 B elsewhere
    assert facts.optimizer_state_bytes("adafactor", 1e6, factored=2000) == 8000
    assert facts.optimizer_state_bytes("muon", 1e6, matrices=9e5) == 4 * 9e5 + 8 * 1e5
    with pytest.raises(ValueError, match="unknown optimizer"):
        facts.optimizer_state_bytes("adam9", 1.0)


def test_nf4_bits_match_the_quant_module():
    # QLoRA §3: 4 + 0.127 bits with double quantisation, 4.5 without; core.quant prices nf4 the same
    assert facts.nf4_bits_per_param(True) == pytest.approx(4.127, abs=5e-4)
    assert facts.nf4_bits_per_param(False) == 4.5
    sc = _scenario("meta-llama/Llama-3.2-1B")
    assert facts.weight_format_bits(sc.model, "nf4") < 16  # embeddings stay 16-bit, the blocks 4.127


def test_checkpoint_adafactor_state_is_the_engines():
    sc = _scenario("meta-llama/Llama-3.2-1B", method="full", optimizer="adafactor", precision="bf16")
    pb = count_params(sc.model)
    factored, _ = facts.shape_states(pb)
    size = checkpoint_size(sc, pb)
    assert size.total.value == pytest.approx(pb.total * (2 + 4) + 4 * factored, rel=1e-12)
