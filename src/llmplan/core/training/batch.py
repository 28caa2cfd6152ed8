"""The global batch a training plan trains with: fixed in tokens (or sequences) while the layout changes.

Real pre-training fixes the batch for the optimisation, then chooses the layout: the number of
replicas and micro-batches only decides how that batch is cut (micro-batch × DP × accumulation).
A plan states the batch in sequences (``training.global_batch``) or in tokens
(``training.global_batch_tokens``); left at 0, ``training.batch_rule`` decides:

- ``published``: what published runs of that size used, by total parameters —
  < 1 B: 0.5M tokens; 1–5 B: 1M (GPT-3, Brown et al. 2020, Table 2.1: 125M–760M at 0.5M,
  1.3B and 2.7B at 1M); 5–100 B: 4M (Llama 2, Touvron et al. 2023 §2.2: 4M tokens for 7B–70B);
  100–500 B: 16M (Llama 3 405B, Dubey et al. 2024 §3.4.1 and Table 4: 2,048 × 8,192 at the end of
  training, 4M at the start); ≥ 500 B: 15,360 × 4,096 (DeepSeek-V3 671B, DeepSeek-AI 2024 §4.2).
  Fine-tuning: 64 sequences (Llama 2-Chat's supervised fine-tuning, Touvron et al. 2023 §3.1).
  "4M" is 2^22 tokens, as the papers' batches are powers of two of sequences;
- ``per_replica``: one micro-batch per data-parallel replica (micro_batch · dp), so the batch
  changes with the layout — what plans saved before schema 4 meant by 0, kept for them.

The rule for a layout that cannot cut the batch: a batch given in sequences must be a multiple of
micro-batch × DP (a ``LayoutError`` names the fix); a batch in tokens or from the published rule is
rounded to the nearest multiple of micro-batch × DP (× PP when interleaved) and the estimate says
so. The auto-planner never rounds: it keeps the batch exactly and leaves out layouts that cannot
cut it, with that reason (``search.space.exclusions``).
"""

from __future__ import annotations

from llmplan.core.params import count_params
from llmplan.core.workload import Scenario, TrainingSettings

# (total parameters below, tokens per step, source)
PUBLISHED = (
    (1e9, 2 ** 19, "GPT-3 125M–760M, Brown et al. 2020 Table 2.1"),
    (5e9, 2 ** 20, "GPT-3 1.3B–2.7B, Brown et al. 2020 Table 2.1"),
    (1e11, 2 ** 22, "Llama 2 7B–70B, Touvron et al. 2023 §2.2"),
    (5e11, 2 ** 24, "Llama 3 405B, Dubey et al. 2024 Table 4"),
    (float("inf"), 15_360 * 4_096, "DeepSeek-V3 671B, DeepSeek-AI 2024 §4.2"),
)
FINETUNE_SEQUENCES = 64  # Llama 2-Chat SFT, Touvron et al. 2023 §3.1


def published_tokens(total_params: float) -> tuple[int, str]:
    """Tokens per optimizer step published pre-training runs of this size used, and the source."""
    return next((tokens, src) for bound, tokens, src in PUBLISHED if total_params < bound)


def target_sequences(sc: Scenario) -> int:
    """The global batch in sequences the plan asks for; 0: one micro-batch per replica (per_replica)."""
    t = sc.training
    if t.global_batch:
        return t.global_batch
    if t.global_batch_tokens:
        return max(1, round(t.global_batch_tokens / t.seq_len))
    if t.batch_rule == "per_replica" or sc.workload == "inference":
        return 0
    if sc.workload == "finetune":
        return FINETUNE_SEQUENCES
    tokens, _src = published_tokens(count_params(sc.model).total)
    return max(1, round(tokens / t.seq_len))


def describe(sc: Scenario) -> str:
    """Where the batch comes from, for tooltips and the CLI: "published: 4,194,304 tokens (Llama 2 …)"."""
    t = sc.training
    if t.global_batch:
        return f"{t.global_batch:,} sequences, as set"
    if t.global_batch_tokens:
        return f"{t.global_batch_tokens:,} tokens, as set"
    if t.batch_rule == "per_replica":
        return "one micro-batch per data-parallel replica"
    if sc.workload == "finetune":
        return f"{FINETUNE_SEQUENCES} sequences (Llama 2-Chat fine-tuning, Touvron et al. 2023 §3.1)"
    tokens, src = published_tokens(count_params(sc.model).total)
    return f"{tokens:,} tokens ({src})"


def for_layout(sc: Scenario, tr: TrainingSettings, dp: int, pp: int, vp: int) -> tuple[int, str]:
    """The global batch (sequences) this layout trains with, and a note when it had to be rounded
    (module doc). A batch in sequences is returned as given: ``layout.resolve`` checks it."""
    mb = tr.micro_batch
    if tr.global_batch:
        return tr.global_batch, ""
    target = target_sequences(sc.model_copy(update={"training": tr}) if tr is not sc.training else sc)
    if not target:
        return mb * dp, ""
    unit = mb * dp * (pp if vp > 1 else 1)
    gb = max(unit, round(target / unit) * unit)
    if gb == target:
        return gb, ""
    return gb, (f"global batch rounded from {target:,} to {gb:,} sequences ({gb * tr.seq_len:,} tokens) so that "
                f"micro-batch {mb} × DP {dp}" + (f" × PP {pp}" if vp > 1 else "") + " divides it")
