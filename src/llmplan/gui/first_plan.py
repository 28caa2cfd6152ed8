"""The first plan on this machine's GPU: the untouched default plan, made to fit the detected card.

The app's default plan is a LoRA fine-tune of Llama-3-8B on 4,096-token sequences (``backend.default_plan``).
On a 24 GB card it does not fit even with the default policy's full recompute (24.2 of 24.0 GiB: the
Hugging Face loss's fp32 logits and DeepSpeed's gradient buckets), and on a 16 GB card LoRA's bf16
weights alone (15 GiB) leave no room. A person whose first start reads "Does not fit" learns nothing
about their own card, so when detection re-points the untouched default plan at this machine's GPU it
takes the first of ``CANDIDATES`` that the engine says fits, and says which and why in one line.

The candidates change two things, in this order: the sequence length, then LoRA → QLoRA.

- 4,096 tokens: the app's default, and the length of axolotl's Llama-3-8B LoRA and QLoRA examples
  (axolotl-ai-cloud/axolotl ``examples/llama-3/lora-8b.yml`` at commit 9f824ef and ``qlora.yml`` at
  ba1be71, ``sequence_len: 4096``, read 2026-11-27).
- 2,048 tokens: LLaMA-Factory's default ``cutoff_len`` (hiyouga/LLaMA-Factory
  ``src/llamafactory/hparams/data_args.py``, commit 072bfe2, read 2026-11-27).
- 1,024 tokens: TRL's ``SFTConfig.max_length`` default (huggingface/trl ``trl/trainer/sft_config.py``,
  commit 016013e, read 2026-11-27).
- QLoRA (4-bit NF4 base, Dettmers et al. 2023) when LoRA's bf16 base does not fit at 2,048 tokens: it
  keeps the model and the sequence length people train on and quarters the weights.

A candidate is taken when everything is on the GPU with room to spare (verdict tier "fits", not within
the allocator's margin); failing that, the first that runs with part of it in CPU RAM and room to spare;
failing that, the first that fits at all. When none fits, the default plan stays as it is and the nearest
fixes say what would. The knobs the default policy moves (recompute, micro-batch, ZeRO, offload) stay
automatic, so the verdict still says what it chose ("auto: full recompute").
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.plan.document import PlanDocument

CANDIDATES: tuple[tuple[str, int], ...] = (("lora", 4096), ("lora", 2048), ("qlora", 2048), ("qlora", 1024))
SOURCES = {4096: "the length of axolotl's Llama-3 LoRA example", 2048: "LLaMA-Factory's default length",
           1024: "TRL's default length"}
_METHOD = {"lora": "LoRA", "qlora": "QLoRA"}


@dataclass(frozen=True, slots=True)
class _Trial:
    method: str
    seq_len: int
    doc: PlanDocument
    tier: str  # "fits", "offload", "does_not_fit" or "error"
    tight: bool
    needed_gib: float
    capacity_gib: float
    gpu_name: str = "GPU"

    @property
    def label(self) -> str:
        return f"{_METHOD[self.method]} on {self.seq_len:,}-token sequences"

    def why_not(self) -> str:
        """Why this candidate was passed over, in a few words."""
        if self.tier == "does_not_fit":
            return f"needs {self.needed_gib:.1f} of {self.capacity_gib:.1f} GiB"
        if self.tier == "offload" and not self.tight:
            return "needs CPU offload"
        if self.tight:
            return "fits only within the allocator's margin" + (" even with CPU offload" if self.tier == "offload"
                                                                 else "")
        return "cannot be estimated"


@dataclass(frozen=True, slots=True)
class StartChoice:
    """The plan to start with, the one line the results show (\"\" when nothing changed) and its tooltip."""

    doc: PlanDocument
    note: str = ""
    detail: str = ""


def _trial(doc: PlanDocument, method: str, seq_len: int) -> _Trial:
    from llmplan.core.present import MemoryUnit
    from llmplan.fit.tiers import plan_verdict
    from llmplan.gui.backend import evaluate

    training = doc.training.model_copy(update={"method": method, "seq_len": seq_len})
    doc = doc.model_copy(update={"training": training})
    out = evaluate(doc)
    if not out.ok or out.scenario is None:
        return _Trial(method, seq_len, doc, "error", False, 0.0, 0.0)
    est = out.estimate
    verdict = plan_verdict(out.scenario, est, MemoryUnit("GiB"))
    gib = 2**30
    return _Trial(method, seq_len, doc, verdict.tier, verdict.tight, est.memory.total.value / gib,
                  est.memory.capacity.value / gib, out.scenario.cluster.gpu.name)


def _pick(trials: list[_Trial]) -> _Trial | None:
    for good in (lambda t: t.tier == "fits" and not t.tight,
                 lambda t: t.tier == "offload" and not t.tight,
                 lambda t: t.tier in ("fits", "offload")):
        chosen = next((t for t in trials if good(t)), None)
        if chosen is not None:
            return chosen
    return None


def plan_for_this_gpu(doc: PlanDocument) -> StartChoice:
    """``doc`` (the default plan, already on this machine's GPU) with the first of ``CANDIDATES`` that fits.

    Unchanged when the first candidate (the default itself) fits, when ``doc`` is not a LoRA fine-tune at
    the default length, or when no candidate fits (the note then says so)."""
    first_method, first_seq = CANDIDATES[0]
    if doc.workload != "finetune" or (doc.training.method, doc.training.seq_len) != (first_method, first_seq):
        return StartChoice(doc)
    trials: list[_Trial] = []
    for method, seq_len in CANDIDATES:
        trial = _trial(doc, method, seq_len)
        trials.append(trial)
        if trial.tier == "fits" and not trial.tight:
            break  # later candidates change more: no need to estimate them
    chosen = _pick(trials)
    gpu_name = trials[0].gpu_name
    tried = "; ".join(f"{t.label}: {t.why_not() if t is not chosen else 'chosen'}" for t in trials)
    detail = (f"The first start tries, in order, {', '.join(_METHOD[m] + ' ' + f'{s:,}' for m, s in CANDIDATES)} "
              f"tokens and keeps the first that fits this GPU ({tried}). Sequence lengths: "
              + ", ".join(f"{s:,} is {src}" for s, src in SOURCES.items()) + ". See docs/gui.md, First start.")
    if chosen is None:
        last = trials[-1]
        model = (doc.model.id or "the model").rsplit("/", 1)[-1]
        return StartChoice(doc, f"{model} does not fit this {gpu_name} even as {last.label} "
                                f"({last.why_not()}): the fixes below say what would.", detail)
    if chosen is trials[0]:
        return StartChoice(doc)
    passed = trials[trials.index(chosen) - 1]
    if chosen.method == passed.method:  # a shorter sequence
        what = f"{chosen.label}, {SOURCES[chosen.seq_len]}"
        why = f"{passed.seq_len:,} {passed.why_not()}"
    else:
        what, why = chosen.label, f"{passed.label} {passed.why_not()}"
    return StartChoice(chosen.doc, f"Chosen for this {gpu_name}: {what} ({why}).", detail)
