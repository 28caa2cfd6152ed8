"""The verdict for a plan on its own GPUs, in three honest tiers, and the nearest fixes for any plan.

A plan whose memory total is under the GPU's capacity is not always "fine": llama.cpp keeps the
layers that do not fit in host RAM and streams them at the CPU's memory bandwidth, and ZeRO-Offload
keeps optimizer states there; both "fit" and both run far slower than the same plan all on the GPU
(issue 18: Llama-3-70B Q4_K_M on an RTX 4090 read green "Fits: 23.5 of 24.0 GiB" while 35 of 80
layers ran from CPU RAM at ~3 tokens/s). So the verdict has three tiers:

- ``fits``: everything on the GPUs (``tight`` when within the allocator's margin);
- ``offload``: it runs, with part of it in CPU RAM; the headline says how much and how fast, and
  ``cost`` what that costs against the same plan all on the GPU (the engine's own estimate for the
  same GPU speed with enough memory, so the comparison moves nothing but the offload);
- ``does_not_fit``: it needs more GPU memory than there is.

``plan_fixes`` runs the change ladder of ``llmplan.fit.changes`` (the one behind "This machine")
on the plan's own hardware, for any catalog GPU and cluster or a plan's own list of different cards:
the nearest changes that make a plan fit, or, when it fits only with offload, that put it all on the
GPU. Qt-free; the GUI calls ``plan_verdict`` on every estimate (one extra engine call, under a
millisecond once warm) and ``plan_fixes`` in a worker thread (tens of engine calls). The change ladder
(``fit.changes``, ``fit.local``, ``fit.trial`` and the detection modules they import) loads on the first
``plan_fixes``, not with the verdict: the app's first paint needs only ``plan_verdict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from llmplan.core import engine, present
from llmplan.core.framework_profile import offload_summary
from llmplan.core.present import MemoryUnit
from llmplan.core.result import Estimate
from llmplan.core.search.policy import experts_in_host, offloads_layers
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError
from llmplan.plan.document import PlanDocument
from llmplan.plan.evaluate import evaluate_plan

if TYPE_CHECKING:
    from llmplan.fit.local import FitChange, LocalMachine

__all__ = ["AllOnGpu", "PlanVerdict", "Tier", "all_on_gpu", "is_offloaded", "off_gpu_bytes", "plan_fixes",
           "plan_verdict"]

Tier = Literal["fits", "offload", "does_not_fit"]
ROOMY_GPU_BYTES = 2**50  # a GPU with "enough" memory for the all-on-GPU comparison (1 PiB)


@dataclass(frozen=True)
class AllOnGpu:
    """The same plan with nothing offloaded, on a GPU of the same speed with enough memory."""

    tokens_per_s: float
    bytes_per_gpu: float


@dataclass(frozen=True)
class PlanVerdict:
    tier: Tier
    tight: bool  # fits, but within the allocator's fragmentation margin
    headline: str  # "Fits with offload: 32 of 80 layers in CPU RAM, ~3.6 tokens/s"
    cost: str  # offload only: what it costs against all on the GPU; "" otherwise
    offloaded_layers: int | None = None  # llama.cpp: layers left in host RAM
    total_layers: int | None = None
    tokens_per_s: float | None = None
    all_gpu: AllOnGpu | None = None
    off_gpu: tuple[tuple[str, float], ...] = ()  # ``off_gpu_bytes``: (memory field, bytes per node) kept off the GPUs


def _tokens_per_s(est: Estimate) -> float | None:
    if est.inference is not None:
        return float(est.inference.tokens_per_s.value)
    return float(est.compute.tokens_per_s.value) if est.compute is not None else None


def _about(tps: float) -> str:
    """'~3.6 tokens/s', '~1,234 tokens/s': an offloaded speed is an estimate of a slow path."""
    return "~" + present.tokens_per_s(tps)


def all_on_gpu(scenario: Scenario) -> AllOnGpu | None:
    """The engine's estimate of ``scenario`` with nothing offloaded (every layer on the GPU, optimizer
    states on the GPU) on a GPU of the same speed whose memory is large enough; None if it cannot run."""
    gpu = scenario.cluster.gpu.model_copy(update={"memory_bytes": ROOMY_GPU_BYTES, "gpu_memory_fraction": 1.0})
    update: dict = {"cluster": scenario.cluster.model_copy(update={"gpu": gpu})}
    if scenario.workload == "inference":
        update["inference"] = scenario.inference.model_copy(update={"gpu_layers": None, "cpu_moe_layers": None})
    else:
        update["training"] = scenario.training.model_copy(update={"offload": "none"})
    try:
        est = engine.estimate(scenario.model_copy(update=update))
    except LlmplanError:
        return None
    tps = _tokens_per_s(est)
    return None if tps is None else AllOnGpu(tps, float(est.memory.total.value))


def is_offloaded(scenario: Scenario, est: Estimate) -> bool:
    """Part of the plan lives off the GPU: llama.cpp layers left in CPU RAM, or offloaded optimizer
    states. llama.cpp's input embedding, always in host RAM and small, is not an offload; nothing on
    unified memory (Apple) is."""
    if scenario.cluster.gpu.unified_memory:
        return False
    if est.inference is not None:
        return offloads_layers(est, scenario.model.num_layers)
    return scenario.training.offload != "none"


OFF_GPU_FIELDS = ("host_ram", "nvme")  # the ``MemoryBreakdown`` fields an offload fills, in the order shown


def off_gpu_bytes(scenario: Scenario, est: Estimate) -> tuple[tuple[str, float], ...]:
    """What an offloading plan keeps off its GPUs: (``MemoryBreakdown`` field, bytes per node) for host RAM and
    NVMe, the ones above 0; () when nothing is offloaded (``is_offloaded``). Per node, as the estimate reports
    them, never split per GPU: on a llama.cpp layer split the host layers are one pool the CPU reads, and a
    share of it "per GPU" is no amount any GPU holds or any host has. The memory bar's legend and the memory
    charts' curves show these numbers; the results table and the CLI print the same fields."""
    if not is_offloaded(scenario, est):
        return ()
    m = est.memory
    return tuple((key, float(getattr(m, key).value)) for key in OFF_GPU_FIELDS if getattr(m, key).value > 0)


