"""Intel integrated GPUs: usable memory is a share of RAM (hw/intel_igpu.py), detected from recorded-format
sysfs and WMI output (tests/data/hw/README.md says how each file was made).

Sources: Intel compute-runtime (Level Zero / OpenCL, which llama.cpp's SYCL back-end uses) reports an
integrated device's global memory as the driver's shared pool x 0.94 less 450 MiB (DrmMemoryManager /
WddmMemoryManager::getPercentOfGlobalMemoryAvailable, Device::getGlobalMemorySize); the pool is all of RAM
under i915/xe on Linux and half of RAM under WDDM on Windows. Exact arithmetic, no tolerance."""

from __future__ import annotations

import pytest
from hw_fixtures import data_text

from llmplan.fit.local import local_hardware
from llmplan.hw.host import parse_meminfo
from llmplan.hw.intel_igpu import igpu_from_uevent, igpu_limit_bytes, parse_win32_video_controllers
from llmplan.hw.types import DetectionReport

MIB, GIB = 1 << 20, 1 << 30


def vm_ram() -> int:
    return parse_meminfo(data_text("proc_meminfo.txt"))[0]


def test_limits_by_os():
    assert igpu_limit_bytes(32 * GIB, "Linux") == int(32 * GIB * 0.94) - 450 * MIB  # 29.64 GiB
    assert igpu_limit_bytes(32 * GIB, "Windows 11") == int(16 * GIB * 0.94) - 450 * MIB  # 14.60 GiB
    assert igpu_limit_bytes(256 * MIB, "Linux") == 0


def test_linux_igpu_from_sysfs_uevent():
    ram = vm_ram()
    gpu = igpu_from_uevent(data_text("sysfs_uevent_intel_igpu.txt"), ram)
    assert gpu is not None and gpu.vendor == "intel" and gpu.source == "sysfs" and gpu.driver == "xe"
    assert gpu.name == "Intel integrated graphics (8086:7D55)" and gpu.unified_memory
    assert gpu.memory_total_bytes == ram and gpu.usable_memory_bytes == int(ram * 0.94) - 450 * MIB


def test_a_discrete_arc_or_unknown_ram_is_not_an_igpu():
    assert igpu_from_uevent(data_text("sysfs_uevent_intel_arc_a770.txt"), vm_ram()) is None  # slot 03:00.0
    assert igpu_from_uevent(data_text("sysfs_uevent_intel_igpu.txt"), None) is None
    assert igpu_from_uevent("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:00:02.0\n", vm_ram()) is None


def test_windows_igpu_from_wmi_keeps_only_the_integrated_adapter():
    gpus = parse_win32_video_controllers(data_text("win32_videocontroller_igpu.json"), 32 * GIB)
    assert [g.name for g in gpus] == ["Intel(R) Arc(TM) Graphics"]  # the B580 is xpu-smi's
    assert gpus[0].source == "wmi" and gpus[0].usable_memory_bytes == int(16 * GIB * 0.94) - 450 * MIB


def test_fit_uses_the_limit_and_says_how_it_is_set():
    ram = vm_ram()
    gpu = igpu_from_uevent(data_text("sysfs_uevent_intel_igpu.txt"), ram)
    m = local_hardware(DetectionReport(gpus=(gpu,), host=None))
    assert m.gpu.usable_memory_bytes == pytest.approx(int(ram * 0.94) - 450 * MIB, abs=1)
    assert not m.speed_known  # no catalog entry for integrated graphics: memory only
    assert any("unified memory" in n and "compute runtime" in n for n in m.notes)


def test_detect_all_leaves_the_igpu_out_beside_a_discrete_gpu():
    from llmplan.hw.detect import detect_all
    from llmplan.hw.nvidia import parse_nvidia_smi_csv
    from llmplan.hw.types import ProbeResult

    igpu = igpu_from_uevent(data_text("sysfs_uevent_intel_igpu.txt"), vm_ram())
    nvidia = parse_nvidia_smi_csv(data_text("nvidia_smi_rtx4090.csv"))
    both = detect_all(2.0, probes=(("NVIDIA", lambda _t: ProbeResult(gpus=nvidia)),
                                   ("Intel", lambda _t: ProbeResult(gpus=(igpu,)))))
    assert [g.name for g in both.gpus] == ["NVIDIA GeForce RTX 4090"]
    assert any("left out: a discrete GPU is present" in r for r in both.reasons)
    alone = detect_all(2.0, probes=(("Intel", lambda _t: ProbeResult(gpus=(igpu,))),))
    assert [g.source for g in alone.gpus] == ["sysfs"]
