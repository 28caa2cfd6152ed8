"""The estimate as rows of explained figures (Qt-free): what the results table shows,
what "Export report" writes (Markdown, CSV, HTML) and what "Copy as text" copies. One list,
so they never disagree. Every value is a ``Figure`` straight from ``estimate``.

Every export opens with the same ``header``: plan name, model, GPU × count, workload,
layout, engine or framework, app version and date, so a colleague who only gets the file
knows what was planned (issue 18: an export said "Untitled plan" and nothing else). The CSV
is one header row and one row per plan, numbers as numbers with the unit in the column
name (``inference_weights_whole_model_all_gpus_gib`` = 15.0, not "7.62 B"), so plans exported one after another
paste under each other in a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from llmplan.core import present
from llmplan.core.explain import Figure
from llmplan.core.inference.context_fit import ContextFit, longest_context
from llmplan.core.present import MemoryUnit
from llmplan.core.result import Estimate
from llmplan.core.system import Evaluation
from llmplan.core.workload import Scenario
from llmplan.errors import LlmplanError
from llmplan.fit.tiers import PlanVerdict, plan_verdict
from llmplan.gui.cards_verdict import cards_verdict
from llmplan.gui.theme import OFF_GPU_LABELS, OFF_GPU_NOTE, PART_LABELS, off_gpu_entry, offload_label
from llmplan.gui.tooltips import wrap_tip


@dataclass(frozen=True, slots=True)
class Row:
    section: str
    label: str
    figure: Figure | None
    text: str = ""  # shown instead of the figure's value (a sentence, link names, a value with what it assumes)
    style: str = ""  # "count" or "load" for dimensionless figures (see present.figure); "sentence": text row

    def shown(self, unit: MemoryUnit) -> str:
        return present.figure(self.figure, unit, self.style) if self.figure is not None and not self.text \
            else self.text

    def tooltip(self) -> str:
        """The figure's explanation (or the row's text), wrapped to a tooltip's width (``gui.tooltips``)."""
        return wrap_tip(self.figure.describe() if self.figure is not None else self.text)


def hidden_behind(col) -> str:
    """What compute a collective overlaps with (the framework profile's overlap), or that it sits on the
    critical path: shown as its own row so the reader need not hover for it."""
    return col.hides_behind or "nothing: on the critical path (every call is exposed)"


def system_rows(est: Evaluation) -> list[Row]:
    from llmplan.gui.system_rows import system_rows as rows_of

    return rows_of(est)


def tier_of(scenario: Scenario | None, est: Estimate | Evaluation, unit: MemoryUnit,
            cards: Any = None) -> PlanVerdict | None:
    """The verdict tier the window's banner shows for ``est`` (``fit.tiers.plan_verdict``), for the exports:
    without it a report said "Fits" for a plan that keeps half its layers in CPU RAM (issue 18). On different
    cards (``cards``: the layer split, ``Outcome.cards``) it is the split's (``cards_verdict``). None
    when there is no resolved plan to judge (the memory verdict alone is then all there is)."""
    if cards is not None:
        return cards_verdict(cards, scenario.cluster.gpu.name if scenario is not None else "the plan's GPU")
    if scenario is None:
        return None
    try:
        return plan_verdict(scenario, est, unit)
    except LlmplanError:
        return None


def verdict(est: Estimate | Evaluation, unit: MemoryUnit, tier: PlanVerdict | None = None) -> str:
    """The tier's headline ('Fits with offload: 32 of 80 layers in CPU RAM, ~3.6 tokens/s') when there is
    one; else the memory verdict, 'Fits: 61.8 of 79.6 GiB per GPU' or 'Does not fit: needs 95.2 of 79.6 GiB
    per GPU'."""
    if tier is not None:
        return tier.headline
    m = est.memory
    used, cap = unit.value(m.total.value), unit.fmt(m.capacity.value)
    if m.tight:
        return f"Fits, tight: {used:,.1f} of {cap} per GPU (within the allocator's margin)"
    if m.fits:
        return f"Fits: {used:,.1f} of {cap} per GPU"
    return f"Does not fit: needs {used:,.1f} of {cap} per GPU"


