"""Small-batch decode of vLLM, TensorRT-LLM and SGLang against published measurements (tests/core/inference/
serving_published.py names each source and setting). Nothing here is fitted to these rows.

What the rows show, and the bands pinned here (not tolerances we are content with; docs/inference.md, "Small-batch
decode on the GPU serving engines"):
- Dense Llama 8B / 70B under vLLM's nightly latency test (batch 8) and TensorRT-LLM's NIM (concurrency 1): llmplan
  is 19-35% fast on every row. The per-layer kernel floor moved them 2-4 points closer. What is left points at
  host work per step that the engines' GPU graphs do not hide, not at mat-vec kernels below the copy rate
  (test_serving_decode_gap.py: the 8B rows miss 1.8-2.6 ms a step on three GPU generations; at 128 rows the 8B's
  MLP GEMMs read weights within 3% of the priced share); no per-step host time of the release these rows ran was
  found, so none is priced. Band: -40% to -12%.
- DeepSeek-V3 on 8 x H200 under SGLang v0.4.1.post2 with --enable-dp-attention (priced: core/inference/
  dp_attention.py): llmplan is 2.85x too fast at batch 1, 3.35x at batch 8, 2.03x at batch 32 (before DP attention
  was priced: 7.5x, 4.6x, 2.3x; 12x at batch 1 before the kernel floor). What is left is 21-27 ms a step at every
  batch, as a fixed per-step cost would be; not priced: the host work DP attention adds in that release (two gloo
  CPU collectives a step, the overlap scheduler off) and the FP8 block-scaled Triton GEMMs and fused-MoE kernels of
  that release at a few rows. Band: the ratio within 10% of these values.
"""

import pytest

from tests.core.inference.serving_published import DEEPSEEK_V3, ROWS, estimate_row


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.key)
def test_dense_rows_within_the_pinned_band(row):
    err = estimate_row(row) / row.measured_s - 1
    assert -0.40 <= err <= -0.12, f"{row.key}: {err:+.1%}"


def test_dense_rows_median():
    errs = sorted(estimate_row(r) / r.measured_s - 1 for r in ROWS)
    assert errs[len(errs) // 2] == pytest.approx(-0.23, abs=0.05)


@pytest.mark.parametrize(("row", "ratio"), list(zip(DEEPSEEK_V3, (2.85, 3.35, 2.03), strict=True)),
                         ids=lambda x: str(x))
def test_deepseek_v3_gap_pinned(row, ratio):
    """measured / estimated seconds per token: the gap, pinned."""
    assert row.measured_s / estimate_row(row) == pytest.approx(ratio, rel=0.10)


def test_deepseek_v3_residual_is_a_per_step_cost():
    """What DP attention leaves unexplained is 21-27 ms a step at batches 1, 8 and 32 (measured − estimated TPOT):
    it barely grows with a 32x batch, as host work per step would."""
    gaps = [row.measured_s - estimate_row(row) for row in DEEPSEEK_V3]
    assert all(0.019 <= g <= 0.029 for g in gaps), gaps
