"""NVIDIA probing on recorded nvidia-smi CSV and replayed NVML values (tests/data/hw/README.md)."""

from __future__ import annotations

import pytest
from hw_fixtures import NVMLError, NVMLError_LibraryNotFound, data_text

from llmplan.hw._run import CommandOutput
from llmplan.hw.nvidia import (
    nvidia_smi_failure_reason,
    nvml_error_reason,
    parse_nvidia_smi_csv,
    probe_nvidia,
    read_nvml,
)

MIB = 2**20


def test_nvidia_smi_csv_8x_h100_sxm():
    gpus = parse_nvidia_smi_csv(data_text("nvidia_smi_8xh100_sxm.csv"))
    assert len(gpus) == 8
    assert [g.index for g in gpus] == list(range(8))
    g = gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3"
    assert g.memory_total_bytes == 81559 * MIB  # what an H100 80GB HBM3 reports
    assert g.memory_free_bytes == 81008 * MIB
    assert g.compute_capability == "9.0" and g.driver == "535.129.03"
    assert (g.pcie_gen_max, g.pcie_width_max) == (5, 16)
    assert g.mig_enabled is False and g.source == "nvidia-smi"
    assert g.uuid.startswith("GPU-")
    assert gpus[4].memory_used_bytes == 2 * MIB


def test_nvidia_smi_csv_rtx4090_has_no_mig_field():
    (g,) = parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv"))
    assert g.name == "NVIDIA GeForce RTX 4090"
    assert g.memory_total_bytes == 24564 * MIB
    assert g.mig_enabled is None  # "[N/A]": GeForce has no MIG
    assert g.compute_capability == "8.9"


def test_nvidia_smi_csv_a100_mig_enabled():
    (g,) = parse_nvidia_smi_csv(data_text("nvidia_smi_a100_mig.csv"))
    assert g.mig_enabled is True and g.memory_total_bytes == 40536 * MIB


@pytest.mark.parametrize("text", [data_text("garbage.txt"), "0, GPU-x, NVIDIA H100, lots, 1, 2, 3, 4, 5, 6, Disabled\n"])
def test_nvidia_smi_csv_garbage_raises_value_error(text):
    with pytest.raises(ValueError):
        parse_nvidia_smi_csv(text)


@pytest.mark.parametrize(
    ("fixture", "rc", "expected"),
    [
        ("nvidia_smi_no_driver.txt", 9, "driver not loaded"),
        ("nvidia_smi_version_mismatch.txt", 18, "driver/library version mismatch"),
        ("nvidia_smi_no_devices.txt", 6, "no devices were found"),
    ],
)
def test_nvidia_smi_failure_reasons(fixture, rc, expected):
    assert expected in nvidia_smi_failure_reason(rc, data_text(fixture), "")


@pytest.mark.parametrize(
    ("code", "expected"),
    [(12, "NVIDIA driver library not found (libnvidia-ml.so.1)"), (18, "driver/library version mismatch"),
     (4, "permission denied"), (9, "driver not loaded"), (999, "NVML error 999")],
)
def test_nvml_error_reasons(code, expected):
    assert expected in nvml_error_reason(NVMLError(code))


def test_nvml_8x_h100_sxm(install_fake_pynvml):
    fake = install_fake_pynvml("nvml_8xh100_sxm.json")
    gpus = read_nvml(fake)
    assert len(gpus) == 8 and fake.calls == ["init", "shutdown"]
    g = gpus[3]
    assert g.source == "nvml" and g.name == "NVIDIA H100 80GB HBM3"
    assert g.memory_total_bytes == 81559 * MIB
    assert g.memory_free_bytes == (81559 - 551) * MIB  # v2: reserved memory is neither used nor free
    assert g.memory_used_bytes == 0
    assert g.cuda_version == "12.2" and g.driver == "535.129.03" and g.compute_capability == "9.0"
    assert (g.pcie_gen, g.pcie_width, g.pcie_gen_max, g.pcie_width_max) == (5, 16, 5, 16)
    assert g.nvlink_links_up == 18 and g.nvlink_to_switch and g.nvlink_peers == ()
    assert g.mig_enabled is False and g.mig_instances == ()


