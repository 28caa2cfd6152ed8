"""Llama-2-70B LoRA and QLoRA sharded over several GPUs, as PEFT's docs publish them (issue 26).

Source: huggingface/peft docs/source/accelerate/deepspeed.md and fsdp.md (commit 5d602fd, 2026-08-21; the
LoRA runs were added in aa2ca83ca, 2024-02-26, the QLoRA runs in 6008f272a, 2024-03-13 and later revised; the
docs ask for bitsandbytes ≥ 0.43.3, accelerate ≥ 1.0.1, transformers > 4.44.2, trl > 0.11.4, peft > 0.13.0).
Every run is PEFT's examples/sft/train.py (TRL's SFTTrainer) on meta-llama/Llama-2-70b-hf with
``--max_seq_len 2048 --packing True --bf16 True --gradient_checkpointing True --use_flash_attn True --lora_r 8
--lora_alpha 16 --lora_dropout 0.1 --lora_target_modules all-linear``; QLoRA adds ``--use_nested_quant True
--bnb_4bit_quant_storage_dtype bfloat16`` (the model loaded in bf16, the NF4 bytes stored in bf16 elements so
that FSDP and ZeRO-3 can shard them). The memory figures are the docs' "memory consumed per GPU" (read from
nvidia-smi: "64 GB (80%)" of an 80 GB H100), so llmplan's total with the CUDA context is compared.

| run | accelerate config | GPUs | batch × accumulation | published per GPU |
|---|---|---|---|---|
| ZeRO-3 + LoRA | deepspeed_config.yaml: zero_stage 3, no offload | 8 × H100 80GB | 8 × 4 | 64 GB |
| ZeRO-3 + QLoRA | deepspeed_config_z3_qlora.yaml | 2 × 40 GB (A100 40GB) | 2 × 2 | 36.6 GB |
| FSDP + QLoRA + CPU offload | fsdp_config_qlora.yaml: FULL_SHARD, offload_params, BACKWARD_PRE | 2 × 24 GB | 2 × 2 | 19.6 GB |
| FSDP + QLoRA, offload off | the same without offload_params | not named | 2 × 2 | 35.6 GB |

How each is planned (hf-trainer profile, ``training.loss = upcast_shifted``: transformers before PR #35646,
2025-01-13, made a shifted fp32 copy of the logits): the ZeRO-3 runs are the profile's DeepSpeed engine
(``zero_engine = deepspeed``, ``core.training.deepspeed_zero``); the FSDP runs are accelerate's FSDP, the same
profile with ``zero_engine = native`` (what a user frameworks.toml entry sets) and ``training.zero_stage`` 3
(``offload = cpu`` with ``offload_params`` for CPU offload). Under either, TRL's SFTTrainer skips
prepare_model_for_kbit_training for a sharded 4-bit model (``is_sharded_qlora``, TRL PR #1416), so the
embeddings, head and norms stay bf16 (``framework_profile.kbit_upcast``; before that was read, the FSDP QLoRA
run without offload was planned at 35.5 GiB with an fp32 residual stream it does not have).

Results (2026-11-27), llmplan ÷ published − 1: every run is under: ZeRO-3 + LoRA −17%, ZeRO-3 + QLoRA −22%,
FSDP + QLoRA −20%, FSDP + QLoRA with CPU offload −50%. The issue's 10% is not met. The ZeRO-3 gap (11 GiB on
the 8 × H100 run) matches the one the Qwen table leaves under ZeRO-3 (about 10 GiB per GPU for 72B LoRA): it
is not in the allocation llmplan prices, and the docs' figure is nvidia-smi's, which also counts what the
caching allocator holds free and NCCL's own buffers; with CPU offload, where llmplan keeps only the
activations and one or two gathered blocks on the GPU (9.8 GiB), Answer.AI's 70B run with CPU offload shows a
gap of the same kind (test_fsdp_qlora_answerai.py: 14.9 GiB reserved against 9.3). Nothing found in the code
read gives those bytes, so the rows are pinned. Every published run fits its GPUs.

Set aside: FSDP + LoRA on 8 × H100 ("72-80 GB"). At aa2ca83ca, when it was measured, examples/sft/utils.py
loaded the model without ``torch_dtype`` (fp32), so FSDP's flat parameters were fp32 shards cast to bf16 when
gathered; llmplan has no field for a frozen LoRA base kept in fp32 under bf16 autocast (the ZeRO-3 run of the
same script is cast to bf16 by DeepSpeed, so it is usable).
"""

