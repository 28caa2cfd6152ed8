"""Liger's fused linear cross-entropy against Liger's own published peak memory (issue 26).

Source: linkedin/Liger-Kernel, benchmark/data/all_benchmark_data.csv, rows ``fused_linear_cross_entropy,
liger, full, memory`` (A100-SXM4-80GB, Liger 0.4.2, 2024-11-22 17:46): peak ``max_memory_allocated`` of
``LigerLMHeadCE`` forward + backward, H = 4096, V = 128,256, bf16, BT = 4,096 … 32,768: 4,245.55,
4,466.97, 4,910.44 and 5,794.63 MiB (the median of 10 iterations; the three quantiles are equal).

Nothing here is fitted to those rows. The loss's own bytes are ``switches.liger_loss_bytes`` (the chunk rule
next_pow2(⌈BT / ⌈V/H⌉⌉), the hidden states' gradient computed in the forward, the fp32 per-token loss),
with the bytes per chunk logit traced from the code that produced the table (v0.4.2,
src/liger_kernel/ops/fused_linear_cross_entropy.py), not from the table:
  the new bf16 chunk (2 B) is made while chunk i-1's ``grad_logits_chunk`` (2 B) is still bound; then
  ``logits_chunk.float()`` (4 B) beside the bf16 one: 2 + 2 + 4; then ``.to(dtype)`` (2 B) beside the fp32
  one: 2 + 4 + 2 — 8 B per chunk logit at the peak.
Liger PR #406 (2024-11-22, after these rows) moved the fp32 upcast into the kernel's registers; today's code
holds the new chunk and the previous one: 4 B (``switches.LIGER_CHUNK_BYTES``, what the estimate uses).
The harness's tensors come from benchmark/scripts/benchmark_fused_linear_cross_entropy.py at v0.4.2:
both modules are built (two bf16 V × H weights), the Liger weight's ``.grad`` survives from the previous
iteration while the forward fills a new ``grad_weight`` (zeros_like(weight)), and ``_input`` (BT × H,
requires_grad) keeps its ``.grad``; targets are int64.
Result (2026-11-27): −0.38%, −0.37%, −0.35%, −0.28% — 16.3–17.3 MiB below at every BT (cuBLAS
workspace and the like; not modelled). Tolerance 1% per row; the growth between rows (where the constant
cancels) within 0.5%.
"""

from __future__ import annotations

import itertools

import pytest

from llmplan.core.training.switches import LIGER_CHUNK_BYTES, liger_chunk_rows, liger_loss_bytes

MIB = 2.0**20
H, V = 4096, 128256
PUBLISHED = {4096: 4245.5478515625, 8192: 4466.9697265625, 16384: 4910.4384765625, 32768: 5794.6259765625}
CHUNK_BYTES_V042 = 8.0  # traced above from v0.4.2's loop: bf16 + fp32 + bf16 copies + the previous chunk


def _peak_mib(bt: int) -> float:
    weight = V * H * 2.0
    harness = 2 * weight + weight + weight  # two modules' weights, last iteration's .grad, this forward's grad_weight
    harness += bt * H * 2.0 * 2 + bt * 8.0  # _input and its .grad, int64 targets
    return (harness + liger_loss_bytes(bt, H, V, chunk_bytes=CHUNK_BYTES_V042)) / MIB


@pytest.mark.parametrize("bt", sorted(PUBLISHED))
def test_each_published_row_within_one_percent(bt):
    assert _peak_mib(bt) == pytest.approx(PUBLISHED[bt], rel=0.01)


def test_growth_between_rows_follows_the_chunk_rule():
    rows = sorted(PUBLISHED)
    for a, b in itertools.pairwise(rows):
        assert _peak_mib(b) - _peak_mib(a) == pytest.approx(PUBLISHED[b] - PUBLISHED[a], rel=0.005)


def test_chunk_rows_at_the_tables_shape():
    # inc_factor = ceil(128256 / 4096) = 32: BT 4096 -> 128 rows per chunk, 32768 -> 1024
    assert liger_chunk_rows(4096, H, V) == 128 and liger_chunk_rows(32768, H, V) == 1024


def test_todays_code_holds_half_the_chunk_bytes():
    """Without the fp32 copy, 2 bf16 chunks: at BT = 32,768 the loss's own bytes drop by 1,024 × V × 4 B."""
    assert LIGER_CHUNK_BYTES == 4.0
    saved = liger_loss_bytes(32768, H, V, chunk_bytes=CHUNK_BYTES_V042) - liger_loss_bytes(32768, H, V)
    assert saved == 1024 * V * 4.0
