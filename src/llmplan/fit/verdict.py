"""The verdict for a plan on this machine: choose the layout, say it in a line, find limits or fixes.

Order of preference for the layout the verdict reports: the plan on one GPU entirely in
GPU memory; else split over all local GPUs (tensor parallel, or pipeline/layer split for
llama.cpp-style engines); else one GPU with CPU offload (llama.cpp's ``gpu_layers``, or the
plan's own ZeRO offload); else it does not fit, and the nearest changes are searched from
the layout with the most memory (split when there are several GPUs). llama.cpp and Ollama (engines
that split by layers) use every GPU they see by default, so with several identical GPUs their verdict is
the layer split over all of them, with the layers that fit nowhere in host RAM; the one-GPU layout is
still evaluated (``LocalFit.one_gpu``) and its changes offered.
"""

from __future__ import annotations

from dataclasses import replace

from llmplan.core.inference.memory import row_split_refusal
from llmplan.errors import LlmplanError
from llmplan.fit.changes import best_per_kind, nearest_changes
from llmplan.fit.local import FitLimit, FitSummary, LocalFit, LocalMachine
from llmplan.fit.mixed import mixed_fit, splits_here
from llmplan.fit.trial import (
    cpu_spec,
    engine_of,
    one_gpu_layout,
    outcome,
    repoint,
    split_layout,
    summarize,
    try_change,
)
from llmplan.plan.calibrated import apply_calibration
from llmplan.plan.document import PlanDocument
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.resolve import resolve_model

LIMIT_EVALUATIONS = 9  # per knob: enough for 2^9 granules of bisection
MAX_BATCH = 4096


def evaluate_machine(doc: PlanDocument, machine: LocalMachine) -> LocalFit:
    notes = list(machine.notes)
    try:
        model = resolve_model(doc)
    except LlmplanError as exc:
        return _failed(machine, f"This machine: the plan cannot be evaluated: {exc}", notes)
    if machine.gpu is None:
        return _no_gpu(doc, machine, notes, model.max_position_embeddings)
    if splits_here(doc, machine):  # different cards, an inference plan: every card, llama.cpp's layer split
        return _mixed_fixes(mixed_fit(doc, machine, notes), machine, model.max_position_embeddings)
    if machine.cards and doc.workload == "inference":
        notes.append(f"{doc.inference.engine} needs identical GPUs: --set inference.engine=llama-cpp uses every "
                     f"card ({machine.cards_label})")
    doc, calibration_note = apply_calibration(doc, machine.calibration)  # before re-pointing: layout-independent
    if calibration_note:
        notes.append(calibration_note)
    rows = doc.workload == "inference" and doc.inference.split_mode == "row"
    one_doc, one = None, None
    if not rows:  # llama.cpp's row split runs over every card here: no one-GPU candidate (core.inference.row_estimate)
        one_doc = repoint(doc, machine.gpu, 1, one_gpu_layout(doc))  # training needs layout = all cluster GPUs
        one = _summary_or_note(one_doc, machine, notes)
    elif machine.gpu_count < 2:
        notes.append(row_split_refusal(1))
    split_doc, split = None, None
    layout = split_layout(doc, machine.gpu_count, model.num_heads, model.num_layers)
    if layout is not None:
        split_doc = repoint(doc, machine.gpu, machine.gpu_count, layout)
        split = _summary_or_note(split_doc, machine, notes)
    candidates = [(one_doc, one), (split_doc, split)]
    engine = engine_of(doc)
    engine_default = split_doc is not None and split is not None and engine is not None and engine.partial_offload
    current_doc, current = (split_doc, split) if engine_default else _choose(candidates)  # llama.cpp: all GPUs
    if current is None:
        return _failed(machine, "This machine: the plan cannot be evaluated here: " + "; ".join(notes[-1:]),
                       notes, local_plan=one_doc)
    auto = ""
    if not (current.fits and current.mode in ("gpu", "split")):
        found = _open_format_on_gpus(doc, model, (split_doc,) if engine_default else (one_doc, split_doc), machine)
        if found is not None:
            current_doc, current, fmt = found
            auto = f" (auto: weight format {fmt})"
            notes.append(f"auto: weight format {fmt}: in {doc.inference.weight_format} it does not fit on the GPUs "
                         "and the plan leaves inference.weight_format open, so the engine's formats were tried, "
                         "least quantised first")
        else:
            usual = _usual_offload(doc, model, current_doc, machine)
            if usual is not None:
                current_doc, current, words = usual
                auto = f" (auto: weight format {current_doc.inference.weight_format}: {words})"
                notes.append(f"auto: weight format {current_doc.inference.weight_format}: no weight format fits on "
                             f"the GPUs; {words}")
    status = ("fits" if current.mode == "gpu" else "fits_split" if current.mode == "split"
              else "fits_offload") if current.fits else "does_not_fit"
    changes, limits = (), ()
    if not current.fits or current.mode == "offload":
        changes = nearest_changes(current_doc, current, machine, full_gpu=current.fits)
        other = [(d, sm) for d, sm in candidates if d is not None and sm is not None and d is not current_doc]
        for other_doc, other_summary in other:  # one GPU with offload vs. split: single changes only
            prefix = _layout_overrides(current_doc, other_doc)
            changes = best_per_kind([*changes, *nearest_changes(current_doc, other_summary, machine,
                                                                 full_gpu=current.fits, layout=other_doc,
                                                                 prefix=prefix, max_pairs=0)])
    if current.fits:
        limits = _limits(current_doc, current, machine, model.max_position_embeddings)
    verdict = f"This machine ({machine.label}): {_headline(current, rows)}{auto}"
    return LocalFit(machine=machine, status=status, fits=current.fits, verdict=verdict, current=current,
                    one_gpu=one, split=split, local_plan=current_doc, changes=changes, limits=limits,
                    notes=tuple(notes))