def test_nvml_a100_mig_instances(install_fake_pynvml):
    fake = install_fake_pynvml("nvml_a100_mig.json")
    (g,) = read_nvml(fake)
    assert g.mig_enabled is True
    assert [m.name.split()[-1] for m in g.mig_instances] == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert [m.memory_total_bytes // MIB for m in g.mig_instances] == [20096, 9984, 4864]
    assert g.mig_instances[0].uuid.startswith("MIG-")
    assert g.nvlink_links_up == 0 and g.cuda_version == "12.0"


def test_nvml_v1_memory_fallback_and_direct_nvlink_peers(install_fake_pynvml):
    fake = install_fake_pynvml("nvml_2xrtx3090_nvlink.json")
    a, b = read_nvml(fake)
    assert a.memory_total_bytes == 24576 * MIB and a.memory_used_bytes == 301 * MIB  # v1 call
    assert a.nvlink_links_up == 4 and a.nvlink_peers == (1,) and b.nvlink_peers == (0,)
    assert not a.nvlink_to_switch
    assert a.mig_enabled is None  # GeForce: MIG not supported
    assert (a.pcie_gen, a.pcie_gen_max) == (1, 4)  # idle link downshifts; max is what matters


def test_probe_prefers_nvml(install_fake_pynvml, fake_commands):
    install_fake_pynvml("nvml_8xh100_sxm.json")
    fake_commands({})
    res = probe_nvidia(1.0)
    assert len(res.gpus) == 8 and res.gpus[0].source == "nvml" and res.reasons == ()


def test_probe_falls_back_to_nvidia_smi_when_library_missing(install_fake_pynvml, fake_commands):
    install_fake_pynvml(None, init_error=NVMLError_LibraryNotFound())
    fake_commands({"nvidia-smi": CommandOutput(0, data_text("nvidia_smi_rtx4090.csv"), "")})
    res = probe_nvidia(1.0)
    assert [g.source for g in res.gpus] == ["nvidia-smi"]
    assert res.reasons == ("NVML: NVIDIA driver library not found (libnvidia-ml.so.1)",)


def test_probe_reports_both_reasons_when_nothing_found(install_fake_pynvml, fake_commands):
    install_fake_pynvml(None, init_error=NVMLError_LibraryNotFound())
    fake_commands({})
    res = probe_nvidia(1.0)
    assert res.gpus == ()
    assert res.reasons == ("NVIDIA driver library not found (libnvidia-ml.so.1)", "nvidia-smi not installed")


def test_probe_version_mismatch_and_garbage(install_fake_pynvml, fake_commands):
    install_fake_pynvml(None, init_error=NVMLError(18))
    fake_commands({"nvidia-smi": CommandOutput(0, data_text("garbage.txt"), "")})
    res = probe_nvidia(1.0)
    assert "driver/library version mismatch" in res.reasons[0]
    assert "cannot read" in res.reasons[1]


def test_probe_nvml_hang_times_out_within_one_budget(install_fake_pynvml, fake_commands):
    install_fake_pynvml(None, hang_s=2.0)
    given = []

    def smi(argv, timeout_s):
        given.append(timeout_s)
        return CommandOutput(-1, "", "", reason=f"nvidia-smi timed out after {timeout_s:.1f} s")

    fake_commands({"nvidia-smi": smi})
    res = probe_nvidia(0.4)
    assert res.reasons[0] == "NVML timed out after 0.2 s"  # NVML gets half the budget
    assert res.reasons[1].startswith("nvidia-smi timed out after")
    assert given[0] <= 0.25  # the fallback gets what is left, so the probe stays within 0.4 s


def test_probe_permission_denied(install_fake_pynvml, fake_commands):
    install_fake_pynvml(None, init_error=NVMLError(4))
    fake_commands({"nvidia-smi": CommandOutput(-1, "", "", reason="nvidia-smi: permission denied")})
    res = probe_nvidia(1.0)
    assert all("permission denied" in r for r in res.reasons)
