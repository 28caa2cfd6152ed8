"""Does this plan fit *this* machine? The detected GPUs as a plan's hardware, and the verdict.

``local_hardware(report)`` turns a ``DetectionReport`` into one ``LocalMachine``: the GPUs
grouped (mixed GPUs: the largest group for training, said so; every card, in device order, in
``LocalMachine.cards`` for inference with llama.cpp's layer split), matched to the hardware catalog, with
the memory the device itself reported. What cannot be known is not invented: a GPU the
catalog lacks gets a spec with its reported memory and ``speed_known=False`` (its speed
figures are placeholders the verdict never prints).

``fit_this_machine(doc, machine)`` re-points the plan at that hardware (one node, no
network), evaluates it through the one pipeline (``llmplan.plan.evaluate.evaluate_plan``)
on one GPU and, with several, split across them, and when it does not fit finds the
nearest changes that make it fit (``llmplan.fit.changes``). Every result is a frozen
dataclass; the GUI shows ``LocalFit.verdict`` and applies a ``FitChange`` with
``apply_change``. Public API: this module's ``__all__``, documented in docs/fit.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from llmplan.core.hardware import GpuSpec, PeakFlops
from llmplan.hw.match import match_gpu
from llmplan.hw.types import DetectedGpu, DetectionReport
from llmplan.plan.calibrated import CalibratedFractions, fractions_for

if TYPE_CHECKING:
    from llmplan.core.inference.multi_gpu import MixedPlan
    from llmplan.core.system import Evaluation
    from llmplan.hw.measured import Calibration
    from llmplan.plan.document import PlanDocument

__all__ = [
    "FitChange", "FitLimit", "FitSummary", "LocalFit", "LocalMachine", "apply_change", "fit_this_machine",
    "local_hardware",
]

GIB = 2**30
FitMode = Literal["gpu", "split", "offload", "cpu"]
FitStatus = Literal["fits", "fits_split", "fits_offload", "fits_cpu", "does_not_fit", "no_gpu", "error"]

# Placeholders for a GPU the catalog lacks: the engine needs a bandwidth and a peak to run,
# the verdict never shows speeds computed from them (LocalMachine.speed_known is False).
_PLACEHOLDER_BANDWIDTH = 1e11
_PLACEHOLDER_FLOPS = PeakFlops(fp32=1e13, fp16=1e13, bf16=1e13)


@dataclass(frozen=True)
class LocalMachine:
    """This machine as plan hardware: ``gpu_count`` identical ``gpu`` (None: no usable GPU).

    ``host_ram_bytes`` is the RAM available for CPU offload (``MemAvailable`` on Linux; the
    total when only that is known; None when unknown). ``notes`` say every approximation.
    """

    gpu: GpuSpec | None
    gpu_count: int
    label: str
    catalog_id: str | None
    speed_known: bool
    host_ram_bytes: int | None
    host_ram_total_bytes: int | None = None
    notes: tuple[str, ...] = ()
    no_gpu_reason: str | None = None
    calibration: CalibratedFractions | None = None  # this GPU's measured fractions of peak (llmplan-cli calibrate)
    cards: tuple[GpuSpec, ...] = ()  # every detected card in device order when they differ (mixed); () otherwise
    cards_label: str = ""  # "NVIDIA GeForce RTX 5090 32GB + NVIDIA GeForce RTX 3090 24GB"

    @property
    def cards_speed_known(self) -> bool:
        return not any(c.id.startswith("local-unmatched-gpu") for c in self.cards)


@dataclass(frozen=True)
class MixedFit:
    """A plan split over different cards (``core.inference.multi_gpu``): the split, and the two figures the
    nearest-change search reads from an estimate (the model's weight bytes in the plan's format, tokens/s)."""

    plan: MixedPlan
    weight_bytes: float
    tokens_per_s: float


@dataclass(frozen=True)
class FitSummary:
    """One evaluation of a plan on this machine, in the few numbers a verdict needs (bytes)."""

    fits: bool
    mode: FitMode
    tp: int
    pp: int
    needed_bytes: float  # per GPU (worst-loaded)
    capacity_bytes: float  # usable per GPU
    host_needed_bytes: float  # host RAM for offloaded layers / optimizer states (0: none)
    host_available_bytes: int | None
    gpu_layers: int | None  # inference: layers on the GPU; None for training
    total_layers: int
    tokens_per_s: float | None  # None when the speed of this hardware is unknown
    # the engine's estimate with its system report; None for a machine of different cards (see ``mixed``)
    estimate: Evaluation | None = field(repr=False, compare=False)
    mixed: MixedFit | None = field(default=None, repr=False, compare=False)  # llama.cpp's split over the cards

    @property
    def headroom_bytes(self) -> float:
        """Free GPU memory per GPU; negative: the shortfall."""
        return self.capacity_bytes - self.needed_bytes

    @property
    def host_ok(self) -> bool:
        if self.host_needed_bytes <= 0 or self.host_available_bytes is None:
            return True
        return self.host_needed_bytes <= self.host_available_bytes


@dataclass(frozen=True)
class FitChange:
    """One change that makes the plan fit: what to do, how far it is from the user's intent,
    the ``--set`` overrides that apply it (relative to ``LocalFit.local_plan``), and the result."""

    kind: str  # "weights", "kv_cache", "context", "batch", "offload", "engine", "recompute", "method", ...
    sentence: str
    overrides: tuple[str, ...]
    distance: float  # documented in docs/fit.md: lower is nearer to what the user asked for
    summary: FitSummary


@dataclass(frozen=True)
class FitLimit:
    """How far a knob can go while the plan still fits (found by bisection with the engine)."""

    name: Literal["context", "batch"]
    path: str  # the plan field, e.g. "inference.prompt_tokens"
    current: int
    maximum: int
    capped: bool  # True: the search stopped at its upper bound (the real maximum may be higher)
    sentence: str


@dataclass(frozen=True)
class LocalFit:
    """The verdict for one plan on this machine."""

    machine: LocalMachine
    status: FitStatus
    fits: bool
    verdict: str  # one line for people: "This machine: fits, 17.2 of 23.7 GiB per GPU (6.5 GiB free)"
    current: FitSummary | None  # the layout chosen for the verdict; None when it could not be evaluated
    one_gpu: FitSummary | None
    split: FitSummary | None  # over all local GPUs (tensor, or pipeline for llama.cpp); None with one GPU
    local_plan: PlanDocument | None = field(repr=False, compare=False)  # the plan re-pointed here
    changes: tuple[FitChange, ...] = ()
    limits: tuple[FitLimit, ...] = ()
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0


def _catalog_gpus() -> list:
    try:
        from llmplan.catalog.hardware import load_hardware_catalog

        return list(load_hardware_catalog().gpus)
    except Exception:  # a broken user catalog must not break the verdict: fall back to approximate specs
        return []


def _group(gpus: tuple[DetectedGpu, ...]) -> tuple[list[DetectedGpu], str | None]:
    groups: dict[tuple[str, str, int], list[DetectedGpu]] = {}
    for g in gpus:
        groups.setdefault((g.vendor, g.name, g.memory_total_bytes), []).append(g)
    ordered = sorted(groups.values(), key=lambda grp: (len(grp), grp[0].usable_memory_bytes), reverse=True)
    chosen = ordered[0]
    if len(ordered) == 1:
        return chosen, None
    others = ", ".join(f"{len(grp)}× {grp[0].name}" for grp in ordered[1:])
    return chosen, (f"mixed GPUs: inference uses every card (llama.cpp's layer split); training uses the "
                    f"largest group ({len(chosen)}× {chosen[0].name}), {others} left out (training needs "
                    "identical GPUs)")


def _all_cards(gpus: tuple[DetectedGpu, ...], candidates: list) -> tuple[tuple[GpuSpec, ...], str]:
    """Every detected card's spec in device order, and a label naming them (MIG cards: none, a job cannot
    span MIG instances of different cards)."""
    if any(g.mig_enabled for g in gpus):
        return (), ""
    ordered = sorted(gpus, key=lambda g: g.index)
    specs = tuple(spec if spec.id != "local-unmatched-gpu" else spec.model_copy(
        update={"id": f"local-unmatched-gpu-{g.index}"}) for g in ordered for spec in [_spec_for(g, candidates)[0]])
    counts: list[list] = []
    for spec in specs:
        if counts and counts[-1][0] == spec.name:
            counts[-1][1] += 1
        else:
            counts.append([spec.name, 1])
    return specs, " + ".join(f"{n}× {name}" if n > 1 else name for name, n in counts)


def _spec_for(gpu: DetectedGpu, candidates: list) -> tuple[GpuSpec, str | None, bool, list[str]]:
    """(spec, catalog id, speed known, notes) for one detected GPU."""
    notes: list[str] = []
    m = match_gpu(gpu.name, gpu.memory_total_bytes, candidates, gpu_cores=gpu.gpu_cores) if candidates else None
    fraction = 1.0
    if gpu.wired_limit_bytes:
        fraction = min(1.0, gpu.wired_limit_bytes / gpu.memory_total_bytes)
        how = {"apple": "raise it with sudo sysctl iogpu.wired_limit_mb",
               "amd": "raise it with the BIOS UMA size or the ttm.pages_limit kernel parameter",
               "intel": "Intel's compute runtime: 94 % of the shared pool less 450 MiB; the pool is half the RAM on "
                        "Windows, all of it on Linux"}.get(gpu.vendor)
        notes.append(f"unified memory: the GPU may wire {gpu.wired_limit_bytes / GIB:.1f} of "
                     f"{gpu.memory_total_bytes / GIB:.1f} GiB" + (f" ({how})" if how else ""))
    if m is not None and m.matched:
        entry = next(c for c in candidates if c.id == m.candidate_id)
        spec = entry.spec.model_copy(update={"memory_bytes": gpu.memory_total_bytes, "gpu_memory_fraction": fraction})
        return spec, entry.id, True, notes
    why = m.message if m is not None else "hardware catalog unavailable"
    closest = "; `llmplan-cli catalog gpus` lists the entries to plan on instead (--set hardware.gpu=ID)"
    if m is not None and m.alternatives:
        closest = (f"; the closest catalog entries are {', '.join(m.alternatives)}: plan on one with "
                   f"--set hardware.gpu=ID (or pick it in the app) to get speed figures")
    notes.append(f"approximate: {gpu.name} is not in the catalog ({why}); memory is the device's own figure, "
                 f"speed figures are unavailable{closest}")
    vendor = gpu.vendor if gpu.vendor in ("nvidia", "amd", "apple", "intel") else "other"
    spec = GpuSpec(id="local-unmatched-gpu", name=f"{gpu.name} (approximate)", vendor=vendor,
                   memory_bytes=gpu.memory_total_bytes, memory_bandwidth=_PLACEHOLDER_BANDWIDTH,
                   peak_flops=_PLACEHOLDER_FLOPS, unified_memory=gpu.unified_memory,
                   gpu_memory_fraction=fraction)
    return spec, None, False, notes


def local_hardware(report: DetectionReport, calibration: Calibration | None = None) -> LocalMachine | None:
    """The detected hardware as plan hardware; None when detection learned nothing at all.

    ``calibration`` (``llmplan.plan.calibrated.load_calibration_quietly()``): when it was measured on
    the detected GPU, its fractions of peak become the machine's efficiencies (llmplan.plan.calibrated)."""
    host = report.host
    ram_avail = None if host is None else (host.ram_available_bytes or host.ram_total_bytes)
    ram_total = None if host is None else host.ram_total_bytes
    if not report.gpus:
        if host is None:
            return None
        return LocalMachine(gpu=None, gpu_count=0, label="no GPU", catalog_id=None, speed_known=False,
                            host_ram_bytes=ram_avail, host_ram_total_bytes=ram_total,
                            no_gpu_reason=report.summary())
    group, mixed = _group(report.gpus)
    notes = [mixed] if mixed else []
    first = group[0]
    candidates = _catalog_gpus()
    spec, catalog_id, speed_known, spec_notes = _spec_for(first, candidates)
    notes.extend(spec_notes)
    count = len(group)
    if first.mig_enabled:
        if first.mig_instances:
            big = max(first.mig_instances, key=lambda mi: mi.memory_total_bytes)
            spec = spec.model_copy(update={"memory_bytes": big.memory_total_bytes, "gpu_memory_fraction": 1.0,
                                           "name": f"{spec.name} MIG {big.name.split()[-1]}"})
            notes.append(f"MIG is on: the plan runs on the largest MIG instance ({big.name}, "
                         f"{big.memory_total_bytes / GIB:.1f} GiB); a job cannot span instances; speed figures "
                         "are unavailable (an instance has only part of the GPU's compute and bandwidth)")
            speed_known, count = False, 1
        else:
            notes.append("MIG is on but no instance is listed: the whole GPU's memory is assumed; "
                         "a job needs a MIG instance (nvidia-smi mig -cgi ...)")
    if ram_avail is None:
        notes.append("host RAM unknown: CPU offload is assumed to fit in host RAM")
    fractions = None
    if calibration is not None:
        if speed_known:
            names = next((c.match_names for c in candidates if c.id == catalog_id), ())
            fractions, why = fractions_for(calibration, spec, names, first.name)
        else:
            why = ("calibration not used: it needs the GPU's datasheet peaks, and this GPU's speed is unknown "
                   "(not in the catalog, or a MIG instance)")
        if why:
            notes.append(why)
    label = f"{count}× {spec.name}" if count > 1 else spec.name
    cards, cards_label = _all_cards(report.gpus, candidates) if mixed else ((), "")
    return LocalMachine(gpu=spec, gpu_count=count, label=label, catalog_id=catalog_id, speed_known=speed_known,
                        host_ram_bytes=ram_avail, host_ram_total_bytes=ram_total, notes=tuple(notes),
                        calibration=fractions, cards=cards, cards_label=cards_label)


def fit_this_machine(doc: PlanDocument, machine: LocalMachine) -> LocalFit:
    """The plan on this machine: per GPU, split across the GPUs, with CPU offload; and, if it does
    not fit, the nearest changes that make it fit; if it fits, the largest context and batch."""
    from dataclasses import replace

    from llmplan.fit.verdict import evaluate_machine

    start = time.perf_counter()
    result = evaluate_machine(doc, machine)
    return replace(result, elapsed_s=time.perf_counter() - start)


def apply_change(fit: LocalFit, change: FitChange | None = None) -> PlanDocument:
    """The plan re-pointed at this machine, with ``change`` applied (the GUI's one-click "apply")."""
    from llmplan.errors import InputError
    from llmplan.plan.overrides import apply_overrides

    if fit.local_plan is None:
        raise InputError("this machine's verdict has no plan to apply a change to (no usable hardware detected)")
    return fit.local_plan if change is None else apply_overrides(fit.local_plan, change.overrides)
