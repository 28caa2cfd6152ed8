"""FSDP + QLoRA on two 24 GB cards: Answer.AI's published benchmark runs (issue 26).

Source: AnswerDotAI/fsdp_qlora, benchmarks_03_2024.md (commit 4cd6923, 2024-05-03; "done in February and
March 2024"), run with the repository's train.py of that time (commit 049515f, 2024-03-19). Two GPUs per run:
2 × RTX 3090 (no NVLink, power-limited to 280 W, an older motherboard) and 2 × RTX 4090 (no NVLink, PCIe 4.0
x16 each, 400 W). Command template in the file: ``--batch_size B --context_length L --train_type qlora|lora
--use_gradient_checkpointing True --reentrant_checkpointing True --use_cpu_offload False|True --dataset dummy
--dataset_samples 1024``; "DDP" is FSDP's NO_SHARD, otherwise FULL_SHARD. train.py's defaults for the rest:
``precision bf16`` (the model loaded in bf16, no autocast, no FSDP mixed-precision policy: pure bf16),
``lora_rank 64``, ``lora_dropout 0.1``, targets q, k, v, gate, up and down (``"all"``: no o_proj), SDPA
attention, AdamW, FSDP1 with BACKWARD_PRE prefetch and ``limit_all_gathers``. The loss is the model's own
(``labels=`` into transformers' LlamaForCausalLM of early 2024, which upcasts the logits and makes a shifted
contiguous fp32 copy: ``training.loss = upcast_shifted``). "Peak Memory" is ``torch.cuda.max_memory_reserved``
(the file's note on the LoRA rows: "reported peak reserved memory"; two rows also give the peak allocated).
Time is for 1,024 samples over both GPUs, so tokens/s = 1,024 × L / time (the file's own check: Mistral 7B at
2,048 tokens "2,200 tokens/second" per GPU = 1,024 × 2,048 / 483 s / 2).

How it is planned: train.py is its own FSDP loop over the Hugging Face modeling code, so the profile is
hf-trainer's with ``zero_engine = native`` (FSDP, not DeepSpeed) and ``kbit_fp32_modules`` off (its loader
swaps the linears for bitsandbytes' Linear4bit and never calls prepare_model_for_kbit_training), as a user's
frameworks.toml entry would set them; the plan sets ``regime = pure``, the LoRA settings above, ``recompute =
full``, ``zero_stage`` 3 (FULL_SHARD) or 0 (NO_SHARD) and ``offload = cpu`` with ``offload_params`` for
FSDP's CPUOffload. Reserved memory is llmplan's total less the CUDA context (the allocator's reserve is the
allocated bytes plus ``fragmentation`` and, under FULL_SHARD, the side-stream gather reserve). Nothing here is
fitted.

Results (2026-11-27; reserved memory 2026-11-28), llmplan ÷ published − 1:
- peak allocated, the two rows that give it: +0.2% and +2.2% (within 10%);
- peak reserved: median |error| 16.4%, every row under (−28% … −0.03%), 11 of the 15 more than 10% under, so
  the issue's 10% is not met. The allocated rows show why: published reserved ÷ allocated is 1.24 (LoRA, 512
  tokens) and 1.12 (2,048). What the caching allocator's and FSDP1's code give beyond the allocation is priced
  (``core.training.allocator_reserve``: FSDP1 allocates each gathered flat parameter on its unshard stream and
  frees it with ``record_stream`` onto the compute stream; with ``limit_all_gathers`` one block more than the
  allocated bytes count is still reserved, 0.39 GiB for a Llama-2-7B bf16 block, with each block's 2 MiB
  segment rounding) besides the profile's 5%; the rest is not in any code read. The 7B LoRA rows' reserved
  is the same at 512 and 2,048 tokens (10.24 and 10.22 GiB) while their allocated grows 0.88 GiB, which a
  reserve set before training would explain: train.py resets the peak statistics after wrapping the model,
  and ``reset_peak_memory_stats`` sets the peak reserved to the bytes then reserved (loading and FSDP's
  flattening leave their cached blocks); the QLoRA note gives 3.72 GiB reserved after wrapping. That is not
  priced. Before the reserve term (2026-11-27) → after, per row: 7B QLoRA 512 −29.5% → −27.2%, 2,048
  −11.1% → −9.0%, batch 4 −19.0% → −18.0%, batch 10 −14.1% → −13.5%; 7B LoRA 512 −14.9% → −11.1%, 2,048
  −3.8% → −0.03%, batch 4 −11.5% → −9.0%, batch 6 −19.1% → −17.3%; CPU offload: 7B LoRA −28.6% → −26.8%,
  7B QLoRA −16.5% → −16.0%, 70B QLoRA −31.1% → −28.2%, Mistral −16.9% → −16.4%; DDP (NO_SHARD) unchanged
  −20.7% and −9.4%. Median 16.9% → 16.4%, rows more than 10% under 13 → 11.
- every published run fits its 24 GB card; Mistral 7B at 32,768 tokens does not ("24GB of memory per GPU
  isn't quite enough to finetune at the full context length"), and the longest context llmplan finds
  (30,963; 31,126 before the reserve term) is within one power of two of the published 24,576;
- tokens/s on the 4090s: median |error| 9.5% (the issue asks ≤ 20%), −20% … +13% (recorded 2026-11-28 after
  the clock30 time model, GEMMs at the 4090's measured rate at full clock and the clock set by the step's
  compute-bound share; before it 11.3%, −24% … +9%: each 7B row 3-5 points faster, the 24,576-token Mistral
  row +9.1% → +13.3%, the 70B row unchanged at +1.9%: its GEMMs 1.0 s faster per 16.9 s step, its hidden
  FSDP gathers now 1.0 s slower, 0.189 s per hidden second, ``comms.OVERLAP_SLOWDOWN``). ops34 (the kernels
  outside the modules: autograd's gradient sums, LoRA adapters' readers among them, rotate_half's slice fills;
  docs/training.md) took 1-3.5 points off each row: median 11.1%, −21.7% … +9.8% (the 24,576-token Mistral row
  +13.3% → +9.8%). The 3090 rows' speed
  is not used (the file blames the older motherboard's PCIe lanes, which it does not state).

Found and fixed from code on the way: FSDP1 does not reshard its root unit after the forward (torch
``fsdp/_runtime_utils.py`` ``_post_forward_reshard``: ``free_unsharded_flat_param = not state._is_root and
...``), and train.py's wrapping policy (decoder layers, attention and MLP modules, trainable LoRA leaves)
leaves the embeddings, the final norm and the head in the root, so they stay gathered on every GPU through
the step (``FrameworkProfile.fsdp_root_unsharded``): 0.49 GiB for the 7B models, 0.98 GiB for 70B. Reserved
median 19.9% → 16.9%, the allocated rows −5.7% → +0.2% and −3.1% → +2.2%.
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.limits import longest_sequence
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

from .helpers import off_record

GIB = 2**30
L7, L70, M7 = "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "mistralai/Mistral-7B-v0.1"
RTX3090, RTX4090 = "nvidia-rtx-3090-24gb", "nvidia-rtx-4090-24gb"
TARGETS = ("q", "k", "v", "gate", "up", "down")  # train.py lora_target_modules "all"
SHARD, DDP, OFFLOAD = "full_shard", "ddp", "offload"

# name: (peak reserved GiB, model, GPU, method, batch, context, sharding, llmplan's error recorded 2026-11-28)
MEMORY = {
    "7b-qlora-bs1-512": (4.98, L7, RTX3090, "qlora", 1, 512, SHARD, -0.272),
    "7b-qlora-bs1-2048": (5.21, L7, RTX3090, "qlora", 1, 2048, SHARD, -0.09),
    "7b-lora-bs1-512": (10.24, L7, RTX3090, "lora", 1, 512, SHARD, -0.111),
    "7b-lora-bs1-2048": (10.22, L7, RTX3090, "lora", 1, 2048, SHARD, -0.0),
    "7b-qlora-bs4": (11.22, L7, RTX3090, "qlora", 4, 2048, SHARD, -0.18),
    "7b-qlora-bs10": (20.97, L7, RTX3090, "qlora", 10, 2048, SHARD, -0.135),
    "7b-lora-bs4": (16.14, L7, RTX3090, "lora", 4, 2048, SHARD, -0.09),
    "7b-lora-bs6": (21.35, L7, RTX3090, "lora", 6, 2048, SHARD, -0.173),
    "7b-qlora-ddp-bs8": (20.94, L7, RTX3090, "qlora", 8, 2048, DDP, -0.207),
    "7b-lora-ddp-bs4": (22.04, L7, RTX3090, "lora", 4, 2048, DDP, -0.094),
    "7b-lora-offload-bs10": (22.69, L7, RTX4090, "lora", 10, 2048, OFFLOAD, -0.268),
    "7b-qlora-offload-bs12": (22.38, L7, RTX4090, "qlora", 12, 2048, OFFLOAD, -0.16),
    "70b-qlora-offload-bs2": (14.92, L70, RTX3090, "qlora", 2, 2048, OFFLOAD, -0.282),
    "mistral-qlora-offload-bs12": (22.54, M7, RTX4090, "qlora", 12, 2048, OFFLOAD, -0.164),
    "mistral-qlora-offload-24k": (22.54, M7, RTX4090, "qlora", 1, 24_576, OFFLOAD, -0.164),
}
ALLOCATED = {"7b-lora-bs1-512": 8.28, "7b-lora-bs1-2048": 9.16}  # the LoRA rows' note
# 4090 case study: (model, method, batch, context, sharding, seconds for 1,024 samples, error recorded 2026-11-28
# after ops34; pinned ± 3 points by off_record)
SPEED = {
    "7b-lora-ddp-bs4": (L7, "lora", 4, 2048, DDP, 437, -0.217),
    "7b-lora-bs6": (L7, "lora", 6, 2048, SHARD, 481, -0.149),
    "7b-lora-offload-bs10": (L7, "lora", 10, 2048, OFFLOAD, 482, -0.14),
    "7b-qlora-ddp-bs8": (L7, "qlora", 8, 2048, DDP, 450, -0.111),
    "7b-qlora-bs10": (L7, "qlora", 10, 2048, SHARD, 466, -0.087),
    "7b-qlora-offload-bs12": (L7, "qlora", 12, 2048, OFFLOAD, 464, -0.088),
    "70b-qlora-offload-bs2": (L70, "qlora", 2, 2048, OFFLOAD, 4399, 0.009),
    "mistral-qlora-offload-bs12": (M7, "qlora", 12, 2048, OFFLOAD, 483, -0.09),
    "mistral-qlora-offload-24k": (M7, "qlora", 1, 24_576, OFFLOAD, 7809, 0.098),
}


def scenario(model: str, gpu: str, method: str, batch: int, context: int, sharding: str):
    """One train.py run on two GPUs of ``gpu``, planned as the module doc says."""
    t = TrainingSettings(framework="hf-trainer", method=method, micro_batch=batch, global_batch=2 * batch,
                         seq_len=context, recompute="full", regime="pure", loss="upcast_shifted", lora_rank=64,
                         lora_dropout=0.1, lora_targets=TARGETS, zero_stage=0 if sharding == DDP else 3,
                         offload="cpu" if sharding == OFFLOAD else "none", offload_params=sharding == OFFLOAD,
                         tokens=1024 * context)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=2),
                              workload="finetune", training=t, parallelism=ParallelLayout(dp=2)))
    prof = sc.framework_profile.model_copy(update={"zero_engine": "native", "kbit_fp32_modules": False})
    return sc.model_copy(update={"framework_profile": prof})


def reserved_gib(est, sc) -> float:
    return (est.memory.total.value - sc.framework_profile.context_bytes) / GIB


@pytest.fixture(scope="module")
def memory():
    out = {}
    for name, (pub, model, gpu, method, batch, context, sharding, _) in MEMORY.items():
        sc = scenario(model, gpu, method, batch, context, sharding)
        est = estimate(sc)
        out[name] = (est, reserved_gib(est, sc) / pub - 1)
        print(f"{name:28s} published {pub:6.2f} GiB reserved  ours {reserved_gib(est, sc):6.2f}  "
              f"{out[name][1]:+.1%}  fits {est.memory.fits}")
    return out


def test_every_published_run_fits_its_24_gb_card(memory):
    assert all(est.memory.fits for est, _ in memory.values())


def test_reserved_memory_median_and_rows_stay_where_recorded(memory):
    """The issue's 10% is not met (module doc: the reserve beyond what the allocator's and FSDP's code give);
    each row is pinned to its recorded error ± 3 points so that a change to these terms shows here."""
    err = {name: e for name, (_, e) in memory.items()}
    assert statistics.median(abs(e) for e in err.values()) == pytest.approx(0.164, abs=0.02)
    moved = off_record(err, {name: row[-1] for name, row in MEMORY.items()})
    assert not moved, moved
    assert max(err.values()) < 0.005  # none over: the reserve, not the allocation, is short (7B LoRA 2,048: −0.03%)
    assert sum(e < -0.10 for e in err.values()) == 11


@pytest.mark.parametrize("name", sorted(ALLOCATED))
def test_peak_allocated_within_ten_percent(memory, name):
    est, _ = memory[name]
    got = (est.memory.total.value - est.memory.overhead.value) / GIB
    assert got / ALLOCATED[name] - 1 == pytest.approx(0.0, abs=0.10), got


def test_mistral_at_its_full_32k_context_does_not_fit_and_the_longest_is_within_a_power_of_two():
    """"24GB of memory per GPU isn't quite enough to finetune at the full context length [32K] even using
    QLoRA, but we can manage a respectable 24K tokens" (batch 1, CPU offload, 2 × 4090)."""
    sc = scenario(M7, RTX4090, "qlora", 1, 32_768, OFFLOAD)
    assert not estimate(sc).memory.fits
    longest = longest_sequence(sc)
    print(f"longest context: {longest:,} (published: 24,576 fits, 32,768 does not)")
    assert 24_576 <= longest < 32_768


@pytest.fixture(scope="module")
def speed():
    out = {}
    for name, (model, method, batch, context, sharding, seconds, _) in SPEED.items():
        published = 1024 * context / seconds
        ours = estimate(scenario(model, RTX4090, method, batch, context, sharding)).compute.tokens_per_s.value
        out[name] = ours / published - 1
        print(f"{name:28s} published {published:7.0f} tokens/s  ours {ours:7.0f}  {out[name]:+.1%}")
    return out


def test_tokens_per_s_median_within_twenty_percent(speed):
    assert statistics.median(abs(e) for e in speed.values()) <= 0.20, speed
    moved = off_record(speed, {name: row[-1] for name, row in SPEED.items()})
    assert not moved, moved