def off_gpu_lines(est: Estimate | Evaluation, tier: PlanVerdict | None,
                  unit: MemoryUnit) -> list[tuple[str, str, float]]:
    """(the memory bar's legend entry, its label, bytes) for what the verdict keeps off the GPUs that the figures do not
    already show: on different cards, the layer split's host RAM (the figures are one card's). An offload of
    the plan itself is a row of the figures already ("Host RAM per node (offload)"), with the same bytes."""
    if tier is None:
        return []
    return [(off_gpu_entry(OFF_GPU_LABELS[key], value, unit), OFF_GPU_LABELS[key], value) for key, value in tier.off_gpu
            if getattr(est.memory, key).value != value]


def _context_fit(scenario: Scenario | None) -> ContextFit | None:
    """The longest context that fits (a bisection over the memory plan, kept out of ``estimate`` for speed)."""
    if scenario is None or scenario.workload != "inference":
        return None
    try:
        return longest_context(scenario)
    except LlmplanError:
        return None


def rows(est: Estimate | Evaluation, scenario: Scenario | None = None, unit: MemoryUnit | None = None) -> list[Row]:
    """The rows of the results table; the system sections only for an ``Evaluation``; the rows that need the
    plan (longest context, unified memory) only with its ``scenario``, sizes in sentences in ``unit``."""
    out: list[Row] = []
    p = est.params
    out.append(Row("Model", "Parameters (total)", None, present.params(p.total)))
    if p.active != p.total:
        out.append(Row("Model", "Parameters (active per token)", None, present.params(p.active)))
    m = est.memory
    out.append(Row("Memory per GPU", "Total", m.total))
    out.append(Row("Memory per GPU", "Capacity", m.capacity))
    for key, fig in m.parts().items():
        if fig.value > 0:  # "Weights (per GPU)" beside the inference section's "Weights (whole model)"
            label = PART_LABELS.get(key, key) + (" (per GPU)" if key == "weights" else "")
            out.append(Row("Memory per GPU", label, fig))
    gpu = scenario.cluster.gpu if scenario is not None else None
    if gpu is not None and gpu.unified_memory and 0 < gpu.usable_memory_bytes < gpu.memory_bytes:
        # a 64 GB Mac's banner reads "of 48.0 GiB": say why, as the CLI does under its memory table
        mem = unit or MemoryUnit()
        share = present.unified_share(mem.fmt(gpu.usable_memory_bytes, 2), mem.fmt(gpu.memory_bytes, 2),
                                      gpu.vendor == "apple")
        out.append(Row("Memory per GPU", "Unified memory", None, share, style="sentence"))
    for key in OFF_GPU_LABELS:  # per node, as the memory bar's legend, the memory charts and the CLI say it
        if getattr(m, key).value > 0:
            out.append(Row("Memory per GPU", offload_label(key), getattr(m, key)))
    if est.compute is not None:
        c = est.compute
        for label, fig in (("Step time", c.step_time_s), ("Throughput", c.tokens_per_s), ("MFU", c.mfu),
                           ("HFU", c.hfu), ("Pipeline bubble", c.bubble_fraction), ("FLOPs per step", c.flops_per_step),
                           ("Training time", c.training_days), ("GPU-hours", c.gpu_hours)):
            if label == "Pipeline bubble" and fig.value == 0:
                continue  # no pipeline (PP 1): does not apply, not "0.0 %"
            out.append(Row("Time and cost", label, fig, style="gpu_hours" if label == "GPU-hours" else ""))
            if label == "Step time" and c.grad_clip_s is not None:  # its part, with its bytes, kernels and source
                out.append(Row("Time and cost", "Gradient clipping per step", c.grad_clip_s))
        if c.cost_usd is not None:
            out.append(Row("Time and cost", "Cost", c.cost_usd))
    if est.inference is not None:
        i = est.inference
        for label, fig in (("Time to first token", i.ttft_s), ("Time per output token", i.tpot_s),
                           ("Throughput (all users)", i.tokens_per_s), ("Throughput per user", i.tokens_per_s_per_user),
                           ("Max concurrent sequences", i.max_concurrency), ("KV cache per token", i.kv_bytes_per_token),
                           ("Weights (whole model, all GPUs)", i.weight_bytes)):
            out.append(Row("Inference", label, fig, style="int" if label == "Max concurrent sequences" else ""))
        out.append(Row("Inference", "Prefill bound by", None, i.prefill_bound))
        out.append(Row("Inference", "Decode bound by", None, i.decode_bound))
        if i.gpu_layers is not None:
            several = scenario is not None and scenario.parallelism.tp * scenario.parallelism.pp > 1
            where = "the GPUs" if several else "the GPU"
            out.append(Row("Inference", f"Layers on {where}", i.gpu_layers, style="int"))
        if i.cpu_moe_layers is not None:  # llama.cpp on an MoE model: where the routed experts are (--n-cpu-moe)
            out.append(Row("Inference", "Routed experts", i.cpu_moe_layers, present.experts_figure(i.cpu_moe_layers),
                           style="sentence"))
        fit = _context_fit(scenario)
        if fit is not None:  # in the CLI's words: per sequence, every layer on the GPU (llama.cpp), "none"
            out.append(Row("Inference", "Longest context that fits", fit.figure(),  # wraps: never cut
                           present.context_fit(fit.tokens, fit.batch, every_layer=i.gpu_layers is not None,
                                               experts=fit.experts_flag),
                           style="sentence"))
            out.append(Row("Inference", "Model's trained context", None, f"{fit.trained_context:,} tokens"))
        if i.cost_per_million_output is not None:
            out.append(Row("Inference", "Cost per 1M output tokens", i.cost_per_million_output))
        if i.cost_per_million_input is not None:
            out.append(Row("Inference", "Cost per 1M input tokens", i.cost_per_million_input))
    cm = est.communication
    if cm is not None and (cm.collectives or cm.intra_node_bytes.value or cm.inter_node_bytes.value):
        inter = cm.inter_node_bytes.value > 0  # one node: the inter-node rows do not apply
        out.append(Row("Communication", "Intra-node bytes per step", cm.intra_node_bytes))
        if inter:
            out.append(Row("Communication", "Inter-node bytes per step", cm.inter_node_bytes))
        out.append(Row("Communication", "Exposed communication time", cm.exposed_time_s))
        out.append(Row("Communication", "Intra-node bandwidth to hide it", cm.intra_node_bandwidth_needed))
        if inter:
            out.append(Row("Communication", "Inter-node bandwidth to hide it", cm.inter_node_bandwidth_needed))
        for col in cm.collectives:
            out.append(Row("Communication", f"{col.name} ({col.link}, {col.group}={col.group_size})", col.time_s))
            if col.algorithm:  # how NCCL runs it, and what of it the compute does not hide
                how = (f"↳ exposed · {col.algorithm}, {col.span}, {present.si(col.bytes_per_step.value, 'B')} per step, "
                       f"{present.rate(col.bus_bandwidth)} bus, {present.duration(col.latency_s)} latency")
                out.append(Row("Communication", how, col.exposed_s))
                out.append(Row("Communication", f"↳ {col.name} hides behind", None, hidden_behind(col),
                               style="sentence"))
    system = est.system if isinstance(est, Evaluation) else None
    if system is not None:
        out.extend(system_rows(est))
    out.append(Row("Bottleneck", est.bottleneck.kind, None, est.bottleneck.statement))
    for w in est.warnings + (system.warnings if system is not None else ()):
        out.append(Row("Warnings", "Warning", None, w))
    return out


