"""Tokens per second of torchtune's published runs, with the achieved band pinned (issue 26).

Sources (pytorch/torchtune README.md), the same runs as test_torchtune_profiles_table.py, whose ROWS give
each run's settings:
- "Optimization flags" (commit 1814feb17, 2024-11-18): Llama 3.2 3B on an A100, batch 2 × 4,096,
  "Tokens Per Second" per row. The "Baseline" row (unpacked, padded to each batch's longest) is left out:
  its padding is not stated.
- "Memory and training speed" (commit 30b8519e8, 2024-09-24): Llama 3.1, batch 2 × 2,048 packed, compile on,
  "Tokens/sec" measured over one epoch. The recipes log ``tokens_per_second_per_gpu``; the 70B rows can only
  be totals over the 8 A100: 3,497 tokens/s per GPU for the 70B LoRA would need 6 × 70.6e9 × 3,497 =
  1.5 PFLOP/s on a 312 TFLOP/s GPU. So they are compared with llmplan's cluster tokens/s. The A6000 rows are
  left out, as in the memory test (settings not stated; no measured matmul rate for the A6000 either).

Nothing is fitted to these rows. What changed for them (2026-11-27), each from code or a microbenchmark:
the RTX 4090's matmul efficiency (0.6 assumed → 0.983, its measured bf16 torch.mm rate: 162.4 of
165.2 TFLOP/s, zzc0721/torch-performance-test-data), the compiled LoRA adapter without dropout (no dropped
copy: torchtune's LoRALinear uses nn.Identity for p = 0) and the 8B LoRA run's adapters (q and v only,
recipes/configs/llama3_1/8B_lora_single_device.yaml). 8B LoRA on the 4090: 1,383 → 2,394 tokens/s.
Then each GPU's own sustained-clock factor (``Efficiency.sustained_clock``, catalogs/systems/efficiency.toml)
replaced the H100's 0.869 for every GPU: the RTX 4090 holds 0.977 of its short-run GEMM rate over a 3 s run
(mli/transformers-benchmarks issue #4: 158.6 TFLOP/s at n = 8192). 8B on a 4090: full −22.1% → −16.7%,
LoRA −22.3% → −14.7%, QLoRA −14.9% → −7.8%.

Results (2026-11-27), error of llmplan against the published figure: 3B on an A100 +3.3% (packed), −9.0%
(+ compile), −10.8% (+ chunked CE), −10.6% (+ checkpointing), −11.8% (+ optimizer in backward), −11.7%
(+ activation offload), −12.1% (LoRA), −11.2% (QLoRA); 8B on a 4090 −16.7% (full), −14.7% (LoRA), −7.8%
(QLoRA); 70B on 8 A100 +7.3% (LoRA), +42.1% (full with CPU offload). Median |error| 11.2%.

Recorded 2026-11-28 after the clock30 time model (GEMMs at the catalog's best-shape rate and full clock,
the clock lowered only by the step's compute-bound share, 1.8 µs between kernels; each constant from
H100/H200 microbenchmarks, none from this table): 3B on an A100 +11.8% (packed), −2.6% (+ compile), −4.5%
(+ chunked CE), −4.2% (+ checkpointing), −5.5% (+ optimizer in backward), −5.4% (+ activation offload),
−4.7% (LoRA), −3.9% (QLoRA); 8B on a 4090 −12.5% (full), −7.9% (LoRA), −0.7% (QLoRA); 70B on 8 A100
+13.6% (LoRA), +47.8% (full with CPU offload). Median |error| 5.4%. The old model charged every GEMM 0.924
of the best-shape rate and the held clock always, so every row read 4-9 points slower than now; the
packed 3B row (no compile) now reads optimistic.

Where the misses come from (not changed, stated):
- 8B LoRA on a 4090 (−8%): 3,083 tokens/s with checkpointing is 4.6e10 FLOP per token × 3,083 = 142
  TFLOP/s averaged over the whole step, 86% of the 4090's dense bf16 rate. llmplan's step averages 139
  TFLOP/s (its hardware FLOPs over its step time), its GEMMs priced at the 4090's measured 162.4 TFLOP/s
  (``kernel_rates``; held to at least 0.977 of it, ``Efficiency.sustained_clock``).
- 8B full on a 4090 (−13%): 0.90 s of the 2.84 s step is the paged 8-bit optimizer states crossing PCIe
  twice (``switches.host_transfer_time``); without it the step would be 1.94 s (+28%).
- 70B full with CPU offload (+48%; +42% before clock30, +29% before the CPU step's bytes followed the
  pure-bf16 code): the CPU
  AdamW step (torch.optim.AdamW(fused=True) on bf16 weights, gradients and states: 14 B per parameter, not
  the 20 B that counted an fp32 master pure bf16 does not have) over 8.8e9 parameters per GPU is priced at
  the default host's memory roofline, 3.4 s of a 14.1 s step. The published 20.9 s step (32,768 tokens /
  1,568) is 6.8 s longer. The one public measurement of torch's fused CPU AdamW in pure bf16 found (pytorch/ao torchao/optim/README.md, CPUOffloadOptimizer:
  1.1B parameters, Ryzen 5600, DDR4: 1.27 → 1.52 s per step, the whole offload 0.25 s) costs less than
  its roofline (14 B × 1.1e9 at 0.7 of two DDR4-3200 channels: 0.43 s), so the
  missing time is not priced from the CPU step; what it is (host-side copies, the PCIe switches two
  A100s share on a DGX, the unstated host) is not known.
Tolerance: the issue's median |error| ≤ 20%; each row pinned to its recorded error ± 3 points, so that a
change to the time model shows here and the docstring is updated with it.
"""

