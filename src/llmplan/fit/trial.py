"""Evaluate a plan on this machine: re-point it, run the one pipeline, summarise the fit.

Every evaluation goes through ``llmplan.plan.evaluate.evaluate_plan`` (the CLI's and the
GUI's pipeline), on a copy of the user's plan whose hardware is this machine: the GPU
spec inline, ``gpus_per_node`` = the local GPU count, one node, no network. A change is
applied with ``llmplan.plan.overrides.apply_overrides``, the code behind ``--set``, so the
``--set`` lines the verdict prints give exactly the numbers it shows.
"""

from __future__ import annotations

from dataclasses import replace

from llmplan.core import present
from llmplan.core.hardware import GpuSpec, PeakFlops
from llmplan.core.present import MemoryUnit
from llmplan.core.quant import quantized_weights
from llmplan.core.search.policy import experts_in_host
from llmplan.core.workload import ParallelLayout
from llmplan.errors import LlmplanError
from llmplan.fit.local import FitMode, FitSummary, LocalMachine, MixedFit
from llmplan.plan.document import HardwareRef, PlanDocument
from llmplan.plan.evaluate import estimate_cards, evaluate_plan
from llmplan.plan.overrides import apply_overrides

gib = MemoryUnit("GiB").fmt  # fit verdicts read in GiB, the unit detection reports memory in


def engine_of(doc: PlanDocument):
    """The plan's inference engine profile (None for training or an unknown engine)."""
    if doc.workload != "inference":
        return None
    from llmplan.catalog.engines import engine_profile

    try:
        return engine_profile(doc.inference.engine)
    except LlmplanError:
        return None


def framework_of(doc: PlanDocument):
    """The plan's training-framework profile (None for inference or a plan that does not resolve)."""
    if doc.workload == "inference":
        return None
    from llmplan.plan.resolve import resolve_framework_profile

    try:
        return resolve_framework_profile(doc)
    except LlmplanError:
        return None


def cpu_spec(host_ram_bytes: int) -> GpuSpec:
    """Host RAM as the "device" of a CPU-only run (llama.cpp with no GPU): its bandwidth is the
    llama.cpp profile's host-RAM bandwidth (a measured DDR5 figure, catalogs/engines.toml);
    its FLOP/s are placeholders, so CPU-only speed is reported as unavailable."""
    from llmplan.catalog.engines import engine_profile

    bandwidth = engine_profile("llama.cpp").host_memory_bandwidth
    return GpuSpec(id="local-cpu", name="CPU (host RAM)", vendor="other", memory_bytes=host_ram_bytes,
                   memory_bandwidth=bandwidth, peak_flops=PeakFlops(fp32=1e12, fp16=1e12, bf16=1e12),
                   unified_memory=True)


def repoint(doc: PlanDocument, gpu: GpuSpec, count: int, layout: ParallelLayout) -> PlanDocument:
    """``doc`` on ``count`` local ``gpu`` in one node with ``layout``."""
    hw = HardwareRef(gpu=gpu.id, gpu_spec=gpu, gpus_per_node=count, nodes=1, network="none",
                     price_per_gpu_hour=doc.hardware.price_per_gpu_hour)
    return doc.model_copy(update={"hardware": hw, "parallelism": layout})


def one_gpu_layout(doc: PlanDocument) -> ParallelLayout:
    return ParallelLayout(sequence_parallel=doc.parallelism.sequence_parallel)


def split_layout(doc: PlanDocument, count: int, num_heads: int, num_layers: int) -> ParallelLayout | None:
    """All local GPUs on one replica: tensor parallel where the heads divide, pipeline (layer split,
    llama.cpp's way) otherwise or for partial-offload engines; None when neither is possible."""
    if count < 2:
        return None
    engine = engine_of(doc)
    layer_split = engine is not None and engine.partial_offload
    if not layer_split and num_heads % count == 0:
        return ParallelLayout(tp=count, sequence_parallel=doc.parallelism.sequence_parallel)
    if num_layers >= count:
        return ParallelLayout(pp=count, sequence_parallel=doc.parallelism.sequence_parallel)
    return None


def summarize(doc: PlanDocument, machine: LocalMachine, cpu_only: bool = False) -> FitSummary:
    """Evaluate ``doc`` (already on this machine). User errors propagate as ``LlmplanError``."""
    if doc.hardware.cards:
        return _summarize_cards(doc, machine)
    scenario, est = evaluate_plan(doc)
    mem = est.memory
    L = scenario.model.num_layers
    gpu_layers = None
    if est.inference is not None:
        gpu_layers = int(est.inference.gpu_layers.value) if est.inference.gpu_layers is not None else L
    host_needed = float(mem.host_ram.value)
    offloaded = (gpu_layers is not None and gpu_layers < L) or experts_in_host(est) > 0 or (
        doc.workload != "inference" and scenario.training.offload != "none")  # the policy may offload
    par = scenario.parallelism
    mode: FitMode = "cpu" if cpu_only else "offload" if offloaded else "split" if par.tp * par.pp > 1 else "gpu"
    if doc.workload == "inference" and not offloaded:
        host_needed = 0.0  # llama.cpp's input embedding in host RAM is small and always there: not offload
    tps = None
    if machine.speed_known and not cpu_only:
        tps = float(est.inference.tokens_per_s.value) if est.inference is not None else (
            float(est.compute.tokens_per_s.value) if est.compute is not None else None)
    needed, fits = float(mem.total.value), bool(mem.fits)
    if cpu_only:  # the "device" is host RAM: what llama.cpp keeps in host RAM (the input embedding) is in it too
        needed += float(mem.host_ram.value)
        fits = needed <= float(mem.capacity.value)
    summary = FitSummary(fits=False, mode=mode, tp=par.tp, pp=par.pp, needed_bytes=needed,
                         capacity_bytes=float(mem.capacity.value), host_needed_bytes=host_needed,
                         host_available_bytes=machine.host_ram_bytes, gpu_layers=gpu_layers, total_layers=L,
                         tokens_per_s=tps, estimate=est)
    return replace(summary, fits=fits and summary.host_ok)


