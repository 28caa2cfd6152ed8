"""The verdict for an inference plan on a machine of different cards: every detected card, llama.cpp's way.

llama.cpp (and Ollama) give each card a run of layers in proportion to its memory and keep what fits
nowhere in host RAM (``core.inference.multi_gpu``). So on, say, an RTX 5090 beside an RTX 3090 an inference
plan is judged on both cards, not on the larger group of identical GPUs: the plan is re-pointed at this
machine as ``hardware.cards`` (each card's detected spec inline, in device order) and estimated through
``plan.evaluate.estimate_cards``, the call the CLI's ``--gpu A --gpu B`` and a saved plan use. A plan that
does not name its engine gets llama.cpp, as on the command line; one that names an engine that cannot split
layers across unequal cards (vLLM, SGLang ...) keeps the largest group of identical GPUs (``fit.verdict``).

Training needs identical GPUs and keeps the largest group. The nearest changes and the largest context and
batch are searched over the same split (``fit.verdict``: ``trial.summarize`` evaluates a plan with
``hardware.cards`` through ``estimate_cards``, so every change is judged card by card). A plan that names its
own cards, not run here, gets its changes from ``fit.tiers.plan_fixes``.
"""

from __future__ import annotations

from llmplan.core.present import MemoryUnit, tokens_per_s
from llmplan.errors import LlmplanError
from llmplan.fit.local import LocalFit, LocalMachine
from llmplan.plan.document import CardRef, HardwareRef, PlanDocument
from llmplan.plan.evaluate import estimate_cards
from llmplan.plan.overrides import apply_overrides

gib = MemoryUnit("GiB").fmt


def splits_here(doc: PlanDocument, machine: LocalMachine) -> bool:
    """True when the verdict should use every card: a mixed machine, an inference plan, and an engine
    that splits layers across unequal cards (or none named: llama.cpp is chosen)."""
    if not machine.cards or doc.workload != "inference":
        return False
    if "engine" not in doc.inference.model_fields_set:
        return True
    from llmplan.catalog.engines import engine_profile
    from llmplan.errors import CatalogError

    try:
        return engine_profile(doc.inference.engine).splits_unequal_cards
    except CatalogError:  # an unknown engine: the plan's own estimate reports it
        return False


def cards_plan(doc: PlanDocument, machine: LocalMachine) -> tuple[PlanDocument, str]:
    """``doc`` on this machine's cards (``hardware.cards``, specs inline), and a note when the engine was
    chosen here."""
    cards: list[CardRef] = []
    for spec in machine.cards:
        if cards and cards[-1].gpu_spec == spec:
            cards[-1] = cards[-1].model_copy(update={"count": cards[-1].count + 1})
        else:
            cards.append(CardRef(gpu=spec.id, gpu_spec=spec))
    first = machine.cards[0]
    hw = HardwareRef(gpu=first.id, gpu_spec=first, gpus_per_node=1, nodes=1, network="none",
                     price_per_gpu_hour=doc.hardware.price_per_gpu_hour, cards=tuple(cards))
    local = doc.model_copy(update={"hardware": hw})
    if "engine" in doc.inference.model_fields_set:
        return local, ""
    return (apply_overrides(local, ["inference.engine=llama-cpp"]),
            "engine: llama.cpp, which splits layers across different cards (--set inference.engine=llama-cpp)")


def mixed_fit(doc: PlanDocument, machine: LocalMachine, notes: list[str]) -> LocalFit:
    """The verdict on every card of a mixed machine (see the module docstring)."""
    label = machine.cards_label
    try:
        local, engine_note = cards_plan(doc, machine)
        plan, _scenario = estimate_cards(local)
    except LlmplanError as exc:
        return LocalFit(machine=machine, status="error", fits=False, current=None, one_gpu=None, split=None,
                        verdict=f"This machine ({label}): the plan cannot be evaluated on its cards: {exc}",
                        local_plan=None, notes=tuple(notes))
    if engine_note:
        notes.append(engine_note)
    layers = " + ".join(str(c.layers) for c in plan.cards)
    tightest = max(plan.cards, key=lambda c: c.total / c.capacity)
    where = f"{tightest.gpu.name} {gib(tightest.total)} of {gib(tightest.capacity)}"
    host_ok = machine.host_ram_bytes is None or plan.host_bytes <= machine.host_ram_bytes
    fits = plan.fits and host_ok
    if not plan.fits:
        short = [c for c in plan.cards if not c.fits]
        head = "does not fit: " + "; ".join(f"{c.gpu.name} needs {gib(c.total)} of {gib(c.capacity)}"
                                            for c in short)
    elif plan.host_layers:
        head = (f"fits with CPU offload: layers {layers} on the cards, {plan.host_layers} of "
                f"{plan.host_layers + plan.gpu_layers} in host RAM ({gib(plan.host_bytes)})")
        if not host_ok:
            head = head.replace("fits with", "does not fit even with") + f", {gib(machine.host_ram_bytes)} available"
    else:
        head = f"fits split across the cards (layers {layers}; fullest: {where})"
    if fits and machine.cards_speed_known and plan.tpot_s > 0:
        head += f", {tokens_per_s(1 / plan.tpot_s)} per user"
    status = ("fits_offload" if plan.host_layers else "fits_split") if fits else "does_not_fit"
    return LocalFit(machine=machine, status=status, fits=fits, verdict=f"This machine ({label}): {head}",
                    current=None, one_gpu=None, split=None, local_plan=local, notes=tuple(notes))
