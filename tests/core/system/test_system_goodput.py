"""Young/Daly interval and goodput: the formula, its optimality, and the Llama 3 failure rate."""

import math

import numpy as np
import pytest

from llmplan.core.system.goodput import (
    first_order_waste,
    goodput_fraction,
    goodput_report,
    job_mtbf_s,
    young_daly_interval_s,
)


def test_interval_is_sqrt_2_delta_m():
    assert young_daly_interval_s(60.0, 7200.0) == pytest.approx(math.sqrt(2 * 60 * 7200))


@pytest.mark.parametrize(("delta", "mtbf", "restart"), [(30.0, 3600.0, 0.0), (120.0, 36000.0, 600.0),
                                                         (2.8, 10_000.0, 600.0)])
def test_young_interval_minimises_the_first_order_waste_numerically(delta, mtbf, restart):
    taus = np.geomspace(delta / 10, mtbf, 200_001)
    waste = first_order_waste(taus, delta, mtbf, restart)
    best = taus[int(np.argmin(waste))]
    assert best == pytest.approx(young_daly_interval_s(delta, mtbf), rel=1e-3)


def test_exact_goodput_optimum_is_close_to_young_when_saves_are_short():
    # Setting d/dτ of (1 − (τ/2 + R)/M)·τ/(τ + δ) to 0 gives τ² + 2δτ − 2δ(M − R) = 0, i.e.
    # τ = sqrt(δ² + 2δ(M − R)) − δ: Young's sqrt(2δM) with Daly's (2006) first correction −δ.
    delta, mtbf, restart = 60.0, 12_000.0, 300.0
    taus = np.geomspace(10, mtbf, 100_001)
    best = taus[int(np.argmax(goodput_fraction(taus, delta, mtbf, restart)))]
    assert best == pytest.approx(math.sqrt(delta**2 + 2 * delta * (mtbf - restart)) - delta, rel=1e-3)
    assert best == pytest.approx(young_daly_interval_s(delta, mtbf), rel=0.1)
    # and the goodput lost by using Young's interval instead is negligible
    young = goodput_fraction(young_daly_interval_s(delta, mtbf), delta, mtbf, restart)
    assert goodput_fraction(best, delta, mtbf, restart) - young < 1e-3


def test_llama3_failure_rate_gives_one_interruption_every_3_hours_on_16k_gpus():
    # Llama 3 paper §3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100s
    # ("about one failure every three hours" as reported by the press; 54·24/419 = 3.09 h).
    rate = 419 / (54 * 24 * 16384)
    assert job_mtbf_s(rate, 16384) / 3600 == pytest.approx(54 * 24 / 419)


def test_goodput_by_hand():
    g = goodput_fraction(600.0, 60.0, 36_000.0, 900.0)
    assert g == pytest.approx((1 - (300 + 900) / 36_000) / (1 + 60 / 600))


def test_goodput_is_zero_when_failures_outpace_restarts():
    assert goodput_fraction(600.0, 60.0, 1_000.0, 900.0) == 0.0
    r = goodput_report(ideal_time_s=1e6, checkpoint_s=60, restart_s=5000, failures_per_gpu_hour=1e-3, gpus=1000,
                       interval_s=None, failure_source="test")
    assert r.goodput.value == 0.0
    assert math.isinf(r.wall_time_s.value)


def test_report_wall_time_and_failures():
    r = goodput_report(ideal_time_s=864_000.0, checkpoint_s=50.0, restart_s=600.0, failures_per_gpu_hour=1e-5,
                       gpus=10_000, interval_s=None, failure_source="test")
    m = 3600 / (1e-5 * 10_000)
    assert r.mtbf_s.value == pytest.approx(m)
    assert r.interval_s.value == pytest.approx(math.sqrt(2 * 50 * m))
    g = goodput_fraction(r.interval_s.value, 50.0, m, 600.0)
    assert r.wall_time_s.value == pytest.approx(864_000 / g)
    assert r.failures.value == pytest.approx(864_000 / g / m)


def test_fixed_interval_is_used_as_given():
    r = goodput_report(ideal_time_s=1e5, checkpoint_s=10, restart_s=0, failures_per_gpu_hour=1e-5, gpus=100,
                       interval_s=1800.0, failure_source="test")
    assert r.interval_s.value == 1800.0
