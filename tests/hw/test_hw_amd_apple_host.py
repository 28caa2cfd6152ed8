"""AMD, Apple and host probing on recorded outputs (formats: tests/data/hw/README.md)."""

from __future__ import annotations

import pytest
from hw_fixtures import data_text

from llmplan.hw import apple
from llmplan.hw._run import CommandOutput
from llmplan.hw.amd import parse_amd_smi_static_json, parse_rocm_smi_json, probe_amd
from llmplan.hw.apple import (
    build_apple_gpu,
    default_wired_limit_bytes,
    parse_system_profiler_gpu_cores,
    probe_apple,
)
from llmplan.hw.host import parse_cpuinfo, parse_meminfo, parse_vm_stat

GIB = 2**30
MIB = 2**20


def test_rocm_smi_mi300x():
    a, b = parse_rocm_smi_json(data_text("rocm_smi_mi300x.json"))
    assert a.name == "AMD Instinct MI300X OAM" and a.vendor == "amd" and a.source == "rocm-smi"
    assert a.memory_total_bytes == 205_822_885_888
    assert b.index == 1 and b.memory_free_bytes == 205_822_885_888 - 14_831_837_184


def test_rocm_smi_old_spelling_and_warning_prefix():
    text = 'WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n' \
        '{"card0": {"Card series": "Radeon RX 7900 XTX", "VRAM Total Memory (B)": "25753026560"}, ' \
        '"system": {"Driver version": "6.8.5"}}'
    (g,) = parse_rocm_smi_json(text)
    assert g.name == "Radeon RX 7900 XTX" and g.memory_total_bytes == 25_753_026_560 and g.memory_free_bytes is None


def test_amd_smi_static_mi300x():
    (g,) = parse_amd_smi_static_json(data_text("amd_smi_static_mi300x.json"))
    assert g.name == "AMD Instinct MI300X" and g.source == "amd-smi"
    assert g.memory_total_bytes == 196592 * MIB
    assert (g.pcie_gen_max, g.pcie_width_max, g.driver) == (5, 16, "6.8.5")


def test_amd_smi_older_list_form_with_string_size():
    (g,) = parse_amd_smi_static_json('[{"gpu": 2, "asic": {"market_name": "AMD Instinct MI250X"}, '
                                     '"vram": {"size": "65536 MB"}}]')
    assert g.index == 2 and g.memory_total_bytes == 64 * GIB


@pytest.mark.parametrize("parser", [parse_rocm_smi_json, parse_amd_smi_static_json])
def test_amd_garbage(parser):
    with pytest.raises(ValueError):
        parser(data_text("garbage.txt"))


def test_probe_amd_falls_back_to_rocm_smi(fake_commands):
    fake_commands({"rocm-smi": CommandOutput(0, data_text("rocm_smi_mi300x.json"), "")})
    res = probe_amd(1.0)
    assert len(res.gpus) == 2 and res.reasons == ()


def test_probe_amd_nothing_installed_and_permission(fake_commands):
    fake_commands({})
    assert probe_amd(1.0).reasons == ("amd-smi not installed", "rocm-smi not installed")
    fake_commands({"amd-smi": CommandOutput(1, "", "Permission denied: /dev/kfd")})
    assert probe_amd(1.0).reasons[0] == "amd-smi failed (exit 1): permission denied"


@pytest.mark.parametrize(("fixture", "model", "cores"),
                         [("system_profiler_m2_max.json", "Apple M2 Max", 38),
                          ("system_profiler_m3_ultra.json", "Apple M3 Ultra", 80)])
def test_system_profiler(fixture, model, cores):
    assert parse_system_profiler_gpu_cores(data_text(fixture)) == (model, cores)


def test_system_profiler_garbage():
    with pytest.raises(ValueError):
        parse_system_profiler_gpu_cores(data_text("garbage.txt"))


