"""Hugging Face stack on a real GPU: the hf-trainer profile against runs measured on an H100.

Source: seven training steps measured on one NVIDIA H100 80GB HBM3 (SXM) on 2026-11-24 with torch
2.11.0+cu130, transformers 5.17.0, peft, bitsandbytes 0.50.2 — models built from the catalog's configs
with random weights, SDPA attention, fused AdamW, no gradient clipping (a plain loop: forward, backward,
``opt.step()``, ``zero_grad(set_to_none=True)``; the plans set ``grad_clip`` off), LoRA r=16 alpha=32
dropout 0.05 on all seven projections, QLoRA NF4 with double quantisation and prepare_model_for_kbit_training; peak memory from
torch.cuda.max_memory_reserved (+ 0.5 GiB CUDA context), step time the median of steps 3-8. The
measured figures below are targets only: nothing in the engine was fitted to them (its kernel rates
come from microbenchmarks, ``core.training.kernel_rates``).

Tolerances (the issue's): memory within 10% and never more than 10% under; step time within 15%;
the OOM run "does not fit". Result, recorded 2026-11-25, QLoRA updated 2026-11-27, step times again after the
per-operation price audit and the measured host time of eager blocks (2026-11-27; estimate vs measured):

| run | memory | step time |
|---|---|---|
| 1B AMP 4×2048 | 48.0 vs 45.9 GiB (+4.6%) | 204 vs 203 ms (+0.7%) |
| 1B AMP 8×2048 checkpointing | 45.5 vs 47.3 GiB (-3.6%) | 482 vs 458 ms (+5.3%) |
| 1B pure bf16 4×2048 | 35.2 vs 34.5 GiB (+2.1%) | 188 vs 176 ms (+6.4%) |
| 8B LoRA 2×2048 | 55.9 vs 55.4 GiB (+0.9%) | 465 vs 451 ms (+3.1%) |
| 8B LoRA 1×2048 checkpointing | 20.4 vs 20.8 GiB (-2.1%) | 422 vs 448 ms (-5.7%) |
| 8B QLoRA 1×2048 checkpointing | 14.0 vs 14.4 GiB (-3.0%) | 570 vs 619 ms (-7.9%) |
| 8B AMP full 1×2048 checkpointing | does not fit | OOM |

The checkpointed LoRA and QLoRA runs are bound by the host: their measured time barely falls with half
the tokens (448 ms at 1×2048 against 451 ms at 2×2048). Until 2026-11-27 the model charged the host only
a bare kernel dispatch per kernel and read -23.8% and -31.4%. It now charges each eager Hugging Face block
its host time measured on width-64 models of the same structure, where the GPU has almost nothing to do
(``core.training.host_time``: 13.2 ms per checkpointed LoRA block, 17.8 ms per checkpointed QLoRA
block, measured on another machine, an H200's, not on these runs). The QLoRA/LoRA ratio is 1.35 against the
measured 1.38: bitsandbytes' host work per 4-bit matmul, beside the NF4 dequantisation, the nested absmax's
two extra kernels, the fp32 that Linear4bit returns and PEFT's clone of each 4-bit base output
(tests/core/training/test_hf_qlora_terms.py).
"""

import pytest

from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

GIB = 2**30
CONTEXT = 0.5 * GIB  # CUDA context beside PyTorch's reserved bytes (nvidia-smi, same machine)

# model, mode, micro-batch, checkpointing, peak reserved bytes, step seconds (None: out of memory)
RUNS = {
    "1b-amp": ("meta-llama/Llama-3.2-1B", "amp", 4, False, 48_739_909_632, 0.2028561),
    "1b-amp-ckpt": ("meta-llama/Llama-3.2-1B", "amp", 8, True, 50_193_235_968, 0.4574875),
    "1b-bf16": ("meta-llama/Llama-3.2-1B", "bf16", 4, False, 36_461_084_672, 0.1764427),
    "8b-lora": ("meta-llama/Llama-3.1-8B", "lora", 2, False, 58_894_319_616, 0.4510182),
    "8b-lora-ckpt": ("meta-llama/Llama-3.1-8B", "lora", 1, True, 21_812_477_952, 0.4481552),
    "8b-qlora-ckpt": ("meta-llama/Llama-3.1-8B", "qlora", 1, True, 14_940_110_848, 0.6190146),
    "8b-amp-ckpt-oom": ("meta-llama/Llama-3.1-8B", "amp", 1, True, None, None),
}


STEP_BANDS: dict[str, tuple[float, float]] = {}  # every row within the 15% (module doc)


def hf_estimate(model, mode, mb, ckpt, gpu="nvidia-h100-sxm-80gb", seq=2048):
    """The plan a user writes for one of these runs: one GPU, the Hugging Face profile by default, LoRA r=16
    on all seven projections; ``mode`` amp (fp32 weights under autocast), bf16 (pure), lora or qlora. Gradient
    clipping off (``training.grad_clip``): the harness was a plain PyTorch loop — forward, backward, ``opt.step()``,
    ``zero_grad(set_to_none=True)`` — with no ``clip_grad_norm_``, where the Trainer would clip by default."""
    method = {"amp": "full", "bf16": "full", "lora": "lora", "qlora": "qlora"}[mode]
    training = TrainingSettings(method=method, regime="pure" if mode == "bf16" else "amp", micro_batch=mb, offload="none",
                                global_batch=mb, seq_len=seq, recompute="full" if ckpt else "none",
                                zero_stage=0, optimizer="adamw", lora_rank=16, grad_clip="off")
    doc = PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu),
                       workload="finetune", training=training, parallelism=ParallelLayout())
    return evaluate_plan(doc)


