"""detect_all on this machine (no GPU) and with probes that hang or fail."""

from __future__ import annotations

import time

from llmplan.hw.detect import detect_all
from llmplan.hw.types import DetectedGpu, DetectionReport, ProbeResult


def test_detect_all_here_reports_why_no_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    report = detect_all(timeout_s=3.0)
    assert report.host is not None and report.host.logical_cores
    if not report.gpus:  # the usual case on CI and on this development machine
        assert report.summary().startswith("no GPU found: ")
        assert report.reasons and all(r.strip() for r in report.reasons)


def test_hanging_probe_is_abandoned_with_a_reason():
    def hang(_t):
        time.sleep(3)
        return ProbeResult()

    def broken(_t):
        raise RuntimeError("bug")

    start = time.perf_counter()
    report = detect_all(timeout_s=0.3, probes=(("Slow", hang), ("Broken", broken)))
    assert time.perf_counter() - start < 2.5  # the probe hangs 3 s; we must not wait for it
    assert "Slow: timed out after 0.3 s" in report.reasons
    assert any(r.startswith("Broken: probe failed") for r in report.reasons)


def test_summary_groups_identical_gpus():
    g = DetectedGpu(vendor="nvidia", name="NVIDIA H100 80GB HBM3", memory_total_bytes=81559 * 2**20,
                    memory_free_bytes=None, index=0, source="nvml")
    report = DetectionReport(gpus=(g, g), host=None)
    assert report.summary() == "2× NVIDIA H100 80GB HBM3 (79.6 GiB)"
    assert report.to_dict()["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert DetectionReport(gpus=(), host=None).summary() == "no GPU found: no probe reported a device"


def test_detect_all_with_replayed_nvml_node(install_fake_pynvml, fake_commands, monkeypatch):
    from llmplan.hw import apple

    monkeypatch.setattr(apple.platform, "system", lambda: "Linux")
    install_fake_pynvml("nvml_8xh100_sxm.json")
    fake_commands({})
    report = detect_all(timeout_s=2.0)
    assert len(report.gpus) == 8 and report.summary() == "8× NVIDIA H100 80GB HBM3 (79.6 GiB)"
    assert report.reasons == ("AMD: amd-smi not installed", "AMD: rocm-smi not installed", "Intel: xpu-smi not installed")
