"""Peak memory of torchtune's published runs, from the recipe configs' switches (issue 26).

Sources (pytorch/torchtune README.md):
- "Memory and training speed", added in commit 30b8519e8 (2024-09-24, #1664), still in bd2a0fc7 (2026-04-23):
  Llama 3.1, batch size 2, no gradient accumulation, a dataset packed to 2,048 tokens, torch.compile on; the
  recipe configs recipes/configs/llama3_1/{8B_full_single_device, 8B_lora_single_device,
  8B_qlora_single_device, 70B_lora}.yaml (bf16; chunked cross-entropy; activation checkpointing on; the
  full config: PagedAdamW8bit with optimizer_in_bwd; LoRA rank 8 on q and v (8B LoRA), on q, k, v, output_proj
  and the MLP (8B QLoRA), rank 16 on q, k and v (70B); 70B on 8 A100 under FSDP2; the 70B full row ("Uses CPU offload with fused optimizer") is
  recipes/configs/llama3_1/70B_full.yaml at 30b8519e8: torch.optim.AdamW(fused=True), fsdp_cpu_offload: True
  (FSDP2's CPUOffloadPolicy: parameters, gradients and optimizer states on the host, the step on the CPU),
  tok_embeddings and output sharded as their own units (custom_sharded_layers), no optimizer_in_bwd in the
  distributed recipe of that commit).
- "Optimization flags", added in commit 1814feb17 (2024-11-18, #2003): full_finetune_single_device, Llama
  3.2 3B, batch size 2, sequence length 4,096, bf16, A100, each technique added on top of the previous one;
  LoRA (3B_lora_single_device: rank 64, q, v, output_proj and the MLP) and QLoRA without optimizer_in_bwd
  or the 8-bit optimizer.
torchtune reports torch.cuda's peak active bytes ("Peak Memory Active"), so the estimate compared is the
bytes PyTorch's allocator holds at the peak: llmplan's total less its overhead (CUDA context and the
allocator's fragmentation), which torch's statistics do not count. Nothing here was fitted: the terms are
those of the torchtune profile and its switches, read from torchtune's code.

Tolerance: the issue's, median |error| ≤ 10% and no row more than 10% under. Results (2026-11-25):
3B: packed −0.1%, + compile +0.4%, + chunked CE −2.9%, + checkpointing +0.8%, + optimizer in backward
−3.1%, + activation offload −2.9%, LoRA +5.5%, QLoRA +11.3%; 8B on a 4090: full −3.9%, LoRA +6.8%, QLoRA
+4.7%; 70B LoRA on 8 A100 −3.9%; 70B full with CPU offload on 8 A100 −2.8%; median |error| 3.1% (2026-11-27).
Under FSDP2 each GPU holds, beside its shards, the block gathered with its gradients and the next block's
all-gather issued ahead (FSDPParamGroup._backward_prefetch; the forward's all-gather output kept until the
next copy-out): without that prefetched block the 70B full row was −14%.

Rows not reproduced, kept apart:
- 3B "+ 8-bit AdamW" (17.6 GiB): estimated 15.2 GiB (−13.7%). Its 4.2 GiB saving is smaller than the
  states' 6 GiB at the 2.03 B per parameter of torchao's AdamW8bit (uint8 codes + an fp32 scale per 256)
  or bitsandbytes' AdamW8bit; bitsandbytes' PagedAdamW8bit would leave the allocator's statistics
  altogether. The README does not name the optimizer; the gap is not explained by the code read.
- 8B on one A6000 (full 37.4, LoRA 30.3 GiB): twice the 4090 rows, which share the recipe config; a
  48 GB card needs no extra memory for the same run, so those runs used settings the README does not
  state (with checkpointing off the full row would be 35.2 GiB, −6%, but the LoRA row 34.3, +13%).
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

GIB = 2**30
L3, L8, L70 = "meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"
A100, RTX4090 = "nvidia-a100-sxm4-80gb", "nvidia-rtx-4090-24gb"
TUNE_LORA = ("q", "v", "o", "gate", "up", "down")  # lora_attn_modules [q_proj, v_proj, output_proj] + MLP
_3B = dict(method="full", seq_len=4096, optimizer="adamw", recompute="none", loss="upcast", torch_compile=False,
           optimizer_in_backward=False, activation_offload=False)
_3B_STEPS = {  # "Optimization flags": cumulative, as the README adds them
    "packed": (60.0, {}),
    "compile": (51.0, dict(torch_compile=True)),
    "chunked-ce": (42.9, dict(loss="chunked")),
    "checkpointing": (24.9, dict(recompute="full")),
    "optimizer-in-backward": (23.1, dict(optimizer_in_backward=True)),
    "activation-offload": (21.8, dict(activation_offload=True)),
}
_3B_LORA = dict(_3B, lora_rank=64, lora_targets=TUNE_LORA, torch_compile=True, loss="chunked", recompute="full",
                activation_offload=True)
_31 = dict(seq_len=2048, torch_compile=True, recompute="full")  # "Memory and training speed"


def _rows() -> dict[str, tuple[float, str, str, int, dict]]:
    rows, kw = {}, dict(_3B)
    for name, (gib, upd) in _3B_STEPS.items():
        kw = {**kw, **upd}
        rows[f"3b-{name}"] = (gib, L3, A100, 1, kw)
    rows["3b-lora"] = (8.5, L3, A100, 1, dict(_3B_LORA, method="lora"))
    rows["3b-qlora"] = (4.6, L3, A100, 1, dict(_3B_LORA, method="qlora"))
    rows["8b-full-4090"] = (18.9, L8, RTX4090, 1, dict(_31, method="full", optimizer="adam8bit",
                                                      paged_optimizer=True, optimizer_in_backward=True))
    rows["8b-lora-4090"] = (16.2, L8, RTX4090, 1, dict(_31, method="lora", lora_rank=8, lora_targets=("q", "v")))
    rows["8b-qlora-4090"] = (7.4, L8, RTX4090, 1, dict(_31, method="qlora", lora_rank=8,
                                                       lora_targets=("q", "k", "v", "o", "gate", "up", "down")))
    rows["70b-lora-8xa100"] = (27.6, L70, A100, 8, dict(_31, method="lora", lora_rank=16,
                                                        lora_targets=("q", "k", "v")))
    rows["70b-full-offload-8xa100"] = (13.9, L70, A100, 8, dict(_31, method="full", optimizer="adamw",
                                                                optimizer_in_backward=False, offload="cpu",
                                                                offload_params=True))
    return rows


ROWS = _rows()


def _allocated_gib(model: str, gpu: str, gpus: int, kw: dict) -> float:
    t = TrainingSettings(framework="torchtune", micro_batch=2, global_batch=2 * gpus,
                         zero_stage=3 if gpus > 1 else 0, **kw)  # the distributed recipes shard with FSDP2
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=gpus),
                              workload="pretrain" if t.method == "full" else "finetune", training=t,
                              parallelism=ParallelLayout(dp=gpus)))
    m = estimate(sc).memory
    return (m.total.value - m.overhead.value) / GIB


def _errors() -> dict[str, float]:
    return {name: _allocated_gib(model, gpu, n, kw) / gib - 1 for name, (gib, model, gpu, n, kw) in ROWS.items()}


def test_torchtune_tables_median_within_ten_percent_and_no_row_ten_percent_under():
    err = _errors()
    assert statistics.median(abs(e) for e in err.values()) <= 0.10, err
    under = {k: round(e, 3) for k, e in err.items() if e < -0.10}
    assert not under, under
    assert max(err.values()) <= 0.15, err  # the worst over-estimate (3B QLoRA) is +11%


@pytest.mark.parametrize("name", ["3b-optimizer-in-backward", "3b-activation-offload"])
def test_each_switch_moves_the_estimate_the_published_way(name):
    """Each step of the flags table lowers the peak as the README's does, within 10% of its change."""
    steps = list(_3B_STEPS)
    prev = f"3b-{steps[steps.index(name[3:]) - 1]}"
    got = [_allocated_gib(*ROWS[r][1:4], ROWS[r][4]) for r in (prev, name)]
    published = ROWS[prev][0] - ROWS[name][0]
    assert got[0] - got[1] > 0
    assert abs((got[0] - got[1]) - published) <= 0.1 * ROWS[prev][0]


