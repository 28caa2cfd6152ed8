"""The Inference tab shows the longest context that fits, and it moves with the KV cache type."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6.QtWidgets")


def shown_tokens(window) -> int:
    return int(window.results.value_of("Longest context that fits").replace(",", "").split()[0])


def test_longest_context_row_follows_the_kv_type(window, tmp_path):
    window.workload.setCurrentIndex(0)
    out = window.state.evaluate_now()
    assert out.ok, out.message
    bf16 = shown_tokens(window)
    assert bf16 > 0
    window.state.edit("inference.kv_dtype", "fp8")
    window.state.evaluate_now()
    fp8 = shown_tokens(window)
    assert fp8 == pytest.approx(2 * bf16, rel=0.15)  # half the bytes per token, nearly twice the tokens
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        window.resize(1400, 900)
        table = window.results.table
        row = next(table.topLevelItem(i) for i in range(table.topLevelItemCount())
                   if table.topLevelItem(i).text(0).strip() == "Longest context that fits")
        table.scrollToItem(row)
        table.setCurrentItem(row)
        window.grab().save(os.path.join(shot, "inference-longest-context.png"))