WORKLOADS = {"pretrain": "pre-training", "finetune": "fine-tuning", "inference": "inference"}


def header(doc: Any, scenario: Scenario | None, version: str, when: datetime | None = None) -> list[tuple[str, str]]:
    """(label, value) pairs that say what was planned; ``scenario`` (the resolved plan) names the model,
    GPU and profiles as the catalogs spell them, the document alone gives ids."""
    when = when or datetime.now(UTC)
    model = scenario.model.name if scenario is not None else (doc.model.name or doc.model.id or "custom model")
    if doc.model.id and doc.model.id != model:
        model = f"{model} ({doc.model.id})"
    hw = doc.hardware
    gpus = hw.gpus_per_node * hw.nodes
    gpu = scenario.cluster.gpu.name if scenario is not None else (hw.gpu or "custom GPU")
    nodes = f" ({hw.nodes} nodes × {hw.gpus_per_node})" if hw.nodes > 1 else ""
    par = scenario.parallelism if scenario is not None else doc.parallelism
    layout = " · ".join(f"{k.upper()} {getattr(par, k)}" for k in ("tp", "pp", "dp", "cp", "ep")
                        if getattr(par, k) > 1 or k == "dp") or "one GPU"
    if doc.workload == "inference":
        runtime = ("Engine", scenario.engine_profile.name if scenario is not None and scenario.engine_profile
                   else doc.inference.engine)
        work = f"inference, {doc.inference.weight_format} weights, batch {doc.inference.batch:,}"
    else:
        prof = scenario.framework_profile if scenario is not None else None
        runtime = ("Framework", prof.name if prof is not None else doc.training.framework)
        work = f"{WORKLOADS.get(doc.workload, doc.workload)}, {doc.training.method}, {doc.training.seq_len:,}-token sequences"
    return [("Plan", doc.name or "Untitled plan"), ("Model", model), ("GPUs", f"{gpu} × {gpus:,}{nodes}"),
            ("Workload", work), ("Layout", layout), runtime, ("llmplan version", version),
            ("Exported", when.strftime("%Y-%m-%d %H:%M UTC"))]


