"""Diagnosis: the practical bottleneck checks, read off what was measured, as short plain sentences.

Each rule has a threshold, a minimum duration and a source. A rule holds only when its condition
is true on every sample for at least the minimum duration (measured from the first to the last
sample of the run of true samples), so one spike never gives a verdict; an "n/a" value never makes
a condition true. ``active`` says the condition holds now (the newest run reaches the last sample);
``longest_s`` is the longest such run in the data looked at.

The thresholds are the rules of thumb practitioners apply to these counters (the checklist in
llmplan issue 25: utilisation under ~90% means the GPU waits; memory at the limit means a smaller
micro-batch or recompute; heavy PCIe traffic with low utilisation means data loading or offload;
high I/O wait means storage). They are stated, not fitted: docs/watch.md lists them. The metric
definitions they rest on are the sources cited per rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmplan.watch.metrics import GPU_INDEX as G
from llmplan.watch.metrics import HOST_INDEX as H
from llmplan.watch.metrics import THROTTLE_BITS
from llmplan.watch.sampler import GpuView, Snapshot

GIB = 2**30


@dataclass(frozen=True)
class Rule:
    key: str
    threshold: str
    min_duration_s: float
    source: str


RULES = {
    "gpu_waiting": Rule(
        "gpu_waiting", "GPU utilisation below 90% while a job holds the GPU", 30.0,
        "NVML nvmlUtilization_t.gpu: percent of the sample period during which a kernel was executing "
        "(nvml.h); amd-smi gfx_activity; IOKit 'Device Utilization %'"),
    "memory_full": Rule(
        "memory_full", "memory used at or above 95% of the GPU's memory", 10.0,
        "NVML nvmlDeviceGetMemoryInfo (v2: used excludes driver-reserved memory); amd-smi used_vram; "
        "IOKit 'In use system memory' against the GPU's wired limit"),
    "pcie_busy": Rule(
        "pcie_busy", "PCIe receive or transmit at or above 50% of the link's one-way bandwidth while "
        "utilisation is below 50%", 30.0,
        "NVML PCIe byte counters (NVML_FI_DEV_PCIE_COUNT_RX/TX_BYTES); link bandwidth from the current "
        "generation and width (PCI-SIG base specifications)"),
    "io_wait": Rule(
        "io_wait", "host CPU time in I/O wait at or above 10%", 30.0,
        "proc(5): the iowait column of /proc/stat, time waiting for I/O to complete"),
    "throttled": Rule(
        "throttled", "clocks held down by thermal slowdown, hardware slowdown or power brake while "
        "utilisation is at or above 50%", 30.0,
        "NVML nvmlDeviceGetCurrentClocksEventReasons (nvmlClocksEventReason* bits, nvml.h)"),
}
WAITING_UTIL_PCT, MEMORY_FULL_SHARE, PCIE_SHARE, PCIE_LOW_UTIL_PCT = 90.0, 0.95, 0.5, 50.0
IO_WAIT_PCT, THROTTLE_MIN_UTIL_PCT, CPU_SATURATED_PCT = 10.0, 50.0, 90.0
LIMIT_BITS = 0x8 | 0x20 | 0x40 | 0x80  # hardware slowdown, sw/hw thermal, power brake (not the power cap)


@dataclass(frozen=True)
class Finding:
    rule: str
    gpu: int | None
    active: bool
    longest_s: float
    sentence: str

    def to_dict(self) -> dict:
        return {"rule": self.rule, "gpu": self.gpu, "active": self.active, "longest_s": round(self.longest_s, 3),
                "sentence": self.sentence, "threshold": RULES[self.rule].threshold,
                "min_duration_s": RULES[self.rule].min_duration_s}


@dataclass(frozen=True)
class PlanLink:
    """What the plan predicts for one GPU: peak bytes, usable capacity, and the fit's nearest changes."""

    predicted_peak_bytes: float
    capacity_bytes: float
    label: str = "the plan"
    changes: tuple[str, ...] = ()


