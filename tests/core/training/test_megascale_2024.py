"""MegaScale (Jiang et al., NSDI 2024, arXiv:2402.15627v1): GPT 175B and 530B on 256–12,288 Ampere GPUs, each run
measured twice, under Megatron-LM and under ByteDance's MegaScale.

Source, all from the paper: Table 1 (175B: 128 heads, hidden 12,288, 96 layers, TP 8, PP 8; 530B: 160 heads, hidden
20,480, 105 layers, TP 8, PP 35); §6.1 (Megatron-LM at commit 285068c8; interleaved schedule with 6 model chunks per
stage for 175B and 3 for 530B; sequence 2,048; vocabulary 64,000; "the same batch size for Megatron-LM and
MegaScale"); Table 2 (175B strong scaling: global batch 768 on 256–1,024 GPUs, 6,144 on 3,072–12,288; iteration time
in seconds per row); Figure 9 (530B weak scaling, batch = GPU count, MFU labels 49.2/48.8/48.2% for Megatron-LM and
54.3/54.1/54.3% for MegaScale on 2,240/4,480/11,200 GPUs; the higher set is MegaScale's, "higher than Megatron-LM by
up to 6.1%" = 54.3 − 48.2); Table 3 (175B on 256 GPUs at batch 256: the Megatron-LM baseline 47.7% MFU, MegaScale
without LAMB 62.3%); §3.6 (each node's eight 200 Gb/s NICs wired multi-rail to
eight switches, up to 64 nodes under one set of ToR switches, three Tomahawk-4 tiers at 1:1, RoCE); §6 ("more than
10,000 NVIDIA Ampere GPUs"; the MFU column's denominator is 312 TFLOP/s, see ``paper_model_flops``).

We compare step times: Table 2 prints them; Figure 9 and Table 3 print MFU only, turned into a step time with the FLOP count
that reproduces Table 2's Megatron-LM MFU column to 0.2 points (``test_the_papers_flop_count_reproduces_table2``).
Error = published step / our step − 1 (= our throughput / published − 1; positive: we are too fast).

**Megatron-LM rows** (12): the settings are Megatron-LM's at 285068c8 where the paper is silent.
- Read from that commit's code: the gradient reduction starts after the whole backward (training.py ``train_step``
  calls ``optimizer.reduce_model_grads`` after ``forward_backward_func`` returns; no overlap), pipeline send/receive
  waits (p2p_communication.py: ``batch_isend_irecv``, ``req.wait()``, ``torch.cuda.synchronize()``), TP collectives
  are not overlapped, input and output embeddings are tied (there is no untie flag yet), bf16 accumulates and reduces
  gradients in fp32 (arguments.py).
- Unstated, so assumed: micro-batch 1 (no default; Megatron's own GPT-3 175B example uses 1); bf16 (fp16 prices the
  same here); sequence parallelism with selective recomputation (the README at 285068c8: "Selective recomputation is
  the default and recommended in almost all cases"); no flash attention (``--use-flash-attn`` is opt-in, and the
  paper lists FlashAttention-2 among MegaScale's own changes, §3.3); no distributed optimizer (opt-in); the GPU is an
  A100 SXM4 80GB with the catalog's defaults (the paper says "Ampere"; on an A800, the same GPU with a 400 GB/s
  NVLink, the Megatron-LM median reads +1.0%: ``test_an_a800_slows_only_the_rows_whose_tp_is_exposed``).
- The output head and the loss run on the last pipeline stage, as Megatron does (docs/training.md, "Pipeline stages:
  the head on the last"); for 530B they are 8.7% of a three-layer stage, for 175B 3.5% of a twelve-layer one.
- Result (recorded 2026-11-28 after clock30, the time model that prices GEMMs at the best-shape rate and full
  clock; ours vs Table 2, step seconds): 175B batch 768: 256 GPUs 40.29 / 40.0 (−0.7%), 512 20.79 / 21.2 (+2.0%),
  768 14.31 / 15.2 (+6.2%), 1,024 11.06 / 11.9 (+7.6%); batch 6,144: 3,072 27.54 / 29.02 (+5.4%), 6,144 14.54 /
  14.78 (+1.7%), 8,192 11.27 / 12.24 (+8.6%), 12,288 7.99 / 8.57 (+7.2%). 530B (Figure 9): 2,240 38.55 / 43.12
  (+11.8%), 4,480 38.61 / 43.47 (+12.6%), 11,200 38.69 / 44.01 (+13.7%). Table 3's baseline, 256 GPUs at batch
  256: 14.11 / 14.83 (+5.0%). Median +6.7%, median |error| 6.7%, worst +13.7% (before clock30, 2026-11-27: +1.9%,
  3.1%, +6.8%; every row has moved 4.7–6.9 points faster). Over the unstated settings that fit (flash attention on
  or off, distributed optimizer on or off, micro-batch 1 or 2) the median reads +7…+18%
  (``test_the_unstated_settings_move_the_median``).
- The pattern: the 175B rows are within −0.7…+8.6%; the 530B rows (one-layer chunks on 35 stages) are 12–14% fast.
  Before clock30 they read −5.7…+3.6% and +5…+7%: the old model charged GEMMs ~15% more than the kernel-level sweep
  measures (and the held clock always), and that under-pricing of the GPU's speed hid a gap at scale that the
  model does not explain; the row that runs closest to one GPU's work (256 GPUs, batch 768: −0.7%) moved least.
  Earlier moves: when kern28 + head28 + eager28 combined; with the old prices and the head spread over the stages
  these read −5.2…+4.1% and +12…+14% (median +2.3%); the head on the last stage alone gave −7.5…+1.8% and +4…+6%
  (median +0.0%). Issue 15's goal (median ≤ 15%) is still met; each row is pinned at its recorded error ± about 3
  points.

**MegaScale rows** (12): the same runs with what §3 describes and the engine prices: TP/SP communication
overlapped with the GEMMs (§3.2, ``tp_comm_overlap``), asynchronous pipeline send/receive (§3.2,
``pp_comm_overlap``), the data-parallel reduce-scatter and all-gather overlapped chunk by chunk (§3.2, Figure 1: a
ZeRO-2-style sharded optimizer, here the distributed optimizer), FlashAttention-2 (§3.3). Not modelled: the parallel
transformer block (§3.1: attention and MLP side by side, one TP all-gather and reduce-scatter per block instead of
two; ``ModelSpec.parallel_block`` exists, but the training time model does not price it), sliding-window attention
(§3.1; the window is not stated) and LAMB (it changes the batch,
not the step; Table 2 keeps the batch). Both missing features make the real step shorter, so the engine should come
out slower than these rows; it comes out faster on all of them: 175B +0.9% at 256 GPUs to +15.2% at 8,192, 530B
+17%, Table 3's batch-256 row +4.9% (recorded 2026-11-28 after clock30; 2026-11-27, before it: 175B −2.7% …
+12.7%, 530B +11%, batch-256 +1.7%; −5.1% … +10.0%, 530B +10%, −0.8% with the head alone; −2.0 … +19.4% before
either). Outside issue 15's per-row reading of 15% on four rows, and pinned there rather than widened silently: the
engine's full overlap leaves only the head of each collective and the 18.9% contention of the hidden part exposed
(8% of the 12,288-GPU step, 2.5% without the contention), while the measured MegaScale runs still lose time as the
GPU count grows at a fixed batch (Table 2: 59.1% → 55.2% MFU); what they lose is not in the model.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.hardware import NetworkSpec
from llmplan.core.model import ModelSpec
from llmplan.core.result import Estimate
from llmplan.core.training.comms import OVERLAP_SLOWDOWN
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

SOURCE = ("Jiang et al., MegaScale (NSDI 2024, arXiv:2402.15627v1): Table 1, §6.1 (Megatron-LM 285068c8, interleaved "
          "6/3 chunks, seq 2,048, vocab 64,000), Tables 2 and 3, Figure 9; §3.6 network (8 x 200 Gb/s RoCE NICs per node, "
          "multi-rail, 64 nodes per ToR set, 1:1 CLOS)")
SEQ, VOCAB = 2048, 64000
PEAK = 312e12  # the A100/A800 dense 16-bit peak: the denominator that reproduces Table 2's MFU column

# §3.6: eight 200 Gb/s NICs per server, each to a different ToR switch (multi-rail); up to 64 servers under the same
# set of ToR switches; three switch tiers, 1:1 downlink to uplink at each.
MEGASCALE_NETWORK = NetworkSpec(id="megascale-roce-8x200", name="MegaScale RoCE, 8 x 200 Gb/s per node, multi-rail",
                                nics_per_node=8, nic_bandwidth=25e9, rail_optimized=True, nodes_per_leaf=64,
                                oversubscription=1.0)


@dataclass(frozen=True)
class Model:
    label: str
    heads: int
    hidden: int
    layers: int
    pp: int
    chunks: int  # interleaved schedule: model chunks per pipeline stage (§6.1)


GPT_175B = Model("175B", 128, 12288, 96, 8, 6)
GPT_530B = Model("530B", 160, 20480, 105, 35, 3)
TP = 8
A100, A800 = "nvidia-a100-sxm4-80gb", "nvidia-a800-sxm4-80gb"  # "NVIDIA Ampere GPUs" (§6); A800: NVLink 400 GB/s


@dataclass(frozen=True)
class Row:
    system: str  # "megatron" or "megascale"
    model: Model
    gpus: int
    batch: int  # global batch, sequences
    step_s: float  # published iteration time (Table 2), or the one Figure 9's or Table 3's MFU gives (``paper_step_s``)
    band: tuple[float, float]  # asserted error band (module doc)
    table: str = "table2"  # "table2", "figure9" or "table3"

    @property
    def key(self) -> str:
        return f"{self.system}-{self.model.label.lower()}-{self.gpus}" + ("-b256" if self.table == "table3" else "")

    @property
    def dp(self) -> int:
        return self.gpus // (TP * self.model.pp)


def paper_model_flops(model: Model, batch: int) -> float:
    """The FLOPs per iteration the paper's MFU counts: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)) (forward and backward,
    no recomputation). With 312 TFLOP/s per GPU it gives Table 2's Megatron-LM MFU column from its iteration times."""
    h, layers = model.hidden, model.layers
    return 72 * batch * SEQ * layers * h * h * (1 + SEQ / (6 * h) + VOCAB / (12 * layers * h))