def title_of(head: list[tuple[str, str]]) -> str:
    """The report's title: the plan's name, or for an unnamed plan what it plans ("Llama 3 8B on H100 × 8")."""
    fields = dict(head)
    name = fields.get("Plan", "")
    if name and name != "Untitled plan":
        return name
    model = fields.get("Model", "model").split(" (")[0]
    return f"{model} on {fields.get('GPUs', 'GPUs')}"


def as_text(est: Estimate | Evaluation, unit: MemoryUnit, title: str = "", tier: PlanVerdict | None = None) -> str:
    lines = [title] if title else []
    lines.append(verdict(est, unit, tier))
    if tier is not None and tier.cost:
        lines.append(tier.cost)
    lines += [text for text, _l, _b in off_gpu_lines(est, tier, unit)]
    section = ""
    for r in rows(est):
        if r.section != section:
            section = r.section
            lines.append(f"\n{section}")
        lines.append(f"  {r.label}: {r.shown(unit)}")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def as_markdown(est: Estimate | Evaluation, unit: MemoryUnit, title: str, notes: str = "",
                head: list[tuple[str, str]] | None = None, tier: PlanVerdict | None = None) -> str:
    out = [f"# {title or 'llmplan report'}", ""]
    if head:
        out += ["| | |", "|---|---|", *(f"| {_md(k)} | {_md(v)} |" for k, v in head), ""]
    out += [f"**{verdict(est, unit, tier)}**", ""]
    if tier is not None and tier.cost:
        out += [tier.cost, ""]
    out += [x for text, _l, _b in off_gpu_lines(est, tier, unit) for x in (text, "")]
    if notes:
        out += [notes, ""]
    section = ""
    for r in rows(est):
        if r.section != section:
            section = r.section
            out += ["", f"## {section}", "", "| Figure | Value | How |", "|---|---|---|"]
        how = (r.figure.formula if r.figure is not None else "").replace("|", "\\|")
        out.append(f"| {r.label} | {r.shown(unit)} | {how} |")
    return "\n".join(out) + "\n"


