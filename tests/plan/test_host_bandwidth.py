"""Host memory bandwidth per node (offload timing): catalog presets, the default host, plan overrides.

Theoretical DRAM bandwidth = sockets × channels per socket × MT/s × 8 bytes. Each preset's CPU and
memory channels are cited in catalogs/systems/nodes.toml (DGX H100: 2 Xeon Platinum 8480C, 8 × DDR5-4800;
DGX A100: 2 EPYC 7742, 8 × DDR4-3200; DGX B200: 2 Xeon Platinum 8570, 8 × DDR5-5600).
"""

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.overrides import apply_overrides
from llmplan.plan.resolve import inline_specs, resolve

from .test_planfile import LLAMA_CONFIG


@pytest.mark.parametrize(("node", "sockets", "channels", "mts"), [
    ("dgx-h100", 2, 8, 4800), ("dgx-a100", 2, 8, 3200), ("dgx-b200", 2, 8, 5600), ("aws-p5-48xlarge", 2, 8, 3200),
])
def test_node_presets_state_sockets_channels_and_speed(node, sockets, channels, mts):
    entry = load_hardware_catalog().node(node)
    assert entry.host_memory_bandwidth == pytest.approx(sockets * channels * mts * 1e6 * 8)
    assert entry.host_memory_bandwidth_source is not None


def test_default_host_and_efficiencies_are_catalog_data():
    cat = load_hardware_catalog()
    assert cat.default_host.host_memory_bandwidth == pytest.approx(2 * 8 * 3200e6 * 8)  # 409.6 GB/s
    assert cat.host_memory_bandwidth_for(None) == cat.default_host.host_memory_bandwidth
    assert cat.host_memory_bandwidth_for("hgx-h200") == cat.default_host.host_memory_bandwidth  # a baseboard
    basis = cat.efficiency_basis_for("nvidia-h100-sxm-80gb")
    assert basis["host_memory_bandwidth"].basis == "assumption" and basis["pcie"].basis == "assumption"
    eff = cat.efficiency_for("nvidia-h100-sxm-80gb")
    assert (eff.host_memory_bandwidth, eff.pcie) == (0.7, 0.8)
    assert cat.cluster_from(None, node_id="dgx-h100").host_memory_bandwidth == 614.4e9


def _doc(**hw) -> PlanDocument:
    doc = PlanDocument(model=ModelRef(name="Llama 3 8B", config=LLAMA_CONFIG), workload="finetune",
                       hardware=HardwareRef(gpu="nvidia-h100-sxm-80gb", gpus_per_node=8, **hw))
    return apply_overrides(doc, ["training.offload=cpu", "parallelism.dp=8"])


def test_plan_override_beats_node_preset_beats_default_host():
    assert resolve(_doc()).cluster.host_memory_bandwidth == 409.6e9
    assert resolve(_doc(node="dgx-h100")).cluster.host_memory_bandwidth == 614.4e9
    assert resolve(_doc(node="dgx-h100", host_memory_bandwidth=100e9)).cluster.host_memory_bandwidth == 100e9


def test_efficiency_overrides_for_host_and_pcie():
    sc = resolve(apply_overrides(_doc(), ["efficiency.host_memory_bandwidth=0.2", "efficiency.pcie=0.5"]))
    assert (sc.efficiency.host_memory_bandwidth, sc.efficiency.pcie) == (0.2, 0.5)


def test_nvme_offload_gets_the_offload_drives():
    """catalogs/system [defaults] offload_storage = raid0-nvme-8x-gen4: 52 GB/s read, 28 GB/s write per node."""
    sc = resolve(apply_overrides(_doc(), ["training.offload=nvme"]))
    assert (sc.cluster.nvme_read_bandwidth, sc.cluster.nvme_write_bandwidth) == (52e9, 28e9)
    assert resolve(_doc()).cluster.nvme_read_bandwidth is None


def test_saving_an_offload_plan_writes_its_host_bandwidth():
    assert inline_specs(_doc(node="dgx-a100")).hardware.host_memory_bandwidth == 409.6e9
    plain = apply_overrides(_doc(), ["training.offload=none"])
    assert inline_specs(plain).hardware.host_memory_bandwidth is None
