"""NVIDIA's DGX Cloud benchmarking recipes: Nemotron-4 15B pre-training on 16–2,048 H100 (NeMo 24.12, Megatron-Core),
bf16 and fp8, step time per row.

Source: NVIDIA/dgxc-benchmarking at 8f5cbb3 (release v25.02), all in one release:
- nemotron/README_15b.md, "Expected Slurm Performance": training step time on 16, 32, …, 2,048 H100 GPUs (global batch
  4 per GPU), bf16 and fp8 tables, "TP=4, PP=1, MBS=4, GA=4";
- nemotron/nemotron4-15b-synth.yaml (the run's config): 32 layers, hidden 6,144, FFN 24,576 with squared ReLU (not
  gated), 48 heads in 8 query groups, sequence 4,096, no biases, LayerNorm, RoPE, untied embeddings, vocabulary
  256,000 (the 256K SentencePiece model); no activation checkpointing; sequence parallelism; Megatron-Core's
  distributed optimizer with ``overlap_grad_sync`` and ``overlap_param_sync``; no dropout;
- nemotron/configure.sh: TP 4, PP 1, micro-batch 4, global batch 4 × GPUs, ``model.ub_tp_comm_overlap=True``,
  ``NVTE_FUSED_ATTN=1`` (cuDNN fused attention), fp8 as Transformer Engine's hybrid recipe with fp8 weights;
- nemotron/launch.sh: NeMo 24.12 container for 15B;
- README.md "Reference Infrastructure": DGX H100 (8 × H100 80GB HBM3, 700 W, NVLink 4), InfiniBand 8 × 400 Gb/s
  compute links per node: the catalog's ``dgx-h100`` node.
Everything the engine needs is stated, so nothing is assumed beyond the catalog's H100 defaults and the ``megatron``
profile with ``tp_comm_overlap`` on. The measured figure is never an input. Error = published step / our step − 1
(positive: we are too fast). Our parameter count is 15.63B: 3.15B in the two untied embeddings and 12.48B in the
blocks, where the Nemotron-4 15B report (arXiv:2402.16819 §2) gives 3.2 and 12.5 billion.

Result (recorded 2026-11-27): bf16 +6.5% (16 GPUs) … +9.4% (1,024), median +8.3%; fp8 +7.4% … +11.6%, median +9.4%.
Every row is compute: under 3% of our step is exposed communication even at 2,048 GPUs. The rows lean the way the
Megatron-Core H100 table's compute-only rows do (+15…+17%, test_megatron_core_h100.py), less far; the measured step
grows 2.7% from 16 to 2,048 GPUs (bf16), ours 1.0%. Pinned per row at the recorded error ± about 3 points; the
median is asserted within issue 15's 15%.

Left out: the 340B tables of the same README. Their header says TP 8, PP 8, GA 16, but configure.sh at the same
commit runs bf16 with context parallelism 2 (``CP=2``), which with the stated global batch of 2 per node gives GA 32;
which of the two ran is not clear, so the rows are not used.
"""

from __future__ import annotations

import statistics
from functools import cache

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.engine import estimate
from llmplan.core.model import ModelSpec
from llmplan.core.result import Estimate
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

SOURCE = ("NVIDIA/dgxc-benchmarking at 8f5cbb3 (v25.02): nemotron/README_15b.md step-time tables, "
          "nemotron4-15b-synth.yaml and configure.sh (TP4 PP1, micro-batch 4, batch 4 per GPU, TP overlap, "
          "distributed optimizer), NeMo 24.12, DGX H100 with 8 x 400 Gb/s InfiniBand")
SEQ = 4096
STEPS = {  # GPUs: (bf16 s, fp8 s), nemotron/README_15b.md at 8f5cbb3
    16: (2.812, 2.039), 32: (2.824, 2.046), 64: (2.845, 2.048), 128: (2.859, 2.059), 256: (2.852, 2.075),
    512: (2.875, 2.12), 1024: (2.895, 2.094), 2048: (2.887, 2.12),
}
BANDS = {  # (precision, GPUs): asserted error band (module doc)
    **{("bf16", g): (0.035, 0.125) for g in STEPS},
    **{("fp8", g): (0.045, 0.145) for g in STEPS},
}

