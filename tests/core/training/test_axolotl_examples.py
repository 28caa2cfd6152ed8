"""The VRAM axolotl's example READMEs state for their configs, planned with the axolotl profile (issue 26).

Source: axolotl-ai-cloud/axolotl at commit 067b021c8 (2026-07-24), each example's README and config:
- examples/devstral/devstral-small-qlora.yml (config at e4032fc90, 2026-05-05): mistralai/Devstral-Small-2507,
  QLoRA (4-bit) r 32 on every linear layer, dropout 0, ``sequence_len 2048``, ``sample_packing``, micro-batch 2,
  accumulation 4, adamw_torch, bf16, gradient checkpointing, flash attention 2, the Cut Cross Entropy plugin.
  README: "This config uses about 21GB VRAM".
- examples/magistral/magistral-small-qlora.yaml (same commit): mistralai/Magistral-Small-2506, the same but
  dropout 0.05 and adamw_bnb_8bit. README: "This config uses about 24GB VRAM".
- examples/llama-3/fft-8b.yaml (15f7910d3, 2024-04-18): meta-llama/Meta-Llama-3-8B full fine-tune,
  ``sequence_len 8192`` packed, micro-batch 1, accumulation 8, paged_adamw_8bit, bf16, gradient checkpointing,
  flash attention. README: "Full Fine Tune - Single GPU @ 48GB VRAM".
- examples/llama-3/qlora-fsdp-70b.yaml (same commit): Llama 3 70B QLoRA r 8, dropout 0.05, ``sequence_len
  512`` padded, micro-batch 1, accumulation 4, adamw_torch, reentrant checkpointing, FSDP full_shard with
  ``fsdp_offload_params`` and ``fsdp_cpu_ram_efficient_loading``. README: "QLORA+FSDP - Dual GPU @ 21GB VRAM".
Devstral and Magistral Small are Mistral Small 24B (2501) in architecture (40 layers, hidden 5,120, vocabulary
131,072), so that catalog entry is planned. The READMEs name no GPU and not how the figure was read; it is
compared with llmplan's total (the figure a card must hold). The 2024 configs ran transformers 4.40, whose
LlamaForCausalLM upcast and shifted the logits (``loss = upcast_shifted``). Cut Cross Entropy never
materialises the logits; it is planned as the fused linear cross-entropy (``loss = fused_linear``), which keeps
two chunks of bf16 logits (here 256 rows × 131,072 = 64 MiB each), so at most 128 MiB more than CCE holds.

What the axolotl profile does, from axolotl's loader (test_axolotl_dtypes.py): a full fine-tune is pure bf16;
a QLoRA run's norms, embeddings and head are bf16 again after prepare_model_for_kbit_training. Before those
two were read (2026-11-27): Devstral +30%, Magistral +11%, Llama 3 8B full fine-tune 96.9 GiB (+102%).

Results (2026-11-27; the 70B row 2026-11-28), llmplan ÷ published − 1: Devstral +2.5%, Magistral −13.8%, Llama
3 8B full +1.4%, Llama 3 70B QLoRA + FSDP with CPU offload −62% (8.0 GiB per GPU against 21 GB; −64%, 7.5 GiB,
before the allocator's side-stream reserve: ``core.training.allocator_reserve``, one gathered block awaiting its
``record_stream`` event under FSDP1's ``limit_all_gathers``); median |error| 8.2%. The 70B row is the fourth FSDP
+ CPU offload run that llmplan puts far under (PEFT −43%, Schmid −28%, Answer.AI −28%: test_hf_sharded_runs.py,
test_fsdp_qlora_answerai.py); with 512 tokens its activations are small, so the published figure is mostly what
FSDP's loading with ``cpu_ram_efficient_loading`` leaves in the caching allocator and what the gathers leave
beyond the one block the code bounds, which no code read prices. Magistral and Devstral differ only in dropout and the 8-bit
optimizer, yet Magistral's figure is 3 GB higher; nothing in the code explains that (dropout under checkpointing
adds one block's dropped inputs, 0.25 GiB here). Every example fits the GPUs its README names.
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

from .helpers import off_record

GIB = 2**30
MISTRAL_SMALL, L3_8, L3_70 = ("mistralai/Mistral-Small-24B-Base-2501", "meta-llama/Meta-Llama-3-8B",
                              "meta-llama/Meta-Llama-3-70B")
H100, RTX4090 = "nvidia-h100-sxm-80gb", "nvidia-rtx-4090-24gb"
_CCE_QLORA = dict(method="qlora", seq_len=2048, micro_batch=2, global_batch=8, recompute="full", lora_rank=32,
                  loss="fused_linear")
# name: (published GB per GPU, model, GPU, GPUs, plan fields, llmplan's error recorded 2026-11-27)
EXAMPLES = {
    "devstral-small-qlora": (21, MISTRAL_SMALL, H100, 1, dict(_CCE_QLORA, lora_dropout=0.0, optimizer="adamw"),
                             0.025),
    "magistral-small-qlora": (24, MISTRAL_SMALL, H100, 1, dict(_CCE_QLORA, lora_dropout=0.05, optimizer="adam8bit"),
                              -0.138),
    "llama-3-fft-8b": (48, L3_8, H100, 1, dict(method="full", seq_len=8192, micro_batch=1, global_batch=8,
                                               recompute="full", optimizer="adam8bit", paged_optimizer=True,
                                               loss="upcast_shifted"), 0.014),
    "llama-3-qlora-fsdp-70b": (21, L3_70, RTX4090, 2, dict(method="qlora", seq_len=512, micro_batch=1, global_batch=8,
                                                           recompute="full", lora_rank=8, lora_dropout=0.05,
                                                           zero_stage=3, offload="cpu", offload_params=True,
                                                           loss="upcast_shifted"), -0.621),
}


def estimate_example(name: str):
    _, model, gpu, gpus, kw, _ = EXAMPLES[name]
    t = TrainingSettings(framework="axolotl", **kw)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                              workload="pretrain" if t.method == "full" else "finetune", training=t,
                              parallelism=ParallelLayout(dp=gpus)))
    return estimate(sc)


@pytest.fixture(scope="module")
def results():
    out = {}
    for name, (gb, *_rest) in EXAMPLES.items():
        est = estimate_example(name)
        out[name] = (est, est.memory.total.value / GIB / gb - 1)
        print(f"{name:24s} published about {gb} GB  ours {est.memory.total.value / GIB:5.1f} GiB  "
              f"{out[name][1]:+.1%}  fits {est.memory.fits}")
    return out


def test_every_example_fits_its_gpus(results):
    assert all(est.memory.fits for est, _ in results.values())


def test_median_and_each_example_at_its_recorded_error(results):
    """Median |error| within the issue's 10%; each row pinned ± 3 points (the 70B row far under: module doc)."""
    err = {name: e for name, (_, e) in results.items()}
    assert statistics.median(abs(e) for e in err.values()) <= 0.10, err
    moved = off_record(err, {name: row[-1] for name, row in EXAMPLES.items()})
    assert not moved, moved
