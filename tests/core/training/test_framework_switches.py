"""The fine-tuning profiles and switches: each term against its formula (core.training.switches)."""

import pytest

from llmplan.catalog.frameworks import load_framework_profiles, profiles_supporting
from llmplan.core.framework_profile import SWITCH_NAMES
from llmplan.core.training.lora import base_bits_per_param
from llmplan.core.training.switches import SWITCHES, liger_chunk_rows
from llmplan.core.workload import TrainingSettings
from llmplan.errors import InputError, PlanFileError
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

GIB = 2**30
L8 = "meta-llama/Llama-3.1-8B"
H100 = "nvidia-h100-sxm-80gb"


def _run(framework="hf-trainer", model=L8, gpu=H100, **kw):
    base = dict(method="lora", micro_batch=1, global_batch=0, batch_rule="per_replica", seq_len=2048, recompute="full", zero_stage=0, offload="none",
                optimizer="adamw", framework=framework)
    base.update(kw)
    doc = PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu), workload="finetune",
                       training=TrainingSettings(**base))
    return evaluate_plan(doc)


def _as_if_loss(loss, framework="hf-trainer", model=L8, gpu=H100, **kw):
    """The plan's estimate with only its resolved loss swapped for ``loss``: a loss term priced on a step whose
    framework does not run that loss (``FrameworkProfile.losses``), to compare the terms and nothing else."""
    from llmplan.core.engine import estimate
    from llmplan.plan.resolve import resolve

    base = dict(method="lora", micro_batch=1, global_batch=0, batch_rule="per_replica", seq_len=2048,
                recompute="full", zero_stage=0, offload="none", optimizer="adamw", framework=framework)
    base.update(kw)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu), workload="finetune",
                              training=TrainingSettings(**base)))
    return estimate(sc.model_copy(update={"training": sc.training.model_copy(update={"loss": loss})}))


def test_every_profile_loads_and_every_switch_is_described():
    profiles = load_framework_profiles()
    assert {"torchtune", "unsloth", "llama-factory", "axolotl", "hf-trainer"} <= set(profiles)
    assert set(SWITCHES) == set(SWITCH_NAMES)
    for p in profiles.values():
        assert set(p.on_by_default) <= set(p.switches)
        assert p.source


def test_auto_resolves_to_the_profile_policy():
    sc, _ = _run("torchtune", method="full")
    assert sc.training.regime == "pure" and sc.training.optimizer_in_backward and sc.training.loss == "chunked"
    sc, _ = _run("unsloth")
    assert sc.training.activation_offload and sc.training.loss == "fused_linear"
    sc, _ = _run("unsloth", recompute="none")  # its offload is of the checkpointed layer inputs
    assert not sc.training.activation_offload
    sc, _ = _run("hf-trainer", liger=True)
    assert sc.training.loss == "fused_linear"
    sc, _ = _run("hf-trainer")
    assert sc.training.regime == "amp" and not any(getattr(sc.training, s) for s in SWITCH_NAMES)


def test_regime_auto_keeps_the_numbers_of_an_explicit_amp():
    _, auto = _run(method="full", model="meta-llama/Llama-3.2-1B")
    _, amp = _run(method="full", model="meta-llama/Llama-3.2-1B", regime="amp")
    assert auto.memory.total.value == amp.memory.total.value
    assert auto.compute.step_time_s.value == amp.compute.step_time_s.value


def test_unsupported_switch_names_the_profiles_that_support_it():
    with pytest.raises(PlanFileError) as e:
        _run("hf-trainer", activation_offload=True)
    msg = str(e.value)
    assert msg.startswith("training.activation_offload: the hf-trainer profile does not support it")
    for p in profiles_supporting("activation_offload"):
        assert p in msg
    assert "torchtune" in msg and "unsloth" in msg
    with pytest.raises(PlanFileError, match=r"training\.quant_base: the torchtune profile .* hf-trainer"):
        _run("torchtune", method="qlora", quant_base="gptq")


def test_optimizer_in_backward_holds_one_tensor_gradient():
    """torchtune full fine-tune, pure bf16: with the switch the gradients at the peak are one tensor's —
    the 128,256 × 4,096 embedding/head in bf16 — instead of all 8.03 B parameters'."""
    _, on = _run("torchtune", method="full", optimizer_in_backward=True)
    _, off = _run("torchtune", method="full", optimizer_in_backward=False)
    assert off.memory.gradients.value == pytest.approx(2 * off.params.total, rel=1e-6)
    assert on.memory.gradients.value <= 2 * 128_256 * 4096
    assert off.memory.total.value - on.memory.total.value > 10 * GIB