def _open_format_on_gpus(doc: PlanDocument, model, layouts: tuple[PlanDocument | None, ...], machine: LocalMachine
                         ) -> tuple[PlanDocument, FitSummary, str] | None:
    """Where the plan leaves its weight format open and does not fit on the GPUs (it offloads, or does not fit):
    the first format of the engine's ladder that fits entirely on the GPUs, on one GPU or split over all of
    them, with its plan and summary; None when none does (``core.search.policy``: the rule ``estimate``'s
    auto-planner and the app's Auto follow, so the three give one answer)."""
    from llmplan.core.search.policy import formats_to_try, smaller_formats

    if doc.workload != "inference":
        return None
    formats = formats_to_try(doc.inference.model_fields_set, engine_of(doc))
    for fmt in smaller_formats(model, doc.inference.weight_format, formats):
        for base in layouts:
            if base is None:
                continue
            trial = apply_overrides(base, (f"inference.weight_format={fmt}",))
            try:
                s = summarize(trial, machine)
            except LlmplanError:
                continue
            if s.fits and s.mode in ("gpu", "split"):
                return trial, s, fmt
    return None


def _usual_offload(doc: PlanDocument, model, current_doc: PlanDocument, machine: LocalMachine
                   ) -> tuple[PlanDocument, FitSummary, str] | None:
    """Where the plan leaves its format open and no format fits on the GPUs: the engine's usual file
    (``policy.offload_format``, llama.cpp's Q4_K_M) on the verdict's layout, when it fits with offload here (host
    RAM included), with its plan, summary and words; None otherwise (the plan's own format stays the answer)."""
    from llmplan.core.search.policy import formats_to_try, offload_format, usual_offload_words

    if doc.workload != "inference":
        return None
    engine = engine_of(doc)
    fmt = offload_format(model, doc.inference.weight_format, formats_to_try(doc.inference.model_fields_set, engine),
                         engine)
    if not fmt:
        return None
    trial = apply_overrides(current_doc, (f"inference.weight_format={fmt}",))
    try:
        s = summarize(trial, machine)
    except LlmplanError:
        return None
    words = usual_offload_words(fmt, s.gpu_layers, s.total_layers, engine)
    return (trial, s, words) if s.fits and words else None