from __future__ import annotations

import statistics

import pytest

from llmplan.core.engine import estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.resolve import resolve

from .test_torchtune_profiles_table import ROWS

# row: (published tokens/s, recorded error of llmplan's tokens/s)
SPEED = {
    "3b-packed": (7075, 0.118),
    "3b-compile": (8998, -0.026),
    "3b-chunked-ce": (9174, -0.045),
    "3b-checkpointing": (7210, -0.042),
    "3b-optimizer-in-backward": (7309, -0.055),
    "3b-activation-offload": (7301, -0.054),
    "3b-lora": (8210, -0.047),
    "3b-qlora": (8035, -0.039),
    "8b-full-4090": (1650, -0.125),
    "8b-lora-4090": (3083, -0.079),
    "8b-qlora-4090": (2413, -0.007),
    "70b-lora-8xa100": (3497, 0.136),
    "70b-full-offload-8xa100": (1568, 0.478),
}


def _tokens_per_s(name: str) -> float:
    _, model, gpu, n, kw = ROWS[name]
    t = TrainingSettings(framework="torchtune", micro_batch=2, global_batch=2 * n, zero_stage=3 if n > 1 else 0, **kw)
    sc = resolve(PlanDocument(model=ModelRef(id=model), hardware=HardwareRef(gpu=gpu, gpus_per_node=n),
                              workload="pretrain" if t.method == "full" else "finetune", training=t,
                              parallelism=ParallelLayout(dp=n)))
    return estimate(sc).compute.tokens_per_s.value  # all GPUs together


@pytest.fixture(scope="module")
def errors() -> dict[str, float]:
    return {name: _tokens_per_s(name) / published - 1 for name, (published, _) in SPEED.items()}


def test_every_speed_row_has_a_memory_row():
    assert set(SPEED) == set(ROWS)


def test_median_error_within_the_issues_twenty_percent(errors):
    assert statistics.median(abs(e) for e in errors.values()) <= 0.20, errors


@pytest.mark.parametrize("name", SPEED)
def test_each_row_stays_in_its_recorded_band(errors, name):
    assert errors[name] == pytest.approx(SPEED[name][1], abs=0.03), f"{name}: {errors[name]:+.1%}"


def test_each_flag_moves_the_speed_the_published_way(errors):
    """Compile speeds the packed run up, checkpointing slows it down, LoRA is faster than the full run it
    replaces (README: +27%, −21%, +12% from the row before)."""
    tps = {name: SPEED[name][0] * (1 + errors[name]) for name in SPEED}
    assert tps["3b-compile"] > tps["3b-packed"]
    assert tps["3b-checkpointing"] < tps["3b-chunked-ce"]
    assert tps["3b-lora"] > tps["3b-activation-offload"]
