"""Verdict tiers for any catalog GPU (issue 18 item 4): Fits / Fits with offload / Does not fit, and
the nearest fixes for any plan.

The example from the issue: Llama-3-70B Q4_K_M with llama.cpp on one RTX 4090 24GB. llama.cpp's
offload rule (``-ngl`` auto-fit: as many layers as fit) puts 48 of 80 layers on the GPU here;
its Q4_K_M file is 39.6 GiB (llama.cpp's K-quant mix, ``core.quant_ggml``), so every layer holds
~0.49 GiB and 24 GiB holds about half of them. Decode then reads the rest at host bandwidth: the
engine says ~3.6 tokens/s, against ~18 tokens/s with every layer on a GPU of the same speed
(1,008 GB/s ÷ 39.6 GiB ≈ 24 tokens/s bandwidth bound, minus llama.cpp's per-layer overheads).
Tolerances: the layer count within 45–52 of 80 on the GPU (it moves with the context and the
engine's overhead figures), speeds within 2–5 and 12–25 tokens/s.
"""

from __future__ import annotations

import pytest

from llmplan.core.present import MemoryUnit
from llmplan.fit.tiers import all_on_gpu, plan_fixes, plan_verdict
from llmplan.gui.backend import default_plan
from llmplan.plan.evaluate import evaluate_plan
from llmplan.plan.overrides import apply_overrides

LLAMA_70B_Q4 = ("workload=inference", "model.id=meta-llama/Meta-Llama-3-70B", "inference.engine=llama.cpp",
                "inference.weight_format=q4_k_m")


def _plan(*overrides: str):
    return apply_overrides(default_plan(), overrides)


def _verdict(doc):
    scenario, est = evaluate_plan(doc)
    return plan_verdict(scenario, est, MemoryUnit("GiB")), scenario, est


def test_70b_q4_on_a_4090_is_amber_with_the_layers_in_cpu_ram_and_the_speed():
    v, _scenario, est = _verdict(_plan(*LLAMA_70B_Q4, "hardware.gpu=nvidia-rtx-4090-24gb"))
    assert est.memory.fits  # the GPU part fits: the old verdict said a plain green "Fits"
    assert v.tier == "offload"
    assert v.total_layers == 80 and 28 <= v.offloaded_layers <= 35
    assert v.headline.startswith(f"Fits with offload: {v.offloaded_layers} of 80 layers in CPU RAM, ~")
    assert 2.0 <= v.tokens_per_s <= 5.0 and "tokens/s" in v.headline
    assert v.all_gpu is not None and 12 <= v.all_gpu.tokens_per_s <= 25
    assert v.all_gpu.bytes_per_gpu / 2**30 == pytest.approx(40.1, abs=1.5)  # Q4_K_M file + KV + overhead
    assert "Offload costs" in v.cost and "of the speed" in v.cost and "40." in v.cost


@pytest.mark.parametrize(("gpu", "tier"), [
    ("nvidia-h100-sxm-80gb", "fits"),  # 40 GiB on an 80 GB GPU
    ("apple-m1-max-24c-64gb", "fits"),  # unified memory: nothing is "offloaded", the GPU reads it all
    ("nvidia-rtx-4080-16gb", "offload"),
])
def test_any_catalog_gpu_gets_a_tier(gpu, tier):
    v, _s, _e = _verdict(_plan(*LLAMA_70B_Q4, f"hardware.gpu={gpu}"))
    assert v.tier == tier, v.headline
    assert v.headline.startswith("Fits")


def test_does_not_fit_is_red_and_says_how_much():
    v, _s, est = _verdict(_plan("workload=inference", "model.id=meta-llama/Meta-Llama-3-70B",
                                "hardware.gpu=nvidia-rtx-4090-24gb"))  # vLLM, bf16: 141 GB of weights
    assert v.tier == "does_not_fit" and not est.memory.fits
    assert v.headline.startswith("Does not fit: needs 1") and "of 21.6 GiB per GPU" in v.headline


def test_training_with_optimizer_offload_is_amber():
    """At 2,048 tokens: the Trainer's optimizer offload is DeepSpeed's ZeRO-Offload, whose gradient buckets
    (2 × 5e8 16-bit elements, ``core.training.deepspeed_zero``) do not fit beside 4,096 tokens on 24 GB."""
    v, scenario, _e = _verdict(_plan("hardware.gpu=nvidia-rtx-4090-24gb", "training.offload=cpu",
                                     "training.zero_stage=1", "training.seq_len=2048"))
    assert scenario.training.offload == "cpu"
    assert v.tier == "offload" and "optimizer states in CPU RAM" in v.headline
    assert v.all_gpu is not None and v.all_gpu.bytes_per_gpu > 0


def test_all_on_gpu_changes_nothing_but_the_offload():
    scenario, est = evaluate_plan(_plan(*LLAMA_70B_Q4, "hardware.gpu=nvidia-h100-sxm-80gb"))
    other = all_on_gpu(scenario)  # already all on the GPU: the same speed and memory
    assert other.tokens_per_s == pytest.approx(est.inference.tokens_per_s.value, rel=1e-9)
    assert other.bytes_per_gpu == pytest.approx(est.memory.total.value, rel=1e-9)