def _mixed_fixes(fit: LocalFit, machine: LocalMachine, max_ctx: int) -> LocalFit:
    """The verdict on different cards with what the one-GPU path adds: the nearest changes when it does not
    fit (or needs host RAM), the largest context and batch when it does, all searched over the same layer
    split (``trial.summarize`` evaluates a plan with ``hardware.cards`` through ``estimate_cards``)."""
    if fit.status == "error" or fit.local_plan is None:
        return fit
    try:
        current = summarize(fit.local_plan, machine)
    except LlmplanError:
        return fit
    changes = (nearest_changes(fit.local_plan, current, machine, full_gpu=current.fits)
               if not current.fits or current.mode == "offload" else ())
    limits = _limits(fit.local_plan, current, machine, max_ctx) if current.fits else ()
    return replace(fit, current=current, split=current, changes=changes, limits=limits)


def _layout_overrides(src: PlanDocument, dst: PlanDocument) -> tuple[str, ...]:
    """The ``--set`` lines that turn ``src``'s GPU count and layout into ``dst``'s."""
    pairs = (("hardware.gpus_per_node", src.hardware.gpus_per_node, dst.hardware.gpus_per_node),
             *((f"parallelism.{k}", getattr(src.parallelism, k), getattr(dst.parallelism, k))
               for k in ("tp", "pp", "dp")))
    return tuple(f"{path}={new}" for path, old, new in pairs if old != new)


def _summary_or_note(doc: PlanDocument, machine: LocalMachine, notes: list[str]) -> FitSummary | None:
    try:
        return summarize(doc, machine)
    except LlmplanError as exc:
        layout = doc.parallelism
        notes.append(f"tp={layout.tp} pp={layout.pp}: {exc}")
        return None


def _choose(cands: list[tuple[PlanDocument | None, FitSummary | None]]):
    real = [(d, s) for d, s in cands if d is not None and s is not None]
    if not real:
        return None, None
    for want in ("gpu", "split", "offload"):
        for d, s in real:
            if s.fits and s.mode == want:
                return d, s
    for d, s in real:
        if s.fits:
            return d, s
    return max(real, key=lambda ds: ds[1].capacity_bytes * (ds[1].tp * ds[1].pp) - ds[1].needed_bytes)


def _headline(s: FitSummary, rows: bool = False) -> str:
    """The verdict's words; ``rows``: the plan states llama.cpp's row split (every matrix over the GPUs)."""
    if s.mode == "split":
        how = f"tensor parallel {s.tp}" if s.tp > 1 else f"rows split over {s.pp} GPUs" if rows else \
            f"layers split over {s.pp} GPUs"
        return f"{'fits' if s.fits else 'does not fit'} split across the GPUs ({how}): {outcome(s)}"
    if s.mode == "offload":
        return outcome(s)
    return outcome(s) if s.fits else f"does not fit: {outcome(s)}"


def _failed(machine: LocalMachine, verdict: str, notes: list[str], local_plan=None) -> LocalFit:
    return LocalFit(machine=machine, status="error", fits=False, verdict=verdict, current=None, one_gpu=None,
                    split=None, local_plan=local_plan, notes=tuple(notes))


