"""The Fine-tune tab's "What fits on one GPU": a limit of one reads in the singular."""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QLabel
from tests.gui.test_ft_switches import _form


def test_a_largest_micro_batch_of_one_reads_in_the_singular(qtbot):
    state, w = _form(qtbot, "hf-trainer")
    state.edit_many({"training.seq_len": 32768}, "long")  # Llama 3 8B LoRA on the default H100: one sequence
    state.evaluate_now()
    box = next(g for g in w.findChildren(QGroupBox) if hasattr(g, "compute_now"))
    box.compute_now()
    text = w.findChild(QLabel, "largest micro-batch that fits").text()
    assert text.startswith("1 sequence of 32,768 tokens"), text  # it read "1 sequences of ..."