def _summarize_cards(doc: PlanDocument, machine: LocalMachine) -> FitSummary:
    """A plan on different cards (``hardware.cards``), split llama.cpp's way: the card with the least memory
    to spare stands for "per GPU" (a change fits when every card holds its share); layers left in host RAM
    make it an offload, as on one GPU."""
    plan, scenario = estimate_cards(doc)
    tightest = plan.fullest
    tps = scenario.inference.batch / plan.tpot_s if plan.tpot_s > 0 else 0.0
    weights = float(quantized_weights(scenario.model, scenario.inference.weight_format).total_bytes)
    summary = FitSummary(fits=False, mode="offload" if plan.host_layers else "split", tp=1, pp=len(plan.cards),
                         needed_bytes=tightest.total, capacity_bytes=tightest.capacity,
                         host_needed_bytes=plan.host_bytes if plan.host_layers else 0.0,
                         host_available_bytes=machine.host_ram_bytes, gpu_layers=plan.gpu_layers,
                         total_layers=scenario.model.num_layers,
                         tokens_per_s=tps if machine.cards_speed_known else None, estimate=None,
                         mixed=MixedFit(plan, weights, tps))
    return replace(summary, fits=plan.fits and summary.host_ok)


def try_change(base: PlanDocument, overrides: tuple[str, ...], machine: LocalMachine,
               cpu_only: bool = False) -> FitSummary | None:
    """``base`` with ``overrides`` applied and evaluated; None when the change is invalid there."""
    try:
        return summarize(apply_overrides(base, overrides), machine, cpu_only)
    except LlmplanError:
        return None


def speed_of(summary: FitSummary) -> float | None:
    """Tokens/s for ratios: the engine's figure even where the verdict hides it (placeholder specs
    still rank options by the same model)."""
    if summary.mixed is not None:
        return summary.mixed.tokens_per_s
    est = summary.estimate
    if est is None:
        return None
    if est.inference is not None:
        return float(est.inference.tokens_per_s.value)
    return float(est.compute.tokens_per_s.value) if est.compute is not None else None


def outcome(s: FitSummary) -> str:
    """How a plan sits on this machine, in a few words."""
    if s.mode == "cpu":
        text = f"{gib(s.needed_bytes)} of {gib(s.capacity_bytes)} host RAM"
        return f"fits in {text}" if s.fits else f"needs {text}"
    if s.mixed is not None and s.mode == "split":  # different cards: the fullest one decides
        card = s.mixed.plan.fullest.gpu.name
        if s.fits:
            return (f"fits on every card, the fullest ({card}) with {gib(s.headroom_bytes)} free "
                    f"({gib(s.needed_bytes)} of {gib(s.capacity_bytes)})")
        return f"{card} needs {gib(s.needed_bytes)}, {gib(s.capacity_bytes)} usable ({gib(-s.headroom_bytes)} short)"
    if s.mode == "offload" and s.gpu_layers is not None:
        host = f"{gib(s.host_needed_bytes)} in host RAM"
        if s.host_available_bytes is not None:
            host += f" ({gib(s.host_available_bytes)} available)"
        gpu = "the cards" if s.mixed is not None or s.tp * s.pp > 1 else "the GPU"
        where = f"{s.gpu_layers} of {s.total_layers} layers on {gpu}, {host}"
        if s.estimate is not None and experts_in_host(s.estimate):  # every layer on the GPUs, experts in host RAM
            where = f"every layer on {gpu}, {present.experts_figure(s.estimate.inference.cpu_moe_layers)}, {host}"
        return f"fits with CPU offload: {where}" if s.fits else f"does not fit even with offload: {where}"
    if s.mode == "offload":
        host = f"{gib(s.host_needed_bytes)} in host RAM"
        if s.host_available_bytes is not None:
            host += f" of {gib(s.host_available_bytes)}"
        if s.fits:
            return f"fits with CPU offload: {gib(s.needed_bytes)} per GPU, {host}"
        short = (f"needs {gib(s.needed_bytes)} per GPU, {gib(s.capacity_bytes)} usable "
                 f"({gib(-s.headroom_bytes)} short)" if s.headroom_bytes < 0 else f"needs {gib(s.needed_bytes)} per GPU")
        return f"does not fit even with CPU offload: {short}, and {host}"
    if s.fits and s.estimate is not None and s.estimate.memory.tight:
        return (f"fits, tight: {gib(s.headroom_bytes)} free per GPU, within the allocator's fragmentation margin "
                f"({gib(s.needed_bytes)} of {gib(s.capacity_bytes)})")
    if s.fits:
        return f"fits with {gib(s.headroom_bytes)} free per GPU ({gib(s.needed_bytes)} of {gib(s.capacity_bytes)})"
    return f"needs {gib(s.needed_bytes)} per GPU, {gib(s.capacity_bytes)} usable ({gib(-s.headroom_bytes)} short)"
