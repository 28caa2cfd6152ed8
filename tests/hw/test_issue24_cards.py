"""Issue 24's non-NVIDIA cards and DGX Spark: detected from recorded amd-smi / xpu-smi / nvidia-smi / NVML
outputs (tests/data/hw/README.md says where each format comes from) and matched to their catalog entries,
with the GPU share of unified memory each OS grants."""

from __future__ import annotations

import json

import pytest
from hw_fixtures import NVMLError, data_text

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.fit.local import local_hardware
from llmplan.hw import amd
from llmplan.hw._run import CommandOutput
from llmplan.hw.amd import apu_gpu, is_apu_name, parse_amd_smi_static_json, probe_amd
from llmplan.hw.detect import DetectionReport
from llmplan.hw.intel import parse_xpu_smi_device, parse_xpu_smi_list, probe_intel
from llmplan.hw.nvidia import parse_nvidia_smi_csv, read_nvml

GIB, MIB, KIB = 2**30, 2**20, 2**10
SPARK_MEMTOTAL = 127_600_748 * KIB  # /proc/meminfo MemTotal of a GB10 host (XuehaiPan/nvitop#208)


def _machine(*gpus):
    return local_hardware(DetectionReport(gpus=tuple(gpus), host=None))


def test_dgx_spark_from_nvidia_smi_reads_host_memory():
    with pytest.raises(ValueError, match=r"memory\.total"):
        parse_nvidia_smi_csv(data_text("nvidia_smi_dgx_spark.csv"))  # without the host's RAM: no size to give
    (g,) = parse_nvidia_smi_csv(data_text("nvidia_smi_dgx_spark.csv"), host_memory_bytes=SPARK_MEMTOTAL)
    assert g.unified_memory and g.memory_total_bytes == SPARK_MEMTOTAL and g.memory_free_bytes is None
    m = _machine(g)
    assert m.catalog_id == "nvidia-dgx-spark-gb10-128gb" and m.speed_known
    assert m.gpu.memory_bandwidth == pytest.approx(273e9)  # NVIDIA DGX Spark hardware overview


def test_dgx_spark_from_nvml_not_supported(install_fake_pynvml):
    fake = install_fake_pynvml("nvml_dgx_spark.json")
    with pytest.raises(NVMLError):
        read_nvml(fake)  # no host figure: the NOT_SUPPORTED error stays an error (the probe reports it)
    (g,) = read_nvml(fake, host_memory_bytes=SPARK_MEMTOTAL)
    assert g.unified_memory and g.memory_total_bytes == SPARK_MEMTOTAL and g.compute_capability == "12.1"
    assert _machine(g).catalog_id == "nvidia-dgx-spark-gb10-128gb"


def test_other_nvml_errors_still_raise(install_fake_pynvml):
    rec = json.loads(data_text("nvml_dgx_spark.json"))
    rec["devices"][0].pop("memory_not_supported")  # no memory_v1 either: a KeyError, not NOT_SUPPORTED
    fake = install_fake_pynvml()
    fake.nvmlDeviceGetCount = lambda: 1
    fake.nvmlDeviceGetHandleByIndex = lambda i: rec["devices"][0]
    with pytest.raises(KeyError):
        read_nvml(fake, host_memory_bytes=SPARK_MEMTOTAL)


def test_r9700_from_amd_smi():
    (g,) = parse_amd_smi_static_json(data_text("amd_smi_static_r9700.json"))
    assert not is_apu_name(g.name)
    m = _machine(g)
    assert m.catalog_id == "amd-radeon-ai-pro-r9700-32gb" and m.speed_known
    assert m.gpu.peak_flops.int8 == pytest.approx(383e12)  # AMD: 766 sparse INT8 TOPS / 2


@pytest.mark.parametrize(("name", "apu"), [
    ("AMD Radeon 8060S Graphics", True), ("AMD Radeon 780M", True), ("AMD Radeon Graphics", True),
    ("AMD Radeon AI PRO R9700", False), ("Radeon RX 7900 XTX", False), ("AMD Instinct MI300X", False),
    ("AMD Radeon PRO W7900", False),
])
def test_apu_names(name, apu):
    assert is_apu_name(name) is apu


def test_strix_halo_gtt_pool_is_what_the_gpu_may_use():
    """noamsto/nix-amd-ai#42: a 128 GB Strix Halo with a 4 GiB UMA carve-out and ttm.pages_limit=25165824
    reads mem_info_gtt_total 103079215104 (96 GiB); ROCm then reports 98,304 MiB."""
    (raw,) = parse_amd_smi_static_json(data_text("amd_smi_static_strix_halo.json"))
    assert raw.memory_total_bytes == 4 * GIB  # amd-smi alone sees only the carve-out
    os_ram = 128 * GIB - 4 * GIB - 500 * MIB  # MemTotal: RAM less the carve-out and firmware
    g = apu_gpu(raw, 4 * GIB, 103_079_215_104, os_ram)
    assert g.unified_memory and g.wired_limit_bytes == 96 * GIB
    assert g.memory_total_bytes == pytest.approx(128 * GIB, rel=0.01)
    m = _machine(g)
    assert m.catalog_id == "amd-ryzen-ai-max-395-128gb" and m.speed_known
    assert m.gpu.usable_memory_bytes == pytest.approx(96 * GIB, rel=0.01)


