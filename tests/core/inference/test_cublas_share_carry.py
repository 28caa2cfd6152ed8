"""llama.cpp's F16 cuBLAS prompt share on the HBM data-centre cards, carried from the one card it was measured on.

The share was measured once: llama.cpp PR #6017 (ggerganov, 2024-03-12), an A100 80GB PCIe, codellama-7b F16,
pp512 8,668.24 t/s = 0.364 of 312 TFLOP/s (test_llama_cpp_2024_prompt.py checks that arithmetic). No 2024 run of
llama.cpp on an A100 SXM, an A800, an H100 or an H200 was found, so catalogs/engines.toml carries it to them at the
ratio of what each card's large bf16 GEMMs reach (catalogs/systems/efficiency.toml ``matmul``): share = 0.364 x
matmul / 0.822, the A100 PCIe's MAMF figure (256.4 of 312 TFLOP/s). The reason is physical: a board whose power
limit keeps its tensor cores below the clock its datasheet peak assumes runs every GEMM that much slower, llama.cpp's
included. The H100 PCIe is the case that matters: 350 W and 114 SMs, 495.93 of 756 TFLOP/s in a bf16 torch.mm
(zzc0721/torch-performance-test-data issue #95, torch 2.9.0, 2025-12-14; an H800 PCIe 503.83 in issue #112, 2026-01-05),
0.656 of its peak where the 700 W SXM reaches 0.801, so 0.290 rather than the 0.364 it carried before. The rows are
rounded to three decimals (tolerance 0.0006). Nothing here was set from the XiongjieDai table, which checks it
(test_cuda_llama_cpp_table.py).
"""

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.core.inference.backend import float_prompt_rate, row_for

CAT = load_hardware_catalog()
MEASURED_SHARE, REFERENCE = 0.364, "nvidia-a100-pcie-80gb"  # PR #6017
FAMILY = ("nvidia-a100-", "nvidia-a800-", "nvidia-h100-", "nvidia-h200-")


def carried(gpu_id: str) -> float:
    """The A100 PCIe's measured share at the ratio of the two cards' measured GEMM efficiencies."""
    return MEASURED_SHARE * CAT.efficiency_for(gpu_id).matmul / CAT.efficiency_for(REFERENCE).matmul


def family_ids() -> list[str]:
    return sorted(g.id for g in CAT.gpus if g.id.startswith(FAMILY))


def test_h100_pcie_gemm_efficiency_is_its_own():
    """zzc0721/torch-performance-test-data #95: NVIDIA H100 PCIe, bf16 torch.mm 495.93 TFLOP/s of 756 (fp16 458.03);
    #112: H800 PCIe (the same 114-SM, 350 W board) 503.83, within 2% of it. The SXM's 0.801 (MAMF table) no longer
    applies to the PCIe card."""
    pcie = CAT.efficiency_for("nvidia-h100-pcie-80gb").matmul
    assert pcie == pytest.approx(495.93 / 756, abs=1e-3)
    h800 = 503.83 / 756
    assert h800 == pytest.approx(pcie, rel=0.02)
    assert CAT.efficiency_for("nvidia-h100-sxm-80gb").matmul == pytest.approx(0.801)


@pytest.mark.parametrize("gpu_id", family_ids())
def test_every_family_card_carries_the_a100_share_by_its_gemm_efficiency(gpu_id):
    """Every A100, A800, H100 and H200 in the catalog matches a row (none falls back to the GeForce 0.438), and the
    row is 0.364 x its matmul efficiency / the A100 PCIe's: A100 PCIe 0.364, A100/A800 SXM 0.380, H100 SXM/NVL and
    H200 0.355, H100 PCIe 0.290."""
    rows = engine_profile("llama-cpp").prefill_float_share_by_gpu
    share = row_for(rows, "cuda", CAT.gpu(gpu_id).spec)
    assert share is not None
    assert share == pytest.approx(carried(gpu_id), abs=6e-4)


def test_the_three_llama_cpp_profiles_share_the_rows():
    """The same cuBLAS call in every build and in Ollama's vendored copy."""
    rows = {engine_profile(e).prefill_float_share_by_gpu for e in ("llama-cpp", "llama-cpp-2026", "ollama")}
    assert len(rows) == 1


def test_h100_pcie_f16_prompt_rate():
    """0.290 of 756 TFLOP/s = 219 TFLOP/s (was 0.364: 275); the SXM keeps 0.355 of 989.4 = 351."""
    llama = engine_profile("llama-cpp")
    pcie = float_prompt_rate(llama, CAT.gpu("nvidia-h100-pcie-80gb").spec, "cuda")
    sxm = float_prompt_rate(llama, CAT.gpu("nvidia-h100-sxm-80gb").spec, "cuda")
    assert pcie == pytest.approx(219.2e12, rel=1e-3)
    assert sxm / pcie == pytest.approx((0.801 * CAT.gpu("nvidia-h100-sxm-80gb").spec.peak_flops.fp16)
                                       / (0.656 * 756e12), rel=5e-3)  # the rows are rounded
