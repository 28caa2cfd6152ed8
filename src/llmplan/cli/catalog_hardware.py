"""``llmplan-cli catalog gpus|nodes|networks``: the hardware catalog as tables or JSON.

Tables label every unit (memory in GiB and GB, bandwidth in GB/s, TFLOP/s dense); ``--json``
prints SI values (bytes, bytes/s, FLOP/s) under stable keys. The ``catalog`` subparser itself
belongs to ``cli/cmd_catalog.py``, which calls ``add_hardware_commands``.
"""

from __future__ import annotations

import argparse
import json
import sys

from llmplan.catalog.hardware import GpuEntry, HardwareCatalog, load_hardware_catalog

VENDORS = ("nvidia", "amd", "intel", "apple", "google", "other")


def add_hardware_commands(catalog_subparsers: argparse._SubParsersAction) -> None:
    gpus = catalog_subparsers.add_parser("gpus", help="accelerators: memory, bandwidth, dense peak FLOP/s")
    gpus.add_argument("--vendor", choices=VENDORS, help="only this vendor's accelerators")
    gpus.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    gpus.set_defaults(handler=run_gpus)
    nodes = catalog_subparsers.add_parser("nodes", help="whole machines: GPUs per node, links, network")
    nodes.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    nodes.set_defaults(handler=run_nodes)
    nets = catalog_subparsers.add_parser("networks", help="scale-out networks between nodes")
    nets.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    nets.set_defaults(handler=run_networks)


def _warn_problems(cat: HardwareCatalog) -> None:
    for problem in cat.problems:
        print(f"llmplan-cli: warning: {problem}", file=sys.stderr)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for r in [header, *rows]:
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _num(value: float | None, scale: float, digits: int = 1) -> str:
    return "-" if not value else f"{value / scale:,.{digits}f}"


def gpu_json(entry: GpuEntry) -> dict:
    s = entry.spec
    return {
        "id": s.id,
        "name": s.name,
        "vendor": s.vendor,
        "match_names": list(entry.match_names),
        "form_factor": s.form_factor,
        "memory_bytes": s.memory_bytes,
        "memory_reported_by_device": entry.memory_reported,
        "memory_marketing": s.memory_marketing,
        "usable_memory_bytes": s.usable_memory_bytes,
        "unified_memory": s.unified_memory,
        "memory_bandwidth_bytes_per_s": s.memory_bandwidth,
        "peak_flops_dense": {k: v for k, v in s.peak_flops.model_dump().items() if v is not None},
        "nvlink_bytes_per_s": s.nvlink_bandwidth,
        "pcie_bytes_per_s": s.pcie_bandwidth,
        "tdp_watts": s.tdp_watts,
        "price_per_gpu_hour_usd": s.price_per_hour,
        "price_date": entry.price_date,
        "origin": entry.origin,
        "sources": {fig: {"title": ref.title, "url": ref.url} for fig, ref in entry.sources.items()},
    }


def run_gpus(args: argparse.Namespace) -> int:
    cat = load_hardware_catalog()
    _warn_problems(cat)
    gpus = [g for g in cat.gpus if not args.vendor or g.spec.vendor == args.vendor]
    if args.json:
        print(json.dumps({"gpus": [gpu_json(g) for g in gpus], "problems": list(cat.problems)}, indent=2))
        return 0
    header = ["id", "memory GiB", "memory GB", "BW GB/s", "bf16 TFLOP/s", "fp8 TFLOP/s", "TDP W", "$/GPU-h", "name"]
    rows = []
    for g in gpus:
        s = g.spec
        approx = "" if g.memory_reported else "~"
        rows.append(
            [
                g.id,
                approx + _num(s.memory_bytes, 1 << 30),
                approx + _num(s.memory_bytes, 1e9),
                _num(s.memory_bandwidth, 1e9, 0),
                _num(s.peak_flops.for_dtype("bf16"), 1e12),
                _num(s.peak_flops.fp8, 1e12),
                _num(s.tdp_watts, 1, 0),
                "-" if s.price_per_hour is None else f"{s.price_per_hour:.2f}",
                s.name,
            ]
        )
    print(_table(header, rows, right={1, 2, 3, 4, 5, 6, 7}))
    print(
        f"\n{len(gpus)} accelerators. TFLOP/s are dense (no 2:4 sparsity); GeForce fp16/bf16 is the fp32-accumulate "
        "rate; bf16 falls back to fp16 where a device has no bf16. '~' = marketing size, not a device report."
    )
    return 0


