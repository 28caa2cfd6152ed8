"""Longest context that fits, against unsloth's published context-length table.

Source: the unsloth README, "Context length benchmarks": Llama 3.1 (8B) Instruct and Llama 3.3 (70B)
Instruct, 4-bit QLoRA on every linear layer (q, k, v, o, gate, up, down), rank 32, batch size 1, every
sequence padded to the maximum length; "Unsloth" (its kernels, fused cross-entropy, offloaded gradient
checkpointing) against "Hugging Face + FA2". Each row below is (GPU memory, unsloth, Hugging Face).
We plan it with the unsloth and hf-trainer profiles, gradient checkpointing on (recompute full), 8-bit
AdamW (the notebooks' optim="adamw_8bit"), on a catalog GPU of that memory. Nothing was fitted to this
table. Tolerance (the issue's): within one power-of-two step, i.e. a factor of 2 either way; the
results, recorded 2026-11-25 (the blocks' backward counting the other blocks' kept tensors, and unsloth's
checkpointer bringing back one layer input at a time): unsloth -24% … -9% (80 GB: 308,108 against
342,733), Hugging Face +11% …
+20% (80 GB: 34,130 against 28,454), and the 70B on 48 GB out of memory under Hugging Face, as published.

Why the columns miss, from the code (README commit e3162dc5bf, 2025-01-14; the table dates from Dec 2024):
- Hugging Face: transformers of the table's day computed ForCausalLMLoss as ``logits.float()`` then
  ``logits[..., :-1, :].contiguous()``, a second fp32 copy of the logits (removed by transformers PR
  #35646, merged 2025-01-13): 14 B per logit at the loss forward where today's code (modelled, and measured on
  an H100 with transformers 5.17) holds 10. A plan names that loss with ``training.loss = upcast_shifted``;
  with it the column comes to +4.5% … +6.9% (recorded 2026-11-27; test below, tolerance 10% per row).
- unsloth: its code (kernels/fast_lora.py LoRA_MLP saves X, e, g only and runs the SwiGLU backward in
  place, writing dX over X; the offloaded checkpointer brings back one layer input at a time) counts
  about 150 KB per token for Llama 3.1 8B where the table's slope (24 → 80 GB) implies 210-225 KB; the
  profile's terms (the MLP's down input saved, three MLP gradients at once) come to about 240 KB. The
  difference is not found in the code read, so the terms stay as they are.
"""

import pytest

from llmplan.core.training.limits import largest_micro_batch, longest_sequence
from llmplan.core.workload import TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.3-70B-Instruct"
# model, GPU of that memory, unsloth's context, Hugging Face + FA2's (0: out of memory)
ROWS = {
    "8b-24gb": (L8, "nvidia-rtx-4090-24gb", 78_475, 5_789),
    "8b-40gb": (L8, "nvidia-a100-sxm4-40gb", 153_977, 12_264),
    "8b-48gb": (L8, "nvidia-rtx-a6000-48gb", 191_728, 15_502),
    "8b-80gb": (L8, "nvidia-a100-sxm4-80gb", 342_733, 28_454),
    "70b-48gb": (L70, "nvidia-rtx-a6000-48gb", 12_106, 0),
    "70b-80gb": (L70, "nvidia-a100-sxm4-80gb", 89_389, 6_916),
}


def _scenario(model, gpu, framework, loss="auto"):
    t = TrainingSettings(method="qlora", lora_rank=32, micro_batch=1, global_batch=1, seq_len=2048,
                         recompute="full", zero_stage=0, optimizer="adam8bit", framework=framework, loss=loss)
    return resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu), workload="finetune",
                                training=t))


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("framework", ["unsloth", "hf-trainer"])
def test_longest_context_within_one_power_of_two(row, framework):
    model, gpu, unsloth, hf = ROWS[row]
    published = unsloth if framework == "unsloth" else hf
    got = longest_sequence(_scenario(model, gpu, framework))
    if published == 0:
        assert got == 0, f"{row}: published out of memory, estimate fits {got} tokens"
        return
    assert published / 2 <= got <= published * 2, f"{row} {framework}: {got} vs {published}"


@pytest.mark.parametrize("row", ROWS)
def test_hugging_face_column_with_the_loss_of_its_day_within_ten_percent(row):
    """The Hugging Face column with the transformers loss the table was measured with (``upcast_shifted``:
    the shifted fp32 copy removed by PR #35646 on 2025-01-13, after the table's December 2024 runs). Tolerance:
    10% either way per row; recorded +4.5% (70B, 80 GB) … +6.9% (8B, 80 GB), out of memory for 70B on 48 GB."""
    model, gpu, _, hf = ROWS[row]
    got = longest_sequence(_scenario(model, gpu, "hf-trainer", loss="upcast_shifted"))
    if hf == 0:
        assert got == 0, f"{row}: published out of memory, estimate fits {got} tokens"
        return
    assert 0.9 * hf <= got <= 1.1 * hf, f"{row}: {got} vs {hf} ({got / hf - 1:+.1%})"


def test_unsloth_fits_about_ten_times_the_context_of_hugging_face():
    """The table's point: offloaded checkpointing and the fused loss, not a constant, make the gap."""
    model, gpu, unsloth, hf = ROWS["8b-80gb"]
    ratio = longest_sequence(_scenario(model, gpu, "unsloth")) / longest_sequence(_scenario(model, gpu, "hf-trainer"))
    assert unsloth / hf / 2 <= ratio <= unsloth / hf * 2


def test_largest_micro_batch_grows_with_memory():
    small = largest_micro_batch(_scenario(L8, "nvidia-rtx-4090-24gb", "unsloth"))
    large = largest_micro_batch(_scenario(L8, "nvidia-a100-sxm4-80gb", "unsloth"))
    assert 1 <= small < large