def test_strix_halo_linux_default_gtt():
    """Without ttm.pages_limit the kernel gives GTT about half of RAM ('63968M of GTT memory ready' on
    128 GB, antirez/ds4#475): the GPU may use 62.5 GiB, not the catalog's Windows 96 GB."""
    (raw,) = parse_amd_smi_static_json(data_text("amd_smi_static_strix_halo.json"))
    g = apu_gpu(raw, 512 * MIB, 63968 * MIB, 127 * GIB)
    assert g.wired_limit_bytes == 63968 * MIB
    assert _machine(g).gpu.usable_memory_bytes == pytest.approx(63968 * MIB, rel=0.01)


def test_probe_amd_applies_the_apu_pools(fake_commands, monkeypatch, tmp_path):
    dev = tmp_path / "card1" / "device"
    dev.mkdir(parents=True)
    (dev / "mem_info_vram_total").write_text(f"{4 * GIB}\n")
    (dev / "mem_info_gtt_total").write_text("103079215104\n")
    monkeypatch.setattr(amd, "DRM", str(tmp_path))
    monkeypatch.setattr(amd, "host_memory_total", lambda: 124 * GIB)
    fake_commands({"amd-smi": CommandOutput(0, data_text("amd_smi_static_strix_halo.json"), "")})
    (g,) = probe_amd(1.0).gpus
    assert g.unified_memory and g.wired_limit_bytes == 96 * GIB and g.memory_total_bytes == 128 * GIB


def test_xpu_smi_list_and_devices():
    assert parse_xpu_smi_list(data_text("xpu_smi_discovery.json")) == (0, 1)
    b580 = parse_xpu_smi_device(data_text("xpu_smi_device_b580.json"))
    assert b580.vendor == "intel" and b580.source == "xpu-smi" and b580.memory_total_bytes == 12_168_933_376
    assert (b580.pcie_gen_max, b580.pcie_width_max) == (4, 8)
    assert _machine(b580).catalog_id == "intel-arc-b580-12gb"
    b60 = parse_xpu_smi_device(data_text("xpu_smi_device_pro_b60.json"))
    assert _machine(b60).catalog_id == "intel-arc-pro-b60-24gb"


def test_b570_by_name_and_memory():
    g = parse_xpu_smi_device('{"device_id": 0, "device_name": "Intel(R) Arc(TM) B570 Graphics", '
                             '"memory_physical_size_byte": "10200547328"}')
    m = _machine(g)
    assert m.catalog_id == "intel-arc-b570-10gb" and m.gpu.peak_flops.int8 == pytest.approx(203e12)


def test_probe_intel(fake_commands):
    def run(argv, timeout_s):
        if "-d" in argv:
            name = {"0": "xpu_smi_device_b580.json", "1": "xpu_smi_device_pro_b60.json"}[argv[argv.index("-d") + 1]]
            return CommandOutput(0, data_text(name), "")
        return CommandOutput(0, data_text("xpu_smi_discovery.json"), "")

    fake_commands({"xpu-smi": run})
    res = probe_intel(1.0)
    assert [g.name for g in res.gpus] == ["Intel(R) Arc(TM) B580 Graphics", "Intel(R) Arc(TM) Pro B60 Graphics"]
    fake_commands({})
    assert probe_intel(1.0).reasons == ("xpu-smi not installed",)
    fake_commands({"xpu-smi": CommandOutput(0, data_text("garbage.txt"), "")})
    assert "cannot read" in probe_intel(1.0).reasons[0]


def test_every_issue24_card_is_sourced():
    cat = load_hardware_catalog()
    for gid in ("amd-radeon-ai-pro-r9700-32gb", "amd-ryzen-ai-max-395-128gb", "amd-ryzen-ai-max-395-64gb",
                "intel-arc-b580-12gb", "intel-arc-b570-10gb", "intel-arc-pro-b60-24gb",
                "nvidia-dgx-spark-gb10-128gb"):
        g = cat.gpu(gid)
        assert g.sources["tflops"].url.startswith("https://"), gid
        assert g.sources["memory_bandwidth_gbs"].url.startswith("https://"), gid
    halo = cat.gpu("amd-ryzen-ai-max-395-128gb").spec
    assert halo.memory_bandwidth == pytest.approx(256e9)  # LPDDR5X-8000 x 256 bit / 8
    assert halo.usable_memory_bytes == 96 * GIB  # Windows Variable Graphics Memory: 96 of 128 GB
