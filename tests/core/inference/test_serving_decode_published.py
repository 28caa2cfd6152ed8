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
- DeepSeek-V3 on 8 x H200 under SGLang v0.4.1: llmplan is 7.5x too fast at batch 1 (12x before the floor),
  4.6x at batch 8, 2.3x at batch 32. The gap narrows with the batch, as a per-step cost would; not modelled:
  the run's DP attention (every GPU holds the whole MLA attention and one GPU runs it at batch 1) and the FP8
  block-scaled Triton GEMMs and fused-MoE kernels of that release at a few rows.
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


@pytest.mark.parametrize(("row", "ratio"), list(zip(DEEPSEEK_V3, (7.5, 4.6, 2.3), strict=True)), ids=lambda x: str(x))
def test_deepseek_v3_gap_pinned(row, ratio):
    """measured / estimated seconds per token: the gap, pinned."""
    assert row.measured_s / estimate_row(row) == pytest.approx(ratio, rel=0.15)
