"""GPU, node and facility power; energy, cost and CO2, by hand."""

import pytest
from system_fixtures import settings

from llmplan.core.system.power import gpu_power_watts, power_report


def test_gpu_power_scales_with_mfu_up_to_tdp():
    p = settings().power  # idle 0.1, saturation at 40% MFU
    assert gpu_power_watts(700, 0.0, p) == pytest.approx(70)
    assert gpu_power_watts(700, 0.2, p) == pytest.approx(700 * (0.1 + 0.9 * 0.5))
    assert gpu_power_watts(700, 0.55, p) == pytest.approx(700)


def test_energy_cost_and_co2_by_hand():
    s = settings()
    r = power_report(tdp=700, mfu=0.5, gpus=1000, wall_time_s=86400, profile=s.power, grid=s.grid)
    it = 1000 * (700 + 300)
    assert r.it_watts.value == it
    assert r.facility_watts.value == it * 1.5
    kwh = it * 1.5 * 24 / 1000  # 36,000 kWh
    assert r.energy_kwh.value == pytest.approx(kwh)
    assert r.energy_j.value == pytest.approx(kwh * 3.6e6)
    assert r.cost_usd.value == pytest.approx(kwh * 0.1)
    assert r.co2_kg.value == pytest.approx(kwh * 0.4)