def runs(t: np.ndarray, cond: np.ndarray) -> tuple[float, float, slice]:
    """(trailing run's span, longest run's span, the longest run's samples) of consecutive true samples."""
    if not len(cond) or not cond.any():
        return 0.0, 0.0, slice(0, 0)
    edges = np.diff(np.concatenate(([0], cond.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    spans = t[ends] - t[starts]
    best = int(np.argmax(spans))
    return (float(spans[-1]) if cond[-1] else 0.0), float(spans[best]), slice(starts[best], ends[best] + 1)


def _col(v: GpuView, key: str) -> np.ndarray:
    return v.values[:, G[key]]


def _host_over(snap: Snapshot, t: np.ndarray, key: str) -> np.ndarray:
    """The host column at the GPU's sample times (both are taken in the same sample; NaN where absent)."""
    if not len(snap.host_t):
        return np.full(len(t), math.nan)
    idx = np.clip(np.searchsorted(snap.host_t, t), 0, len(snap.host_t) - 1)
    out = snap.host[idx, H[key]]
    return np.where(snap.host_t[idx] == t, out, math.nan)


def _finding(rule: str, gpu: int | None, t: np.ndarray, cond: np.ndarray, sentence) -> Finding | None:
    trailing, longest, where = runs(t, cond)
    need = RULES[rule].min_duration_s
    if longest < need:
        return None
    return Finding(rule, gpu, trailing >= need, longest, sentence(where, longest))


def _gpu_findings(snap: Snapshot, v: GpuView, plan: PlanLink | None) -> list[Finding]:
    t, idx, out = v.t, v.info.index, []
    if not len(t):
        return out
    util, used, total = _col(v, "util_pct"), _col(v, "mem_used_bytes"), _col(v, "mem_total_bytes")
    procs, proc_mem = _col(v, "procs"), _col(v, "proc_mem_bytes")
    with np.errstate(invalid="ignore", divide="ignore"):
        share = used / total
        job = (procs >= 1) | (proc_mem > 0) | (np.isnan(procs) & (share >= 0.05))
    cpu = _host_over(snap, t, "cpu_busy_pct")

    def waiting(w: slice, s: float) -> str:
        text = (f"GPU {idx} was busy only {np.nanmean(util[w]):.0f}% of the time for {s:.0f} s: it waits on the "
                "CPU or I/O (data loading, host-side work, synchronisation)")
        busy = np.nanmean(cpu[w]) if np.isfinite(cpu[w]).any() else math.nan
        if busy >= CPU_SATURATED_PCT:
            text += f"; the CPU was {busy:.0f}% busy, so more data-loader workers or lighter preprocessing"
        return text

    f = _finding("gpu_waiting", idx, t, job & (util < WAITING_UTIL_PCT), waiting)
    out += [f] if f else []

    def full(w: slice, s: float) -> str:
        text = (f"GPU {idx} memory at {np.nanmax(share[w]) * 100:.0f}% of {np.nanmax(total[w]) / GIB:.1f} GiB for "
                f"{s:.0f} s: a smaller micro-batch or activation recompute gives it room")
        if plan is not None and plan.changes:
            text += "; nearest changes that fit: " + "; ".join(plan.changes[:3])
        return text

    f = _finding("memory_full", idx, t, share >= MEMORY_FULL_SHARE, full)
    out += [f] if f else []
    link = v.info.pcie_link_bytes_per_s
    if link:
        pcie = np.fmax(_col(v, "pcie_rx_bps"), _col(v, "pcie_tx_bps"))
        cond = (pcie >= PCIE_SHARE * link) & (util < PCIE_LOW_UTIL_PCT)
        f = _finding("pcie_busy", idx, t, cond, lambda w, s: (
            f"GPU {idx} moved {np.nanmean(pcie[w]) / 1e9:.1f} GB/s over PCIe ({np.nanmean(pcie[w]) / link * 100:.0f}% "
            f"of its {link / 1e9:.1f} GB/s link) while busy {np.nanmean(util[w]):.0f}% for {s:.0f} s: data loading "
            "or CPU offload traffic is what it waits on"))
        out += [f] if f else []
    mask = _col(v, "throttle_mask")
    limited = np.where(np.isfinite(mask), np.nan_to_num(mask).astype(np.int64) & LIMIT_BITS, 0) != 0
    f = _finding("throttled", idx, t, limited & (util >= THROTTLE_MIN_UTIL_PCT), lambda w, s: (
        f"GPU {idx}'s clocks were held down by "
        f"{', '.join(sorted({n for m in mask[w] for b, n in THROTTLE_BITS.items() if int(m) & b & LIMIT_BITS}))} "
        f"for {s:.0f} s: check cooling and power delivery"))
    out += [f] if f else []
    return out


def peak_memory(snap: Snapshot) -> tuple[float, str]:
    """The largest per-GPU peak: the watched process's memory when attached, else memory used."""
    procs = [g.peak_proc_bytes for g in snap.gpus if math.isfinite(g.peak_proc_bytes)]
    if snap.pid is not None and procs:
        return max(procs), f"process {snap.pid}"
    used = [g.peak_used_bytes for g in snap.gpus if math.isfinite(g.peak_used_bytes)]
    return (max(used), "all processes") if used else (math.nan, "")


def plan_comparison(snap: Snapshot, plan: PlanLink) -> str | None:
    """'Peak 71.2 GiB per GPU (process 123); the plan predicted 68.0 GiB: 4.5% under-estimate.'"""
    peak, whose = peak_memory(snap)
    if not math.isfinite(peak) or peak <= 0:
        return None
    err = (plan.predicted_peak_bytes - peak) / peak
    side = "over" if err > 0 else "under"
    return (f"Peak memory {peak / GIB:.1f} GiB per GPU ({whose}); {plan.label} predicted "
            f"{plan.predicted_peak_bytes / GIB:.1f} GiB: {abs(err) * 100:.1f}% {side}-estimate")


def diagnose(snap: Snapshot, plan: PlanLink | None = None) -> list[Finding]:
    """Every rule that held, over the samples in ``snap``; active ones first."""
    out: list[Finding] = []
    for v in snap.gpus:
        out += _gpu_findings(snap, v, plan)
    if len(snap.host_t):
        io = snap.host[:, H["iowait_pct"]]
        f = _finding("io_wait", None, snap.host_t, io >= IO_WAIT_PCT, lambda w, s: (
            f"The CPUs spent {np.nanmean(io[w]):.0f}% of their time waiting on I/O for {s:.0f} s: the job waits "
            "on storage (a faster disk, the page cache, or more prefetching in the data loader)"))
        out += [f] if f else []
    return sorted(out, key=lambda f: (not f.active, f.gpu if f.gpu is not None else -1))


def summary_lines(snap: Snapshot, plan: PlanLink | None = None) -> list[str]:
    """The diagnosis as plain sentences, for the panel and the CLI. A rule that holds on several GPUs
    is said once, for the first, with the others named ("also GPUs 1, 2")."""
    lines, first = [], {}
    for f in diagnose(snap, plan):
        key = (f.rule, f.active)
        if f.gpu is not None and key in first:
            first[key][1].append(f.gpu)
            continue
        first[key] = (len(lines), [])
        lines.append(f.sentence + ("" if f.active else " (earlier in the run)"))
    for pos, others in first.values():
        if others:
            lines[pos] += f" (also GPU{'s' if len(others) > 1 else ''} {', '.join(map(str, others))})"
    if plan is not None and (cmp := plan_comparison(snap, plan)):
        lines.append(cmp)
    for e in snap.events:
        if e.kind in ("gpu_stopped", "process_exited"):
            lines.append(e.text[0].upper() + e.text[1:] + ".")
    if not lines and snap.samples:
        lines.append("No bottleneck seen: every rule's threshold was below its minimum duration or not reached.")
    return lines
