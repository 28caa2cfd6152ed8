"""End to end: Llama 3.1 405B on 16,384 H100s with the shipped catalog defaults.

Inputs from the Llama 3 paper (arXiv:2407.21783) Table 4, row "16,384 GPUs, TP 8, CP 1,
PP 16, DP 128, seq 8,192": 400 TFLOP/s per GPU, 41% BF16 MFU; 15.6T pre-training tokens
(§3.1). Tokens/s is taken as GPUs × 400 TFLOP/s / (6 × N) (attention FLOPs ignored, so
the throughput is an upper bound by a few percent). Published checks:
- effective training time "higher than 90%" (§3.3.4) — our goodput with the catalog's
  Tectonic storage, the Llama 3 failure rate and an assumed 10-minute restart overhead;
- 30.84M H100 GPU-hours for the 405B (Llama 3.1 model card), compared with GPUs × wall
  time at 10% tolerance (the real run also had an 8K-GPU phase and long-context stages).
"""

import pytest
from system_fixtures import LLAMA_405B, count_params, scenario_405b, training_estimate

from llmplan.catalog.system_presets import default_system_settings
from llmplan.core.system.report import system_report

N = 405_853_388_800
GPUS = 16384
TOKENS_PER_S = GPUS * 400e12 / (6 * N)


@pytest.fixture(scope="module")
def report():
    s = scenario_405b()
    est = training_estimate(LLAMA_405B, tokens_per_s=TOKENS_PER_S, step_time_s=16 * 2**20 / TOKENS_PER_S, mfu=0.41,
                            total=70e9, capacity=80e9)
    return system_report(s, est, default_system_settings())


def test_parameter_count_is_the_released_one():
    assert count_params(LLAMA_405B).total == N


def test_checkpoint(report):
    assert report.checkpoint.total.value == pytest.approx(N * 14)  # 5.68 TB
    assert report.checkpoint_io.write_s.value == pytest.approx(N * 14 / 2e12)  # Tectonic 2 TB/s sustained


def test_interval_and_goodput(report):
    g = report.goodput
    mtbf = 54 * 24 * 3600 / 466  # 466 interruptions in 54 days, the whole job
    assert g.mtbf_s.value == pytest.approx(mtbf)
    delta = N * 14 / 2e12
    assert g.interval_s.value == pytest.approx((2 * delta * mtbf) ** 0.5)
    restart = 600 + delta
    tau = g.interval_s.value
    assert g.goodput.value == pytest.approx((1 - (tau / 2 + restart) / mtbf) / (1 + delta / tau))
    assert g.goodput.value > 0.90  # Llama 3 §3.3.4: "effective training time ... higher than 90%"


def test_wall_time_matches_the_model_card_gpu_hours(report):
    ideal = 15.6e12 / TOKENS_PER_S
    assert report.goodput.ideal_time_s.value == pytest.approx(ideal)
    gpu_hours = GPUS * report.goodput.wall_time_s.value / 3600
    assert gpu_hours == pytest.approx(30.84e6, rel=0.10)


def test_energy(report):
    p = report.power
    assert p.gpu_watts.value == pytest.approx(700)  # 41% MFU is past the saturation MFU of 40%
    it = GPUS * (700 + 350)
    assert p.facility_watts.value == pytest.approx(it * 1.58)
    kwh = it * 1.58 * report.goodput.wall_time_s.value / 3.6e6
    assert p.energy_kwh.value == pytest.approx(kwh)
    assert p.cost_usd.value == pytest.approx(kwh * 0.0806)
    assert p.co2_kg.value == pytest.approx(kwh * 0.390)


def test_pipeline_host_and_bottleneck(report):
    assert report.data.bytes_per_token.value == 4  # 128,256-token vocabulary needs int32 ids
    assert report.data.read_bandwidth_needed.value == pytest.approx(TOKENS_PER_S * 4)
    assert report.data.storage_load.value < 1e-3
    assert report.host.pcie_bytes_per_step.value == 0
    assert report.bottleneck.kind == "compute"
    assert report.warnings == ()