def run_nodes(args: argparse.Namespace) -> int:
    cat = load_hardware_catalog()
    _warn_problems(cat)
    if args.json:
        nodes = []
        for n in cat.nodes:
            cluster = cat.cluster_from(n.gpu_id, node_id=n.id)
            nodes.append(
                {
                    "id": n.id,
                    "name": n.name,
                    "gpu": n.gpu_id,
                    "gpus_per_node": n.gpus_per_node,
                    "network": n.network_id,
                    "intra_node_bytes_per_s_per_gpu": cluster.intra_bandwidth,
                    "network_bytes_per_s_per_gpu": cluster.network.per_gpu(cluster.gpus_per_node),
                    "host_memory_bytes": n.host_memory_bytes,
                    "host_memory_bandwidth_bytes_per_s": cluster.host_memory_bandwidth,
                    "origin": n.origin,
                    "source": {"title": n.source.title, "url": n.source.url} if n.source else None,
                }
            )
        print(json.dumps({"nodes": nodes, "problems": list(cat.problems)}, indent=2))
        return 0
    header = ["id", "GPUs", "gpu", "GPU memory GiB", "intra GB/s/GPU", "network", "net GB/s/GPU", "name"]
    rows = []
    for n in cat.nodes:
        cluster = cat.cluster_from(n.gpu_id, node_id=n.id)
        total = cluster.gpu.memory_bytes * n.gpus_per_node
        rows.append(
            [
                n.id,
                str(n.gpus_per_node),
                n.gpu_id,
                _num(total, 1 << 30, 0),
                _num(cluster.intra_bandwidth, 1e9) if n.gpus_per_node > 1 else "-",
                n.network_id,
                _num(cluster.network.per_gpu(cluster.gpus_per_node), 1e9, 2),
                n.name,
            ]
        )
    print(_table(header, rows, right={1, 3, 4, 6}))
    print("\nBandwidths are per GPU, one direction.")
    return 0


def run_networks(args: argparse.Namespace) -> int:
    cat = load_hardware_catalog()
    _warn_problems(cat)
    if args.json:
        nets = [
            {
                "id": n.id,
                "name": n.name,
                "gbit_per_port": n.gbit_per_port,
                "ports_per": n.ports_per,
                "bytes_per_s_per_port": n.gbit_per_port * 1e9 / 8,
                "ports": n.ports,
                "rail_optimized": n.rail_optimized,
                "nodes_per_leaf": n.nodes_per_leaf,
                "oversubscription": n.oversubscription,
                "origin": n.origin,
                "source": {"title": n.source.title, "url": n.source.url} if n.source else None,
            }
            for n in cat.networks
        ]
        print(json.dumps({"networks": nets, "problems": list(cat.problems)}, indent=2))
        return 0
    header = ["id", "Gb/s per port", "GB/s per port", "ports", "rail", "nodes/leaf", "name"]
    rows = [
        [n.id, _num(n.gbit_per_port, 1, 0), _num(n.gbit_per_port / 8, 1, 2),
         "1 per GPU" if n.ports_per == "gpu" else f"{n.ports} per node", "yes" if n.rail_optimized else "no",
         str(n.nodes_per_leaf or "-"), n.name]
        for n in cat.networks
    ]
    print(_table(header, rows, right={1, 2, 5}))
    print("\nA node's ports are shared by its GPUs; NCCL spreads a group's rings over all of them. Bandwidths are "
          "one direction.")
    return 0
