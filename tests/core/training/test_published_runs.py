"""Step time of published large training runs, with the catalog's defaults and the Megatron profile.

The measured figure is never an input: the per-operation model prices each run's GEMMs, attention,
elementwise kernels, optimizer, communication and pipeline bubble from microbenchmark-derived rates
(``core.training.kernel_rates``) and the catalog's A100/H100 figures. Unknown settings are stated per
case. Results recorded 2026-11-27 (the network model of issue 23; the per-operation price audit, the output head
and loss on the last pipeline stage and torchtitan's uncompiled modules combined, docs/training.md "Auditing the
per-operation prices", "Pipeline stages: the head on the last"):

| run | reference | ours | error | before kern28 + head28 + eager28 |
|---|---|---|---|---|
| Korthikanti 2022 Table 5, 22B (TP8, 8 A100), MFU | 41.5% | 41.0% | -1.3% | -6.1% |
| Korthikanti 2022 Table 5, 1T (TP8 PP64, 512 A100), MFU | 56.3% | 51.2% | -9.1% | -3.4% |
| BLOOM-176B (TP4 PP12 DP8, 384 A100), TFLOP/s per GPU | ~150 | 169.9 | +13.2% | +12.3% |
| MT-NLG 530B (TP8 PP35 DP8, 2,240 A100), MFU | 30.2% | 36.0% | +19.3% | +23.0% |
| MT-NLG 530B, 280 / 350 / 420 DGX A100, TFLOP/s per GPU with recompute | 126 / 121 / 113 | 149.9 / 145.3 / 140.9 | +18.9% / +20.0% / +24.7% | +22.6% / +23.6% / +28.2% |
| torchtitan Llama 3 70B (FSDP2, 64 A100, uncompiled), tokens/s per GPU | 331 | 322.2 | -2.7% | +2.4% |
| Llama 3 405B Table 4 row 1 (TP8 PP16 DP64, 8,192 H100), MFU | 43% | 51.2% | +19.2% (does not fit: 81.9 GiB) | +17.6% |
| Llama 3 405B Table 4 row 2 (TP8 PP16 DP128, 16,384 H100), MFU | 41% | 48.2% | +17.5% | +15.9% |
| Llama 3 405B Table 4 row 3 (TP8 CP16 PP16 DP8, 131,072 tokens), MFU | 38% | 56.6% | +49.1% (causal count: +6.4%) | +47.8% (+5.5%) |

Moved when kern28 + head28 + eager28 combined. Moving the head and loss from a 1/p share on every stage to the last
stage moved the pipelined rows: Korthikanti 1T (2 layers a stage, the head a twelfth of the last stage's work) down
about 6 points, MT-NLG down about 4.5; BLOOM's and Llama 3's splits already leave the last stage a layer short, so
they moved under a point. The price audit (7.5 us GEMM fixed cost; no rotary in learned-position GPT and ALiBi
BLOOM) made every step shorter: Korthikanti 22B +4.8 points, the others 0.5-1.6. torchtitan's 70B row now runs
eager modules, as it ran (compile off): −5 points.

The Llama 3 rows (recorded 2026-11-27) run with the settings the paper states in §3.3.2 (the
``llama3-meta`` profile and no activation checkpointing; test_llama3_405b.py says which and why), with the
interleaved schedule's gradient reduction hidden chunk by chunk (``comms.interleaved_windows``; before that the
rows read +14.9%, +9.5% and +46.3%).
MT-NLG (2021, DeepSpeed's pipeline engine) ran slower than the model of a Megatron-Core stack says,
while the same model and layout under Megatron-LM ran as the engine says
(test_mt_nlg_gap_is_the_framework_not_the_layout).
The issue's targets (Korthikanti 10%, BLOOM 15%, Llama 3 10%) are met for Korthikanti and BLOOM;
the others are pinned at the band they fall in, so a change that moves
them is seen.
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
        0.15),
    "mt-nlg-530b-mfu": Case(
        "MT-NLG 530B on 2,240 A100 (TP8 PP35 DP8, batch 1,920, full recompute): MFU", 0.302, "1",
        "Chowdhery et al. 2022, PaLM (arXiv:2204.02311), Table 3 (MT-NLG's MFU); Smith et al. 2022 "
        "(arXiv:2201.11990) §3 for the layout", 0.25),
    **{f"mt-nlg-530b-{nodes}-nodes-tflops": Case(
        f"MT-NLG 530B on {nodes} DGX A100 (TP8 PP35 DP{nodes // 35}, batch 1,920, full recompute): TFLOP/s per GPU "
        "counting the recompute", tflops, "TFLOP/s",
        f"Smith et al. 2022 (arXiv:2201.11990) §2.4: {step} s per iteration, {tflops} TFLOP/s per GPU on {nodes} "
        "DGX A100 servers", 0.30) for nodes, step, tflops in ((280, 60.1, 126), (350, 50.2, 121), (420, 44.4, 113))},
    "torchtitan-llama3-70b-tps": Case(
        "Llama 3 70B on 64 A100 80GB with torchtitan (FSDP2, local batch 1, seq 8,192, full AC): tokens/s per GPU",
        331.0, "tokens/s", "pytorch/torchtitan docs/performance.md, 'Llama 3 performance numbers' table (64 A100 "
        "80GB, FSDP2): 70B, batch 1, full activation checkpointing, 331 WPS, 51.7% MFU", 0.15),
    "llama3-405b-8k-gpus-mfu": Case(
        "Llama 3 405B on 8,192 H100 (TP8 PP16 DP64, seq 8,192, 32 sequences per DP rank, §3.3.2 settings): MFU",
        0.43, "1", "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 1 (430 TFLOP/s, 43%)",
        0.21, fits=False),
    "llama3-405b-16k-gpus-mfu": Case(
        "Llama 3 405B on 16,384 H100 (TP8 PP16 DP128, seq 8,192, 16 sequences per DP rank, §3.3.2 settings): MFU",
        0.41, "1", "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 2 (400 TFLOP/s, 41%)",
        0.20),
    "llama3-405b-128k-context-mfu": Case(
        "Llama 3 405B on 16,384 H100 (TP8 CP16 PP16 DP8, seq 131,072, §3.3.2 settings): MFU, full s×s attention "
        "FLOPs (PaLM's count)", 0.38, "1",
        "Llama Team, The Llama 3 Herd of Models (arXiv:2407.21783), Table 4 row 3 (380 TFLOP/s, 38%)", 0.50),
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
    """The runs outside the issue's targets stay on the side they were recorded on (module doc)."""
    for case in ("mt-nlg-530b-mfu", "llama3-405b-8k-gpus-mfu", "llama3-405b-16k-gpus-mfu",
                 "llama3-405b-128k-context-mfu",
                 "mt-nlg-530b-280-nodes-tflops", "mt-nlg-530b-350-nodes-tflops", "mt-nlg-530b-420-nodes-tflops"):
        assert ours(case) > CASES[case].reference * 1.1, case


