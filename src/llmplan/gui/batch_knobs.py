"""The global batch knobs of the training tabs: in sequences or in tokens, the rule for a batch left at 0,
and a line saying how the layout cuts it (micro-batch × DP × accumulation steps), from the estimate itself
(``core.training.batch``: the batch stays fixed while the layout changes)."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QLabel

from llmplan.gui.bind import bound_combo, bound_spin
from llmplan.gui.state import PlanState
from llmplan.gui.tooltips import wrap_tip

BATCH_FIELDS = ("global_batch", "global_batch_tokens", "batch_rule")


def add_batch_rows(form: QFormLayout, state: PlanState) -> QLabel:
    """Add the three knobs and the accumulation line to ``form``; returns the line (for tests)."""
    form.addRow("Global batch (sequences)", bound_spin(
        state, "training.global_batch", "Global batch",
        "Sequences per optimizer step over all replicas, fixed whatever the layout (gradient accumulation fills "
        "the gap); micro-batch × DP must divide it. 0: the batch in tokens below, else the batch rule",
        0, 100_000_000, 8, special_zero="from tokens / rule"))
    form.addRow("Global batch (tokens)", bound_spin(
        state, "training.global_batch_tokens", "Global batch in tokens",
        "Tokens per optimizer step (Llama 3 405B: 16,777,216 = 2,048 × 8,192); rounded to whole sequences, and "
        "to a multiple of micro-batch × DP, which the results say. 0: the batch rule",
        0, 2_000_000_000, 1_048_576, special_zero="by the rule"))
    form.addRow("Batch rule", bound_combo(
        state, "training.batch_rule", "Batch rule",
        "What a batch left at 0 means. Published: what runs of the model's size used — GPT-3 Table 2.1 "
        "(0.5M–1M tokens below 5B), Llama 2 (4M tokens, 7B–70B), Llama 3 405B (16M), DeepSeek-V3 (15,360 × 4k); "
        "fine-tuning 64 sequences (Llama 2-Chat). One micro-batch per replica: the batch grows with DP "
        "(plans saved before schema 4)",
        [("published", "published for the model size"), ("per_replica", "one micro-batch per replica")],
        chars=22))
    line = BatchLine()
    form.addRow("", line)
    state.evaluated.connect(line.show_outcome)  # a bound slot: Qt disconnects it when the tab goes
    return line


class BatchLine(QLabel):
    """"= 1,024 sequences, 4,194,304 tokens per step: micro-batch 1 × DP 8 × 128 accumulation steps (…)"."""

    def __init__(self) -> None:
        super().__init__("")
        self.setWordWrap(True)
        self.setAccessibleName("Global batch and accumulation steps")

    def show_outcome(self, outcome) -> None:
        est = getattr(outcome, "estimate", None)
        compute = getattr(est, "compute", None) if est is not None else None
        gb = getattr(compute, "global_batch", None)
        if gb is None:
            self.setText("")
            return
        acc = compute.accumulation
        seqs, tokens = int(gb.value), int(gb.inputs["tokens_per_step"])
        self.setText(f"= {seqs:,} sequences, {tokens:,} tokens per step: micro-batch {int(acc.inputs['micro_batch'])}"
                     f" × DP {int(acc.inputs['dp'])} × {int(acc.value):,} accumulation steps ({gb.inputs['rule']})")
        self.setToolTip(wrap_tip(gb.formula))
