"""Megatron-Core on H100: the weak-scaling table of NVIDIA/Megatron-LM's README, nine GPT models from 1.7B on
48 GPUs to 462B on 6,144 GPUs, bf16.

Source: NVIDIA/Megatron-LM README.md, "Training Speed and Scalability" (commit f2e5db402c, 2024-07-15, "New
scaling figures on H100 GPUs"; the table is images/model_table.png, the runs used Megatron-Core r0.8.0 as the
figure beside it says). Stated there: GPT models, vocabulary 131,072, sequence 4,096, the heads, hidden size,
layers, TP, PP, DP, GPU count and global batch of each row; ``--overlap-grad-reduce --overlap-param-gather``
(so the distributed optimizer, which ``--overlap-param-gather`` requires in r0.8.0 arguments.py),
``--tp-comm-overlap`` (which requires sequence parallelism), end-to-end throughput "including data loading,
optimizer steps, communication, and even logging". The published column is model TFLOP/s per GPU; MFU is that
over the 989 TFLOP/s dense bf16 peak (408.8 / 989 = 41%, as printed; Megatron-LM issue #1276 confirms the
denominator), so the runs are 16-bit.

How the table counts FLOPs, and how we compare: Megatron-Core r0.8.0 ``num_floating_point_operations``
(megatron/training/training.py) counts 12·B·s·L·h²·(1 + groups/heads + s/h + ffn/h + V/(2·L·h)): every weight
matmul, QKᵀ and AV over the full s×s square (no causal halving), the logits, forward and backward, no
recomputation. The engine's model FLOPs (``compute.flops_per_step``) count the same things; the first test
checks they are equal to 1e-9, so ours / published TFLOP/s is ours / published step time.

Not stated, so assumed (the Megatron-LM default where there is one): micro-batch 1 (``--micro-batch-size`` has
no default; 1 is the smallest), no interleaved schedule (``--num-layers-per-virtual-pipeline-stage`` unset), no
activation recomputation (the default), flash attention (Transformer Engine), a 4h GeLU MLP with biases and
learned positions (GPT; the parameter counts fit the row labels only with untied embeddings, so untied), fp32
gradient reduction (r0.8.0 sets ``accumulate_allreduce_grads_in_fp32`` for bf16), DGX H100 nodes on 8 × 400 Gb/s
NDR InfiniBand (the catalog's ``dgx-h100`` preset; the README names only "H100 GPUs"). Everything else is the
catalog's H100 defaults and the ``megatron`` profile with ``tp_comm_overlap`` on. The measured figure is never
an input.

Result (recorded 2026-11-28 after clock30, TFLOP/s per GPU, ours vs published: GEMMs at the catalog's best-shape rate
and full clock, the clock falling only with the compute-bound share of the step, 1.8 µs between kernels, hidden
collectives charged 18.9% of their hidden time; docs/training.md "Step time"): 1.7B 541.1 / 408.8 (+32.4%), 7.1B
586.2 / 465.9 (+25.8%), 16B 492.5 / 489.1 (+0.7%), 32B 330.3 / 459.6 (−28.1%), 70B 392.9 / 419.7 (−6.4%), 119B
432.6 / 420.5 (+2.9%), 177B 450.0 / 432.8 (+4.0%), 314B 466.2 / 474.4 (−1.7%), 462B 471.8 / 459.9 (+2.6%). Median
+2.6%, median |error| 4.0%, worst −28.1%. Before clock30 (2026-11-27, the price audit and the head and loss on the
last pipeline stage combined) the rows read +26.1, +25.3, +3.7, −24.9, −4.2, +3.0, +2.7, −4.3 and −1.2% (median
+2.7%): GEMMs at full price made every compute-heavy step shorter, and the 18.9% charge on hidden collectives made
the rows with much hidden traffic (16B, 32B, 70B: TP overlap and fp32 gradient reduction) slower. Before kern28 +
head28 + eager28 they read +14.6, +17.0, −0.5, −28.0, −8.1, +1.2, +2.9, −2.7 and +3.4% (median +1.2%).

The pattern (docs/training.md, "Megatron-Core on H100"):
- the rows whose step is all compute (1.7B, 7.1B: TP ≤ 2, every DP ring spans whole nodes and hides behind the
  backward) are +26…+32% fast, the same sign as Llama 3's Table 4 rows on H100 (+21…+24%,
  test_llama3_405b.py). Since clock30 the engine's single-GPU H100 work matches profiled Hugging Face Llama blocks
  within 1% (docs/training.md, "Step time"), so what is missing is a term of large multi-GPU runs that the old
  model's GEMM prices (about 15% under) used to hide. It is not the clock (an independent minutes-long burn of all
  eight GPUs holds what the engine charges these rows: test_the_sustained_clock_is_not_the_h100_gap), and no
  independent measurement says which term it is;
- the TP8 rows without a pipeline (32B) are slow because every DP group then holds one GPU per node and its
  fp32 gradient reduce-scatter shares the node's eight NICs: 0.42 s of traffic per step that Megatron hides
  only behind the last micro-batch's backward (schedules.py ``forward_backward_no_pipelining`` runs the others
  under ``no_sync``). How long that window is depends on the micro-batch size the README does not state: at
  micro-batch 4 (one micro-batch per step) the same row reads +6% (+27% before clock30: the hidden 0.62 s of DP and
  0.24 s of TP traffic now cost 18.9% of their time; test_the_unstated_micro_batch_decides_the_tp8_row);
- the pipelined rows (70B…462B) depend on the unstated interleaving: at v = 1 the bubble is
  (p − 1)/m, and v = 2 or 4 adds 4…21 points (177B: +4.0% → +15% → +23%;
  test_the_unstated_interleaving_moves_the_pipelined_rows).
So the near-zero median is partly the compute optimism of the first point cancelled by the conservative
assumptions (micro-batch 1, no interleaving) of the other two. Over every micro-batch and interleaving left
open that fits (``settings_range``), each row's fastest reading but 32B's is +18…+35% (32B: +6%) and the slowest
−29…+32%; for 1.7B and 7.1B even the slowest is above the published figure. Bands are pinned at the recorded error
± about 4 points, so a change that moves a row is seen; the median is asserted within 10% (issue 15's target
for Narayanan's table).

NVIDIA's NeMo "Performance Summary" tables (NeMo 24.07 to 26.06, Megatron-Bridge docs) state every setting of
their runs in the Megatron-Bridge performance recipes, but their dense H100 rows (Llama 3 8B/70B/405B, GPT-3
175B, Nemotron) are all FP8. The one bf16 H100 row, GPT-OSS 120B (a mixture of experts), is checked at the end
(test_nemo_gpt_oss_row_is_pinned_fast).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.model import ModelSpec
from llmplan.core.result import Estimate
from llmplan.core.training.comms import OVERLAP_SLOWDOWN
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

SOURCE = ("NVIDIA/Megatron-LM README.md at f2e5db402c (2024-07-15), 'Training Speed and Scalability' model table: "
          "Megatron-Core r0.8.0, GPT, bf16, H100, sequence 4,096, vocabulary 131,072")
SEQ, VOCAB = 4096, 131072


@dataclass(frozen=True)
class Row:
    label: str  # the table's "Model size"
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    dp: int
    batch: int  # global batch, sequences
    tflops: float  # published per-GPU model teraFLOP/s
    band: tuple[float, float]  # relative error asserted at the stated assumptions (module doc; moved 2026-11-28 with clock30)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


ROWS = (
    Row("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8, (0.28, 0.36)),
    Row("7.1B", 32, 4096, 30, 2, 1, 48, 192, 465.9, (0.21, 0.29)),
    Row("16B", 48, 6144, 32, 4, 1, 48, 192, 489.1, (-0.03, 0.05)),
    Row("32B", 56, 7168, 48, 8, 1, 48, 192, 459.6, (-0.32, -0.24)),
    Row("70B", 64, 8192, 84, 8, 2, 48, 384, 419.7, (-0.11, -0.02)),
    Row("119B", 80, 10240, 92, 8, 4, 48, 768, 420.5, (-0.01, 0.07)),
    Row("177B", 96, 12288, 96, 8, 6, 48, 1152, 432.8, (0.00, 0.08)),
    Row("314B", 128, 16384, 96, 8, 8, 48, 1536, 474.4, (-0.06, 0.03)),
    Row("462B", 144, 18432, 112, 8, 16, 48, 3072, 459.9, (-0.01, 0.07)),
)
BY_LABEL = {r.label: r for r in ROWS}


def gpt(row: Row) -> ModelSpec:
    """Megatron's GPT block at the row's shape: 4h GeLU MLP, multi-head attention with biases, LayerNorm,
    learned positions, untied input and output embeddings."""
    h = row.hidden
    return ModelSpec(name=f"gpt-{row.label}", model_type="gpt2", vocab_size=VOCAB, hidden_size=h,
                     num_layers=row.layers, num_heads=row.heads, num_kv_heads=row.heads, head_dim=h // row.heads,
                     intermediate_size=4 * h, gated_mlp=False, activation="gelu", attention_bias=True,
                     attention_out_bias=True, mlp_bias=True, norm="layernorm", tie_embeddings=False,
                     position="learned", learned_positions=SEQ, max_position_embeddings=SEQ)


def run(row: Row, micro_batch: int = 1, vp: int = 1) -> Scenario:
    """The row as the README states it, with the module doc's assumptions; ``micro_batch`` and ``vp`` are the
    two unstated settings the sensitivity tests vary."""
    cat = load_hardware_catalog()
    prof = load_framework_profiles()["megatron"].model_copy(update={"tp_comm_overlap": True})
    return Scenario(
        model=gpt(row), cluster=cat.cluster_from(None, nodes=row.gpus // 8, node_id="dgx-h100"), workload="pretrain",
        training=TrainingSettings(framework=prof.id, precision="bf16", seq_len=SEQ, micro_batch=micro_batch,
                                  global_batch=row.batch, recompute="none", flash_attention=True,
                                  distributed_optimizer=True, zero_stage=1),
        parallelism=ParallelLayout(tp=row.tp, pp=row.pp, dp=row.dp, sequence_parallel=row.tp > 1, virtual_stages=vp),
        efficiency=cat.efficiency_for("nvidia-h100-sxm-80gb"), framework_profile=prof,
    )


@cache
def _estimate(label: str, micro_batch: int = 1, vp: int = 1) -> Estimate:
    return estimate(run(BY_LABEL[label], micro_batch, vp))


def ours(label: str, micro_batch: int = 1, vp: int = 1) -> float:
    """Our model TFLOP/s per GPU, counted as the table counts (module doc)."""
    c = _estimate(label, micro_batch, vp).compute
    return c.flops_per_step.value / c.step_time_s.value / BY_LABEL[label].gpus / 1e12


def error(label: str, micro_batch: int = 1, vp: int = 1) -> float:
    return ours(label, micro_batch, vp) / BY_LABEL[label].tflops - 1


def megatron_flops(row: Row) -> float:
    """Megatron-Core r0.8.0 ``num_floating_point_operations`` for one global batch (MHA, no SwiGLU, no MoE)."""
    h, s, L = row.hidden, SEQ, row.layers
    return 12 * row.batch * s * L * h * h * ((1 + 1 + s / h) + 4 + VOCAB / (2 * L * h))


@pytest.mark.parametrize("row", ROWS, ids=[r.label for r in ROWS])
def test_flops_are_counted_as_megatron_counts_them(row):
    e = _estimate(row.label)
    assert e.compute.flops_per_step.value == pytest.approx(megatron_flops(row), rel=1e-9)
    # the labels are rounded (1.7B is 1.754B with untied embeddings and learned positions; tied it would be
    # 1.49B, 12% under): every row within 3.5% of its label
    assert e.params.total / 1e9 == pytest.approx(float(row.label[:-1]), rel=0.035)


@pytest.mark.parametrize("row", ROWS, ids=[r.label for r in ROWS])
def test_row_within_its_pinned_band(row):
    e = _estimate(row.label)
    assert e.fits
    err = error(row.label)
    lo, hi = row.band
    assert lo <= err <= hi, f"{row.label}: ours {ours(row.label):.1f} vs {row.tflops} ({err:+.1%}, band {lo:+.0%}…{hi:+.0%})"


def test_median_error_within_ten_percent():
    errors = [error(r.label) for r in ROWS]
    assert abs(statistics.median(errors)) <= 0.10
    assert statistics.median(abs(e) for e in errors) <= 0.10


def test_compute_only_rows_are_fast_like_llama3_table4():
    """1.7B and 7.1B: no bubble, and every collective hidden but its first call (under 1% of the step late); what
    they expose is only the 18.9% the compute beside them loses (``comms.OVERLAP_SLOWDOWN``, since clock30: 2.6%
    and 6.7% of the step). Both +24…+36% fast (+32.9%, +26.1% since ew31's elementwise kinds; +32.3%, +25.8% at
    clock30; +20…+30% and +26.1%, +25.3% before clock30): the engine's H100 compute, not a communication or bubble
    term, is what is optimistic there (module doc). Since ew31 the 7.1B row's weight all-gather after the optimizer
    step (50.0 ms) outlasts its 49.2 ms window by 0.7 ms: asserted within 0.2% of the step of the slowdown term."""
    for label in ("1.7B", "7.1B"):
        e = _estimate(label)
        c = e.compute
        assert c.breakdown["pipeline_bubble"] == 0
        late = sum(col.exposed_s.inputs["unhidden_s"] for col in e.communication.collectives)
        assert late < 0.01 * c.step_time_s.value
        for col in e.communication.collectives:  # hidden but the unhidden first call: the slowdown term alone
            head = col.exposed_s.inputs["unhidden_s"]
            term = head + OVERLAP_SLOWDOWN * (col.time_s.value - head)
            assert 0 <= col.exposed_s.value - term <= 0.002 * c.step_time_s.value
        assert c.breakdown["exposed_communication"] < 0.07 * c.step_time_s.value
        assert 0.24 < error(label) < 0.36


def test_the_unstated_micro_batch_decides_the_tp8_row():
    """32B (TP8, DP48): each DP group has one GPU per node and its fp32 gradient reduce-scatter shares the node's
    eight NICs with seven others. At micro-batch 1 (four per step) it hides only behind the last micro-batch's
    backward. Nearly the same GEMM time, the exposed communication apart: −28% becomes +6% (recorded 2026-11-28
    after clock30). Before clock30 micro-batch 4 read +27%, like the compute-only rows, with 5% of its step exposed;
    now its 0.42 s reduce-scatter is late by only 0.011 s, but the 0.86 s of DP and TP traffic hidden beside the
    compute costs 18.9% of itself (``comms.OVERLAP_SLOWDOWN``): 26% of the step is exposed."""
    one, four = _estimate("32B", 1).compute, _estimate("32B", 4).compute
    dp = [c for c in _estimate("32B", 1).communication.collectives if c.name == "DP gradient reduce-scatter"]
    assert dp and dp[0].time_s.value > 0.3 and dp[0].exposed_s.value > 0.25
    assert one.breakdown["exposed_communication"] > 0.45 * one.step_time_s.value
    assert 0.20 * four.step_time_s.value < four.breakdown["exposed_communication"] < 0.30 * four.step_time_s.value
    (rs4,) = [c for c in _estimate("32B", 4).communication.collectives if c.name == "DP gradient reduce-scatter"]
    late = rs4.time_s.value - (rs4.time_s.value - rs4.exposed_s.value) / (1 - OVERLAP_SLOWDOWN)
    assert late < 0.02  # hidden but 0.011 s: the rest of its exposed time is the slowdown term
    # the GEMMs are the same FLOPs; four times longer ones pay the 3 µs fixed cost a quarter as often (-1%)
    assert four.breakdown["gemm"] == pytest.approx(one.breakdown["gemm"], rel=0.05)
    assert 0.02 < error("32B", 4) < 0.10


def test_the_unstated_interleaving_moves_the_pipelined_rows():
    """177B (PP6, 24 micro-batches per DP rank): the 1F1B bubble is 5/24 of the compute at v = 1; v = 2 and 4
    (16 and 8 layers per stage split in 2 and 4 chunks) cut it to 5/48 and 5/96: +4.0% → +15.4% → +23.3% (recorded
    2026-11-28 after clock30; +2.7% → +14.6% → +23.4% before it, −0.5% → +11% → +19% before kern28 + head28 +
    eager28). Which one NVIDIA ran is not stated."""
    errs = [error("177B", 1, v) for v in (1, 2, 4)]
    assert errs[0] < errs[1] < errs[2]
    assert 0.10 < errs[1] < 0.19 and 0.19 < errs[2] < 0.28


def table(micro_batch: int = 1, vp: int = 1) -> str:
    """Ours vs published, one line per row (python -m tests.core.training.test_megatron_core_h100)."""
    lines = ["| model | GPUs | TP/PP/DP | published TFLOP/s | ours | error | ours tokens/s/GPU | exposed comm | bubble |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in ROWS:
        c = _estimate(r.label, micro_batch, vp).compute
        lines.append(f"| {r.label} | {r.gpus:,} | {r.tp}/{r.pp}/{r.dp} | {r.tflops} | {ours(r.label, micro_batch, vp):.1f}"
                     f" | {error(r.label, micro_batch, vp):+.1%} | {c.tokens_per_s.value / r.gpus:,.0f}"
                     f" | {c.breakdown['exposed_communication'] / c.step_time_s.value:.0%}"
                     f" | {c.breakdown['pipeline_bubble'] / c.step_time_s.value:.0%} |")
    return "\n".join(lines)


def settings_range(row: Row) -> tuple[float, float]:
    """Our error at the slowest and at the fastest of the settings the README leaves open that fit in 80 GB and
    that Megatron accepts: micro-batch 1, 2, 4 or 8 (dividing the batch per DP rank) and any interleaving whose
    chunks hold whole layers (v dividing the layers per stage; m divisible by p when v > 1)."""
    from llmplan.errors import LayoutError

    per_rank, per_stage = row.batch // row.dp, row.layers // row.pp
    errs = []
    for mb in (m for m in (1, 2, 4, 8) if per_rank % m == 0):
        for v in ([1] if row.pp == 1 else [d for d in range(1, per_stage + 1) if per_stage % d == 0]):
            try:
                e = _estimate(row.label, mb, v)
            except LayoutError:
                continue
            if e.fits:
                errs.append(error(row.label, mb, v))
    return min(errs), max(errs)


def test_no_unstated_setting_makes_the_engine_slower_than_every_row():
    """Over every micro-batch and interleaving the README leaves open (``settings_range``), the fastest reading of
    every row but 32B is 18…35% above the published figure, and for 1.7B and 7.1B even the slowest is above it
    (+32.4%, +25.8%). 32B's fastest, micro-batch 4, is +6.0%: since clock30 its 0.86 s of hidden DP and TP traffic
    costs 18.9% of itself (test_the_unstated_micro_batch_decides_the_tp8_row). Recorded 2026-11-28 after clock30
    (before it every row's fastest was +16…+34%, 32B's +26.8%). Whatever NVIDIA ran, the engine is not pessimistic on
    these rows; on the two smallest it is at least 20% optimistic, with nothing but compute in the step."""
    ranges = {r.label: settings_range(r) for r in ROWS}
    assert all(hi > 0.15 for label, (_, hi) in ranges.items() if label != "32B"), ranges
    assert 0.02 < ranges["32B"][1] < 0.10
    assert ranges["1.7B"][0] > 0.20 and ranges["7.1B"][0] > 0.20


# --- NeMo's one bf16 H100 row: GPT-OSS 120B (mixture of experts), Megatron-Bridge, NeMo 26.02 ------------------------
# NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md at c0b9a0003 (2026-02-26, "26.02 perf summary"), DGX-H100:
# GPT OSS 120B, 64 GPUs, BF16, GBS 1280, MBS 1, sequence 4096, TP1 PP4 CP1 EP8, no VP: 5,993 tokens/s per GPU. The
# settings are the recipe's at the same commit (scripts/performance/configs/gpt_oss/: gpt_oss_workload_base_configs.py
# GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V2, and gpt_oss_llm_pretrain.py set_gpt_oss_common_configs): gradients
# reduced in bf16 (``grad_reduce_in_fp32 = False``), router load balancing forced, selective recompute of the
# layernorm and MoE activation only (GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1 ``recompute_modules=["layernorm",
# "moe_act"]``, which scripts/performance/utils/overrides.py ``_set_recompute_overrides`` runs with granularity
# selective: ``training.recompute_modules``),
# and, from scripts/performance/utils/overrides.py ``_set_common_perf_overrides``, Transformer Engine's fused
# cross-entropy (``cross_entropy_fusion_impl = "te"``: ``training.loss = "te_ce"``). Tokens/s is compared: NeMo's
# model-FLOP count for this model (163 TFLOP/s at 5,993 tokens/s = 27.2 GFLOP per token) is not the engine's.
NEMO_GPT_OSS_H100 = 5993.0
NEMO_GPT_OSS_SOURCE = ("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md at c0b9a0003 (2026-02-26), NeMo 26.02, "
                       "DGX-H100: GPT OSS 120B, 64 GPUs, BF16, GBS 1280, MBS 1, seq 4096, PP4 EP8; settings from "
                       "scripts/performance/configs/gpt_oss/ at the same commit")


def nemo_gpt_oss_run() -> Scenario:
    from llmplan.catalog.models import load_model_catalog

    cat = load_hardware_catalog()
    prof = load_framework_profiles()["megatron"].model_copy(update={"fp32_grad_accumulation": False})
    return Scenario(
        model=load_model_catalog(include_user=False).get("openai/gpt-oss-120b").spec,
        cluster=cat.cluster_from(None, nodes=8, node_id="dgx-h100"), workload="pretrain",
        training=TrainingSettings(framework=prof.id, precision="bf16", seq_len=4096, micro_batch=1, global_batch=1280,
                                  recompute="selective", recompute_modules=("layernorm", "moe_act"),
                                  distributed_optimizer=True, zero_stage=1, loss="te_ce"),
        parallelism=ParallelLayout(tp=1, pp=4, dp=16, ep=8, sequence_parallel=False),
        efficiency=cat.efficiency_for("nvidia-h100-sxm-80gb"), framework_profile=prof,
    )


@cache
def nemo_gpt_oss_tokens_per_gpu() -> float:
    return estimate(nemo_gpt_oss_run()).compute.tokens_per_s.value / 64


def test_nemo_gpt_oss_row_is_pinned_fast():
    """9,140 tokens/s per GPU against 5,993: +52.5% (recorded 2026-11-28 after recmod31), pinned at +49.5…+55.5%.
    Our step is 8.96 s: GEMMs 4.60 s, exposed communication 1.01 s (the EP all-to-all: the recipe sets no
    expert-parallel overlap), memory-bound kernels 1.89 s, attention 0.77 s, the loss 0.25 s, bubble 0.25 s, gaps
    between kernels 0.20 s; measured 13.7 s. The last of the four stages (9 layers each) also runs the 201,088-word
    head and its loss and sets the pace.
    recmod31: the recipe's selective recompute of the layernorm and the MoE activation, now a plan setting
    (``training.recompute_modules``, ``core.training.recompute_modules``), was charged as no recompute: each MoE
    block's backward runs the pre-MLP norm, the experts' activation and gpt-oss's clamped-GLU ops again, +0.29 s of
    memory-bound time (8.70 → 8.96 s): +57.2% → +52.5%; the peak falls 62.6 → 58.6 GiB (one 2·s·h norm output and
    one expert-wide tensor per routed copy no longer kept per MoE block).
    gptoss31 read the code this run executes (docs/training.md, "GPT-OSS 120B on 64 H100: the code, candidate by
    candidate"), +57.4% → +42.6% → +39.9% → +57.2%. (1) Megatron-Core's TEGroupedMLP runs two chains of eager
    PyTorch ops around its fused activation that the engine left out (``ops.grouped_mlp_extras``): the ±7 clamps of
    gpt-oss's clamped GLU and their ``torch.cat`` (16·I bytes per routed row forward, 30·I backward), and the
    expert output biases added per local expert (12·h bytes forward and backward, 2 and 4 kernels per local
    expert): +0.89 s of memory-bound time, +0.14 s of gaps and +0.04 s of bubble, less 0.17 s of GEMMs and
    attention (a step less compute-bound holds a higher clock), net +0.90 s (+42.6%). Of the 1.6 s memory-bound,
    0.37 s is the MoE token permutation (``ops.moe_permutation``) and 0.89 s those two chains. (2) The 18 sliding
    layers (128-token window) run at their window's flash share (``kernel_rates.window_share``), not the 4,096-token
    one: attention 0.61 → 0.77 s (+39.9%). (3) The performance scripts run Transformer Engine's cross-entropy on the
    bf16 logits, 10 B per logit (``ops.LOSS_BYTES``), not the fp32 one (55 B measured) the megatron profile
    charges: the loss 1.36 → 0.25 s (+57.2%).
    History: +57.4% after clock30 (8.69 s); +46.2% before it (9.35 s: GEMMs 5.5 s at 0.924 × 0.869 of the
    best-shape rate and 7.5 µs each; now at the full best-shape rate, the clock of this step's compute-bound share,
    and 3 µs each). Earlier: with the old prices and the head spread over the stages +42.8% (9.6 s); the head on the
    last stage alone +14.8% (11.9 s), the price audit alone +83.9% (its 7.5 µs GEMM fixed cost, not 23 µs, for
    about 70k small expert GEMMs a step), both +40.1% (9.76 s); grouped local experts then +46.2%: the recipe sets
    ``moe_grouped_gemm`` (Megatron-Bridge gpt_oss_provider.py at c0b9a0003), so Megatron-Core runs TEGroupedMLP,
    whose Transformer Engine GroupedLinear issues the 16 local experts' cuBLAS GEMMs over 4 streams in one call: 4
    fixed costs per projection, not 16 (``ops.expert_grouping``). Grouping can only remove fixed costs, so it moves
    this optimistic row further away. Each local expert's GEMM is priced at its own shape, 1,024 tokens (4,096 ·
    top-4 · EP8 / 128 experts) × 5,760 × 2,880 and × 2,880 × 2,880; the 2026-11-28 kernel sweep reproduces shapes of
    that size on an H100 within a few percent (tests/core/training/test_gemm_sweep.py), so per-expert GEMM
    efficiency is not the missing time either, unless the grouped call falls short of what its GEMMs do alone; no
    grouped-GEMM measurement at these shapes is at hand to say so. The recipe forces balanced routing, so no load
    imbalance is charged. Left open (docs/training.md, "Megatron-Core on H100")."""
    e = estimate(nemo_gpt_oss_run())
    assert e.fits
    err = nemo_gpt_oss_tokens_per_gpu() / NEMO_GPT_OSS_H100 - 1
    assert 0.495 < err < 0.555, f"{err:+.1%}"
    assert any("TEGroupedMLP" in note for note in e.compute.compute_time_s.assumptions)  # the figure names the term
    ep = [c for c in e.communication.collectives if c.group == "ep"]
    assert ep and ep[0].exposed_s.value == pytest.approx(ep[0].time_s.value)


# --- is the H100 compute optimism the clock? An independent minutes-long, all-GPU GEMM burn says no ----------------
# huggingface/gpu-fryer README.md at 59ad16a (2025-08-06, PR #9): cuBLAS bf16 matmuls of two 8192 × 8192 matrices on
# every GPU of a node at once, for minutes (the A100 figures: three 10-minute runs on Jean Zay); "~" figures. The
# catalog's matching figure is the best-shape GEMM rate held with GEMMs back to back, peak · matmul ·
# sustained_clock: since clock30 the engine charges it only to a step that is all GEMMs and attention, full clock
# up to ``full_clock_share`` of the step (H100 SXM 0.40) and a line between (``kernel_rates.clock_factor``).
GPU_FRYER_BF16 = {"nvidia-h100-sxm-80gb": 730e12, "nvidia-a100-sxm4-80gb": 270e12, "nvidia-a100-pcie-40gb": 224e12}
GPU_FRYER_SOURCE = ("huggingface/gpu-fryer README.md at 59ad16a (2025-08-06): sustained bf16 cuBLAS 8192x8192 matmul "
                    "on all GPUs of a node for minutes (A100: 3 x 10-minute runs, Jean Zay)")


def held_gemm_rate(gpu_id: str) -> float:
    cat = load_hardware_catalog()
    eff = cat.efficiency_for(gpu_id)
    return cat.gpu(gpu_id).spec.peak_flops.bf16 * eff.matmul * eff.sustained_clock


def engine_clock(label: str) -> float:
    """The share of full clock the engine runs a row's GEMMs at: its GEMM time with the clock never dropping
    (sustained_clock 1) over its GEMM time as charged."""
    sc = run(BY_LABEL[label])
    never = sc.model_copy(update={"efficiency": sc.efficiency.model_copy(update={"sustained_clock": 1.0})})
    return estimate(never).compute.breakdown["gemm"] / _estimate(label).compute.breakdown["gemm"]


def test_the_sustained_clock_is_not_the_h100_gap():
    """gpu-fryer's H100 SXM holds ~730 TFLOP/s with GEMMs back to back on all eight GPUs for minutes; the catalog's
    held rate, 688.5 (its own single-GPU 0.78 s measurement), is 5.7% less, and since clock30 the engine charges
    it only to a step that is all GEMMs. The compute-only rows run their GEMMs at 0.919 (1.7B) and 0.891 (7.1B) of
    full clock, 728 and 706 TFLOP/s on an 8192² GEMM: at or under what a DGX's GPUs hold with nothing but GEMMs.
    So the GPUs do not drop their clocks below what the engine charges, and the +26…+32% of those rows lies
    elsewhere (with gpu-fryer's 730 as the held rate they would read +35.9% and +30.6%). The A100 PCIe's measured
    figure (215.4) is 3.8% under gpu-fryer's 224. The A100 SXM's catalog clock, 0.869, is an assumption (taken from
    the H100) that gpu-fryer contradicts: 232.8 against ~270, 13.8% less; that GPU holds its short-run MAMF rate
    (267.9). Recorded 2026-11-28 after clock30 (the catalog ratios as on 2026-11-27); asserted within 3 points of
    those ratios, and the rows' clocks within 0.01."""
    ratios = {g: held_gemm_rate(g) / fryer for g, fryer in GPU_FRYER_BF16.items()}
    assert 0.913 < ratios["nvidia-h100-sxm-80gb"] < 0.973
    assert 0.932 < ratios["nvidia-a100-pcie-40gb"] < 0.992
    assert 0.832 < ratios["nvidia-a100-sxm4-80gb"] < 0.892
    full = held_gemm_rate("nvidia-h100-sxm-80gb") / load_hardware_catalog().efficiency_for(
        "nvidia-h100-sxm-80gb").sustained_clock
    clocks = {label: engine_clock(label) for label in ("1.7B", "7.1B")}
    assert clocks["1.7B"] == pytest.approx(0.919, abs=0.01) and clocks["7.1B"] == pytest.approx(0.891, abs=0.01)
    assert all(full * c < GPU_FRYER_BF16["nvidia-h100-sxm-80gb"] * 1.005 for c in clocks.values())


def test_the_a100_clock_assumption_hides_the_same_gap():
    """What the A100 SXM rows would read with the clock gpu-fryer measures (sustained_clock 1.0 instead of the assumed
    0.869, which the engine reaches in steps that are all GEMMs and attention): Narayanan et al. 2021 Table 1 moves
    from −5.4…+7.6% (median +0.7%) to +5.5…+18.2% (median +12.4%), the large, compute-bound rows to +13…+18%
    (recorded 2026-11-28 after clock30; before it, with every GEMM at 0.924 × 0.869 of the best-shape rate, −6.7…+1.8%,
    median −4.3%, and +1.2…+12.1%, median +5.4%). On both GPUs, then, large compute-bound runs are about 13–32%
    slower than the engine's terms add up to, and on the A100 the assumed clock hides part of it. Not changed here:
    on its own it would break A100 families issue 15 counts as met (torchtitan's five A100 rows would read
    +11.5…+28.0% against 15%, OPT-175B +28.2%; recorded before kern28 and eager28, not recomputed), and the missing
    term has no independent measurement yet."""
    from tests.core.training import test_narayanan_2021 as nara

    measured = nara.CATALOG_A100.model_copy(update={"sustained_clock": 1.0})
    errs = {row[0]: nara.predicted_tflops(row, measured) / row[8] - 1 for row in nara.ROWS}
    assert 0.09 < statistics.median(errs.values()) < 0.16
    assert all(0.11 < errs[b] < 0.21 for b in (76.1, 145.6, 310.1, 1008.0))


if __name__ == "__main__":
    print(table())
