"""The ``system`` object of the CLI's ``--json`` output: plain numbers in SI units.

Key names are a contract (DESIGN.md §3: add keys, never rename). Values are floats in
bytes, seconds, bytes/s, watts, joules, USD and kg; absent parts (goodput for inference,
cold start for training) are ``None``.
"""

from __future__ import annotations

from typing import Any

from llmplan.core.system.report import SystemReport


def system_json(r: SystemReport) -> dict[str, Any]:
    c, io, g, d, h, p, cs = r.checkpoint, r.checkpoint_io, r.goodput, r.data, r.host, r.power, r.cold_start
    return {
        "checkpoint": {
            "total_bytes": c.total.value, "per_model_shard_bytes": c.per_model_shard.value,
            "per_gpu_bytes": c.per_gpu.value, "bytes_per_param": c.bytes_per_param.value,
            "write_s": io.write_s.value, "read_s": io.read_s.value,
            "write_bandwidth": io.write_bandwidth.value, "read_bandwidth": io.read_bandwidth.value,
        },
        "goodput": None if g is None else {
            "mtbf_s": g.mtbf_s.value, "interval_s": g.interval_s.value, "goodput": g.goodput.value,
            "failures": g.failures.value, "ideal_time_s": g.ideal_time_s.value, "wall_time_s": g.wall_time_s.value,
            "effective_days": g.wall_time_s.value / 86400.0,
        },
        "data": None if d is None else {
            "tokens_per_s": d.tokens_per_s.value, "bytes_per_token": d.bytes_per_token.value,
            "read_bandwidth_needed": d.read_bandwidth_needed.value,
            "read_bandwidth_available": d.read_bandwidth_available.value, "storage_load": d.storage_load.value,
            "tokenizer_cores_per_node": d.tokenizer_cores_per_node.value, "cpu_load": d.cpu_load.value,
        },
        "host": None if h is None else {
            "ram_per_node_bytes": h.ram_per_node.value, "nvme_per_node_bytes": h.nvme_per_node.value,
            "pcie_bytes_per_step": h.pcie_bytes_per_step.value, "pcie_time_per_step_s": h.pcie_time_per_step.value,
            "pcie_load": h.pcie_load.value, "nvme_bytes_per_step": h.nvme_bytes_per_step.value,
            "nvme_time_per_step_s": h.nvme_time_per_step.value, "nvme_load": h.nvme_load.value,
        },
        "power": {
            "gpu_watts": p.gpu_watts.value, "it_watts": p.it_watts.value, "facility_watts": p.facility_watts.value,
            "energy_j": p.energy_j.value, "energy_kwh": p.energy_kwh.value, "cost_usd": p.cost_usd.value,
            "co2_kg": p.co2_kg.value,
        },
        "cold_start": None if cs is None else {
            "storage_read_s": cs.storage_read_s.value, "pcie_copy_s": cs.pcie_copy_s.value, "total_s": cs.total_s.value,
        },
        "bottleneck": {"kind": r.bottleneck.kind, "statement": r.bottleneck.statement},
        "warnings": list(r.warnings),
    }
