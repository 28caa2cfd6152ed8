"""Catalog matching against tiny fake candidates (the real catalog is another helper's)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from llmplan.hw.match import GpuMatch, match_gpu, significant_tokens

MIB, GIB = 2**20, 2**30


@dataclass(frozen=True)
class Spec:
    memory_bytes: int


@dataclass(frozen=True)
class Cand:
    id: str
    match_names: tuple[str, ...]
    spec: Spec


def cand(id_: str, gib: float, *names: str) -> Cand:
    return Cand(id_, names, Spec(int(gib * GIB)))


CATALOG = (
    cand("nvidia-l4", 24, "NVIDIA L4"),
    cand("nvidia-l40s", 48, "NVIDIA L40S"),
    cand("nvidia-a10", 24, "NVIDIA A10"),
    cand("nvidia-a10g", 24, "NVIDIA A10G"),
    cand("nvidia-h100-sxm", 80, "NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),
    cand("nvidia-h100-pcie", 80, "NVIDIA H100 PCIe"),
    cand("nvidia-h100-nvl", 94, "NVIDIA H100 NVL"),
    cand("nvidia-a100-sxm-40gb", 40, "NVIDIA A100-SXM4-40GB"),
    cand("nvidia-a100-sxm-80gb", 80, "NVIDIA A100-SXM4-80GB"),
    cand("nvidia-rtx-4090", 24, "NVIDIA GeForce RTX 4090"),
    cand("nvidia-rtx-4090d", 24, "NVIDIA GeForce RTX 4090 D"),
    cand("nvidia-rtx-4060ti-8gb", 8, "NVIDIA GeForce RTX 4060 Ti"),
    cand("nvidia-rtx-4060ti-16gb", 16, "NVIDIA GeForce RTX 4060 Ti"),
    cand("apple-m2-max-30c-32gb", 32, "Apple M2 Max 30-core GPU"),
    cand("apple-m2-max-38c-96gb", 96, "Apple M2 Max 38-core GPU"),
    cand("apple-m2-max-38c-64gb", 64, "Apple M2 Max 38-core GPU"),
    cand("amd-mi300x", 192, "AMD Instinct MI300X", "AMD Instinct MI300X OAM"),
)


@pytest.mark.parametrize(
    ("reported", "mib", "expected", "how"),
    [
        ("NVIDIA L4", 23034, "nvidia-l4", "exact"),
        ("NVIDIA L40S", 46068, "nvidia-l40s", "exact"),
        ("NVIDIA A10", 23028, "nvidia-a10", "exact"),
        ("NVIDIA A10G", 23028, "nvidia-a10g", "exact"),
        ("NVIDIA H100 80GB HBM3", 81559, "nvidia-h100-sxm", "exact"),  # the SXM part's own name
        ("NVIDIA H100 PCIe", 81559, "nvidia-h100-pcie", "exact"),
        ("NVIDIA H100 NVL", 95830, "nvidia-h100-nvl", "exact"),
        ("nvidia  geforce rtx 4090", 24564, "nvidia-rtx-4090", "exact"),
        ("NVIDIA GeForce RTX 4090 D", 24564, "nvidia-rtx-4090d", "exact"),
        ("NVIDIA GeForce RTX 4060 Ti", 8188, "nvidia-rtx-4060ti-8gb", "exact"),
        ("NVIDIA GeForce RTX 4060 Ti", 16380, "nvidia-rtx-4060ti-16gb", "exact"),
        ("NVIDIA A100-SXM4-40GB", 40536, "nvidia-a100-sxm-40gb", "exact"),
        ("GeForce RTX 4090", 24564, "nvidia-rtx-4090", "tokens"),  # Windows drivers drop "NVIDIA"
        ("AMD Instinct MI300X OAM", 196288, "amd-mi300x", "exact"),
    ],
)
def test_matches(reported, mib, expected, how):
    m = match_gpu(reported, mib * MIB, CATALOG)
    assert (m.candidate_id, m.how) == (expected, how), m.message


@pytest.mark.parametrize(
    ("reported", "mib"),
    [("NVIDIA L40", 46068), ("NVIDIA H100", 81559), ("NVIDIA GeForce RTX 4090 Ti", 24564),
     ("NVIDIA A10M", 23028), ("NVIDIA GeForce RTX 4060", 8188)],
)
def test_near_misses_never_match(reported, mib):
    m = match_gpu(reported, mib * MIB, CATALOG)
    assert not m.matched and m.how == "none" and m.reported_memory_bytes == mib * MIB
    assert "pick" in m.message


def test_no_match_says_so_and_lists_closest():
    m = match_gpu("NVIDIA RTX PRO 6000 Blackwell", 97887 * MIB, CATALOG)
    assert m == GpuMatch("NVIDIA RTX PRO 6000 Blackwell", 97887 * MIB, None, "none", m.message, m.alternatives)
    assert "no catalog GPU matches" in m.message and "95.6 GiB" in m.message


def test_name_match_with_wrong_memory_is_refused():
    m = match_gpu("NVIDIA GeForce RTX 4090", 49140 * MIB, CATALOG)  # a 48 GB modded card
    assert not m.matched and m.alternatives == ("nvidia-rtx-4090",) and "differs" in m.message


def test_ambiguous_without_memory():
    m = match_gpu("NVIDIA GeForce RTX 4060 Ti", None, CATALOG)
    assert not m.matched and set(m.alternatives) == {"nvidia-rtx-4060ti-8gb", "nvidia-rtx-4060ti-16gb"}


def test_apple_by_chip_cores_and_memory():
    m = match_gpu("Apple M2 Max", 96 * GIB, CATALOG, gpu_cores=38)
    assert m.candidate_id == "apple-m2-max-38c-96gb" and m.how == "tokens"
    assert match_gpu("Apple M2 Max", 32 * GIB, CATALOG, gpu_cores=30).candidate_id == "apple-m2-max-30c-32gb"
    wrong = match_gpu("Apple M2 Max", 32 * GIB, CATALOG, gpu_cores=38)
    assert not wrong.matched  # 38-core M2 Max exists only with 64/96 GB here
    assert not match_gpu("Apple M2 Pro", 32 * GIB, CATALOG, gpu_cores=19).matched


def test_significant_tokens():
    assert significant_tokens("NVIDIA H100 80GB HBM3") == {"h100", "hbm3"}
    assert significant_tokens("Apple M2 Max 38-core GPU") == {"m2", "max"}
    assert significant_tokens("NVIDIA A10G") != significant_tokens("NVIDIA A10")