def paper_step_s(model: Model, gpus: int, mfu: float) -> float:
    """Figure 9 prints MFU only (batch = GPU count): the step time it stands for."""
    return paper_model_flops(model, gpus) / (mfu * gpus * PEAK)


TABLE2 = {  # GPUs: (batch, Megatron-LM s, MegaScale s, Megatron-LM MFU as printed)
    256: (768, 40.0, 32.0, 0.530), 512: (768, 21.2, 16.5, 0.499), 768: (768, 15.2, 11.5, 0.467),
    1024: (768, 11.9, 8.9, 0.447), 3072: (6144, 29.02, 23.66, 0.487), 6144: (6144, 14.78, 12.21, 0.478),
    8192: (6144, 12.24, 9.56, 0.433), 12288: (6144, 8.57, 6.34, 0.412),
}
FIGURE9 = {2240: (0.492, 0.543), 4480: (0.488, 0.541), 11200: (0.482, 0.543)}  # GPUs: (Megatron-LM, MegaScale) MFU
# Table 3 (175B, 256 GPUs, batch 256): row 1, the Megatron-LM baseline, 47.7% MFU; row 8, MegaScale with everything but
# LAMB (whose 3x batch gives Table 2's 256-GPU row), 62.3%. "The networking optimizations are turned on for both."
TABLE3 = (0.477, 0.623)

