"""Throughput of published FSDP runs: torchtitan's A100 and H100 rows and OPT-175B.

The measured figure is never an input: each run is the plan its source states (model, GPUs, local batch,
sequence length, activation checkpointing, parallelism), priced by the per-operation model with the catalog's
defaults and the FSDP2 profile, with the row's own torch.compile setting: torchtitan's default and the A100
tables' and the H100 "FSDP" rows' configs leave it off (``compile = false``; train_configs at 1ea476e9 and
9dec370a), so those rows run torchtitan's modules eager (``FrameworkProfile.eager_modules``); the rows that say
"torch.compile", the 2D and 405B rows (llama3_405b.toml and llama3_70b's Table 4 run compile) are compiled, priced
with fused kernels. The A100 Llama 3 8B and Llama 2 13B configs set ``norm_type = "fused_rmsnorm"`` (a Triton
norm), the others torchtitan's eager ``rmsnorm``. What a source leaves open is stated per row. ``band`` is the
relative error asserted: the issue's ±15% where it is met, the pinned band (recorded error ± about 5 points)
where it is not, so a change that moves a row is seen. Recorded 2026-11-28 after clock30, the time model that
prices GEMMs at the kernel-level sweep's best-shape rate and full clock (the 500 W card: ``full_clock_share`` 0)
and charges hidden collectives 18.9% of their time (Lee et al. 2025, arXiv 2507.03114); the error on 2026-11-27,
before it, in brackets (after ZeRO-3's gathers moved to 16 bits, FSDP's weight cast to its local shard per
gather, the uncompiled rows priced eager, and the per-operation price audit; their compiled readings are in
tests/core/training/test_torchtitan_gap.py; no row here has a pipeline, so the head's placement does not move
them):

| row | measured | ours | error |
|---|---|---|---|
| torchtitan A100, Llama 3 8B, selective op AC (eager, fused_rmsnorm) | 2,973 | 3,352 | +12.7% (+8.8%) |
| torchtitan A100, Llama 2 13B, no AC (eager, fused_rmsnorm) | 2,162 | 2,403 | +11.2% (+7.0%) |
| torchtitan A100, Llama 2 13B, selective op AC (eager, fused_rmsnorm) | 1,904 | 2,140 | +12.4% (+7.3%) |
| torchtitan A100, Llama 2 70B, selective op AC, batch 1 (eager) | 355 | 401 | +12.9% (+9.6%) |
| torchtitan A100, Llama 2 70B, full AC, batch 2 (eager) | 353 | 356.8 | +1.1% (−4.5%) |
| torchtitan H100, Llama 3.1 8B, 8 GPUs, selective op AC (eager) | 5,762 | 7,583 | +31.6% (+25.6%) |
| torchtitan H100, Llama 3.1 8B, 128 GPUs, selective op AC (eager) | 5,605 | 7,606 | +35.7% (+30.2%) |
| ... with torch.compile, 8 / 128 GPUs | 6,667 / 6,514 | 9,382 / 9,415 | +40.7% / +44.5% (+35.3% / +40.0%) |
| ... with torch.compile + Float8, 8 / 128 GPUs | 8,532 / 8,380 | 11,660 / 11,726 | +36.7% / +39.9% (+33.2% / +37.6%) |
| torchtitan H100, Llama 3.1 70B, FSDP32 TP8, compile + Float8 | 829 | 992 | +19.7% (+17.7%) |
| torchtitan H100, Llama 3.1 405B, FSDP16 TP8, full AC | 109 | 140.5 | +28.9% (+36.4%) |
| torchtitan H100 (June 2025 table), Llama 3.1 70B, FSDP32 TP8, compile, bf16 | 597.3 | 762.9 | +27.7% (+24.3%) |
| torchtitan H100 (June 2025 table), Llama 3.1 8B, FSDP8 TP8, compile, bf16 | 4,378 | 6,142 | +40.3% (+38.5%) |
| torchtitan H100, Llama 3.1 405B, FSDP16 TP8, full AC, Float8 | 177 | 176.9 | −0.1% (+12.9%) |
| control: torchtitan H200 (700 W), Llama 3.1 8B, compile + Float8, 32 / 64 GPUs | 10,938 / 10,753 | 13,518 / 13,495 | +23.6% / +25.5% (+23.6% / +25.9%) |
| OPT-175B, 992 A100, TP8 + FSDP, TFLOP/s per GPU (with the recomputed forward) | 147 | 168.9 | +14.9% (+15.5%) |

ops34 (the kernels outside the modules, docs/training.md) took 1-6 points off the H100 rows: the compiled 8B
FSDP8 TP8 row reads +33.6% (band re-pinned to +29 … +39%, was +35 … +45%), the others stay in their bands.

clock30 moved most rows 2-6 points faster, the H200 controls and OPT-175B less than a point (the old model charged
GEMMs ~15% more than the kernel-level sweep measures, which hid part of these gaps). The two 405B rows moved the other way: with faster
GEMMs the backward is shorter, and their ZeRO-3 gradient reduce-scatter (4.1 s a step) no longer hides behind it;
in Float8, whose GEMMs are faster still, 1.7 s of it is exposed (0.8 s in bf16), so that row fell 13 points to
−0.1%, inside the issue's 15% by that cancellation, not by a closed gap; it stays pinned.

The Float8 rows were +77.1% / +82.9%, +40.7% and +35.1% while ``precision = fp8`` ran every GEMM and the
attention at the fp8 peak with no casts. They are now priced as torchao's Float8Linear runs (``fp8_casts``):
the block's linears in fp8 at the measured fp8 GEMM rate (``kernel_rates.FP8_MATMUL_RATIO``), attention and
the output head in bf16, and the amax, cast and transposed-copy passes around each fp8 matmul. The 8B Float8
speed-up is now 11,660 / 9,382 = 1.24× against torchtitan's 8,532 / 6,667 = 1.28× (compiled, same tables), so
the Float8 rows keep only the bf16 rows' gap (+37% / +40% against +41% / +45%).

The A100 rows meet the ±15% target, all within +1 … +13% priced eager as they ran (within ±10% before clock30;
Llama 2 70B with selective op AC at batch 1 was +16.4% priced compiled). OPT-175B lands on its edge (+14.9%;
+15.5% before clock30, +14.97% before the price audit), so it is pinned at +10% … +20%
rather than asserted against a limit it would cross with any small change: 147 TFLOP/s is the paper's "up to",
its best, and the paper does not say how it counted the FLOPs (with the recomputed forward, as here and for
BLOOM, or without: our model FLOPs give 127 TFLOP/s, −14%). The H100 rows do not meet the target, and are
pinned: torchtitan ran them on
Grand Teton H100s with 96 GB of HBM2e at 2.4 TB/s under a 500 W power limit (700 W TDP), whose peak its own
footnote calls unknown, between the SXM's and the NVL's; its MFU for the bf16 8B runs is 33-39% against the
SXM peak, where its A100 runs reached 57-58%. The rows plan on that card (``nvidia-h100-sxm-96gb-hbm2e``);
no bf16 GEMM rate under a 500 W limit is published, so it carries the 700 W H100 SXM's measured rates as
assumptions (catalogs/systems/efficiency.toml) and the model prices the 8B runs at 55% MFU compiled (44% eager). Taking the
missing speed from these rows would be fitting them. Two readings bound the causes
(tests/core/training/test_torchtitan_gap.py): the same Float8 run on 700 W H200s (the control rows here) is
still +24% / +26% (the H100 Float8 rows +37% / +40%); and the eager rows, run without torch.compile, read +32% /
+36% with the eager op list (test_torchtitan_gap.py has the compiled readings and how the eager term compares with
what compiling saved in torchtitan's own tables). The 70B and 405B Float8 rows (+20%, −0.1%) sit below their bf16
neighbours (70B: +28%; 405B: +29%): the model's 405B Float8 speed-up is 176.9 / 140.5 = 1.26× where torchtitan's
table gives 177 / 109 = 1.62×; that table names only "Float8" as the difference and no cause is claimed here
(docs/training.md, "fp8 training"). All H100 rows stay pinned at their recorded error ± about 5 points
(re-pinned 2026-11-28 after clock30).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.result import Estimate
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan

from .helpers import gpt, scenario

TITAN_A100 = ("pytorch/torchtitan docs/performance.md at 3faaa1a0dee68ce028400e3dafd1735d152cb4f8 (2024-08-23; "
              "the tables date from 1ea476e9, 2024-04-24), {table} (64 A100 80GB, FSDP2, torchtitan's WPS = "
              "tokens/s per GPU)")
TITAN_H100 = ("pytorch/torchtitan docs/performance.md at d4c86e3758a84cf23e2e879ab3c995cba9d5e410 (2025-01-30), "
              "{table}; run with torchtitan 9dec370a and torch 1963fc83 (2024-12-23) on Grand Teton H100 96 GB "
              "HBM2e, 2.4 TB/s, 500 W, 400 Gb/s RDMA per GPU")
TITAN_405B = ("pytorch/torchtitan docs/performance.md at 3faaa1a0dee68ce028400e3dafd1735d152cb4f8 (2024-08-23), "
              "'Llama 3.1 performance numbers': 405B on 128 H100 (HBM2e, lower-TDP SXM), 2D FSDP16 x TP8, local "
              "batch 2, full AC, {what}")
TITAN_ASYNC_TP = ("pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (added in 2887250b, "
                  "2025-06-16): the PyTorch team, June 2025, on the same Grand Teton H100s (96 GB HBM2e, 500 W), "
                  "torch 38410cf9, torchtitan 820504e2 (seq 8,192); {table} tokens/sec")
TITAN_H200 = ("pytorch/torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md (added in cbccb387, "
              "2025-07-11): Trainy on WhiteFiber, June 2025, {nodes} hosts of 8 H200 on NVLink, 400 Gb/s RDMA "
              "(ConnectX-7) per GPU; llama3_8b.toml at torchtitan e7c0cae9 (seq 8,192, selective op AC) with "
              "local_batch_size 2, compile, Float8 with FSDP float8 all-gather; torch 2.8.0a0 (NGC 25.05), "
              "torchao 0afa4c1; {tps} TPS/GPU at step 100")
# pinned (module doc): the gap of the H100 rows (and, for the large Float8 rows, their smaller gap)
# re-pinned 2026-11-28 after clock30 (module doc): recorded error ± 5 points
H100_BANDS = {"fsdp-8": (0.27, 0.37), "fsdp-128": (0.31, 0.41), "compile-8": (0.36, 0.46),
              "compile-128": (0.39, 0.50), "float8-8": (0.32, 0.42), "float8-128": (0.35, 0.45),
              "70b-2d-float8": (0.15, 0.25), "405b-2d": (0.24, 0.34), "405b-2d-float8": (-0.05, 0.05),
              "70b-2d-bf16": (0.23, 0.33), "8b-2d-bf16": (0.29, 0.39)}  # 8b-2d: (0.35, 0.45) before ops34 (module doc)


@dataclass(frozen=True)
class Row:
    quantity: str
    reference: float
    unit: str  # "tokens/s" per GPU, or "TFLOP/s" per GPU (hardware FLOPs, with recompute)
    source: str
    band: tuple[float, float]  # relative error asserted (module doc)
    run: Callable[[], Estimate]
    gpus: int


def _titan(model: str, recompute: str, micro_batch: int, seq_len: int, gpus: int, tp: int = 1,
           precision: str = "bf16", h100: bool = False, h200: bool = False, compile: bool = False,
           norm: str = "rmsnorm") -> Callable[[], Estimate]:
    """A torchtitan run: FSDP2 (ZeRO-3) over dp = GPUs / tp, the global batch one local batch per replica,
    FlashAttention (SDPA), 8 GPUs per node. ``compile``: training.compile as the row states it (the profile's
    default is torchtitan's, off); ``norm``: the train config's model.norm_type (fused_rmsnorm: the FSDP2
    profile's ``titan_norm``, which only an uncompiled run reads). A100: 200 Gb/s InfiniBand per GPU (the docs do not say; the
    64-GPU 70B row, tests/core/training/test_published_runs.py, assumes the same). H100: the catalog's
    Grand Teton part (96 GB HBM2e at 2.4 TB/s, 500 W limit, the SXM's peaks: no figure of NVIDIA's or
    measured rate exists for it), on 400 Gb/s RoCE per GPU. H200: the
    catalog's H200 SXM (700 W) on 400 Gb/s per GPU (ConnectX-7; the fabric is not named, InfiniBand NDR
    taken: a 400 Gb/s RoCE link prices the same)."""

    def run() -> Estimate:
        dp = gpus // tp
        tr = TrainingSettings(framework="fsdp2", seq_len=seq_len, micro_batch=micro_batch,
                              global_batch=micro_batch * dp, recompute=recompute, zero_stage=3, flash_attention=True,
                              offload="none", precision=precision, torch_compile=compile)
        gpu = ("nvidia-h200-sxm-141gb" if h200 else "nvidia-h100-sxm-96gb-hbm2e" if h100 else "nvidia-a100-sxm4-80gb")
        network = "ib-ndr-400" if h200 else "roce-400" if h100 else "ib-hdr-200"
        doc = PlanDocument(model=ModelRef(id=model), workload="pretrain", training=tr,
                           hardware=HardwareRef(gpu=gpu, gpus_per_node=8, nodes=max(gpus // 8, 1), network=network),
                           parallelism=ParallelLayout(dp=dp, tp=tp, sequence_parallel=tp > 1))
        sc = evaluate_plan(doc)[0]
        if norm != "rmsnorm":
            prof = sc.framework.model_copy(update={"titan_norm": norm})
            sc = Scenario.model_validate(sc.model_copy(update={"framework_profile": prof}).model_dump())
        return estimate(sc)

    return run


def _opt_175b() -> Estimate:
    """OPT-175B (Zhang et al. 2022, §2.2-2.4 and Table 1): 96 layers, d 12,288, 96 heads, ReLU MLP 4d,
    vocabulary 50,272, sequences of 2,048, dropout 0.1, a 2M-token batch; "Fully Sharded Data Parallel with
    Megatron-LM Tensor Parallelism" (ZeRO-3, TP8, so 124 replicas), "model weights remained in FP16" (regime
    pure: no fp32 master copy; the paper's fp32 Adam states, sharded 124 ways, are not modelled). From metaseq's
    launcher (facebookresearch/metaseq metaseq/launcher/opt_baselines.py): --checkpoint-activations (full),
    attention dropout 0.1, update-freq 1 and a per-GPU batch of 2M tokens / 124 / 2,048 = 8 sequences (992
    sequences, 2.03M tokens per step). Its --no-reshard-after-forward (ZeRO-2 style) is not taken: with
    unsharded fp16 weights the model puts the run at 88 GiB, over the 80 GB the paper ran on. 2022: no
    FlashAttention, no sequence parallelism. 8 × 200 Gb/s InfiniBand per node (Azure NDm A100 v4). metaseq's
    decoder layer is Megatron's model-parallel one with its fused kernels (metaseq/modules/
    transformer_decoder_layer.py loads Megatron's fused bias-GeLU), not torchtitan's eager modules: the FSDP2
    profile with fused kernels."""
    sc = scenario(gpt(12288, 96, 96, vocab=50272, name="OPT-175B"), 992, tp=8, sp=False, seq_len=2048,
                  micro_batch=8, global_batch=992, recompute="full", flash_attention=False, zero_stage=3,
                  dropout=0.1, precision="fp16", regime="pure")
    a100 = load_hardware_catalog().efficiency_for("nvidia-a100-sxm4-80gb")
    return estimate(Scenario.model_validate(sc.model_copy(update={
        "efficiency": a100, "framework_profile": framework_profile("fsdp2").model_copy(update={
            "kernels": "fused", "losses": ("upcast", "fp32_logits")})  # metaseq: Megatron's vocab-parallel loss
    }).model_dump()))


L3_8B, L31_8B = "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-3.1-8B"
L2_13B, L2_70B = "meta-llama/Llama-2-13b-hf", "meta-llama/Llama-2-70b-hf"
TARGET = (-0.15, 0.15)

ROWS = {
    "titan-a100-llama3-8b-op": Row(
        "Llama 3 8B on 64 A100, local batch 1, seq 8,192, selective op AC: tokens/s per GPU", 2973.0, "tokens/s",
        TITAN_A100.format(table="'Llama 3 performance numbers': 8B, selective op, 2,973 WPS, 58.2% MFU"), TARGET,
        _titan(L3_8B, "selective_op", 1, 8192, 64, norm="fused_rmsnorm"), 64),
    "titan-a100-llama2-13b-none": Row(
        "Llama 2 13B on 64 A100, local batch 2, seq 4,096, no AC: tokens/s per GPU", 2162.0, "tokens/s",
        TITAN_A100.format(table="'Llama 2 performance numbers': 13B, batch 2, no AC, 2,162 WPS, 61.1% MFU"),
        TARGET, _titan(L2_13B, "none", 2, 4096, 64, norm="fused_rmsnorm"), 64),
    "titan-a100-llama2-13b-op": Row(
        "Llama 2 13B on 64 A100, local batch 2, seq 4,096, selective op AC: tokens/s per GPU", 1904.0, "tokens/s",
        TITAN_A100.format(table="'Llama 2 performance numbers': 13B, batch 2, selective op, 1,904 WPS, 53.8% MFU"),
        TARGET, _titan(L2_13B, "selective_op", 2, 4096, 64, norm="fused_rmsnorm"), 64),
    "titan-a100-llama2-70b-op": Row(
        "Llama 2 70B on 64 A100, local batch 1, seq 4,096, selective op AC: tokens/s per GPU", 355.0, "tokens/s",
        TITAN_A100.format(table="'Llama 2 performance numbers': 70B, batch 1, selective op, 355 WPS, 50.8% MFU"),
        TARGET, _titan(L2_70B, "selective_op", 1, 4096, 64), 64),
    "titan-a100-llama2-70b-full": Row(
        "Llama 2 70B on 64 A100, local batch 2, seq 4,096, full AC: tokens/s per GPU", 353.0, "tokens/s",
        TITAN_A100.format(table="'Llama 2 performance numbers': 70B, batch 2, full AC, 353 WPS, 50.5% MFU"),
        TARGET, _titan(L2_70B, "full", 2, 4096, 64), 64),
    "titan-h100-llama31-8b-fsdp-8": Row(
        "Llama 3.1 8B on 8 H100 (500 W), local batch 2, seq 8,192, selective op AC: tokens/s per GPU", 5762.0,
        "tokens/s", TITAN_H100.format(table="Table 1: FSDP, 5,762 TPS/GPU"), H100_BANDS["fsdp-8"],
        _titan(L31_8B, "selective_op", 2, 8192, 8, h100=True), 8),
    "titan-h100-llama31-8b-fsdp-128": Row(
        "Llama 3.1 8B on 128 H100 (500 W), local batch 2, seq 8,192, selective op AC: tokens/s per GPU", 5605.0,
        "tokens/s", TITAN_H100.format(table="Table 3: FSDP, 5,605 TPS/GPU"), H100_BANDS["fsdp-128"],
        _titan(L31_8B, "selective_op", 2, 8192, 128, h100=True), 128),
    "titan-h100-llama31-8b-compile-8": Row(
        "Llama 3.1 8B on 8 H100 (500 W), as above + torch.compile: tokens/s per GPU", 6667.0, "tokens/s",
        TITAN_H100.format(table="Table 1: FSDP + torch.compile, 6,667 TPS/GPU"), H100_BANDS["compile-8"],
        _titan(L31_8B, "selective_op", 2, 8192, 8, h100=True, compile=True), 8),
    "titan-h100-llama31-8b-compile-128": Row(
        "Llama 3.1 8B on 128 H100 (500 W), as above + torch.compile: tokens/s per GPU", 6514.0, "tokens/s",
        TITAN_H100.format(table="Table 3: FSDP + torch.compile, 6,514 TPS/GPU"), H100_BANDS["compile-128"],
        _titan(L31_8B, "selective_op", 2, 8192, 128, h100=True, compile=True), 128),
    "titan-h100-llama31-8b-float8-8": Row(
        "Llama 3.1 8B on 8 H100 (500 W), as above + torch.compile + Float8: tokens/s per GPU", 8532.0, "tokens/s",
        TITAN_H100.format(table="Table 1: FSDP + torch.compile + Float8, 8,532 TPS/GPU"), H100_BANDS["float8-8"],
        _titan(L31_8B, "selective_op", 2, 8192, 8, precision="fp8", h100=True, compile=True), 8),
    "titan-h100-llama31-8b-float8-128": Row(
        "Llama 3.1 8B on 128 H100 (500 W), as above + torch.compile + Float8: tokens/s per GPU", 8380.0,
        "tokens/s", TITAN_H100.format(table="Table 3: FSDP + torch.compile + Float8, 8,380 TPS/GPU"), H100_BANDS["float8-128"],
        _titan(L31_8B, "selective_op", 2, 8192, 128, precision="fp8", h100=True, compile=True), 128),
    "titan-h100-llama31-70b-2d-float8": Row(
        "Llama 3.1 70B on 256 H100 (500 W), FSDP32 TP8, local batch 16, full AC, compile + Float8: tokens/s per "
        "GPU", 829.0, "tokens/s", TITAN_H100.format(table="Table 4: 2D, 829 TPS/GPU"), H100_BANDS["70b-2d-float8"],
        _titan("meta-llama/Llama-3.1-70B", "full", 16, 8192, 256, tp=8, precision="fp8", h100=True, compile=True), 256),
    "titan-h100-llama31-405b-2d": Row(
        "Llama 3.1 405B on 128 H100 (lower TDP), FSDP16 TP8, local batch 2, full AC: tokens/s per GPU", 109.0,
        "tokens/s", TITAN_405B.format(what="no optimisations: 109 WPS, 29.0% MFU"), H100_BANDS["405b-2d"],
        _titan("meta-llama/Llama-3.1-405B", "full", 2, 8192, 128, tp=8, h100=True, compile=True), 128),
    "titan-h100-llama31-405b-2d-float8": Row(
        "Llama 3.1 405B on 128 H100 (lower TDP), FSDP16 TP8, local batch 2, full AC, Float8: tokens/s per GPU",
        177.0, "tokens/s", TITAN_405B.format(what="Float8: 177 WPS"), H100_BANDS["405b-2d-float8"],
        _titan("meta-llama/Llama-3.1-405B", "full", 2, 8192, 128, tp=8, precision="fp8", h100=True, compile=True), 128),
    "titan-h100-llama31-70b-2d-bf16": Row(
        "Llama 3.1 70B on 256 H100 (500 W), FSDP32 TP8, local batch 16, full AC, compile, bf16, vanilla TP: "
        "tokens/s per GPU", 597.3, "tokens/s", TITAN_ASYNC_TP.format(table="Llama3 70b on 256 H100s, None "
        "(bfloat16), vanilla TP 597.3"), H100_BANDS["70b-2d-bf16"],
        _titan("meta-llama/Llama-3.1-70B", "full", 16, 8192, 256, tp=8, h100=True, compile=True), 256),
    "titan-h100-llama31-8b-2d-bf16": Row(
        "Llama 3.1 8B on 64 H100 (500 W), FSDP8 TP8, local batch 12, selective op AC, compile, bf16, vanilla "
        "TP: tokens/s per GPU", 4378.0, "tokens/s", TITAN_ASYNC_TP.format(table="Llama3 8b on 64 H100s, None "
        "(bfloat16), vanilla TP 4378"), H100_BANDS["8b-2d-bf16"],
        _titan(L31_8B, "selective_op", 12, 8192, 64, tp=8, h100=True, compile=True), 64),
    # control rows: the same torchtitan Float8 run on a 700 W H200 with HBM3e (test_torchtitan_gap module doc)
    "titan-h200-llama31-8b-float8-32": Row(
        "Llama 3.1 8B on 32 H200 (700 W), local batch 2, seq 8,192, selective op AC, compile + Float8: tokens/s "
        "per GPU", 10938.0, "tokens/s", TITAN_H200.format(nodes=4, tps="10,938"), (0.17, 0.28),
        _titan(L31_8B, "selective_op", 2, 8192, 32, precision="fp8", h200=True, compile=True), 32),
    "titan-h200-llama31-8b-float8-64": Row(
        "Llama 3.1 8B on 64 H200 (700 W), local batch 2, seq 8,192, selective op AC, compile + Float8: tokens/s "
        "per GPU", 10753.0, "tokens/s", TITAN_H200.format(nodes=8, tps="10,753"), (0.19, 0.30),
        _titan(L31_8B, "selective_op", 2, 8192, 64, precision="fp8", h200=True, compile=True), 64),
    "opt-175b-tflops": Row(
        "OPT-175B on 992 A100 80GB (TP8 + FSDP, micro-batch 8, full AC, fp16): TFLOP/s per GPU", 147.0, "TFLOP/s",
        "Zhang et al. 2022, OPT (arXiv:2205.01068), §2.4: 'utilization of up to 147 TFLOP/s per GPU' on 992 80GB "
        "A100; layout and batch from metaseq's launcher (facebookresearch/metaseq "
        "metaseq/launcher/opt_baselines.py)", (0.10, 0.20), _opt_175b, 992),
}


@cache
def _estimate(key: str) -> Estimate:
    return ROWS[key].run()


def ours(key: str) -> float:
    row, c = ROWS[key], _estimate(key).compute
    if row.unit == "TFLOP/s":  # as the paper counts: with the recomputed forward (hardware FLOPs)
        return c.hardware_flops_per_step.value / c.step_time_s.value / row.gpus / 1e12
    return c.tokens_per_s.value / row.gpus


@pytest.mark.parametrize("key", sorted(ROWS))
def test_published_fsdp_run_within_its_band(key):
    row = ROWS[key]
    err = ours(key) / row.reference - 1
    lo, hi = row.band
    assert lo <= err <= hi, f"{key}: ours {ours(key):.4g} vs {row.reference} ({err:+.1%}, band {lo:+.0%} … {hi:+.0%})"
    assert _estimate(key).fits


# bf16 H100 row -> its error with the NVL datasheet's bf16 peak for every bf16 rate, recorded 2026-11-28 after
# clock30 (2026-11-27: 0.116, 0.157, 0.171, 0.210, 0.190, 0.101, 0.258 in this order)
AT_NVL_PEAK = {"titan-h100-llama31-8b-fsdp-8": 0.141, "titan-h100-llama31-8b-fsdp-128": 0.178,
               "titan-h100-llama31-8b-compile-8": 0.202, "titan-h100-llama31-8b-compile-128": 0.237,
               "titan-h100-llama31-405b-2d": 0.121, "titan-h100-llama31-70b-2d-bf16": 0.106,
               "titan-h100-llama31-8b-2d-bf16": 0.222}


def test_bf16_h100_rows_stay_fast_even_at_the_nvl_datasheet_peak():
    """torchtitan's footnote puts its 500 W HBM2e H100's peak "between SXM and NVL" and calls it unknown. No
    independent bf16 GEMM-vs-power-limit measurement exists to price that (docs/training.md), so the catalog's
    card keeps the SXM's rates. Taking the bottom of the footnote's bracket, the NVL datasheet's 835 TFLOP/s
    dense bf16 (NVIDIA H100 datasheet) for every bf16 rate, the five compiled bf16 rows are still +13% … +28%
    fast and the eager 8B rows +17% / +21% (``AT_NVL_PEAK``, recorded 2026-11-28 after clock30; +10 … +26% and
    +12% / +16% before): the power limit alone does not close them. Re-recorded after ops34 (the kernels outside
    the modules: autograd's gradient sums, the embedding's dense backward; docs/training.md): compiled +11% … +24%,
    eager +14% / +18%.
    Asserted: each reading within ±3 points."""
    from llmplan.core.engine import estimate as engine_estimate

    keys = [k for k in ROWS if k.startswith("titan-h100") and "float8" not in k]
    assert sorted(keys) == sorted(AT_NVL_PEAK)

    def at_nvl_peak(sc):
        g = sc.cluster.gpu
        pf = g.peak_flops.model_copy(update={k: getattr(g.peak_flops, k) * 835 / 989.4 for k in ("bf16", "fp16")})
        return engine_estimate(sc.model_copy(update={"cluster": sc.cluster.model_copy(update={"gpu": g.model_copy(
            update={"peak_flops": pf})})}))

    for key in keys:
        with pytest.MonkeyPatch.context() as mp:  # the rows' run() looks up ``estimate`` in this module
            mp.setitem(ROWS[key].run.__globals__, "estimate", at_nvl_peak)
            e = ROWS[key].run()
        assert e.compute.tokens_per_s.value < 0.95 * _estimate(key).compute.tokens_per_s.value  # the peak moved it
        err = e.compute.tokens_per_s.value / ROWS[key].gpus / ROWS[key].reference - 1
        assert err == pytest.approx(AT_NVL_PEAK[key], abs=0.03), (key, err)


# torchtitan's Memory(GiB) column: max_reserved_gib of torch.cuda.memory_stats (torchtitan metrics.py at
# 9dec370a), which leaves out the CUDA context; our total includes it, so the reference is the reserved
# bytes + the FSDP2 profile's context (0.5 GiB, measured beside PyTorch's reserved bytes on an H100).
H100_MEMORY = {  # row -> measured GiB (Tables 1 and 3, d4c86e37)
    "titan-h100-llama31-8b-compile-8": 77.0, "titan-h100-llama31-8b-compile-128": 62.0,
    "titan-h100-llama31-8b-float8-8": 76.8, "titan-h100-llama31-8b-float8-128": 61.8,
}


@pytest.mark.parametrize("key", sorted(H100_MEMORY))
def test_h100_compiled_rows_memory_within_10_percent(key):
    """The compiled rows, whose fused kernels the FSDP2 profile describes; recorded 2026-11-27: −3.2%, −3.5%,
    +0.6%, −3.3% (before the upcast loss's 12 B per logit, ``activations.loss_peak_bytes``: −22% and worse).
    Tolerance 10%, as for the Hugging Face runs' memory (tests/core/training/test_hf_h100_runs.py)."""
    context = framework_profile("fsdp2").context_bytes
    measured = H100_MEMORY[key] * 2**30 + context
    assert _estimate(key).memory.total.value == pytest.approx(measured, rel=0.10)


def test_llama2_70b_selective_op_at_batch_2_does_not_fit_an_a100():
    """torchtitan docs/performance.md (3faaa1a0), footnote 3: 'the 70B training with local batch size 2 will
    cause an OOM error when selective activation checkpointing is used', so the table gives batch 1."""
    assert not _titan(L2_70B, "selective_op", 2, 4096, 64)().fits
    assert _estimate("titan-a100-llama2-70b-op").fits


def test_the_upcast_loss_holds_12_bytes_per_logit_at_its_backward():
    """torchtitan's loss (cross_entropy over pred.float(), train.py at 9dec370a): log_softmax's backward holds its
    fp32 output, the incoming gradient and the input gradient, 12 B per logit; Megatron's fp32-logit loss is
    counted at 4 B. By hand for Llama 3 8B, 2 × 8,192 tokens on one of 8 GPUs, no recompute (so no recomputed
    block's working set to compare with): 8 B × 2 × 8,192 × 128,256 more, exact up to the 5% fragmentation."""

    def run(loss: str) -> Estimate:
        tr = TrainingSettings(framework="fsdp2", seq_len=8192, micro_batch=2, global_batch=16, recompute="none",
                              zero_stage=3)
        doc = PlanDocument(model=ModelRef(id=L3_8B), workload="pretrain", training=tr,
                           hardware=HardwareRef(gpu="nvidia-a100-sxm4-80gb", gpus_per_node=8, nodes=1,
                                                network="ib-hdr-200"), parallelism=ParallelLayout(dp=8))
        sc = evaluate_plan(doc)[0]
        # torchtitan runs only its upcast loss (FrameworkProfile.losses): Megatron's is swapped in on the same step
        return estimate(sc.model_copy(update={"training": sc.training.model_copy(update={"loss": loss})}))

    upcast, fp32 = run("upcast"), run("fp32_logits")
    extra = 8 * 2 * 8192 * 128256
    assert upcast.memory.activations.value - fp32.memory.activations.value == pytest.approx(extra, rel=1e-9)
    assert upcast.memory.total.value - fp32.memory.total.value == pytest.approx(extra * 1.05, rel=1e-9)


# the uncompiled rows: measured GiB (Tables 1 and 3, d4c86e37) and the error recorded 2026-11-27
H100_EAGER_MEMORY = {"titan-h100-llama31-8b-fsdp-8": (82.4, -0.092), "titan-h100-llama31-8b-fsdp-128": (67.0, -0.103)}


@pytest.mark.parametrize("key", sorted(H100_EAGER_MEMORY))
def test_h100_eager_rows_memory_pinned(key):
    """The rows run without torch.compile reserved 5.4 and 5.0 GiB more than their compiled twins. Under
    operator-level checkpointing a block keeps the same tensors compiled or not (the policy's saved matmul and
    SDPA outputs, ``selective_op``), and the step peaks at the loss's backward (12 B per logit, 2 × 8,192 ×
    128,256 logits), above any recomputed block's eager working set; what the uncompiled modules add at that
    moment is the final RMSNorm's fp32 input copy (0.25 GiB, ``activations.final_norm_extra``). So the model
    puts them 9.2% and 10.3% low: the rest is not in what autograd keeps by the code (torchtitan metrics.py
    reports max_reserved, which also holds the caching allocator's split segments; not modelled). Pinned at the
    recorded error ± 2 points; the eager estimate stays above the compiled one."""
    measured, recorded = H100_EAGER_MEMORY[key]
    context = framework_profile("fsdp2").context_bytes
    err = _estimate(key).memory.total.value / (measured * 2**30 + context) - 1
    assert err == pytest.approx(recorded, abs=0.02), (key, err)
    compiled = key.replace("fsdp-", "compile-")
    assert _estimate(key).memory.total.value > _estimate(compiled).memory.total.value