def test_apple_wired_limit_set_and_default():
    g = build_apple_gpu("Apple M2 Max", 96 * GIB, "Apple M2 Max", 38, 90_000)
    assert g.unified_memory and g.memory_total_bytes == 96 * GIB
    assert g.wired_limit_bytes == 90_000 * MIB and g.usable_memory_bytes == 90_000 * MIB
    assert build_apple_gpu("Apple M2 Max", 96 * GIB, None, None, 0).wired_limit_bytes == 72 * GIB
    assert default_wired_limit_bytes(16 * GIB) == int(16 * GIB * 2 / 3)


@pytest.mark.parametrize("gib", [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 512])
def test_default_wired_share_agrees_with_the_catalog_rule(gib):
    """Detection and the catalog must give a Mac the same GPU share. llama.cpp's Metal logs (cited in
    catalogs/gpus/apple.toml): 16 GiB -> 11453.25 MB and 32 GiB -> 22906.50 MB (2/3); 36 GiB -> 28991.03 MB
    and 64 GiB -> 49152 MiB (3/4). The catalog stores 2/3 as 0.6667, hence the tolerance."""
    import tomllib
    from pathlib import Path

    from llmplan.catalog.hardware_files import HardwareFile

    apple_toml = Path(__file__).resolve().parents[2] / "catalogs" / "gpus" / "apple.toml"
    rule = HardwareFile.model_validate(tomllib.loads(apple_toml.read_text(encoding="utf-8"))).apple_wired_memory
    assert default_wired_limit_bytes(gib * GIB) == pytest.approx(gib * GIB * rule.fraction_for(gib), rel=1e-4)


def test_the_36_gib_mac_gets_three_quarters():  # 28991.03 MB in llama.cpp's log of a 36 GiB M3 Max
    assert default_wired_limit_bytes(36 * GIB) / 1e6 == pytest.approx(28991.03, abs=0.01)


def test_probe_apple_on_a_mac(monkeypatch, fake_commands):
    monkeypatch.setattr(apple.platform, "system", lambda: "Darwin")
    monkeypatch.setattr(apple.platform, "machine", lambda: "arm64")

    def sysctl(argv, _t):
        values = {"machdep.cpu.brand_string": "Apple M3 Ultra", "hw.memsize": str(512 * GIB),
                  "iogpu.wired_limit_mb": "0"}
        return CommandOutput(0, values[argv[2]] + "\n", "")

    fake_commands({"sysctl": sysctl,
                   "system_profiler": CommandOutput(0, data_text("system_profiler_m3_ultra.json"), "")})
    (g,) = probe_apple(1.0).gpus
    assert (g.name, g.gpu_cores, g.memory_total_bytes) == ("Apple M3 Ultra", 80, 512 * GIB)
    assert g.wired_limit_bytes == 384 * GIB


def test_probe_apple_is_silent_elsewhere(monkeypatch):
    monkeypatch.setattr(apple.platform, "system", lambda: "Linux")
    assert probe_apple(1.0).gpus == () and probe_apple(1.0).reasons == ()


def test_meminfo_and_cpuinfo_recorded():
    total, avail = parse_meminfo(data_text("proc_meminfo.txt"))
    assert total == 24_684_092 * 1024 and avail == 24_195_200 * 1024
    assert parse_cpuinfo(data_text("proc_cpuinfo.txt")) == ("AMD EPYC", 2)


def test_cpuinfo_hyperthreads_count_once_and_arm_is_unknown():
    ht = "".join(f"processor\t: {i}\nmodel name\t: Xeon\nphysical id\t: 0\ncore id\t\t: {i % 2}\n\n" for i in range(4))
    assert parse_cpuinfo(ht) == ("Xeon", 2)
    assert parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n\n") == (None, None)


def test_vm_stat():
    assert parse_vm_stat(data_text("vm_stat_m2_max.txt")) == (91530 + 1370221 + 28394) * 16384
    assert parse_vm_stat("garbage") is None