def test_fixes_for_a_plan_that_does_not_fit_a_catalog_gpu():
    doc = _plan("workload=inference", "model.id=meta-llama/Meta-Llama-3-70B", "hardware.gpu=nvidia-rtx-4090-24gb")
    fixes = plan_fixes(doc)
    assert fixes, "a 70B bf16 plan on one 24 GB GPU has fixes"
    for change in fixes:  # each applies to the plan itself and makes it fit
        _s, est = evaluate_plan(apply_overrides(doc, change.overrides))
        assert est.memory.fits, change.sentence
    assert any("hardware.gpus_per_node=8" in c.overrides for c in fixes)  # 8 × 24 GB hold 141 GB


def test_fixes_for_an_offloaded_plan_put_it_all_on_the_gpu():
    doc = _plan(*LLAMA_70B_Q4, "hardware.gpu=nvidia-rtx-4090-24gb")
    fixes = plan_fixes(doc)
    assert fixes
    for change in fixes:
        v, _s, _e = _verdict(apply_overrides(doc, change.overrides))
        assert v.tier == "fits", (change.sentence, v.headline)
    assert fixes[0].overrides == ("hardware.gpus_per_node=2", "parallelism.pp=2")  # 2 × 24 GB hold 40 GiB


def test_no_fixes_when_it_fits_or_cannot_be_evaluated():
    assert plan_fixes(_plan(*LLAMA_70B_Q4, "hardware.gpu=nvidia-h100-sxm-80gb")) == ()
    assert plan_fixes(_plan(*LLAMA_70B_Q4, "hardware.gpu=nvidia-h100-sxm-80gb", "parallelism.tp=3")) == ()


def test_an_offload_that_costs_no_speed_says_so_instead_of_zero_percent():
    """A full fine-tune of Llama-3.2-1B on an RTX 4090 needs 29 GiB all on the GPU, so the default policy moves
    the optimizer states to CPU RAM (DeepSpeed's ZeRO-Offload under the Trainer); that costs well under 1% of
    the speed, which read "0 %". (The default LoRA plan no longer shows it: ZeRO-Offload's gradient buckets,
    ``core.training.deepspeed_zero``, outweigh LoRA's states, so offloading them does not make it fit.)"""
    v, scenario, _est = _verdict(_plan("workload=finetune", "model.id=meta-llama/Llama-3.2-1B",
                                       "training.method=full", "hardware.gpu=nvidia-rtx-4090-24gb"))
    assert scenario.training.method == "full" and v.tier == "offload"
    assert v.all_gpu is not None and v.tokens_per_s >= 0.995 * v.all_gpu.tokens_per_s
    assert "Offload costs almost no speed (under 1%)" in v.cost and "0 %" not in v.cost


def _on_cards(*overrides: str):
    """Llama 3.1 70B on 2x RTX 3090 + RTX 4090 (``hardware.cards``), llama.cpp splitting the layers."""
    from llmplan.plan.document import CardRef

    doc = _plan("workload=inference", "model.id=meta-llama/Llama-3.1-70B", "inference.engine=llama.cpp", *overrides)
    cards = (CardRef(gpu="nvidia-rtx-3090-24gb", count=2), CardRef(gpu="nvidia-rtx-4090-24gb"))
    return doc.model_copy(update={"hardware": doc.hardware.model_copy(update={
        "gpu": "nvidia-rtx-3090-24gb", "gpus_per_node": 1, "cards": cards})})


def test_a_plan_on_its_own_cards_gets_fixes_judged_card_by_card():
    """One source of fixes (strict29): ``plan_fixes`` also answers for a plan that names its cards, which
    ``fit.mixed.changes_on_cards`` did before with the same search. The case of tests/cli/test_cli_mixed_cards.py:
    Q8_0 with a 16k prompt and an fp16 KV cache leaves 15 of 80 layers in host RAM; the nearest change is
    Q6_K (53.9 GiB of weights), after which every layer is on a card. No fix adds GPUs: the cards are the machine."""
    from llmplan.fit.tiers import plan_machine
    from llmplan.plan.evaluate import estimate_cards

    doc = _on_cards("inference.weight_format=q8_0", "inference.kv_dtype=fp16", "inference.prompt_tokens=16384")
    machine = plan_machine(doc)
    assert [c.id for c in machine.cards] == ["nvidia-rtx-3090-24gb"] * 2 + ["nvidia-rtx-4090-24gb"]
    assert machine.gpu_count == 3 and machine.host_ram_bytes is None
    fixes = plan_fixes(doc)
    assert fixes[0].overrides == ("inference.weight_format=q6_k",)
    for change in fixes:
        assert not any(o.startswith("hardware.") for o in change.overrides), change.overrides
        split, _scenario = estimate_cards(apply_overrides(doc, change.overrides))
        assert split.fits and split.host_layers == 0, change.sentence
    assert plan_fixes(_on_cards("inference.weight_format=q4_k_m", "inference.prompt_tokens=4096")) == ()  # fits


def test_the_fix_lists_have_one_source():
    """Every list of fixes for a plan comes from ``plan_fixes``; the change ladder is searched elsewhere only by
    the "This machine" verdict (``fit.verdict``, which knows the detected machine and its host RAM)."""
    from pathlib import Path

    import llmplan

    root = Path(llmplan.__file__).parent
    callers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if "nearest_changes(" in p.read_text("utf-8") and p.name != "changes.py")
    assert callers == ["fit/tiers.py", "fit/verdict.py"], callers
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "plan_fixes(" in p.read_text("utf-8"))
    assert users == ["cli/mixed_cards.py", "fit/tiers.py", "gui/machine_cards.py", "gui/plan_fixes.py"], users