def test_mt_nlg_gap_is_the_framework_not_the_layout():
    """The same 529.6B model and TP8 PP35 layout ran at 163 TFLOP/s per GPU under Megatron-LM (Narayanan et al.
    2021, Table 1: 2,520 GPUs, batch 2,520), where the engine is 6.7% under, and at 126 under DeepSpeed's
    pipeline engine with Megatron's tensor slicing (MT-NLG, 2,240 GPUs, batch 1,920), where it is 19% over. The
    engine prices both layouts within 2% of each other (149.9 and 152.0; recorded 2026-11-27, price audit + head on
    the last stage combined; 148.7 and 150.9 with the head alone), so the gap is what the 2021 DeepSpeed stack lost, not a term of the layout (docs/training.md, "MT-NLG
    530B is 18% fast")."""
    from .test_narayanan_2021 import ROWS, predicted_tflops

    megatron_lm = predicted_tflops(next(r for r in ROWS if r[0] == 529.6))
    mt_nlg = ours("mt-nlg-530b-280-nodes-tflops")
    assert mt_nlg == pytest.approx(megatron_lm, rel=0.02)  # 149.9 vs 152.0
    assert megatron_lm == pytest.approx(163, rel=0.10) and mt_nlg > 126 * 1.15
    # measured, 280 -> 420 nodes: -10.3% per GPU; the engine's bubble (34/m with m = 240, 192, 160) gives -6.0%
    drop = ours("mt-nlg-530b-420-nodes-tflops") / mt_nlg
    assert 113 / 126 < drop < 0.95
