"""Host RAM per node and the PCIe traffic of ZeRO-Offload, by hand."""

import pytest
from system_fixtures import GIB, scenario_tiny, settings

from llmplan.core.system.host import host_report, offload_pcie_bytes


def test_no_offload_moves_nothing():
    assert offload_pcie_bytes(scenario_tiny(), 1_000_000)[0] == 0


def test_cpu_offload_moves_grads_out_and_params_back():
    # layout tp2 pp2 dp2: each GPU owns 1e9 / 8 params; 2 B fp16 gradients out + 2 B fp16 params back.
    s = scenario_tiny(offload="cpu", zero_stage=2)
    assert offload_pcie_bytes(s, 1_000_000_000)[0] == pytest.approx(4 * 1e9 / 8)
    s3 = scenario_tiny(offload="cpu", zero_stage=3, offload_params=True)
    assert offload_pcie_bytes(s3, 1_000_000_000)[0] == pytest.approx(8 * 1e9 / 8)


def test_host_ram_sums_offload_processes_workers_and_pinned():
    s = scenario_tiny(offload="cpu", zero_stage=2)
    r = host_report(s, host_ram=100 * GIB, nvme=0.0, trainable_params=1_000_000_000, step_time_s=1.0,
                    profile=settings().host, pinned_per_gpu=1 * GIB)
    # 8 GPUs per node: 8 × (2 workers × 2 GiB) + 8 × 16 GiB + 8 × 1 GiB pinned + 100 GiB offload.
    assert r.ram_per_node.value == (100 + 8 * 4 + 8 * 16 + 8 * 1) * GIB
    assert r.pcie_time_per_step.value == pytest.approx(0.5e9 / 64e9)
    assert r.pcie_load.value == pytest.approx(0.5e9 / 64e9 / 1.0)


def test_pcie_becomes_the_bottleneck_when_slower_than_the_step():
    s = scenario_tiny(offload="cpu", zero_stage=2)
    r = host_report(s, host_ram=0, nvme=0, trainable_params=100_000_000_000, step_time_s=0.5,
                    profile=settings().host, pinned_per_gpu=0)
    assert r.pcie_load.value == pytest.approx(4 * 100e9 / 8 / 64e9 / 0.5)
    assert r.pcie_load.value > 1


def test_nvme_offload_reads_and_writes_master_and_optimizer_states():
    from system_fixtures import STORE

    from llmplan.core.system.host import nvme_offload_bytes

    s = scenario_tiny(offload="nvme", zero_stage=3)
    # AdamW: 4 B fp32 master + 8 B moments per param of each GPU's 1/8 share, × 8 GPUs per node.
    assert nvme_offload_bytes(s, 8_000_000_000) == pytest.approx(12 * 1e9 * 8)
    assert nvme_offload_bytes(scenario_tiny(offload="cpu"), 8_000_000_000) == 0
    r = host_report(s, host_ram=0, nvme=1e12, trainable_params=8_000_000_000, step_time_s=10.0,
                    profile=settings().host, pinned_per_gpu=0, offload_storage=STORE)
    t = 96e9 / 10e9 + 96e9 / 5e9  # one node: read at 10 GB/s, write at 5 GB/s
    assert r.nvme_time_per_step.value == pytest.approx(t)
    assert r.nvme_load.value == pytest.approx(t / 10.0)
    assert r.nvme_per_node.value == 1e12