def _offload(scenario: Scenario, est: Estimate) -> tuple[int | None, str] | None:
    """(layers in host RAM, what is offloaded) when part of the plan lives off the GPU; else None."""
    if not is_offloaded(scenario, est):
        return None
    if est.inference is not None:
        host = int(scenario.model.num_layers - est.inference.gpu_layers.value)
        if not host and experts_in_host(est):  # every layer on the GPUs, routed experts in host RAM
            return 0, present.experts_figure(est.inference.cpu_moe_layers)
        return host, f"{host} of {scenario.model.num_layers} layers in CPU RAM"
    tr = scenario.training
    return None, offload_summary(scenario.framework, tr.offload, tr.offload_params, tr.zero_stage,
                                 tr.optimizer_offload_fraction)


def plan_verdict(scenario: Scenario, est: Estimate, unit: MemoryUnit) -> PlanVerdict:
    """The tier and its sentences for ``est`` (the estimate of ``scenario``)."""
    m = est.memory
    used, cap = unit.value(m.total.value), unit.fmt(m.capacity.value)
    if not m.fits:
        return PlanVerdict("does_not_fit", False, f"Does not fit: needs {used:,.1f} of {cap} per GPU", "")
    off = _offload(scenario, est)
    if off is None:
        if m.tight:
            return PlanVerdict("fits", True, f"Fits, tight: {used:,.1f} of {cap} per GPU "
                               "(within the allocator's margin)", "")
        return PlanVerdict("fits", False, f"Fits: {used:,.1f} of {cap} per GPU", "")
    layers, what = off
    tps = _tokens_per_s(est)
    headline = f"Fits with offload: {what}" + (f", {_about(tps)}" if tps else "")
    other = all_on_gpu(scenario)
    cost = f"{used:,.1f} of {cap} per GPU on the GPU."
    if other is not None and tps:
        lost = max(0.0, 1 - tps / other.tokens_per_s)
        costs = (f"Offload costs {present.percent(lost, 0)} of the speed" if lost >= 0.005 else
                 "Offload costs almost no speed (under 1%)")  # "0 %" reads as a mistake
        cost += (f" {costs}: all on the GPU it would run at "
                 f"{_about(other.tokens_per_s)} and need {unit.fmt(other.bytes_per_gpu)} per GPU.")
    return PlanVerdict("offload", bool(m.tight), headline, cost, layers, scenario.model.num_layers, tps, other,
                       off_gpu_bytes(scenario, est))


def plan_machine(doc: PlanDocument) -> LocalMachine:
    """The plan's own hardware in the shape the change ladder takes, host RAM unknown (not checked): its
    identical GPUs, or every card of a plan that names its cards (``hardware.cards``: ``estimate --gpu A --gpu
    B``, a saved plan, the app's "Cards in this machine"), in order, so that each change is judged card by card
    (``fit.trial.summarize``). User errors raise ``LlmplanError``."""
    from llmplan.fit.local import LocalMachine

    if doc.hardware.cards:
        from llmplan.plan.resolve import resolve_cards

        specs = tuple(resolve_cards(doc))
        return LocalMachine(gpu=specs[0], gpu_count=len(specs), label=" + ".join(c.name for c in specs),
                            catalog_id=None, speed_known=True, host_ram_bytes=None, cards=specs)
    scenario, _est = evaluate_plan(doc)
    gpus = scenario.cluster.gpus_per_node * scenario.cluster.nodes
    gpu = scenario.cluster.gpu
    return LocalMachine(gpu=gpu, gpu_count=gpus, label=f"{gpus}× {gpu.name}" if gpus > 1 else gpu.name,
                        catalog_id=doc.hardware.gpu, speed_known=True, host_ram_bytes=None)


def plan_fixes(doc: PlanDocument, cancelled=lambda: False) -> tuple[FitChange, ...]:
    """The nearest changes that make ``doc`` fit its own GPUs (or its own cards), or, when it fits only by
    offloading, that put it all on the GPUs; () when it fits, or when it cannot be evaluated. Each change's
    ``overrides`` apply to ``doc`` itself (``llmplan.plan.overrides.apply_overrides``).

    The one source of fix suggestions for a plan: the app's fix buttons under the verdict, its "Cards in this
    machine" pane and ``llmplan-cli estimate`` with several ``--gpu`` cards all call it (the "This machine"
    verdict searches the detected machine instead, ``fit.verdict``). More GPUs in the node are among the
    changes for a plan on identical catalog GPUs; a plan that names its cards keeps them (the cards are the
    machine)."""
    from llmplan.fit.changes import nearest_changes
    from llmplan.fit.trial import summarize

    try:
        machine = plan_machine(doc)
        summary = summarize(doc, machine)
    except LlmplanError:
        return ()
    if cancelled() or (summary.fits and summary.mode != "offload"):
        return ()
    return nearest_changes(doc, summary, machine, full_gpu=summary.fits, more_gpus=not doc.hardware.cards)
