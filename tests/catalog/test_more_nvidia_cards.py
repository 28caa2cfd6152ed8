"""The cards of catalogs/gpus/nvidia-more.toml: each is found from the name NVML reports and its memory,
and its rates follow the datasheet or the whitepaper's per-SM arithmetic stated in the entry."""

import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.fit.local import local_hardware
from llmplan.hw.detect import DetectionReport
from llmplan.hw.nvidia import parse_nvidia_smi_csv

MIB = 2**20

# (name as NVML / nvidia-smi report it, memory.total MiB, catalog id). Memory: the marketing size in MiB
# less a typical reserve; the RTX PRO 6000 line is a recorded nvidia-smi report (tests/hw/test_fit.py).
CARDS = [
    ("NVIDIA GeForce RTX 3070", 8192, "nvidia-rtx-3070-8gb"),
    ("NVIDIA GeForce RTX 3080", 10240, "nvidia-rtx-3080-10gb"),
    ("NVIDIA GeForce RTX 3080 Ti", 12288, "nvidia-rtx-3080-ti-12gb"),
    ("NVIDIA GeForce RTX 4070 Ti", 12282, "nvidia-rtx-4070-ti-12gb"),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", 16376, "nvidia-rtx-4070-ti-super-16gb"),
    ("NVIDIA GeForce RTX 5070", 12227, "nvidia-rtx-5070-12gb"),
    ("NVIDIA GeForce RTX 5070 Ti", 16303, "nvidia-rtx-5070-ti-16gb"),
    ("NVIDIA GeForce RTX 2060 SUPER", 8192, "nvidia-rtx-2060-super-8gb"),
    ("NVIDIA GeForce RTX 2070 SUPER", 8192, "nvidia-rtx-2070-super-8gb"),
    ("NVIDIA GeForce RTX 2080 Ti", 11264, "nvidia-rtx-2080-ti-11gb"),
    ("NVIDIA RTX 4000 Ada Generation", 20475, "nvidia-rtx-4000-ada-20gb"),
    ("NVIDIA RTX 5000 Ada Generation", 32760, "nvidia-rtx-5000-ada-32gb"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887, "nvidia-rtx-pro-6000-blackwell-96gb"),
    ("NVIDIA RTX A4000", 16376, "nvidia-rtx-a4000-16gb"),
    ("NVIDIA RTX A4500", 20470, "nvidia-rtx-a4500-20gb"),
    ("NVIDIA RTX A5000", 24564, "nvidia-rtx-a5000-24gb"),
    ("NVIDIA A30", 24576, "nvidia-a30-24gb"),
    ("Quadro RTX 4000", 8192, "nvidia-quadro-rtx-4000-8gb"),
    ("Quadro RTX 6000", 24576, "nvidia-quadro-rtx-6000-24gb"),
    ("Quadro RTX 8000", 49152, "nvidia-quadro-rtx-8000-48gb"),
    ("NVIDIA TITAN V", 12288, "nvidia-titan-v-12gb"),
    ("NVIDIA TITAN Xp", 12288, "nvidia-titan-xp-12gb"),
    ("NVIDIA GeForce GTX 1070 Ti", 8192, "nvidia-gtx-1070-ti-8gb"),
    ("NVIDIA GeForce GTX 1080 Ti", 11264, "nvidia-gtx-1080-ti-11gb"),
    ("NVIDIA GeForce GTX 1660", 6144, "nvidia-gtx-1660-6gb"),
    ("Tesla P40", 24576, "nvidia-tesla-p40-24gb"),
    ("Tesla P100-PCIE-16GB", 16384, "nvidia-tesla-p100-pcie-16gb"),
    ("Orin (nvgpu)", 62841, "nvidia-jetson-agx-orin-64gb"),
]


@pytest.mark.parametrize(("reported", "mib", "expected"), CARDS)
def test_detected_from_its_nvml_name(reported, mib, expected):
    line = f"0, GPU-x, {reported}, {mib}, 0, {mib}, 100.0, 8.6, 4, 16, [N/A]"
    m = local_hardware(DetectionReport(gpus=parse_nvidia_smi_csv(line), host=None))
    assert m.catalog_id == expected and m.speed_known


def test_every_new_card_is_listed_and_sourced():
    cat = load_hardware_catalog()
    for _, _, gid in CARDS:
        g = cat.gpu(gid)
        assert g.sources["tflops"].url.startswith("https://"), gid
        assert g.spec.peak_flops.fp32, gid


@pytest.mark.parametrize(
    ("gid", "dtype", "tflops"),
    [
        # GA102 whitepaper: RTX 3080 29.8 TFLOPS fp32, 59.5 dense fp16 with fp32 accumulate (119 with fp16 accumulate)
        ("nvidia-rtx-3080-10gb", "fp32", 29.8), ("nvidia-rtx-3080-10gb", "fp16", 59.5),
        # Turing whitepaper: RTX 2080 Ti at 1.545 GHz reference boost, 13.4 fp32; no bf16 tensor cores
        ("nvidia-rtx-2080-ti-11gb", "fp32", 13.4),
        # A30 datasheet: 165 TFLOPS bf16 dense, 10.3 fp32
        ("nvidia-a30-24gb", "bf16", 165.0), ("nvidia-a30-24gb", "fp32", 10.3),
        # Tesla P40 datasheet: 12 TFLOPS fp32; fp16 falls back to fp32 (1/64-rate fp16 is not used)
        ("nvidia-tesla-p40-24gb", "fp16", 12.0),
    ],
)
def test_rates(gid, dtype, tflops):
    spec = load_hardware_catalog().gpu(gid).spec
    assert spec.peak_flops.for_dtype(dtype) / 1e12 == pytest.approx(tflops, rel=0.01)


def test_turing_has_no_bf16():
    assert load_hardware_catalog().gpu("nvidia-rtx-2080-ti-11gb").spec.peak_flops.bf16 is None
