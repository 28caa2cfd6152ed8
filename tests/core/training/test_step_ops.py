"""The step's operation list (``step_ops``) adds up to the estimate it explains.

Source: the estimate itself (the engine's ``compute_time_s`` and ``step_time_s``). Each row is one operation
passed alone through the pricing ``timing`` sums, so the rows' sum differs from the figure by float rounding
only: tolerance 1e-9 relative. Plans: the shipped examples (pre-training Llama 3.1 405B on a pipeline, a QLoRA and
a ZeRO-3 fine-tune), the QLoRA plan as plain LoRA, the 405B plan in fp8 with selective recompute and with a last
stage heavy enough to be the slowest, and Mixtral 8x7B (every block MoE) with expert parallelism.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llmplan.core.engine import estimate
from llmplan.core.training.step_ops import COMMUNICATION, HEAD_GROUP, step_operations
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.planfile import load_plan
from llmplan.plan.resolve import resolve

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"

CASES = {
    "pretrain": ("pretrain-llama-3.1-405b-16k-h100.llmplan", []),
    "qlora": ("qlora-llama-3-8b-rtx4090.llmplan", []),
    "lora": ("qlora-llama-3-8b-rtx4090.llmplan", ["training.method=lora", "hardware.gpu=nvidia-h100-sxm-80gb"]),
    "full-zero3": ("finetune-llama-3.1-70b-zero3-8xh100.llmplan", []),
    "fp8-selective": ("pretrain-llama-3.1-405b-16k-h100.llmplan", ["training.precision=fp8",
                                                                 "training.recompute=selective"]),
    "last-stage-slowest": ("pretrain-llama-3.1-405b-16k-h100.llmplan", ["parallelism.virtual_stages=1", "parallelism.first_stage_layers=4",
                                                                      "parallelism.last_stage_layers=10"]),
    "moe": ("pretrain-llama-3.1-405b-16k-h100.llmplan",
            ["model.id=mistralai/Mixtral-8x7B-v0.1", "hardware.nodes=2", "parallelism.tp=1", "parallelism.pp=1",
             "parallelism.ep=8", "parallelism.dp=16", "parallelism.virtual_stages=1", "parallelism.cp=1", "training.global_batch=64"]),
}


def _ops(case):
    name, sets = CASES[case]
    doc = apply_overrides(load_plan(EXAMPLES / name), sets)
    sc = resolve(doc)
    est = estimate(sc)
    return sc, est, step_operations(sc, est)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_sum_to_the_estimate(case):
    _, est, so = _ops(case)
    assert so.compute_s == pytest.approx(est.compute.compute_time_s.value, rel=1e-9)
    assert so.step_s == pytest.approx(est.compute.step_time_s.value, rel=1e-9)
    assert sum(r.seconds for r in so.rows if r.in_compute) == pytest.approx(so.compute_s, rel=1e-12)
    assert all(r.seconds >= 0 for r in so.rows)


def test_groups_and_rates():
    sc, _, so = _ops("moe")
    groups = {r.group for r in so.rows}
    assert "MoE block" in groups and HEAD_GROUP in groups
    gemms = [r for r in so.rows if r.rate_unit == "FLOP/s" and r.flops > 0]
    # a GEMM runs below the dense peak: its rate is its FLOPs over its priced time
    assert gemms and all(0 < r.rate < sc.cluster.gpu.peak_flops.bf16 for r in gemms)
    loss = [r for r in so.rows if r.name.startswith("loss")]
    assert len(loss) == 1 and loss[0].bytes > 0
    assert any(r.phase == COMMUNICATION for r in so.rows)


def test_pipeline_stage_without_head():
    """Llama 3.1 405B on 16 stages (7, 8 × 14, 7 layers): a middle stage of 8 layers is the slowest, so the list
    holds no head, loss or embedding (docs/training.md, 'Pipeline stages: the head on the last')."""
    _, _, so = _ops("pretrain")
    assert so.layers == 8
    assert not any(r.group == HEAD_GROUP for r in so.rows)


def test_last_stage_with_the_head_lists_it():
    """126 layers on 16 stages as 4, 8 × 14, 10: the last stage (10 layers and the head and loss) is the slowest,
    so its 10 blocks and the head are listed, and no embedding (pp > 1: not priced, docs/training.md)."""
    _, _, so = _ops("last-stage-slowest")
    assert so.layers == 10
    head = {r.name for r in so.rows if r.group == HEAD_GROUP}
    assert "lm_head" in head and not any(n.startswith("embedding") for n in head)
