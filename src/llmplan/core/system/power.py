"""Power, energy, electricity cost and CO2 of a run.

GPU power follows its utilisation: P_gpu = TDP · (idle + (1 − idle) · min(1, MFU / MFU_sat)).
The node adds CPUs, NICs, fans and drives (watts per GPU); the data centre multiplies IT
power by its PUE. Energy is facility power × wall time (failures and checkpoints included:
the GPUs draw power while they wait).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.explain import Figure
from llmplan.core.system.settings import GridProfile, PowerProfile

_J_PER_KWH = 3.6e6


@dataclass(frozen=True, slots=True)
class PowerReport:
    gpu_watts: Figure  # one GPU at the plan's utilisation
    it_watts: Figure  # all GPUs and their nodes
    facility_watts: Figure  # IT power × PUE
    energy_j: Figure  # over the wall time
    energy_kwh: Figure
    cost_usd: Figure
    co2_kg: Figure


def gpu_power_watts(tdp: float, mfu: float, profile: PowerProfile) -> float:
    busy = min(1.0, max(0.0, mfu) / profile.saturation_mfu)
    return tdp * (profile.idle_fraction + (1.0 - profile.idle_fraction) * busy)


def power_report(*, tdp: float, mfu: float, gpus: int, wall_time_s: float, profile: PowerProfile,
                 grid: GridProfile) -> PowerReport:
    p_gpu = gpu_power_watts(tdp, mfu, profile)
    it = gpus * (p_gpu + profile.node_overhead_watts_per_gpu)
    facility = it * profile.pue
    energy = facility * wall_time_s
    kwh = energy / _J_PER_KWH
    src = profile.source
    return PowerReport(
        gpu_watts=Figure.of(p_gpu, "W", "TDP × (idle + (1 − idle) × min(1, MFU / MFU_sat))",
                            {"tdp": tdp, "mfu": mfu, "idle": profile.idle_fraction,
                             "mfu_sat": profile.saturation_mfu}, src),
        it_watts=Figure.of(it, "W", "GPUs × (GPU power + node overhead per GPU)",
                           {"gpus": gpus, "gpu_watts": p_gpu, "overhead": profile.node_overhead_watts_per_gpu}, src),
        facility_watts=Figure.of(facility, "W", "IT power × PUE", {"it_watts": it, "pue": profile.pue}, src),
        energy_j=Figure.of(energy, "J", "facility power × wall time", {"watts": facility, "wall_s": wall_time_s}),
        energy_kwh=Figure.of(kwh, "kWh", "energy / 3.6e6 J per kWh", {"energy_j": energy}),
        cost_usd=Figure.of(kwh * grid.price_per_kwh, "USD", "kWh × price per kWh",
                           {"kwh": kwh, "price_per_kwh": grid.price_per_kwh}, grid.source),
        co2_kg=Figure.of(kwh * grid.kg_co2_per_kwh, "kg", "kWh × grid intensity",
                         {"kwh": kwh, "kg_per_kwh": grid.kg_co2_per_kwh}, grid.source),
    )
