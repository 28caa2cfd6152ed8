"""The first plan on a detected card (``gui.first_plan``): the default LoRA fine-tune of Llama-3-8B, moved to
the card, takes the first of LoRA 4,096 → LoRA 2,048 → QLoRA 2,048 → QLoRA 1,024 tokens that fits it.

Reference: the choice follows from the engine's own estimates of the default plan with the default policy
(engine figures of 2026-11-27, listed in docs/gui.md, First start): LoRA at 4,096 tokens needs 24.2 GiB, at
2,048 20.5 GiB; QLoRA at 2,048 14.1 GiB, and on 10-12 GB cards it runs only with ZeRO-3 and the optimizer in
CPU RAM (10.0 GiB at 2,048 tokens, 8.1 GiB at 1,024; engine figures of 2026-11-28, when the default policy gained
ZeRO-3 on one GPU, the step the auto-planner's layouts already had). The sequence
lengths are the defaults of axolotl's Llama-3 examples (4,096), LLaMA-Factory (2,048) and TRL (1,024), cited
in ``gui/first_plan.py``. Tolerance: the method and length chosen are exact; memory figures are not pinned
here (test_this_machine checks the 24 GB case to ±0.1 GiB). Qt-free.
"""

from __future__ import annotations

import pytest

from llmplan.gui.backend import default_plan, evaluate
from llmplan.gui.first_plan import plan_for_this_gpu


@pytest.mark.parametrize(("gpu", "method", "seq_len", "changed"), [
    ("nvidia-h100-sxm-80gb", "lora", 4096, False),
    ("nvidia-rtx-5090-32gb", "lora", 4096, False),
    ("nvidia-rtx-4090-24gb", "lora", 2048, True),
    ("nvidia-rtx-3090-24gb", "lora", 2048, True),
    ("nvidia-rtx-4000-ada-20gb", "qlora", 2048, True),
    ("nvidia-rtx-4080-16gb", "qlora", 2048, True),
    ("nvidia-rtx-4060-ti-16gb", "qlora", 2048, True),
    ("nvidia-rtx-3060-12gb", "qlora", 2048, True),
    ("nvidia-rtx-2080-ti-11gb", "qlora", 2048, True),
    ("nvidia-rtx-3080-10gb", "qlora", 1024, True),  # 2,048 tokens: 9.98 of 10.0 GiB, within the allocator's margin
])
def test_the_first_plan_fits_the_common_home_cards(gpu, method, seq_len, changed):
    choice = plan_for_this_gpu(default_plan(gpu))
    doc = choice.doc
    assert (doc.training.method, doc.training.seq_len) == (method, seq_len)
    assert doc.hardware.gpu == gpu and doc.model == default_plan(gpu).model  # the model and the card stay
    assert bool(choice.note) == changed and choice.note.startswith("Chosen for this ") == changed
    out = evaluate(doc)
    assert out.ok and out.estimate.fits, (gpu, out.estimate.memory.total.value / 2**30)
    assert not doc.training.model_fields_set & {"recompute", "micro_batch", "zero_stage", "offload"}


def test_qlora_is_chosen_because_lora_does_not_fit_and_the_note_says_so():
    choice = plan_for_this_gpu(default_plan("nvidia-rtx-4080-16gb"))
    assert choice.note.startswith("Chosen for this NVIDIA GeForce RTX 4080 16GB: QLoRA on 2,048-token sequences "
                                  "(LoRA on 2,048-token sequences needs "), choice.note
    assert "LLaMA-Factory" in choice.detail and "TRL" in choice.detail


def test_a_card_nothing_fits_keeps_the_default_and_says_so():
    """8 GB: even QLoRA at 1,024 tokens with ZeRO-3 and CPU offload is over (engine: 8.1 of 8.0 GiB). The plan
    stays the default; the fixes under the verdict say what would fit."""
    doc = default_plan("nvidia-rtx-3070-8gb")
    choice = plan_for_this_gpu(doc)
    assert choice.doc == doc
    assert choice.note.startswith("Meta-Llama-3-8B does not fit this NVIDIA GeForce RTX 3070 8GB even as QLoRA on "
                                  "1,024-token sequences (needs "), choice.note


def test_a_plan_other_than_the_default_is_left_alone():
    from llmplan.plan.overrides import apply_overrides

    for overrides in (("training.seq_len=8192",), ("training.method=full",), ("workload=inference",)):
        doc = apply_overrides(default_plan("nvidia-rtx-4090-24gb"), overrides)
        assert plan_for_this_gpu(doc).doc == doc and plan_for_this_gpu(doc).note == ""