def _no_gpu(doc: PlanDocument, machine: LocalMachine, notes: list[str], max_ctx: int) -> LocalFit:
    """No GPU: CPU-only inference where the engine runs on the CPU (llama.cpp), else say what's missing.

    The verdict says only "no GPU found"; why each probe found nothing (often a long list: no NVIDIA
    driver, no AMD tools, ...) is the first note, so the one-line verdict stays one line."""
    reason = "no GPU found"
    if machine.no_gpu_reason and machine.no_gpu_reason != reason:
        notes = [f"why no GPU: {machine.no_gpu_reason.removeprefix('no GPU found: ')}", *notes]
    base = dict(machine=machine, status="no_gpu", fits=False, one_gpu=None, split=None, notes=tuple(notes))
    if doc.workload != "inference":
        return LocalFit(**base, verdict=f"This machine: {reason}. Training needs a GPU.", current=None,
                        local_plan=None)
    if not machine.host_ram_bytes:
        return LocalFit(**base, verdict=f"This machine: {reason}; host RAM unknown, so CPU-only inference "
                        "cannot be checked.", current=None, local_plan=None)
    cpu_doc = repoint(doc, cpu_spec(machine.host_ram_bytes), 1, one_gpu_layout(doc))
    engine = engine_of(doc)
    if engine is None or not engine.partial_offload:
        changes = nearest_changes(cpu_doc, None, machine, cpu_only=True)
        name = engine.name if engine is not None else doc.inference.engine
        return LocalFit(**base, verdict=f"This machine: {reason}. {name} needs a GPU; llama.cpp or Ollama "
                        "can run on the CPU alone.", current=None, local_plan=cpu_doc, changes=changes)
    try:
        current = summarize(cpu_doc, machine, cpu_only=True)
    except LlmplanError as exc:
        return LocalFit(**base, verdict=f"This machine: {reason}; CPU-only run cannot be evaluated: {exc}",
                        current=None, local_plan=cpu_doc)
    changes = () if current.fits else nearest_changes(cpu_doc, current, machine, cpu_only=True)
    limits = _limits(cpu_doc, current, machine, max_ctx, cpu_only=True) if current.fits else ()
    head = "CPU only (speed not estimated)"
    verdict = f"This machine: {reason}. {head}: {outcome(current)}"
    return LocalFit(**{**base, "status": "fits_cpu" if current.fits else "no_gpu", "fits": current.fits},
                    verdict=verdict, current=current, local_plan=cpu_doc, changes=changes, limits=limits)


def _margin(s: FitSummary | None, mode: str) -> float | None:
    """Bytes to spare (negative: missing) on the GPU and, when offloading, in host RAM; None when the
    value is invalid there. A plan that fits on the GPU may not spill: bytes spilled count as missing."""
    if s is None:
        return None
    if s.mode != mode:
        # layers overflowed into host RAM: what spilled is how far past the limit it is. Not so for training,
        # where the policy's CPU offload moves the optimizer states: their bytes (0.5 GiB for LoRA on an 8B
        # model) say nothing of the GPU's shortfall, and read as one they stalled the search far below the
        # limit (QLoRA 8B on a 24 GB card: 4,608 tokens where 6,144 fits): unknown, so the search bisects.
        layers = s.gpu_layers is not None
        return -s.host_needed_bytes if s.mode == "offload" and s.host_needed_bytes > 0 and layers else None
    m = s.capacity_bytes - s.needed_bytes
    if s.host_needed_bytes > 0 and s.host_available_bytes is not None:
        m = min(m, s.host_available_bytes - s.host_needed_bytes)
    return m