def _estimate(name):
    model, mode, mb, ckpt, _, _ = RUNS[name]
    return hf_estimate(model, mode, mb, ckpt)


@pytest.mark.parametrize("name", [n for n in RUNS if RUNS[n][4]])
def test_memory_within_10_percent_and_never_10_percent_under(name):
    sc, est = _estimate(name)
    assert sc.framework.id == "hf-trainer"  # one-GPU fine-tuning defaults to the Hugging Face profile
    measured = RUNS[name][4] + CONTEXT
    error = est.memory.total.value / measured - 1
    assert -0.10 <= error <= 0.10, f"{name}: {error:+.1%}"
    assert est.memory.fits


@pytest.mark.parametrize("name", [n for n in RUNS if RUNS[n][5]])
def test_step_time(name):
    _, est = _estimate(name)
    error = est.compute.step_time_s.value / RUNS[name][5] - 1
    lo, hi = STEP_BANDS.get(name, (-0.15, 0.15))
    assert lo <= error <= hi, f"{name}: {error:+.1%}"


def test_the_out_of_memory_run_does_not_fit():
    _, est = _estimate("8b-amp-ckpt-oom")
    assert not est.memory.fits


def test_qlora_is_slower_than_lora_by_its_dequantisation():
    _, lora = _estimate("8b-lora-ckpt")
    _, qlora = _estimate("8b-qlora-ckpt")
    ratio = qlora.compute.step_time_s.value / lora.compute.step_time_s.value
    assert qlora.compute.breakdown["dequantisation"] > 0 and lora.compute.breakdown["dequantisation"] == 0
    assert 1.24 <= ratio <= 1.52  # measured 1.38 ± 10% (module doc): the model gives 1.35 (1.24 before the host time)


def test_the_loss_upcast_is_the_largest_transient_of_a_small_model():
    """1B at 4×2048 tokens: 8,192 × 128,256 logits × 12 B (log-probs, NLL gradient, logits gradient) = 12.6 GB
    at the loss backward, where the measured peak sits (transformers' ForCausalLMLoss upcasts to fp32)."""
    _, est = _estimate("1b-amp")
    inputs = est.memory.activations.inputs
    assert inputs["phase"] == "loss backward"
    assert inputs["head_and_loss"] > 12 * 8192 * 128256


def test_capacity_is_what_pytorch_can_allocate_and_a_near_miss_is_tight():
    """The H100 reports 81,559 MiB, of which the driver reserves 480 (nvidia-smi -q): PyTorch's OOM message
    names 79.18 GiB. A plan within the allocator's fragmentation margin of that is 'tight', not plainly 'fits'."""
    _, est = _estimate("1b-amp")
    assert est.memory.capacity.value == (81559 - 480) * 2**20
    assert round(est.memory.capacity.value / GIB, 2) == 79.18
    assert est.memory.fits and not est.memory.tight  # 48 of 79 GiB
    margin = est.memory.margin
    assert 0 < margin < 0.06 * est.memory.total.value
    from dataclasses import replace

    squeezed = replace(est.memory, capacity=est.memory.capacity._replace(value=est.memory.total.value + margin / 2))
    assert squeezed.fits and squeezed.tight


def test_a_layout_the_framework_cannot_run_is_refused_naming_the_fix():
    """The Hugging Face Trainer has no tensor parallelism: TP 2 under its profile is a layout error, not an
    estimate of something nobody can run."""
    from llmplan.errors import LayoutError

    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.2-1B"),
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=2), workload="finetune",
                       training=TrainingSettings(framework="hf-trainer"), parallelism=ParallelLayout(tp=2))
    with pytest.raises(LayoutError, match=r"no TP parallelism; set parallelism\.tp to 1"):
        evaluate_plan(doc)


def test_the_search_says_the_dtype_is_missing_not_that_nothing_fits():
    """fp8 on a V100 (no fp8 tensor cores): the automatic layout reports the dtype, the real reason."""
    import pytest as _pytest

    from llmplan.core.search import search
    from llmplan.errors import InputError
    from llmplan.plan.resolve import resolve

    doc = PlanDocument(model=ModelRef(id="meta-llama/Llama-3.2-1B"), hardware=HardwareRef(gpu="nvidia-v100-sxm2-32gb"),
                       workload="finetune", training=TrainingSettings(precision="fp8"))
    with _pytest.raises(InputError, match="no fp8 tensor cores"):
        search(resolve(doc), top=1)


def test_a_host_bound_run_is_named_host_bound():
    """The checkpointed QLoRA run: 146 ms of its 570 ms are the host's beyond the GPU's (26%), so the one sentence
    names the host, not the matrix multiplies; the GPU-bound LoRA run at 2 × 2,048 keeps its own."""
    qlora = _estimate("8b-qlora-ckpt")[1]
    assert qlora.bottleneck.kind == "host CPU" and qlora.bottleneck.statement.startswith("Host-bound:")
    assert _estimate("8b-lora")[1].bottleneck.kind != "host CPU"
