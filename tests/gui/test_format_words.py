"""The weight-format list says what each format is and its bits per weight (the 2026-11-28 user trial found bare
ids: ``nf4-nodq``, ``w8a8``, ``q4_k_m``, ``mxfp4_moe``). The words come from ``core.quant``'s definitions
(``core.quant_words``); the bits are checked against the published layouts, exactly (tolerance 0.005 bit):
- NF4 with double quantisation: 4 + 0.127 bits (Dettmers et al. 2023, QLoRA §3: "from 0.5 bits to 0.127 bits
  per parameter"); without it 4.5.
- Q4_K: 144-byte blocks of 256 weights = 4.5 bits (llama.cpp ggml-common.h block_q4_K).
- GPTQ 4-bit, group 128: 4 + (16 + 4)/128 = 4.156 bits (AutoGPTQ qweight, scales, qzeros).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from llmplan.core.quant import parse_weight_format
from llmplan.core.quant_words import format_words, nominal_bits


@pytest.mark.parametrize(("name", "bits"), [("nf4", 4.127), ("nf4-nodq", 4.5), ("q4_k_m", 4.5),
                                            ("gptq-4bit", 4.156), ("mxfp4", 4.25), ("bf16", 16.0)])
def test_nominal_bits_follow_the_published_layouts(name, bits):
    assert nominal_bits(parse_weight_format(name)) == pytest.approx(bits, abs=0.005)


def test_the_format_list_describes_each_entry(window):
    window.workload.setCurrentIndex(2)  # the Inference tab
    combo = window.findChild(QComboBox, "inference.weight_format")
    wrapped = {combo.itemData(i): combo.itemData(i, Qt.ItemDataRole.ToolTipRole) for i in range(combo.count())}
    assert all(len(line) <= 80 for tip in wrapped.values() for line in tip.splitlines())  # fits a small screen
    tips = {k: " ".join(v.split()) for k, v in wrapped.items()}
    assert tips["nf4-nodq"] == " ".join(format_words("nf4-nodq").split())
    assert "no double quantisation" in tips["nf4-nodq"] and "4.5 bits" in tips["nf4-nodq"]
    assert "SmoothQuant W8A8" in tips["w8a8"] and "8 bits" in tips["w8a8"]
    assert "Q4_K blocks (256 weights in 144 bytes)" in tips["q4_k_m"] and "4.5 bits" in tips["q4_k_m"]
    assert "experts MXFP4, the other weights Q8_0" in tips["mxfp4_moe"]
    assert all(tips.values()), [k for k, v in tips.items() if not v]