from __future__ import annotations

import pytest

from llmplan.core.engine import estimate
from llmplan.core.framework_profile import kbit_upcast
from llmplan.core.training.ops import residual_bytes
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

GIB = 2**30
L70 = "meta-llama/Llama-2-70b-hf"
H100, A100_40, A100_80, RTX4090 = ("nvidia-h100-sxm-80gb", "nvidia-a100-sxm4-40gb", "nvidia-a100-sxm4-80gb",
                                   "nvidia-rtx-4090-24gb")

# name: (published GB per GPU, method, GPU, GPUs, micro-batch, accumulation, engine, CPU offload, recorded error)
RUNS = {
    "zero3-lora-8xh100": (64.0, "lora", H100, 8, 8, 4, "deepspeed", False, -0.173),
    "zero3-qlora-2x40gb": (36.6, "qlora", A100_40, 2, 2, 2, "deepspeed", False, -0.220),
    "fsdp-qlora-offload-2x24gb": (19.6, "qlora", RTX4090, 2, 2, 2, "native", True, -0.499),
    "fsdp-qlora": (35.6, "qlora", A100_80, 2, 2, 2, "native", False, -0.202),  # GPU not named: memory only
}


def scenario(method: str, gpu: str, gpus: int, batch: int, accumulation: int, engine: str, offload: bool):
    t = TrainingSettings(framework="hf-trainer", method=method, seq_len=2048, micro_batch=batch,
                         global_batch=batch * gpus * accumulation, recompute="full", lora_rank=8, lora_dropout=0.1,
                         loss="upcast_shifted", zero_stage=3, offload="cpu" if offload else "none",
                         offload_params=offload)
    sc = resolve(PlanDocument(model=ModelRef(id=L70), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
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
    moved = {name: round(e, 3) for name, (_, e) in results.items() if abs(e - RUNS[name][-1]) > 0.03}
    assert not moved, moved


def test_sharded_qlora_keeps_its_16_bit_embeddings_head_and_norms():
    """TRL's SFTTrainer and axolotl skip prepare_model_for_kbit_training when the 4-bit model is sharded
    (FSDP / ZeRO-3): no fp32 residual stream, and 2 B, not 4, per embedding and head weight."""
    def plan(zero_stage: int):
        t = TrainingSettings(framework="axolotl", method="qlora", seq_len=2048, micro_batch=1, global_batch=2,
                             recompute="full", zero_stage=zero_stage)
        return resolve(PlanDocument(model=ModelRef(id=L70), hardware=HardwareRef(gpu=A100_80, gpus_per_node=2),
                                    workload="finetune", training=t, parallelism=ParallelLayout(dp=2)))
    replicated, sharded = plan(0), plan(3)
    prof = sharded.framework_profile
    assert prof.kbit_fp32_modules
    assert kbit_upcast("qlora", "nf4", prof) and not kbit_upcast("qlora", "nf4", prof, zero_stage=3)
    assert residual_bytes(replicated.training, prof) == 4.0
    assert residual_bytes(sharded.training, prof) == 2.0
    vocab_weights = 2 * 32_000 * 8192  # Llama-2-70B's embeddings and head, untied
    w0, w3 = (estimate(sc).memory.weights.value for sc in (replicated, sharded))
    assert w0 - 2 * w3 == pytest.approx(vocab_weights * 2, rel=0.02)  # fp32 → bf16, whole vs two shards