# re-pinned 2026-11-27 when the head and loss moved to the last pipeline stage (docs/training.md, "Pipeline stages:
# the head on the last"): the 530B rows (35 stages of 3 layers, the head a third of a stage) moved 7-9 points, the
# 175B rows 2-3
# recorded error ± 3.5 points, re-pinned 2026-11-27 when kern28 + head28 + eager28 combined (the rows moved 0.2-2.7
# points faster with the price audit and sat at their old bands' edges); re-pinned 2026-11-28 after clock30 (GEMMs at
# the best-shape rate and full clock, hidden collectives slowing compute 18.9%): every row moved 2.5-7 points faster
_MEGATRON_BANDS = {256: (-0.04, 0.03), 512: (-0.02, 0.05), 768: (0.03, 0.10), 1024: (0.04, 0.11),
                   3072: (0.02, 0.09), 6144: (-0.02, 0.05), 8192: (0.05, 0.12), 12288: (0.04, 0.11),
                   2240: (0.08, 0.15), 4480: (0.09, 0.16), 11200: (0.10, 0.17), 0: (0.02, 0.09)}  # 0: Table 3
_MEGASCALE_BANDS = {256: (-0.03, 0.04), 512: (-0.01, 0.06), 768: (0.02, 0.09), 1024: (0.04, 0.11),
                    3072: (0.07, 0.14), 6144: (0.08, 0.15), 8192: (0.12, 0.19), 12288: (0.08, 0.15),
                    2240: (0.13, 0.20), 4480: (0.14, 0.21), 11200: (0.13, 0.20), 0: (0.01, 0.08)}