NEMOTRON4_15B = ModelSpec(
    name="nemotron-4-15b", model_type="nemotron", vocab_size=256000, hidden_size=6144, num_layers=32, num_heads=48,
    num_kv_heads=8, head_dim=128, intermediate_size=24576, gated_mlp=False, activation="relu2", attention_bias=False,
    attention_out_bias=False, mlp_bias=False, norm="layernorm", tie_embeddings=False, position="rope",
    max_position_embeddings=SEQ,
)


def run(gpus: int, precision: str) -> Scenario:
    cat = load_hardware_catalog()
    prof = load_framework_profiles()["megatron"].model_copy(update={"tp_comm_overlap": True})
    return Scenario(
        model=NEMOTRON4_15B, cluster=cat.cluster_from(None, nodes=gpus // 8, node_id="dgx-h100"), workload="pretrain",
        training=TrainingSettings(framework=prof.id, precision=precision, seq_len=SEQ, micro_batch=4,
                                  global_batch=4 * gpus, recompute="none", flash_attention=True,
                                  distributed_optimizer=True, zero_stage=1),
        parallelism=ParallelLayout(tp=4, pp=1, dp=gpus // 4, sequence_parallel=True),
        efficiency=cat.efficiency_for("nvidia-h100-sxm-80gb"), framework_profile=prof,
    )


@cache
def _estimate(gpus: int, precision: str) -> Estimate:
    return estimate(run(gpus, precision))


def published(gpus: int, precision: str) -> float:
    return STEPS[gpus][0 if precision == "bf16" else 1]


def error(gpus: int, precision: str) -> float:
    """Published step / our step − 1: positive when the engine is too fast."""
    return published(gpus, precision) / _estimate(gpus, precision).compute.step_time_s.value - 1


ROWS = [(p, g) for p in ("bf16", "fp8") for g in STEPS]


def test_the_parameter_count_is_the_reports():
    p = _estimate(16, "bf16").params
    assert p.embedding == 2 * 256000 * 6144  # input and output embeddings, untied: 3.15B ("3.2 billion")
    assert round((p.total - p.embedding) / 1e9, 1) == 12.5


@pytest.mark.parametrize(("precision", "gpus"), ROWS, ids=[f"{p}-{g}" for p, g in ROWS])
def test_row_within_its_pinned_band(precision, gpus):
    e = _estimate(gpus, precision)
    assert e.fits  # every run ran on 80 GB H100s
    err = error(gpus, precision)
    lo, hi = BANDS[(precision, gpus)]
    assert lo <= err <= hi, f"{precision} {gpus} GPUs: ours {e.compute.step_time_s.value:.3f} s ({err:+.1%})"


def test_median_within_issue_15s_goal():
    """Recorded 2026-11-27: bf16 median +8.3%, fp8 +9.4%."""
    for precision in ("bf16", "fp8"):
        assert 0.0 < statistics.median(error(g, precision) for g in STEPS) <= 0.15


def test_every_row_is_compute():
    """TP traffic overlaps the GEMMs (ub_tp_comm_overlap) and the distributed optimizer's reduce-scatter and all-gather
    hide behind the backward and forward, so under 3% of our step is exposed communication, even on 2,048 GPUs; the
    rows test the H100 compute model, not the network."""
    for precision, gpus in ROWS:
        c = _estimate(gpus, precision).compute
        assert c.breakdown["exposed_communication"] < 0.03 * c.step_time_s.value


def table() -> str:
    """Ours vs published (python -m tests.core.training.test_nemotron4_dgxc)."""
    lines = ["| precision | GPUs | batch | published s | ours s | error |", "|---|---:|---:|---:|---:|---:|"]
    for precision, gpus in ROWS:
        c = _estimate(gpus, precision).compute
        lines.append(f"| {precision} | {gpus:,} | {4 * gpus:,} | {published(gpus, precision)} | "
                     f"{c.step_time_s.value:.3f} | {error(gpus, precision):+.1%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