# core unit -> (column suffix, factor from the core's SI value); memory follows the person's unit
_CSV_UNITS = {"s": ("s", 1.0), "h": ("h", 1.0), "B/s": ("gb_per_s", 1e-9), "FLOP": ("flop", 1.0),
              "FLOP/s": ("tflop_per_s", 1e-12), "tokens/s": ("tokens_per_s", 1.0), "USD": ("usd", 1.0),
              "W": ("w", 1.0), "J": ("j", 1.0), "kWh": ("kwh", 1.0), "params": ("params", 1.0)}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def csv_columns(est: Estimate | Evaluation, unit: MemoryUnit, tier: PlanVerdict | None = None) -> list[tuple[str, Any]]:
    """(column name with its unit, value) for every figure: numbers as numbers (memory in the person's unit,
    rates per second, ratios as fractions, counts as counts), sentences as text. The verdict comes first:
    its tier as a word a spreadsheet can filter on (fits, offload, does_not_fit) and its sentence."""
    tier_name = tier.tier if tier is not None else ("fits" if est.memory.fits else "does_not_fit")
    text = verdict(est, unit, tier) + (f" {tier.cost}" if tier is not None and tier.cost else "")
    cols: list[tuple[str, Any]] = [("verdict_tier_text", tier_name), ("verdict_text", text),
                                   ("parameters_total_count", est.params.total)]
    cols[2:2] = [(f"{slug(f'{label} {OFF_GPU_NOTE}')}_{unit.name.lower()}", unit.value(n_bytes))
                 for _text, label, n_bytes in off_gpu_lines(est, tier, unit)]  # host_ram_per_node_offload_not_on_a_gpu_gib
    if est.params.active != est.params.total:
        cols.append(("parameters_active_count", est.params.active))
    warnings: list[str] = []
    for r in rows(est):
        if r.section == "Warnings":
            warnings.append(r.text)
            continue
        name = slug(f"{r.section} {r.label}")
        if r.figure is None:
            if r.section != "Model":
                cols.append((f"{name}_text" if r.section != "Bottleneck" else "bottleneck_text",
                             r.text if r.section != "Bottleneck" else f"{r.label}: {r.text}"))
            continue
        fig = r.figure
        if fig.unit == "B":
            suffix, value = unit.name.lower(), unit.value(fig.value)
        elif fig.unit == "1":
            suffix, value = ("count", fig.value) if r.style == "count" else ("fraction", fig.value)
        else:
            suffix, factor = _CSV_UNITS.get(fig.unit, (slug(fig.unit), 1.0))
            value = fig.value * factor
        cols.append((f"{name}_{suffix}", value if math.isfinite(value) else ""))
    if warnings:
        cols.append(("warnings_text", " | ".join(warnings)))
    return cols


def as_csv(est: Estimate | Evaluation, unit: MemoryUnit | None = None, head: list[tuple[str, str]] | None = None,
           tier: PlanVerdict | None = None) -> str:
    """One header row and one data row: the ``header`` fields, then every figure with its unit in the column
    name. Numbers are written as Python writes floats (round-trip exact); a spreadsheet reads them as numbers."""
    unit = unit or MemoryUnit()
    cols = [(slug(k), v) for k, v in (head or [])] + csv_columns(est, unit, tier)
    seen: dict[str, int] = {}
    names = []
    for name, _ in cols:  # two collectives of one kind on different links: keep both columns
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    w.writerow([repr(v) if isinstance(v, float) else v for _, v in cols])
    return buf.getvalue()