def _rows(system: str, bands: dict[int, tuple[float, float]]) -> tuple[Row, ...]:
    col = 1 if system == "megatron" else 2
    out = [Row(system, GPT_175B, gpus, v[0], v[col], bands[gpus]) for gpus, v in TABLE2.items()]
    out += [Row(system, GPT_530B, gpus, gpus, paper_step_s(GPT_530B, gpus, mfu[col - 1]), bands[gpus], "figure9")
            for gpus, mfu in FIGURE9.items()]
    out.append(Row(system, GPT_175B, 256, 256, paper_step_s(GPT_175B, 256, TABLE3[col - 1]), bands[0], "table3"))
    return tuple(out)


MEGATRON_ROWS = _rows("megatron", _MEGATRON_BANDS)
MEGASCALE_ROWS = _rows("megascale", _MEGASCALE_BANDS)
ROWS = {r.key: r for r in MEGATRON_ROWS + MEGASCALE_ROWS}


def gpt(model: Model) -> ModelSpec:
    """Megatron's GPT block: 4h GeLU MLP, multi-head attention with biases, LayerNorm, learned positions, tied
    embeddings (Megatron-LM 285068c8 has no option to untie them)."""
    h = model.hidden
    return ModelSpec(name=f"gpt-{model.label}", model_type="gpt2", vocab_size=VOCAB, hidden_size=h,
                     num_layers=model.layers, num_heads=model.heads, num_kv_heads=model.heads,
                     head_dim=h // model.heads, intermediate_size=4 * h, gated_mlp=False, activation="gelu",
                     attention_bias=True, attention_out_bias=True, mlp_bias=True, norm="layernorm",
                     tie_embeddings=True, position="learned", learned_positions=SEQ, max_position_embeddings=SEQ)


def run(row: Row, micro_batch: int = 1, flash: bool | None = None, distributed_optimizer: bool | None = None,
        recompute: str = "selective", gpu: str = A100) -> Scenario:
    """The row with the module doc's settings; the keyword arguments are the unstated ones the sensitivity tests
    vary (None: the row's system's setting)."""
    cat = load_hardware_catalog()
    megascale = row.system == "megascale"
    prof = load_framework_profiles()["megatron"].model_copy(update={
        "overlap_grad_reduce": megascale, "overlap_param_gather": megascale, "tp_comm_overlap": megascale,
        "pp_comm_overlap": megascale})
    cluster = cat.cluster_from(gpu, 8, nodes=row.gpus // 8, network_id="roce-200").model_copy(
        update={"network": MEGASCALE_NETWORK})
    dist_opt = megascale if distributed_optimizer is None else distributed_optimizer
    return Scenario(
        model=gpt(row.model), cluster=cluster, workload="pretrain",
        training=TrainingSettings(framework=prof.id, precision="bf16", seq_len=SEQ, micro_batch=micro_batch,
                                  global_batch=row.batch, recompute=recompute,
                                  flash_attention=megascale if flash is None else flash,
                                  distributed_optimizer=dist_opt, zero_stage=1 if dist_opt else 0,
                                  overlap_grad_reduce=megascale),
        parallelism=ParallelLayout(tp=TP, pp=row.model.pp, dp=row.dp, sequence_parallel=True,
                                   virtual_stages=row.model.chunks),
        efficiency=cat.efficiency_for(gpu), framework_profile=prof,
    )


@cache
def _estimate(key: str, **settings) -> Estimate:
    return estimate(run(ROWS[key], **settings))


def ours_step_s(key: str, **settings) -> float:
    return _estimate(key, **settings).compute.step_time_s.value