def test_optimizer_in_backward_refuses_accumulation():
    with pytest.raises(InputError, match="optimizer_in_backward"):
        _run("torchtune", method="full", optimizer_in_backward=True, global_batch=4)
    sc, _ = _run("torchtune", method="full", global_batch=4)  # auto: off when the plan accumulates
    assert not sc.training.optimizer_in_backward


def test_bf16_optimizer_states_halve_the_states():
    _, off = _run(method="full", model="meta-llama/Llama-3.2-1B")
    _, on = _run(method="full", model="meta-llama/Llama-3.2-1B", bf16_optimizer_states=True)
    assert on.memory.optimizer.value == pytest.approx(off.memory.optimizer.value / 2)


def test_liger_chunk_rows_follow_liger_code():
    # the example in Liger's fused_linear_cross_entropy_forward: BT = 4096·4, V = 32000, H = 4096 -> 2048
    assert liger_chunk_rows(4096 * 4, 4096, 32000) == 2048
    assert liger_chunk_rows(100, 4096, 32000) == 16  # next power of two of ceil(100 / 8)
    assert liger_chunk_rows(10, 4096, 4096) == 10  # never more than BT


def test_liger_cuts_the_loss_and_the_saved_tensors():
    _, hf = _run(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none")
    _, liger = _run(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none", liger=True)
    logits = 4 * 2048 * 128_256
    assert hf.memory.total.value - liger.memory.total.value > 10 * logits  # no fp32 upcast of the logits
    assert liger.compute.step_time_s.value < hf.compute.step_time_s.value


def test_liger_swiglu_backward_writes_its_gradients_in_place():
    """Liger-Kernel ops/swiglu.py (swiglu_backward returns a and b, overwritten by the kernel): one block's
    backward holds the incoming gradient only, not it and two new gate/up-wide gradients (exact)."""
    from types import SimpleNamespace

    from llmplan.core.framework_profile import FrameworkProfile
    from llmplan.core.training.eager_memory import block_backward_transient
    from llmplan.core.training.ops import projection_bytes

    sc, _ = _run()
    m, prof, T = sc.model, FrameworkProfile(), 2 * 1024
    lay = SimpleNamespace(tp=1, cp=1, micro_batch=2, seq_len=1024)
    y = projection_bytes(sc.training, prof)
    liger = sc.training.model_copy(update={"liger": True})
    assert block_backward_transient(m, lay, sc.training, prof, 2.0) == (3 * y * m.intermediate_size + 2.0 * m.hidden_size) * T
    assert block_backward_transient(m, lay, liger, prof, 2.0) == (y * m.intermediate_size + 2.0 * m.hidden_size) * T


def test_chunked_loss_keeps_fp32_log_probs_only():
    """torchtune's LinearCrossEntropyLoss: 4 B per logit kept + one chunk (of 8) of its three gradients."""
    _, est = _run("torchtune", model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none")
    logits = 4 * 2048 * 128_256
    _, up = _run("torchtune", model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none", loss="upcast")
    assert up.memory.activations.value - est.memory.activations.value == pytest.approx(
        (12 - 4 - 10 / 8) * logits, rel=0.02)


def test_shifted_upcast_holds_a_second_fp32_copy_of_the_logits():
    """transformers until PR #35646 (huggingface/transformers, merged 2025-01-13): ForCausalLMLoss did
    ``logits.float()`` then ``logits[..., :-1, :].contiguous()``, so the loss forward held bf16 (2 B), fp32 (4 B),
    the shifted fp32 copy (4 B) and the log-probabilities (4 B): 14 B per logit against 10 today. Both then hold
    12 B in the loss backward (two fp32 gradients beside the log-probabilities), today's peak: the peak moves to
    the forward and rises by 14 - 12 = 2 B per logit (LoRA, recomputed blocks; exact to rounding)."""
    kw = dict(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="full", method="lora")
    _, now = _run(**kw)
    _, old = _run(loss="upcast_shifted", **kw)
    assert now.memory.activations.value > 0
    assert old.memory.activations.value - now.memory.activations.value == pytest.approx(2.0 * 4 * 2048 * 128_256,
                                                                                        rel=1e-6)
    assert old.compute.step_time_s.value > now.compute.step_time_s.value  # the copy and its slice backward


def test_fused_cross_entropy_keeps_16_bit_logits_and_gradient():
    """flash-attn's fused cross-entropy (``fused_ce``; Dao-AILab/flash-attention ops/triton/cross_entropy.py at
    v2.4.2) saves the bf16 logits as they are and its backward writes a bf16 gradient beside them: 4 B per
    logit at the loss backward, against the upcast loss's 12 (fp32 log-probabilities and two fp32 gradients).
    The peak stays at the loss backward here, so it falls by exactly 8 B per logit; and without the fp32
    upcast kernel the step is shorter."""
    kw = dict(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="full", method="lora")
    _, upcast = _run(loss="upcast", **kw)
    fused = _as_if_loss("fused_ce", **kw)  # the Trainer cannot run it (a field error): the term alone, on its step
    assert fused.memory.activations.inputs["phase"] == "loss backward"
    assert upcast.memory.activations.value - fused.memory.activations.value == pytest.approx(
        8.0 * 4 * 2048 * 128_256, rel=1e-6)
    assert fused.compute.step_time_s.value < upcast.compute.step_time_s.value


def test_compiled_chunked_loss_keeps_bf16_logits():
    """Compiled (torchtune compile_loss), Inductor saves each chunk's bf16 logits (2 B per logit) instead of
    the fp32 log-probabilities (4 B), and the backward writes one chunk's bf16 gradient (2 B) instead of
    three gradients (10 B): 4 + 10/8 - (2 + 2/8) = 3 B per logit fewer at the loss backward."""
    kw = dict(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="full", method="lora")
    _, eager = _run("torchtune", **kw)
    _, comp = _run("torchtune", torch_compile=True, **kw)
    assert eager.memory.activations.value - comp.memory.activations.value == pytest.approx(
        3.0 * 4 * 2048 * 128_256, rel=0.02)


def test_activation_offload_moves_saved_tensors_to_the_host():
    _, off = _run("torchtune", model="meta-llama/Llama-3.2-1B", method="full", micro_batch=4, recompute="none",
                  activation_offload=False)
    _, on = _run("torchtune", model="meta-llama/Llama-3.2-1B", method="full", micro_batch=4, recompute="none",
                 activation_offload=True)
    moved = off.memory.activations.value - on.memory.activations.value
    assert moved > 0 and on.memory.host_ram.value == pytest.approx(moved, rel=1e-6)
    assert on.compute.step_time_s.value >= off.compute.step_time_s.value


def test_paged_optimizer_states_leave_the_allocator_and_page_what_does_not_fit():
    """bitsandbytes paged states are cudaMallocManaged: not in PyTorch's peak, on the GPU while it has room."""
    _, plain = _run(method="full", model="Qwen/Qwen2.5-7B", optimizer="adamw")
    _, paged = _run(method="full", model="Qwen/Qwen2.5-7B", optimizer="adamw", paged_optimizer=True)
    assert not plain.memory.fits and paged.memory.fits
    states = plain.memory.optimizer.value
    assert paged.memory.optimizer.value == 0
    free = paged.memory.capacity.value - paged.memory.total.value
    assert paged.memory.host_ram.value == pytest.approx(states - free, rel=1e-6)
    assert paged.compute.breakdown["host_transfers"] > 0
    _, small = _run(method="lora", paged_optimizer=True)
    assert small.memory.host_ram.value == 0


def test_modules_to_save_trains_a_copy_of_embeddings_and_head():
    _, base = _run()
    _, mts = _run(modules_to_save=True)
    n = 2 * 128_256 * 4096  # untied embed_tokens + lm_head
    assert mts.memory.weights.value - base.memory.weights.value == pytest.approx(2 * n, rel=1e-6)


def test_lora_on_lm_head_adds_its_adapter():
    _, base = _run()
    _, head = _run(lora_on_lm_head=True)
    r = 16
    added = head.memory.weights.value - base.memory.weights.value
    assert added == pytest.approx(4 * r * (4096 + 128_256), rel=1e-6)  # fp32 adapter under AMP


@pytest.mark.parametrize("kind,bits", [("gptq", 4.15625), ("awq", 4.15625), ("int8", 8.0), ("mxfp4", 4.25)])
def test_quantised_bases(kind, bits):
    assert base_bits_per_param(kind, True) == bits
    _, nf4 = _run(method="qlora")
    _, other = _run(method="qlora", quant_base=kind)
    matrices = 6.98e9  # Llama-3.1-8B's block matrices
    delta = (bits - base_bits_per_param("nf4", True)) / 8 * matrices
    if kind == "gptq":  # prepare_model_for_kbit_training leaves a GPTQ model's embeddings, head and norms 16-bit
        delta -= 2 * (2 * 128_256 * 4096 + 65 * 4096)  # (peft utils/other.py, PR #771): 2 B each, not 4
    assert other.memory.weights.value - nf4.memory.weights.value == pytest.approx(delta, rel=0.01)


def test_padded_batches_count_real_tokens():
    _, packed = _run()
    _, padded = _run(batching="padded", mean_sequence_tokens=512)
    assert padded.compute.step_time_s.value == packed.compute.step_time_s.value
    assert padded.memory.total.value == packed.memory.total.value
    assert padded.compute.tokens_per_s.value == pytest.approx(packed.compute.tokens_per_s.value / 4)


def test_mean_tokens_cannot_exceed_the_sequence():
    with pytest.raises(PlanFileError, match="mean_sequence_tokens"):
        _run(batching="padded", mean_sequence_tokens=4096)


def test_torch_compile_fuses_elementwise_kernels():
    _, eager = _run(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none")
    _, comp = _run(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="none", torch_compile=True)
    assert comp.compute.breakdown["memory_bound"] < eager.compute.breakdown["memory_bound"]


def test_lora_without_dropout_keeps_each_distinct_input_once():
    """Llama-3.1-8B, all seven targets, bf16 stream. Dropout > 0 keeps a mask and a copy per projection,
    3·(4·4096 (q,k,v,o) + 2·4096 (gate, up) + 14,336 (down)) B/token. Without dropout torchtune's LoRALinear
    (nn.Identity, adapters in the model's dtype) keeps the input the block made, once per distinct tensor:
    2·(4096 + 4096 + 4096 + 14,336) B/token; PEFT under AMP still casts a copy per projection (2·k_in each),
    so only the 1-byte masks go."""
    _, drop = _run("torchtune", lora_dropout=0.05, recompute="none")
    _, none = _run("torchtune", lora_dropout=0.0, recompute="none")
    per_token = 3 * (6 * 4096 + 14_336) - 2 * (3 * 4096 + 14_336)
    diff = drop.memory.activations.inputs["per_block"] - none.memory.activations.inputs["per_block"]
    assert diff == pytest.approx(per_token * 2048, rel=1e-9)
    _, drop = _run("hf-trainer", lora_dropout=0.05, recompute="none")
    _, none = _run("hf-trainer", lora_dropout=0.0, recompute="none")
    diff = drop.memory.activations.inputs["per_block"] - none.memory.activations.inputs["per_block"]
    assert diff == pytest.approx((6 * 4096 + 14_336) * 2048, rel=1e-9)


def test_profile_lora_dropout_applies_on_auto():
    sc, _ = _run("torchtune")
    assert sc.training.lora_dropout == 0.0
    sc, _ = _run("hf-trainer")
    assert sc.training.lora_dropout == 0.05


def test_measure_harness_refuses_what_it_does_not_run():
    from llmplan.hw.measure_run import run_settings

    def doc(**kw):
        t = TrainingSettings(method="lora", micro_batch=1, seq_len=2048, **kw)
        return PlanDocument(model=ModelRef(id=L8), hardware=HardwareRef(gpu=H100), workload="finetune", training=t)

    rs = run_settings(doc())
    assert rs.regime == "amp" and rs.lora_dropout == 0.05  # auto resolved under the Hugging Face profile
    with pytest.raises(InputError, match="not torchtune"):
        run_settings(doc(framework="torchtune"))
    with pytest.raises(InputError, match=r"turn off training\.liger"):
        run_settings(doc(liger=True))


def test_lora_pointwise_work_follows_the_adapter_code():
    """Per adapted projection and token: torchtune's LoRALinear without dropout scales (2 + 2 B) and adds
    (2 + 2 + 2 B) its output, n_out wide; PEFT under AMP also casts the input to fp32 and back (6 + 6 B per
    input element), and its output pays 6 + 2·2 B; fused (unsloth's kernels, or compiled) without dropout the
    scale and add are one kernel over the output (2 + 2 + 2 B), with no dropped copy of the input."""
    from llmplan.core.params import count_params
    from llmplan.core.training.layout import resolve as lay_of
    from llmplan.core.training.ops import layer_ops

    def lora_ops(framework):
        sc, _ = _run(framework, lora_dropout=0.0, lora_targets=("q",))
        ops = layer_ops(sc.model, count_params(sc.model), lay_of(sc), sc.training, sc.framework)
        return [e for e in ops.elementwise if e.name.startswith("LoRA")]

    T = 2048
    (tt,) = lora_ops("torchtune")
    assert tt.bytes == 10 * 4096 * T and tt.kernels == 2
    (hf,) = lora_ops("hf-trainer")
    assert hf.bytes == (12 * 4096 + 10 * 4096) * T
    (un,) = lora_ops("unsloth")
    assert un.name.endswith("(fused)") and un.kernels == 1 and un.bytes == 6 * 4096 * T


def test_accumulated_gradients_are_held_in_every_phase():
    """With gradient accumulation the gradients persist across micro-batches (the Trainer zeroes them only
    after the optimizer step): the peak holds all of them, so accumulating never lowers it (it did, by
    dropping the gradients altogether)."""
    kw = dict(model="meta-llama/Llama-3.2-1B", method="full", micro_batch=2, recompute="full")
    _, one = _run(global_batch=2, **kw)
    _, two = _run(global_batch=4, **kw)
    grads = 1_235_814_400 * 4  # Llama-3.2-1B's parameters (tied head), fp32 gradients under AMP
    assert two.memory.gradients.value == pytest.approx(grads, rel=0.01)
    assert two.memory.total.value > one.memory.total.value



def test_offloaded_checkpointing_keeps_one_or_two_layer_inputs():
    """torchtune's OffloadActivations prefetches the next block on a second stream (two layer inputs on the
    GPU); unsloth's offloaded checkpointer brings one back when it recomputes it (``offload_prefetch``): the
    difference is one layer input, x·h·T bytes, moved from the GPU to the host."""
    from llmplan.core.engine import estimate

    sc, _ = _run("torchtune", model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="full",
                 activation_offload=True, global_batch=4)
    one = sc.model_copy(update={"framework_profile": sc.framework.model_copy(update={"offload_prefetch": False})})
    two_e, one_e = estimate(sc), estimate(one)
    layer_input = 2 * 4 * 2048 * 2048  # bf16 stream (torchtune's pure bf16) × tokens × hidden
    assert one_e.memory.host_ram.value - two_e.memory.host_ram.value == pytest.approx(layer_input, rel=1e-6)
    assert two_e.memory.total.value - one_e.memory.total.value == pytest.approx(layer_input * 1.05, rel=0.05)


def test_sixteen_bit_shifted_loss_holds_six_bytes_per_logit():
    """Model code that shifts the logits itself and never upcasts them (Qwen 1.0's modeling_qwen.py:
    ``lm_logits[..., :-1, :].contiguous()`` then CrossEntropyLoss), run under DeepSpeed, which runs no autocast
    (accelerate's Accelerator sets native_amp only outside DeepSpeed and Megatron-LM, since e3ebf176,
    2022-10-13): the 16-bit logits, their shifted copy and 16-bit log-probabilities, 6 B per logit in the
    forward and in the backward, against upcast's 10 and 12. On a LoRA run whose peak is the loss backward the
    activations fall by 12 - 6 = 6 B per logit (exact to rounding)."""
    kw = dict(model="meta-llama/Llama-3.2-1B", micro_batch=4, recompute="full", method="lora")
    _, now = _run(**kw)
    _, sixteen = _run(loss="shifted_16bit", **kw)
    logits = 4 * 2048 * 128_256
    assert now.memory.activations.value - sixteen.memory.activations.value == pytest.approx(6.0 * logits, rel=1e-6)
    assert "shifted_16bit: 6 B per logit in the forward, 6 B in the backward" in str(
        sixteen.memory.activations.inputs["loss"])
