"""``llmplan-cli detect`` and ``llmplan-cli calibrate``: this machine's GPUs, host, and measured speed."""

from __future__ import annotations

import argparse
import json

from llmplan.core import present
from llmplan.core.present import MemoryUnit
from llmplan.errors import InputError
from llmplan.hw.detect import detect_all
from llmplan.hw.match import GpuMatch, match_gpu
from llmplan.hw.types import DetectedGpu, DetectionReport


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("detect", help="list this machine's GPUs, CPU and RAM (and the matching catalog GPUs)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S",
                   help="give up on a probe after S seconds (default 5)")
    p.set_defaults(handler=run_detect)

    c = sub.add_parser("calibrate", help="measure matmul FLOP/s and memory bandwidth here (needs PyTorch)")
    c.add_argument("--device", choices=("cuda", "mps", "cpu"), default=None,
                   help="device to measure (default: the best available)")
    c.add_argument("--seconds", type=float, default=5.0, metavar="N", help="time budget (default 5)")
    c.add_argument("--gpu", default=None, metavar="ID",
                   help="catalog GPU id to compare against (achieved fraction of its datasheet peak)")
    c.add_argument("--no-save", action="store_true", help="do not write calibration.json")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(handler=run_calibrate)


def _catalog_gpus() -> list | None:
    """The hardware catalog's GPU entries, or None when it cannot be loaded (detection still lists the
    devices, unmatched)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    try:
        return list(load_hardware_catalog().gpus)
    except Exception:  # a broken catalog must not break detection
        return None


def _match(gpu: DetectedGpu, candidates: list | None) -> GpuMatch | None:
    if candidates is None:
        return None
    return match_gpu(gpu.name, gpu.memory_total_bytes, candidates, gpu_cores=gpu.gpu_cores)


def _gib(n: int | None) -> str:
    return "?" if n is None else MemoryUnit("GiB").fmt(n)


def _gpu_lines(g: DetectedGpu, m: GpuMatch | None) -> list[str]:
    facts = [f"{_gib(g.memory_total_bytes)} total"]
    if g.memory_free_bytes is not None:
        facts.append(f"{_gib(g.memory_free_bytes)} free")
    if g.wired_limit_bytes:
        facts.append(f"GPU may wire {_gib(g.wired_limit_bytes)} (unified memory)")
    if g.gpu_cores:
        facts.append(f"{g.gpu_cores} GPU cores")
    if g.compute_capability:
        facts.append(f"compute {g.compute_capability}")
    if g.pcie_gen_max or g.pcie_gen:
        now = f"gen{g.pcie_gen} x{g.pcie_width}, " if g.pcie_gen else ""
        facts.append(f"PCIe {now}max gen{g.pcie_gen_max} x{g.pcie_width_max}")
    if g.nvlink_links_up:
        peers = "NVSwitch" if g.nvlink_to_switch else ("GPUs " + ",".join(map(str, g.nvlink_peers)))
        facts.append(f"NVLink {g.nvlink_links_up} links to {peers}")
    if g.driver:
        facts.append(f"driver {g.driver}")
    if g.cuda_version:
        facts.append(f"CUDA {g.cuda_version}")
    lines = [f"  [{g.index}] {g.name}  ({g.source})", "      " + ", ".join(facts)]
    if g.mig_enabled:
        slices = ", ".join(f"{mi.name.split()[-1]} {_gib(mi.memory_total_bytes)}" for mi in g.mig_instances)
        lines.append(f"      MIG on: {len(g.mig_instances)} instance(s){': ' + slices if slices else ''}")
    if m is not None:
        lines.append(f"      catalog: {m.candidate_id} ({m.how} match)" if m.matched
                     else f"      catalog: {m.message}"
                     + (f" (closest: {', '.join(m.alternatives)})" if m.alternatives else ""))
    return lines


def _report_dict(report: DetectionReport, matches: list[GpuMatch | None]) -> dict:
    data = report.to_dict()
    for gpu, m in zip(data["gpus"], matches, strict=True):
        gpu["catalog"] = None if m is None else {
            "id": m.candidate_id, "how": m.how, "message": m.message, "alternatives": list(m.alternatives)}
    return data


def run_detect(args: argparse.Namespace) -> int:
    if not 0 < args.timeout <= 120:
        raise InputError(f"--timeout must be between 0 and 120 seconds, not {args.timeout}")
    report = detect_all(timeout_s=args.timeout)
    candidates = _catalog_gpus() if report.gpus else None
    matches = [_match(g, candidates) for g in report.gpus]
    if args.json:
        print(json.dumps(_report_dict(report, matches), indent=2))
        return 0
    if report.gpus:
        print(f"GPUs: {report.summary()}")
        for g, m in zip(report.gpus, matches, strict=True):
            print("\n".join(_gpu_lines(g, m)))
    else:
        print(report.summary())
    h = report.host
    if h is not None:
        cores = f"{h.physical_cores or '?'} cores / {h.logical_cores or '?'} threads"
        print(f"Host: {h.cpu_model or 'unknown CPU'}, {cores}, RAM {_gib(h.ram_total_bytes)} total, "
              f"{_gib(h.ram_available_bytes)} available, {h.os}")
        print(f"Free disk in the llmplan data folder: {_gib(h.disk_free_bytes)}")
    # With GPUs found, only the found vendors' notes matter (e.g. "NVML: ..., used nvidia-smi");
    # "amd-smi not installed" on an NVIDIA box is noise. --json keeps every reason.
    vendors = {g.vendor for g in report.gpus}
    notes = [r for r in report.reasons if r.split(":", 1)[0].lower() in vendors]
    if notes:
        print("Notes: " + "; ".join(notes))
    if report.gpus and candidates is None:
        print("Notes: hardware catalog not available; GPUs not matched to catalog entries")
    print(f"Detection took {report.elapsed_s * 1000:.0f} ms")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from llmplan.hw.calibrate import calibrate
    from llmplan.hw.measured import achieved_fractions, save_calibration

    spec = None
    if args.gpu:
        candidates = _catalog_gpus()
        if candidates is None:
            raise InputError("--gpu needs the hardware catalog, which could not be loaded; "
                             "`llmplan-cli catalog gpus` says why")
        found = [c for c in candidates if c.id == args.gpu]
        if not found:
            raise InputError(f"--gpu {args.gpu!r} is not a catalog GPU id; see `llmplan-cli catalog gpus`")
        spec = found[0].spec
    cal = calibrate(args.device, args.seconds)
    fractions = achieved_fractions(cal, spec) if spec is not None else None
    path = None if args.no_save else save_calibration(cal)
    if args.json:
        data = cal.to_dict()
        data["saved_to"] = str(path) if path else None
        if fractions is not None:
            data["achieved_fractions"] = {"matmul": fractions.matmul,
                                          "memory_bandwidth": fractions.memory_bandwidth}
        print(json.dumps(data, indent=2))
        return 0
    print(f"Calibration on {cal.device} ({cal.device_name}), torch {cal.torch_version}")
    for m in cal.matmul:
        print(f"  matmul {m.dtype:<5} n={m.n:<5} {m.flops_per_s / 1e12:10.3f} TFLOP/s  ({m.iterations} iterations)")
    bw = cal.memory_bandwidth_bytes_per_s
    print(f"  copy bandwidth ({cal.copy_bytes >> 20} MiB)  {present.rate(bw)}" if bw else "  copy bandwidth: not measured")
    if fractions is not None:
        parts = [f"{d} {f * 100:.0f} %" for d, f in fractions.matmul.items()]
        if fractions.memory_bandwidth is not None:
            parts.append(f"bandwidth {fractions.memory_bandwidth * 100:.0f} %")
        print(f"  of {args.gpu}'s datasheet peak: " + ", ".join(parts))
    for note in cal.notes:
        print(f"  note: {note}")
    if path:
        print(f"Saved to {path}")
    return 0