def error(key: str, **settings) -> float:
    """Published step / our step − 1: positive when the engine is too fast."""
    return ROWS[key].step_s / ours_step_s(key, **settings) - 1


def test_the_papers_flop_count_reproduces_table2():
    """72·B·s·l·h²·(1 + s/(6h) + V/(12lh)) over 312 TFLOP/s per GPU gives every Megatron-LM MFU of Table 2 from its
    iteration time to 0.2 points, and the engine's model FLOPs count the same things (within 0.5%: biases and
    norms)."""
    for gpus, (batch, step, _, mfu) in TABLE2.items():
        assert paper_model_flops(GPT_175B, batch) / (step * gpus * PEAK) == pytest.approx(mfu, abs=0.002)
    for row in (ROWS["megatron-175b-256"], ROWS["megatron-530b-2240"]):
        flops = _estimate(row.key).compute.flops_per_step.value
        assert flops == pytest.approx(paper_model_flops(row.model, row.batch), rel=0.005)


def test_the_parameter_counts_are_the_models_names():
    assert _estimate("megatron-175b-256").params.total / 1e9 == pytest.approx(175, rel=0.01)
    assert _estimate("megatron-530b-2240").params.total / 1e9 == pytest.approx(530, rel=0.01)


@pytest.mark.parametrize("row", MEGATRON_ROWS + MEGASCALE_ROWS, ids=lambda r: r.key)
def test_row_within_its_pinned_band(row):
    e = _estimate(row.key)
    assert e.fits  # every run ran on 80 GB Ampere GPUs
    err = error(row.key)
    lo, hi = row.band
    assert lo <= err <= hi, f"{row.key}: ours {ours_step_s(row.key):.2f} s vs {row.step_s:.2f} s ({err:+.1%})"


def test_megatron_median_within_issue_15s_goal():
    """Issue 15: median error ≤ 15%. Recorded 2026-11-28 after clock30: median +6.7%, median |error| 6.7%, worst
    +13.7% (2026-11-27, price audit and head on the last stage combined: +1.9%, 3.1%, +6.8%; head alone: +0.0%,
    3.0%, -7.5%; before both, with the head spread over the stages: +2.3%, 3.0%, +13.5%). The median is pinned
    at its recorded value ± 3.5 points; the worst row must stay inside the issue's 15%."""
    errors = [error(r.key) for r in MEGATRON_ROWS]
    assert 0.03 <= statistics.median(errors) <= 0.10
    assert statistics.median(abs(e) for e in errors) <= 0.10
    assert max(abs(e) for e in errors) <= 0.15


def test_megatron_exposes_its_collectives_and_megascale_hides_them():
    """285068c8 reduces the gradients after the backward and runs TP and pipeline transfers on the critical path:
    at 12,288 GPUs they are a quarter of our Megatron-LM step (2.1 of 8.0 s, recorded 2026-11-28 after clock30;
    2.1 of 8.4 s before). MegaScale's overlaps leave 8% exposed (0.46 of 5.68 s), of which two thirds is the 18.9%
    that the hidden collectives slow the compute beside them (comms.OVERLAP_SLOWDOWN, Lee et al. 2025, arXiv
    2507.03114): what does not hide at all is 2.5% of the step (under 3% before clock30 too, when hiding was
    free)."""
    mega = _estimate("megatron-175b-12288").compute
    est = _estimate("megascale-175b-12288")
    scale = est.compute
    assert 0.20 < mega.breakdown["exposed_communication"] / mega.step_time_s.value < 0.30
    assert 0.06 < scale.breakdown["exposed_communication"] / scale.step_time_s.value < 0.10
    # exposed = late + S·(time − late), so the part that never hid is (exposed − S·time) / (1 − S)
    late = sum((c.exposed_s.value - OVERLAP_SLOWDOWN * c.time_s.value) / (1 - OVERLAP_SLOWDOWN)
               for c in est.communication.collectives)
    assert 0.0 < late / scale.step_time_s.value < 0.03
    names = {c.name: c for c in _estimate("megatron-175b-12288").communication.collectives}
    tp = names["TP all-gather + reduce-scatter (per block)"]
    assert tp.exposed_s.value == pytest.approx(tp.time_s.value)  # not overlapped at 285068c8


