"""The engine picker offers both llama.cpp build eras (catalogs/engines.toml: ``llama-cpp``, 2024 builds, and
``llama-cpp-2026``, current builds; docs/inference.md "two build eras"), and choosing the current build speeds up
decode on an NVIDIA card: 21 kernels x 0.875 µs per layer instead of 86.7 µs."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("PySide6.QtWidgets")


def ms(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"ms": 1.0, "s": 1e3, "µs": 1e-3}[unit]


def test_engine_picker_offers_both_llama_cpp_eras(window):
    from PySide6.QtWidgets import QComboBox

    combo = window.findChild(QComboBox, "inference.engine")
    names = {combo.itemData(i): combo.itemText(i) for i in range(combo.count())}
    assert names["llama-cpp"] == "llama.cpp" and names["llama-cpp-2026"] == "llama.cpp (2025+ build)"

    window.workload.setCurrentIndex(0)  # inference
    window.state.edit("hardware.gpu", "nvidia-h100-sxm-80gb")
    window.state.edit("inference.weight_format", "q4_k_m")
    window.state.edit("inference.engine", "llama-cpp")
    assert window.state.evaluate_now().ok
    tpot_2024 = ms(window.results.value_of("Time per output token"))
    window.state.edit("inference.engine", "llama-cpp-2026")
    assert window.state.evaluate_now().ok
    assert combo.currentText() == "llama.cpp (2025+ build)"
    # H100 SXM, the default plan's Llama 3 8B, Q4_K_M: ~4.4 ms per token with 2024 builds, ~2.2 ms now
    assert ms(window.results.value_of("Time per output token")) < 0.6 * tpot_2024
    shot = os.environ.get("LLMPLAN_SCREENSHOT_DIR")
    if shot:
        window.resize(1400, 900)
        window.grab().save(os.path.join(shot, "inference-engine-eras.png"))
