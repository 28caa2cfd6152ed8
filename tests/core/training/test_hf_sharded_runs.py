"""Llama 70B LoRA and QLoRA sharded over several GPUs with the Hugging Face stack (issue 26): the runs PEFT's
docs and Philipp Schmid's FSDP + QLoRA post publish.

Sources:
- huggingface/peft docs/source/accelerate/deepspeed.md and fsdp.md (commit 5d602fd, 2026-08-21; the LoRA runs
  were added in aa2ca83ca, 2024-02-26, the QLoRA runs in 6008f272a, 2024-03-13 and later revised; the docs ask
  for bitsandbytes ≥ 0.43.3, accelerate ≥ 1.0.1, transformers > 4.44.2, trl > 0.11.4, peft > 0.13.0). Every run
  is PEFT's examples/sft/train.py (TRL's SFTTrainer) on meta-llama/Llama-2-70b-hf with ``--max_seq_len 2048
  --packing True --bf16 True --gradient_checkpointing True --use_flash_attn True --lora_r 8 --lora_alpha 16
  --lora_dropout 0.1 --lora_target_modules all-linear``; QLoRA adds ``--use_nested_quant True
  --bnb_4bit_quant_storage_dtype bfloat16`` (the model loaded in bf16, the NF4 bytes stored in bf16 elements
  so that FSDP and ZeRO-3 can shard them). The figures are the docs' "memory consumed per GPU" (read from
  nvidia-smi: "64 GB (80%)" of an 80 GB H100), so llmplan's total with the CUDA context is compared.
- philschmid/deep-learning-pytorch-huggingface training/fsdp-qlora-distributed-llama3.ipynb (commit 4a0caad,
  2024-04-22; torch 2.2.2, transformers 4.40.0, accelerate 0.29.3, bitsandbytes 0.43.1, trl 0.8.6, peft 0.10.0)
  with scripts/run_fsdp_qlora.py: meta-llama/Meta-Llama-3-70B, QLoRA (double quantisation, bf16 quant storage,
  SDPA), LoRA r 16, alpha 8, dropout 0.05, all-linear; ``max_seq_len 3072`` packed, batch 1, accumulation 2,
  bf16, gradient checkpointing (reentrant); ``fsdp: "full_shard auto_wrap offload"``, backward_pre, on
  4 × A10G: "FSDP + Q-Lora + CPU offloading needs 4x24GB GPUs, with 22 GB/GPU ... with a sequence length of
  3072 and a batch size of 1", and without offload "This only works on > 40GB GPUs".

| run | accelerate config | GPUs | batch × accumulation | published per GPU |
|---|---|---|---|---|
| ZeRO-3 + LoRA | deepspeed_config.yaml: zero_stage 3, no offload | 8 × H100 80GB | 8 × 4 | 64 GB |
| ZeRO-3 + QLoRA | deepspeed_config_z3_qlora.yaml | 2 × 40 GB (A100 40GB) | 2 × 2 | 36.6 GB |
| FSDP + QLoRA + CPU offload | fsdp_config_qlora.yaml: FULL_SHARD, offload_params, BACKWARD_PRE | 2 × 24 GB | 2 × 2 | 19.6 GB |
| FSDP + QLoRA, offload off | the same without offload_params | not named | 2 × 2 | 35.6 GB |
| Llama 3 70B FSDP + QLoRA + CPU offload (Schmid) | full_shard auto_wrap offload | 4 × A10G | 1 × 2, 3,072 tokens | 22 GB |

How each is planned (hf-trainer profile, ``training.loss = upcast_shifted``: transformers before PR #35646,
2025-01-13, made a shifted fp32 copy of the logits): the ZeRO-3 runs are the profile's DeepSpeed engine
(``zero_engine = deepspeed``, ``core.training.deepspeed_zero``); the FSDP runs are accelerate's FSDP, the same
profile with ``zero_engine = native`` (what a user frameworks.toml entry sets) and ``training.zero_stage`` 3
(``offload = cpu`` with ``offload_params`` for CPU offload). Under either, TRL's SFTTrainer skips
prepare_model_for_kbit_training for a sharded 4-bit model (``is_sharded_qlora``, TRL PR #1416), so the
embeddings, head and norms stay bf16 (``framework_profile.kbit_upcast``; before that was read, the FSDP QLoRA
run without offload was planned at 35.5 GiB with an fp32 residual stream it does not have).

FSDP1 (accelerate's, under the Trainer) keeps its root unit gathered from the forward to the backward, and
accelerate's TRANSFORMER_BASED_WRAP with PEFT's policy leaves the embeddings, final norm and head in it
(``FrameworkProfile.fsdp_root_unsharded``, set for hf-trainer, axolotl and LLaMA-Factory): 0.98 GiB for
Llama-2-70B, 3.9 GiB for Llama 3 70B's 128K vocabulary.

Results (2026-11-28), llmplan ÷ published − 1: every run is under: ZeRO-3 + LoRA −16%, ZeRO-3 + QLoRA −21%,
FSDP + QLoRA −16%, FSDP + QLoRA with CPU offload −43% (PEFT) and −28% (Schmid). The issue's 10% is not met.
The docs' figure is nvidia-smi's, which counts what the caching allocator holds beyond the allocation. What
the allocator's and the frameworks' code give for that is priced (``core.training.allocator_reserve``): FSDP1
and DeepSpeed ZeRO-3 gather on a side stream and free with ``record_stream`` onto the compute stream, so at
least one gathered block more than the allocation is reserved (FSDP1's rate limiter makes it exactly one;
DeepSpeed's does not bound it, its host may run further ahead), and DeepSpeed's flat all-gather buffer is held
beside its per-parameter copies; the side stream's pool keeps the most it ever gathered (under DeepSpeed the
output head through the loss) whatever the peak phase holds. Before that term (2026-11-27) → after: ZeRO-3 +
LoRA −17.3% → −15.6% (51.9 → 54.0 GiB: the 70B block, 1.6 GiB, and a 0.55 GiB fetch), ZeRO-3 + QLoRA −22.1% →
−21.1%, FSDP + QLoRA −17.3% → −16.2%, with CPU offload −44.7% → −42.6%, Schmid's −29.6% → −27.7%. The ZeRO-3
gap left (10 GiB on the 8 × H100 run) matches the one the Qwen table leaves under ZeRO-3 (about 9 GiB per GPU
for 72B LoRA): more blocks awaiting the compute stream than the one the code guarantees would give it (6 of
70B's 1.6 GiB blocks), and DeepSpeed's code does not bound how many; NCCL's own buffers are outside PyTorch's
allocator too. With CPU offload, where llmplan keeps only the activations, the root and one or two gathered
blocks on the GPU, Answer.AI's 70B run with CPU offload shows a gap of the same kind
(test_fsdp_qlora_answerai.py). Nothing found in the code read gives those bytes, so the rows are pinned.
Verdicts: every published run fits its GPUs, and Schmid's run without CPU offload does not fit an A10G (26.39
GiB against 22.49 usable; "This only works on > 40GB GPUs"): without the root term it was called "fits" at
22.05 GiB. Before the root term, FSDP + QLoRA was −20% and its CPU-offload run −50% (and −48% for Schmid's).

Set aside: FSDP + LoRA on 8 × H100 ("72-80 GB"). At aa2ca83ca, when it was measured, examples/sft/utils.py
loaded the model without ``torch_dtype`` (fp32), so FSDP's flat parameters were fp32 shards cast to bf16 when
gathered; llmplan has no field for a frozen LoRA base kept in fp32 under bf16 autocast (the ZeRO-3 run of the
same script is cast to bf16 by DeepSpeed, so it is usable).
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import in_effect, kbit_upcast
from llmplan.core.training.ops import residual_bytes
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

from .helpers import off_record

GIB = 2**30
L70, L3_70 = "meta-llama/Llama-2-70b-hf", "meta-llama/Meta-Llama-3-70B"
H100, A100_40, A100_80, RTX4090, A10G = ("nvidia-h100-sxm-80gb", "nvidia-a100-sxm4-40gb", "nvidia-a100-sxm4-80gb",
                                         "nvidia-rtx-4090-24gb", "nvidia-a10g-24gb")

# name: (published GB per GPU, method, GPU, GPUs, micro-batch, accumulation, engine, CPU offload, recorded error)
RUNS = {
    "zero3-lora-8xh100": (64.0, "lora", H100, 8, 8, 4, "deepspeed", False, -0.156),
    "zero3-qlora-2x40gb": (36.6, "qlora", A100_40, 2, 2, 2, "deepspeed", False, -0.211),
    "fsdp-qlora-offload-2x24gb": (19.6, "qlora", RTX4090, 2, 2, 2, "native", True, -0.426),
    "fsdp-qlora": (35.6, "qlora", A100_80, 2, 2, 2, "native", False, -0.162),  # GPU not named: memory only
}
SCHMID = dict(model=L3_70, method="qlora", seq_len=3072, lora_rank=16, lora_dropout=0.05, gpus=4, batch=1,
              accumulation=2)


def scenario(method: str, gpu: str, gpus: int, batch: int, accumulation: int, engine: str, offload: bool,
             model: str = L70, seq_len: int = 2048, lora_rank: int = 8, lora_dropout: float = 0.1):
    t = TrainingSettings(framework="hf-trainer", method=method, seq_len=seq_len, micro_batch=batch,
                         global_batch=batch * gpus * accumulation, recompute="full", lora_rank=lora_rank,
                         lora_dropout=lora_dropout, loss="upcast_shifted", zero_stage=3,
                         offload="cpu" if offload else "none", offload_params=offload)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                              workload="finetune", training=t, parallelism=ParallelLayout(dp=gpus)))
    if engine == "native":  # accelerate's FSDP under the Trainer, not DeepSpeed
        sc = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
            update={"zero_engine": "native"})})
    return sc


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, (gb, *args, _) in RUNS.items():
        est = estimate(scenario(*args))
        out[name] = (est, est.memory.total.value / GIB / gb - 1)
        print(f"{name:28s} published {gb:5.1f} GB/GPU  ours {est.memory.total.value / GIB:5.1f} GiB  "
              f"{out[name][1]:+.1%}  fits {est.memory.fits}")
    return out


def test_every_published_run_fits(results):
    assert all(est.memory.fits for name, (est, _) in results.items() if name != "fsdp-qlora")


def test_each_run_stays_at_its_recorded_error(results):
    """Every run is under (module doc); each is pinned to its recorded error ± 3 points."""
    moved = off_record({name: e for name, (_, e) in results.items()}, {name: row[-1] for name, row in RUNS.items()})
    assert not moved, moved


def schmid(gpu: str, offload: bool):
    k = SCHMID
    return scenario(k["method"], gpu, k["gpus"], k["batch"], k["accumulation"], "native", offload, k["model"],
                    k["seq_len"], k["lora_rank"], k["lora_dropout"])


def test_schmid_llama3_70b_fits_four_a10g_only_with_cpu_offload():
    """22 GB per GPU with CPU offload on 4 × A10G; without it "This only works on > 40GB GPUs"."""
    offloaded, kept = estimate(schmid(A10G, True)), estimate(schmid(A10G, False))
    got = offloaded.memory.total.value / GIB
    print(f"Schmid, CPU offload: published 22 GB/GPU, ours {got:.2f} GiB ({got / 22 - 1:+.1%}); without offload "
          f"{kept.memory.total.value / GIB:.2f} GiB of {kept.memory.capacity.value / GIB:.2f} usable")
    assert offloaded.memory.fits and not kept.memory.fits
    assert estimate(schmid(A100_40, False)).memory.fits
    assert got / 22 - 1 == pytest.approx(-0.277, abs=0.03)


def test_fsdp1_root_unit_stays_gathered():
    """The embeddings, final norm and head (Llama 3 70B: 2 × 128,256 × 8,192 + 8,192 parameters, bf16) are
    held whole on each GPU under FSDP1 with accelerate's wrapping; the DeepSpeed view and torchtune do not."""
    sc = schmid(A10G, True)
    root = (2 * 128_256 * 8192) * 2
    without = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
        update={"fsdp_root_unsharded": False})})
    got = estimate(sc).memory.buffers.value - estimate(without).memory.buffers.value
    assert got == pytest.approx(root, rel=1e-3)
    assert not in_effect(framework_profile("hf-trainer", "finetune", 2), 3).fsdp_root_unsharded  # ZeRO-3
    assert not framework_profile("torchtune", "finetune", 2).fsdp_root_unsharded  # custom_sharded_layers