def test_the_unstated_settings_move_the_median():
    """Megatron-LM rows over the settings the paper leaves open that fit: flash attention off or on, distributed
    optimizer off or on, micro-batch 1 or 2 (530B at micro-batch 2 fits only with the distributed optimizer, so
    those two combinations are left out). Flash attention is worth 8-9 points, the distributed optimizer 2-3 (its
    reduce-scatter moves half an all-reduce; the all-gather moves 16-bit weights). Recorded 2026-11-28 after
    clock30: without flash attention the median reads +6.7…+9.4%, with it +15.5…+17.7%, past issue 15's 15% (before
    clock30, 2026-11-27: +1.9% slowest, +10.2% fastest, none past 15%; +0.0% and +8.8% with the head alone). That
    flash attention on reads past the bar supports the reading taken: off, as at 285068c8 by default."""
    medians = []
    for flash in (False, True):
        for dist_opt in (False, True):
            for mb in (1, 2):
                settings = {"flash": flash, "distributed_optimizer": dist_opt, "micro_batch": mb}
                if all(_estimate(r.key, **settings).fits for r in MEGATRON_ROWS):
                    medians.append(statistics.median(error(r.key, **settings) for r in MEGATRON_ROWS))
                else:
                    assert mb == 2 and not dist_opt
    assert len(medians) == 6
    no_flash, flash = medians[:3], medians[3:]
    assert all(0.035 < m < 0.13 for m in no_flash), medians
    assert all(0.12 < m < 0.21 for m in flash), medians


def test_full_recomputation_would_be_too_slow():
    """Megatron's GPT-3 175B example script (examples/pretrain_gpt3_175B.sh, last changed 2021-08-19) recomputes every
    layer; with it every row comes out 12–23% slow, median |error| 16.3% against selective recomputation's 6.7%
    (recorded 2026-11-28 after clock30; 17–28% slow on 2026-11-27, price audit + head last), so selective
    recomputation, which the README of the same commit recommends, is the reading taken."""
    errs = [error(r.key, recompute="full") for r in MEGATRON_ROWS]
    assert all(-0.27 < e < -0.09 for e in errs), errs
    assert statistics.median(abs(e) for e in errs) > statistics.median(abs(error(r.key)) for r in MEGATRON_ROWS)


def test_an_a800_slows_only_the_rows_whose_tp_is_exposed():
    """The paper says "Ampere"; an A800 (the A100 with a 400 GB/s NVLink, catalogs/gpus) makes the TP collectives
    1.5x longer. Under Megatron-LM, whose TP traffic is on the critical path, every row moves 4-6 points (median
    +6.7% -> +1.0%, -6.6...+9.7%; recorded 2026-11-28 after clock30; 2026-11-27, before it: +1.9% -> -3.5%,
    -11.0...+3.3%); MegaScale overlaps it, and its rows move under 2 points: only the 18.9% that the longer hidden
    TP collectives slow the GEMMs beside them (comms.OVERLAP_SLOWDOWN; before clock30, when hiding was free, they
    did not move at all)."""
    slower = [error(r.key) - error(r.key, gpu=A800) for r in MEGATRON_ROWS]
    assert all(0.03 < d < 0.07 for d in slower), slower
    assert -0.025 < statistics.median(error(r.key, gpu=A800) for r in MEGATRON_ROWS) < 0.045
    assert all(0.0 <= error(r.key) - error(r.key, gpu=A800) < 0.025 for r in MEGASCALE_ROWS)


def table(system: str = "megatron") -> str:
    """Ours vs published, one line per row (python -m tests.core.training.test_megascale_2024)."""
    lines = ["| system | model | GPUs | DP | batch | published s | ours s | error | exposed comm | bubble |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in MEGATRON_ROWS + MEGASCALE_ROWS:
        if r.system != system:
            continue
        c = _estimate(r.key).compute
        lines.append(f"| {r.system} | {r.model.label} | {r.gpus:,} | {r.dp} | {r.batch:,} | {r.step_s:.2f} | "
                     f"{c.step_time_s.value:.2f} | {error(r.key):+.1%} | "
                     f"{c.breakdown['exposed_communication'] / c.step_time_s.value:.0%} | "
                     f"{c.breakdown['pipeline_bubble'] / c.step_time_s.value:.0%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table("megatron"))
    print(table("megascale"))
