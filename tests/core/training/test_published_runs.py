"""Step time of published large training runs, with the catalog's defaults and the Megatron profile.

The measured figure is never an input: the per-operation model prices each run's GEMMs, attention,
elementwise kernels, optimizer, communication and pipeline bubble from microbenchmark-derived rates
(``core.training.kernel_rates``) and the catalog's A100/H100 figures. Unknown settings are stated per
case. Results recorded 2026-11-28 after clock30 (GEMMs at the catalog's best-shape rate and full clock, the clock
falling only with the compute-bound share of the step, 1.8 us between kernels, hidden collectives charged 18.9% of
their hidden time; docs/training.md "Step time"); the column before it is 2026-11-27 (the price audit, the head and
loss on the last pipeline stage and torchtitan's uncompiled modules combined):

| run | reference | ours | error | before clock30 |
|---|---|---|---|---|
| Korthikanti 2022 Table 5, 22B (TP8, 8 A100), MFU | 41.5% | 42.1% | +1.5% | -1.3% |
| Korthikanti 2022 Table 5, 1T (TP8 PP64, 512 A100), MFU | 56.3% | 54.7% | -2.9% | -9.1% |
| BLOOM-176B (TP4 PP12 DP8, 384 A100), TFLOP/s per GPU | ~150 | 182.1 | +21.4% | +13.2% |
| MT-NLG 530B (TP8 PP35 DP8, 2,240 A100), MFU | 30.2% | 38.6% | +27.7% | +19.3% |
| MT-NLG 530B, 280 / 350 / 420 DGX A100, TFLOP/s per GPU with recompute | 126 / 121 / 113 | 160.3 / 155.3 / 150.7 | +27.2% / +28.4% / +33.3% | +18.9% / +20.0% / +24.7% |
| torchtitan Llama 3 70B (FSDP2, 64 A100, uncompiled), tokens/s per GPU | 331 | 338.5 | +2.3% | -2.7% |
| Llama 3 405B Table 4 row 1 (TP8 PP16 DP64, 8,192 H100), MFU | 43% | 53.2% | +23.8% (does not fit: 81.9 GiB) | +19.2% |
| Llama 3 405B Table 4 row 2 (TP8 PP16 DP128, 16,384 H100), MFU | 41% | 49.5% | +20.7% | +17.5% |
| Llama 3 405B Table 4 row 3 (TP8 CP16 PP16 DP8, 131,072 tokens), MFU | 38% | 54.3% | +42.9% (causal count: +2.0%) | +49.1% (+6.4%) |

Moved by clock30: the old model priced GEMMs at 0.924 of the catalog's best-shape rate and always at the held clock
(0.869), about 15% under what the 2026-11-28 kernel sweep and Hugging Face Llama blocks profiled on an H100 measure.
At full price every compute-bound row got faster: the A100 rows 5-9 points (the A100 takes the H100's clock
assumption), the H100 rows 3-6 points. The 128K Llama row moved the other way: its step is mostly attention, which
the old model ran at its measured rate (full clock) and the new one at the clock of a step that is nearly all
compute-bound kernels (0.87: attention 3.78 -> 4.34 s), and its hidden collectives now cost 18.9% of their time. The gap the old prices hid on large multi-GPU runs has no term yet (docs/training.md,
"Megatron-Core on H100").

History before clock30 (kern28 + head28 + eager28 combined, 2026-11-27): moving the head and loss from a 1/p share on
every stage to the last stage moved the pipelined rows: Korthikanti 1T down about 6 points, MT-NLG down about 4.5;
BLOOM's and Llama 3's splits already leave the last stage a layer short, so they moved under a point. The price
audit made every step shorter: Korthikanti 22B +4.8 points, the others 0.5-1.6. torchtitan's 70B row runs eager
modules, as it ran (compile off): -5 points.

The Llama 3 rows (recorded 2026-11-27) run with the settings the paper states in §3.3.2 (the
``llama3-meta`` profile and no activation checkpointing; test_llama3_405b.py says which and why), with the
interleaved schedule's gradient reduction hidden chunk by chunk (``comms.interleaved_windows``; before that the
rows read +14.9%, +9.5% and +46.3%).
MT-NLG (2021, DeepSpeed's pipeline engine) ran slower than the model of a Megatron-Core stack says,
while the same model and layout under Megatron-LM ran as the engine says
(test_mt_nlg_gap_is_the_framework_not_the_layout).
The issue's targets (Korthikanti 10%, BLOOM 15%, Llama 3 10%) are met for Korthikanti. BLOOM met its 15% until
clock30 (+13.2%) and is now outside it (+21.4%): the old model reached it by under-pricing GEMMs, and what makes
the large A100 runs slower than their priced terms is not known. Every row outside its target is pinned at the band
it falls in (a relative tolerance a few points above the recorded error, and
``test_runs_outside_the_target_stay_over_as_recorded`` from below), so a change that moves them is seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate

from .helpers import gpt, scenario

A100 = load_hardware_catalog().efficiency_for("nvidia-a100-sxm4-80gb")


@dataclass(frozen=True)
class Case:
    quantity: str
    reference: float
    unit: str
    source: str
    tolerance: float  # relative, as asserted (the target where it is met; the pinned band where not)
    fits: bool = True  # what the engine says of the run's memory (the 8K-GPU Llama 3 row is 2.3 GiB over)


CASES = {
    "korthikanti-22b-mfu": Case(
        "22B GPT on 8 A100 (TP8, selective recompute, sequence parallel): MFU", 0.415, "1",
        "Korthikanti et al. 2022 (arXiv:2205.05198), Table 5, 'present work' row 22B; seq 2048, batch 4", 0.10),
    "korthikanti-1t-mfu": Case(
        "1T GPT on 512 A100 (TP8 PP64, selective recompute, sequence parallel): MFU", 0.563, "1",
        "Korthikanti et al. 2022 (arXiv:2205.05198), Table 5, 'present work' row 1T; seq 2048, batch 512", 0.10),
    "bloom-176b-tflops": Case(
        "BLOOM-176B on 384 A100 80GB (TP4 PP12 DP8, micro-batch 2, full recompute): TFLOP/s per GPU", 150.0,
        "TFLOP/s", "BigScience, BLOOM (arXiv:2211.05100), §3.5: Megatron-DeepSpeed, about 150 TFLOP/s per GPU",
        0.25),  # pinned: +21.4% since clock30, outside the 15% (module doc)
    "mt-nlg-530b-mfu": Case(
        "MT-NLG 530B on 2,240 A100 (TP8 PP35 DP8, batch 1,920, full recompute): MFU", 0.302, "1",
        "Chowdhery et al. 2022, PaLM (arXiv:2204.02311), Table 3 (MT-NLG's MFU); Smith et al. 2022 "
        "(arXiv:2201.11990) §3 for the layout", 0.31),
    **{f"mt-nlg-530b-{nodes}-nodes-tflops": Case(
        f"MT-NLG 530B on {nodes} DGX A100 (TP8 PP35 DP{nodes // 35}, batch 1,920, full recompute): TFLOP/s per GPU "
        "counting the recompute", tflops, "TFLOP/s",
        f"Smith et al. 2022 (arXiv:2201.11990) §2.4: {step} s per iteration, {tflops} TFLOP/s per GPU on {nodes} "
        "DGX A100 servers", 0.37) for nodes, step, tflops in ((280, 60.1, 126), (350, 50.2, 121), (420, 44.4, 113))},
    "torchtitan-llama3-70b-tps": Case(
        "Llama 3 70B on 64 A100 80GB with torchtitan (FSDP2, local batch 1, seq 8,192, full AC): tokens/s per GPU",
        331.0, "tokens/s", "pytorch/torchtitan docs/performance.md, 'Llama 3 performance numbers' table (64 A100 "
        "80GB, FSDP2): 70B, batch 1, full activation checkpointing, 331 WPS, 51.7% MFU", 0.15),
    "llama3-405b-8k-gpus-mfu": Case(
        "Llama 3 405B on 8,192 H100 (TP8 PP16 DP64, seq 8,192, 32 sequences per DP rank, §3.3.2 settings): MFU",
        0.43, "1", "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 1 (430 TFLOP/s, 43%)",
        0.26, fits=False),
    "llama3-405b-16k-gpus-mfu": Case(
        "Llama 3 405B on 16,384 H100 (TP8 PP16 DP128, seq 8,192, 16 sequences per DP rank, §3.3.2 settings): MFU",
        0.41, "1", "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 2 (400 TFLOP/s, 41%)",
        0.23),
    "llama3-405b-128k-context-mfu": Case(
        "Llama 3 405B on 16,384 H100 (TP8 CP16 PP16 DP8, seq 131,072, §3.3.2 settings): MFU, full s×s attention "
        "FLOPs (PaLM's count)", 0.38, "1",
        "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 3 (380 TFLOP/s, 38%)", 0.45),
}


def _run(case: str):
    if case == "korthikanti-22b-mfu":
        sc = scenario(gpt(6144, 64, 48), 8, tp=8, pp=1, sp=True, seq_len=2048, micro_batch=1, global_batch=4,
                      recompute="selective", flash_attention=False, zero_stage=0, dropout=0.1, precision="bf16")
    elif case == "korthikanti-1t-mfu":
        sc = scenario(gpt(25600, 160, 128), 512, tp=8, pp=64, sp=True, seq_len=2048, micro_batch=1,
                      global_batch=512, recompute="selective", flash_attention=False, zero_stage=0, dropout=0.1,
                      precision="bf16")
    elif case == "bloom-176b-tflops":
        sc = scenario(gpt(14336, 112, 70, vocab=250880, name="BLOOM-176B"), 384, tp=4, pp=12, sp=False,
                      seq_len=2048, micro_batch=2, global_batch=2048, recompute="full", flash_attention=False,
                      zero_stage=1, dropout=0.0, precision="bf16")
    elif case == "mt-nlg-530b-mfu":
        sc = scenario(gpt(20480, 128, 105), 2240, tp=8, pp=35, sp=False, seq_len=2048, micro_batch=1,
                      global_batch=1920, recompute="full", flash_attention=False, zero_stage=1, dropout=0.1,
                      precision="bf16")
    elif case.startswith("mt-nlg-530b-") and case.endswith("-nodes-tflops"):
        gpus = _gpus(case)
        sc = scenario(gpt(20480, 128, 105), gpus, tp=8, pp=35, sp=False, seq_len=2048, micro_batch=1,
                      global_batch=1920, recompute="full", flash_attention=False, zero_stage=1, dropout=0.1,
                      precision="bf16")
    elif case == "torchtitan-llama3-70b-tps":
        from llmplan.core.workload import ParallelLayout, TrainingSettings
        from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
        from llmplan.plan.evaluate import evaluate_plan

        tr = TrainingSettings(framework="fsdp2", seq_len=8192, micro_batch=1, global_batch=64, recompute="full",
                              zero_stage=3, flash_attention=True, offload="none")
        doc = PlanDocument(model=ModelRef(id="meta-llama/Meta-Llama-3-70B"), workload="pretrain", training=tr,
                           hardware=HardwareRef(gpu="nvidia-a100-sxm4-80gb", gpus_per_node=8, nodes=8,
                                                network="ib-hdr-200"), parallelism=ParallelLayout(dp=64))
        return evaluate_plan(doc)[1]
    else:
        from .test_llama3_405b import table4_run

        return estimate(table4_run({"llama3-405b-8k-gpus-mfu": "8k-gpus", "llama3-405b-16k-gpus-mfu": "16k-gpus",
                                    "llama3-405b-128k-context-mfu": "16k-gpus-128k-context"}[case]))
    return estimate(sc.model_copy(update={"efficiency": A100}))


def ours(case: str) -> float:
    c = _run(case).compute
    if CASES[case].unit == "TFLOP/s":
        return c.hardware_flops_per_step.value / c.step_time_s.value / _gpus(case) / 1e12
    if CASES[case].unit == "tokens/s":
        return c.tokens_per_s.value / 64
    return c.mfu.value


def _gpus(case: str) -> int:
    if case.startswith("mt-nlg-530b-") and case.endswith("-nodes-tflops"):
        return 8 * int(case.split("-")[3])
    return {"bloom-176b-tflops": 384}[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_published_run_within_its_tolerance(case):
    c = CASES[case]
    value = ours(case)
    assert value == pytest.approx(c.reference, rel=c.tolerance), f"{case}: ours {value:.4g} vs {c.reference}"
    assert _run(case).fits is c.fits


def test_runs_outside_the_target_stay_over_as_recorded():
    """The runs outside the issue's targets stay on the side they were recorded on, at least 15% over (the lowest,
    Llama 3's 16K row, reads +20.7% since clock30; module doc)."""
    for case in ("bloom-176b-tflops", "mt-nlg-530b-mfu", "llama3-405b-8k-gpus-mfu", "llama3-405b-16k-gpus-mfu",
                 "llama3-405b-128k-context-mfu",
                 "mt-nlg-530b-280-nodes-tflops", "mt-nlg-530b-350-nodes-tflops", "mt-nlg-530b-420-nodes-tflops"):
        assert ours(case) > CASES[case].reference * 1.15, case


