"""Inference cold start: storage read plus PCIe copy, by hand."""

import pytest
from system_fixtures import STORE

from llmplan.core.system.cold_start import cold_start


def test_cold_start_adds_storage_read_and_pcie_copy():
    c = cold_start(weight_bytes=140e9, nodes=1, gpus=4, pcie_bandwidth=32e9, storage=STORE)
    assert c.storage_read_s.value == pytest.approx(140e9 / 10e9)  # one node reads at 10 GB/s
    assert c.pcie_copy_s.value == pytest.approx(35e9 / 32e9)  # each GPU copies its quarter
    assert c.total_s.value == pytest.approx(14 + 35 / 32)