def test_sharded_qlora_keeps_its_16_bit_embeddings_head_and_norms():
    """TRL's SFTTrainer skips prepare_model_for_kbit_training when the 4-bit model is sharded (FSDP / ZeRO-3):
    no fp32 residual stream, and 2 B, not 4, per embedding and head weight (hf-trainer under accelerate's FSDP)."""
    def plan(zero_stage: int):
        t = TrainingSettings(framework="hf-trainer", method="qlora", seq_len=2048, micro_batch=1, global_batch=2,
                             recompute="full", zero_stage=zero_stage)
        sc = resolve(PlanDocument(model=ModelRef(id=L70), hardware=HardwareRef(gpu=A100_80, gpus_per_node=2),
                                  workload="finetune", training=t, parallelism=ParallelLayout(dp=2)))
        return sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
            update={"zero_engine": "native", "fsdp_root_unsharded": False})})
    replicated, sharded = plan(0), plan(3)
    prof = sharded.framework_profile
    assert prof.kbit_fp32_modules
    assert kbit_upcast("qlora", "nf4", prof) and not kbit_upcast("qlora", "nf4", prof, zero_stage=3)
    assert residual_bytes(replicated.training, prof) == 4.0
    assert residual_bytes(sharded.training, prof) == 2.0
    vocab_weights = 2 * 32_000 * 8192  # Llama-2-70B's embeddings and head, untied
    w0, w3 = (estimate(sc).memory.weights.value for sc in (replicated, sharded))
    assert w0 - 2 * w3 == pytest.approx(vocab_weights * 2, rel=0.02)  # fp32 → bf16, whole vs two shards


def test_fsdp1_root_of_a_full_fine_tune_is_gathered_in_the_compute_dtype():
    """A full fine-tune under FSDP1 mixed precision gathers the root (embeddings and head) in bf16, the
    param_dtype its ``_full_param_padded`` is allocated in, whatever dtype its shards keep."""
    t = TrainingSettings(framework="axolotl", method="full", seq_len=2048, micro_batch=1, global_batch=2,
                         recompute="full", zero_stage=3)
    sc = resolve(PlanDocument(model=ModelRef(id="meta-llama/Llama-3.1-8B"),
                              hardware=HardwareRef(gpu=H100, gpus_per_node=2), workload="pretrain", training=t,
                              parallelism=ParallelLayout(dp=2)))
    without = sc.model_copy(update={"framework_profile": sc.framework_profile.model_copy(
        update={"fsdp_root_unsharded": False})})
    got = estimate(sc).memory.buffers.value - estimate(without).memory.buffers.value
    assert got == pytest.approx(2 * 128_256 * 4096 * 2, rel=1e-3)