def test_fsdp2_holds_the_prefetched_block():
    """70B full with CPU offload on 8 A100 (13.9 GiB): the step's peak is the first block's backward, and the
    next block's prefetched all-gather (one block of bf16 weights, 856M parameters = 1.59 GiB) is part of it."""
    name = "70b-full-offload-8xa100"
    gib, model, gpu, n, kw = ROWS[name]
    got = _allocated_gib(model, gpu, n, kw)
    assert abs(got / gib - 1) <= 0.10, got
    layer = (8192 * (8192 + 2 * 1024 + 8192) + 3 * 8192 * 28_672 + 2 * 8192) * 2 / GIB  # Llama 3.1 70B block
    t = TrainingSettings(framework="torchtune", micro_batch=2, global_batch=16, zero_stage=3, **kw)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=n),
                              workload="pretrain", training=t, parallelism=ParallelLayout(dp=n)))
    buffers = estimate(sc).memory.buffers.value / GIB
    assert buffers == pytest.approx(3 * layer, rel=1e-3)  # gathered weights + their gradients + the prefetched


def test_the_unexplained_eight_bit_row_stays_recorded():
    """3B "+ 8-bit AdamW" (17.6 GiB): −13.7% with torchao/bitsandbytes AdamW8bit's 2.03 B per parameter
    (module doc). Kept so that a change to the 8-bit states shows here."""
    kw = {**ROWS["3b-activation-offload"][4], "optimizer": "adam8bit"}
    got = _allocated_gib(L3, A100, 1, kw)
    assert got / 17.6 - 1 == pytest.approx(-0.137, abs=0.02)