def test_mt_nlg_gap_is_the_framework_not_the_layout():
    """The same 529.6B model and TP8 PP35 layout ran at 163 TFLOP/s per GPU under Megatron-LM (Narayanan et al.
    2021, Table 1: 2,520 GPUs, batch 2,520), where the engine is 0.2% under, and at 126 under DeepSpeed's
    pipeline engine with Megatron's tensor slicing (MT-NLG, 2,240 GPUs, batch 1,920), where it is 27% over. The
    engine prices both layouts within 2% of each other (160.3 and 162.6; recorded 2026-11-28 after clock30: was
    149.9 and 152.0, -6.7% and +19% against the two runs), so the gap is what the 2021 DeepSpeed stack lost, not a
    term of the layout (docs/training.md, "MT-NLG 530B is 27% fast")."""
    from .test_narayanan_2021 import ROWS, predicted_tflops

    megatron_lm = predicted_tflops(next(r for r in ROWS if r[0] == 529.6))
    mt_nlg = ours("mt-nlg-530b-280-nodes-tflops")
    assert mt_nlg == pytest.approx(megatron_lm, rel=0.02)  # 160.3 vs 162.6
    assert megatron_lm == pytest.approx(163, rel=0.10) and mt_nlg > 126 * 1.15
    # measured, 280 -> 420 nodes: -10.3% per GPU; the engine's bubble (34/m with m = 240, 192, 160) gives -6.0%
    drop = ours("mt-nlg-530b-420-nodes-tflops") / mt_nlg
    assert 113 / 126 < drop < 0.95
