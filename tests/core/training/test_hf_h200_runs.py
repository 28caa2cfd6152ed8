"""Hugging Face stack on a second GPU: the hf-trainer profile against runs measured on an H200.

Source: eight training steps measured on one NVIDIA H200 (141 GB, SXM; 700 W) on 2026-11-27 with torch
2.11.0+cu130, transformers 5.17.0, peft 0.21.0, bitsandbytes 0.50.2, accelerate 1.15.0 — the same harness
and recipe as the H100 runs (tests/core/training/test_hf_h100_runs.py): models built from the catalog's
configs with random weights, SDPA attention, fused AdamW, no gradient clipping (the plans set ``grad_clip`` off,
``hf_estimate``), LoRA r=16 alpha=32 dropout 0.05 on all seven
projections of a bf16 base, QLoRA NF4 with double quantisation and prepare_model_for_kbit_training; peak
memory from torch.cuda.max_memory_reserved (+ 0.5 GiB CUDA context, as measured beside it on the H100 with
the same CUDA 13.0), step time the median of the steps after the first two. Other models and shapes
than the H100 table, and one run that fits here and not on the H100. Targets only: nothing was fitted
to them. The eager blocks' host time (``core.training.host_time``) was measured on the same machine, on
width-64 models, not on these runs.

Result (estimate vs measured median; vs the fastest step in brackets):

| run | memory | step time |
|---|---|---|
| Llama-3.2-3B AMP 2×2048 | 71.2 vs 67.3 GiB (+5.7%) | 227 vs 249 ms (-8.9%) |
| Qwen2.5-1.5B pure bf16 4×2048 | 48.6 vs 46.9 GiB (+3.6%) | 208 vs 213 ms (-2.5%) |
| Llama-3.1-8B AMP 1×2048 checkpointing | 126.8 vs 128.7 GiB (-1.4%) | 358 vs 374 ms (-4.4%) |
| Llama-3.2-3B LoRA 2×2048 | 32.4 vs 32.6 GiB (-0.5%) | 212 vs 269 ms (-21.3%; -8.1%) |
| Qwen2.5-7B LoRA 1×2048 | 35.3 vs 34.8 GiB (+1.4%) | 208 vs 237 ms (-12.6%; -2.3%) |
| Llama-3.2-3B LoRA 1×1024 checkpointing | 8.8 vs 9.1 GiB (-3.2%) | 369 vs 316 ms (+16.8%; +32.2%) |
| Qwen2.5-7B LoRA 1×2048 checkpointing | 20.0 vs 20.1 GiB (-0.6%) | 370 vs 486 ms (-24.0%; -1.8%) |
| Qwen2.5-7B QLoRA 1×2048 checkpointing | 14.3 vs 14.3 GiB (-0.2%) | 499 vs 954 ms (-47.7%; -25.8%) |

Memory: every row within 10% and none more than 10% under. Step time: the GPU-bound rows within 15%;
the LoRA and QLoRA rows are bound by the host, a shared virtual machine, whose steps varied: their
medians sit 2-42% above their fastest steps, and the same width-64 blocks timed 5-30% apart between
two runs minutes apart. Their bands are pinned so that a change is seen. Two are outside 15% either
way: the Llama-3.2-3B LoRA at 2×2048, where host (207 ms) and GPU (212 ms) are equal, and the model's
max(GPU, host) assumes they overlap perfectly; and the Qwen QLoRA run, twice its host time of width-64
blocks (490-601 ms) while its GPU is busy 338 ms: the host and the GPU did not overlap there, for a
reason not established (its profiled kernel count, 13,174, is what the blocks issue).
"""

import pytest

from tests.core.training.test_hf_h100_runs import hf_estimate

GIB = 2**30
CONTEXT = 0.5 * GIB
H200 = "nvidia-h200-sxm-141gb"

# model, mode, micro-batch, seq, checkpointing, peak reserved bytes, median step s, fastest step s
RUNS = {
    "3b-amp": ("meta-llama/Llama-3.2-3B", "amp", 2, 2048, False, 71_756_152_832, 0.2489, 0.2474),
    "1.5b-bf16": ("Qwen/Qwen2.5-1.5B", "bf16", 4, 2048, False, 49_838_817_280, 0.2129, 0.2100),
    "8b-amp-ckpt": ("meta-llama/Llama-3.1-8B", "amp", 1, 2048, True, 137_613_017_088, 0.3743, 0.3595),
    "3b-lora": ("meta-llama/Llama-3.2-3B", "lora", 2, 2048, False, 34_462_498_816, 0.2687, 0.2300),
    "7b-lora": ("Qwen/Qwen2.5-7B", "lora", 1, 2048, False, 36_859_543_552, 0.2374, 0.2124),
    "3b-lora-ckpt": ("meta-llama/Llama-3.2-3B", "lora", 1, 1024, True, 9_235_857_408, 0.3162, 0.2795),
    "7b-lora-ckpt": ("Qwen/Qwen2.5-7B", "lora", 1, 2048, True, 21_049_114_624, 0.4863, 0.3765),
    "7b-qlora-ckpt": ("Qwen/Qwen2.5-7B", "qlora", 1, 2048, True, 14_810_087_424, 0.9536, 0.6722),
}
# host-bound rows: pinned bands around the error against the median (module doc)
STEP_BANDS = {"3b-lora": (-0.25, -0.18), "3b-lora-ckpt": (0.13, 0.20), "7b-lora-ckpt": (-0.27, -0.21),
              "7b-qlora-ckpt": (-0.51, -0.44)}


def _estimate(name, gpu=H200):
    model, mode, mb, seq, ckpt = RUNS[name][:5]
    return hf_estimate(model, mode, mb, ckpt, gpu, seq)


@pytest.mark.parametrize("name", RUNS)
def test_memory_within_10_percent_and_never_10_percent_under(name):
    sc, est = _estimate(name)
    assert sc.framework.id == "hf-trainer"
    error = est.memory.total.value / (RUNS[name][5] + CONTEXT) - 1
    assert -0.10 <= error <= 0.10, f"{name}: {error:+.1%}"
    assert est.memory.fits


@pytest.mark.parametrize("name", RUNS)
def test_step_time(name):
    _, est = _estimate(name)
    error = est.compute.step_time_s.value / RUNS[name][6] - 1
    lo, hi = STEP_BANDS.get(name, (-0.15, 0.15))
    assert lo <= error <= hi, f"{name}: {error:+.1%}"


def test_the_host_bound_rows_are_said_to_be_host_bound():
    for name in ("3b-lora-ckpt", "7b-lora-ckpt", "7b-qlora-ckpt"):
        _, est = _estimate(name)
        assert est.compute.breakdown["launch_overhead"] > 0
        assert any("measured host time" in a for a in est.compute.step_time_s.assumptions)


def test_the_8b_full_fine_tune_fits_the_h200_and_not_the_h100():
    """The same plan: 128.7 GiB measured on the H200; out of memory on the H100 (test_hf_h100_runs.py)."""
    assert _estimate("8b-amp-ckpt")[1].memory.fits
    assert not _estimate("8b-amp-ckpt", "nvidia-h100-sxm-80gb")[1].memory.fits