def _largest(doc: PlanDocument, machine: LocalMachine, path: str, current: int, upper: int, granule: int,
             cpu_only: bool, s0: FitSummary) -> tuple[int, bool]:
    """Largest value of ``path`` (``current`` + a multiple of ``granule``, at most ``upper``) that still
    fits: (value, capped), capped meaning ``upper`` itself fits. Memory grows about linearly in context
    and batch, so each step interpolates the margin between a fitting and a failing value (regula
    falsi) and falls back to halving where it cannot; at most ``LIMIT_EVALUATIONS`` evaluations."""
    def margin(v: int) -> float | None:
        return _margin(try_change(doc, (f"{path}={v}",), machine, cpu_only), s0.mode)

    lo, m_lo = current, _margin(s0, s0.mode)
    if upper <= current or m_lo is None or m_lo < 0:
        return current, upper <= current
    hi, m_hi = upper, margin(upper)
    if m_hi is not None and m_hi >= 0:
        return upper, True
    side = 0  # Illinois variant: halve the weight of an end kept twice in a row, so both ends move
    for _ in range(LIMIT_EVALUATIONS - 1):
        if hi - lo <= granule:
            break
        if m_hi is not None and m_lo - m_hi > 0:
            guess = lo + (hi - lo) * m_lo / (m_lo - m_hi)
        else:
            guess = (lo + hi) / 2
        mid = lo + max(granule, int((guess - lo) // granule) * granule)
        if mid >= hi:
            mid = lo + max(granule, ((hi - lo) // 2 // granule) * granule)
        m_mid = margin(mid)
        if m_mid is not None and m_mid >= 0:
            lo, m_lo = mid, m_mid
            if side == 1 and m_hi is not None:
                m_hi /= 2
            side = 1
        else:
            hi, m_hi = mid, m_mid
            if side == -1:
                m_lo /= 2
            side = -1
    return lo, False


def _limits(doc: PlanDocument, s: FitSummary, machine: LocalMachine, max_ctx: int,
            cpu_only: bool = False) -> tuple[FitLimit, ...]:
    """The largest context and batch that still fit as the plan stands (same mode: a plan that fits
    on the GPU is not allowed to spill into host RAM); the context search stops at the model's."""
    out: list[FitLimit] = []
    if doc.workload == "inference":
        inf = doc.inference
        upper = max(max_ctx - inf.output_tokens, inf.prompt_tokens)
        top, capped = _largest(doc, machine, "inference.prompt_tokens", inf.prompt_tokens, upper, 256, cpu_only, s)
        out.append(FitLimit("context", "inference.prompt_tokens", inf.prompt_tokens, top, capped,
                            _limit_sentence("prompt", inf.prompt_tokens, top, capped, "tokens",
                                            f"the model's {max_ctx:,}-token context")))
        est = s.estimate.inference if s.estimate is not None else None
        engine = engine_of(doc)
        if engine is not None and engine.preallocates_kv and est is not None:
            top_b, capped_b = max(int(est.max_concurrency.value), inf.batch), False
        else:
            top_b, capped_b = _largest(doc, machine, "inference.batch", inf.batch, MAX_BATCH, 1, cpu_only, s)
        out.append(FitLimit("batch", "inference.batch", inf.batch, top_b, capped_b,
                            _limit_sentence("batch", inf.batch, top_b, capped_b, "sequences at once",
                                            f"{MAX_BATCH:,}")))
    else:
        tr = doc.training
        upper = max(max_ctx, tr.seq_len)
        top, capped = _largest(doc, machine, "training.seq_len", tr.seq_len, upper, 256, cpu_only, s)
        out.append(FitLimit("context", "training.seq_len", tr.seq_len, top, capped,
                            _limit_sentence("sequence length", tr.seq_len, top, capped, "tokens",
                                            f"the model's {max_ctx:,}-token context")))
        top_b, capped_b = _largest(doc, machine, "training.micro_batch", tr.micro_batch, 1024, 1, cpu_only, s)
        out.append(FitLimit("batch", "training.micro_batch", tr.micro_batch, top_b, capped_b,
                            _limit_sentence("micro-batch", tr.micro_batch, top_b, capped_b, "sequences", "1,024")))
    return tuple(out)


def _limit_sentence(what: str, current: int, top: int, capped: bool, unit: str, bound: str) -> str:
    if top == 1:
        unit = unit.replace("sequences", "sequence", 1)  # "1 sequence", not "1 sequences"
    if capped:
        return f"Largest {what} that fits: {top:,} {unit} (up to {bound}; now {current:,})"
    return f"Largest {what} that fits: {top:,} {unit} (now {current:,})"

