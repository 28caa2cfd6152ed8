"""The fused AdamW step priced from its measured kernel rate, per dtype and GPU (``core.training.optimizer_kernel``).

Sources (tests/data/adamw/fused_adamw_2026-11.json, with GPU, software, date and method):
- torch.profiler sums of ``multi_tensor_apply_kernel`` per step in Hugging Face ``LlamaForCausalLM`` training
  steps (the real Llama-3.1-8B and -70B configs with 4 and 2 layers, random weights, pure bf16, batch 1,
  ``torch.optim.AdamW(lr=1e-5, fused=True)`` over all parameters; torch 2.11.0+cu130, transformers 5.17,
  2026-11-28) on an H100 SXM 80GB HBM3 (700 W) and an H200 SXM 141GB;
- a microbenchmark of the same optimizer over 2^28 fp32 parameters on the H100 SXM (torch 2.11 / cuBLAS,
  2026-11-24): 2.931 ms.

The catalog's shares (catalogs/systems/efficiency.toml) are these measurements summarised: the fp32 share is the
microbenchmark's own, the 16-bit share of each card the mean of its two profiled steps. Reproducing them is the
measurement reproducing itself, so the tolerance is tight: 5% for the profiled steps (the two rows of one card
are 5-7% apart per parameter and the mean sits between them: +2.6%/-2.5% on the H100, +3.4%/-3.6% on the H200),
1% for the microbenchmark.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from llmplan.catalog.hardware import load_hardware_catalog
from llmplan.catalog.models import load_model_catalog
from llmplan.core.engine import estimate
from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.hardware import ClusterSpec
from llmplan.core.params import count_params
from llmplan.core.search.planner import quick_layout
from llmplan.core.training.optimizer_kernel import (
    OptimizerRate,
    counted_bytes,
    fused_adamw,
    optimizer_rate,
    optimizer_time,
)
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

DATA = json.loads((Path(__file__).parents[2] / "data" / "adamw" / "fused_adamw_2026-11.json").read_text())
COLS = DATA["profiles"]["columns"]
ROWS = [dict(zip(COLS, r, strict=True)) for r in DATA["profiles"]["rows"]]
H100, H200 = "nvidia-h100-sxm-80gb", "nvidia-h200-sxm-141gb"


def _spec(model: str, layers: int | None = None):
    entry = load_model_catalog().get(model)
    spec = getattr(entry, "spec", entry)
    return spec if layers is None else spec.model_copy(update={"num_layers": layers})


def _scenario(gpu_id: str, model, training: TrainingSettings, dp: int = 1, prof: FrameworkProfile | None = None):
    cat = load_hardware_catalog()
    return Scenario(model=model, cluster=ClusterSpec(gpu=cat.gpu(gpu_id).spec, gpus_per_node=max(dp, 1)),
                    workload="finetune", parallelism=ParallelLayout(dp=dp), efficiency=cat.efficiency_for(gpu_id),
                    training=training, framework_profile=prof)


def _pure_bf16(seq: int) -> TrainingSettings:
    return TrainingSettings(method="full", regime="pure", precision="bf16", micro_batch=1, global_batch=1,
                            seq_len=seq, zero_stage=0, offload="none", optimizer="adamw")


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['gpu_id']}-{r['model']}-{r['layers']}" for r in ROWS])
def test_parameter_counts_are_exact(row):
    """The optimizer updates every parameter: the catalog config's count with the profiled layer count."""
    assert count_params(_spec(row["model"], row["layers"])).total == row["params"]


def profiled_step_price(row: dict) -> float:
    """Seconds the estimate of the profiled run (pure bf16, one GPU) charges for the optimizer step."""
    sc = _scenario(row["gpu_id"], _spec(row["model"], row["layers"]), _pure_bf16(row["seq"]))
    return estimate(sc).compute.breakdown["optimizer"]


def microbenchmark_price() -> float:
    """Seconds the engine charges the fp32 microbenchmark on its GPU."""
    mb = DATA["microbenchmark"]
    cat = load_hardware_catalog()
    rate = optimizer_rate(cat.gpu(mb["gpu_id"]).spec, cat.efficiency_for(mb["gpu_id"]), TrainingSettings(), None)
    return optimizer_time(mb["params"], 4.0, 4.0, 8.0, 0.0, False, rate)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['gpu_id']}-{r['model']}-{r['layers']}" for r in ROWS])
def test_the_profiled_bf16_steps_within_5_percent(row):
    """The estimate of the profiled run charges the measured kernel time within 5%."""
    priced = profiled_step_price(row)
    measured = row["fused_adamw_us_per_step"] * 1e-6
    assert priced == pytest.approx(measured, rel=0.05), f"{priced * 1e3:.2f} vs {measured * 1e3:.2f} ms"


def test_the_fp32_microbenchmark_within_1_percent():
    assert microbenchmark_price() == pytest.approx(DATA["microbenchmark"]["seconds"], rel=0.01)


def test_the_16bit_kernel_is_not_half_the_fp32_one_and_the_h200_gains_little():
    """Per parameter, 16-bit tensors take 0.68 of the fp32 kernel's time on the H100 (not 0.5: the kernel is
    not bound by HBM there), and the H200's 1.43x bandwidth buys 1.13x on the 16-bit kernel."""
    cat = load_hardware_catalog()
    h100 = optimizer_rate(cat.gpu(H100).spec, cat.efficiency_for(H100), TrainingSettings(), None)
    h200 = optimizer_rate(cat.gpu(H200).spec, cat.efficiency_for(H200), TrainingSettings(), None)
    assert h100.s16 / h100.s32 == pytest.approx(0.68, abs=0.01)
    assert h100.s16 / h200.s16 == pytest.approx(1.13, abs=0.01)


def test_mixed_dtypes_lie_between_the_two_kernels():
    """14 B at the 16-bit kernel's time, 28 B at the fp32 one's, linear between; a separate 16-bit copy written
    beyond 28 B at the fp32 kernel's bytes per second; other optimizers keep bytes + 4 B at the bandwidth."""
    r = OptimizerRate(bandwidth=2.68e12, s16=7e-12, s32=11e-12)
    assert optimizer_time(1.0, 2.0, 2.0, 4.0, 0.0, False, r) == pytest.approx(7e-12)
    assert optimizer_time(1.0, 4.0, 4.0, 8.0, 0.0, False, r) == pytest.approx(11e-12)
    assert optimizer_time(1.0, 4.0, 2.0, 4.0, 0.0, False, r) == pytest.approx(7e-12 + 6 / 14 * 4e-12)  # 20 B
    assert optimizer_time(1.0, 4.0, 4.0, 8.0, 2.0, True, r) == pytest.approx(11e-12 * 30 / 28)  # Megatron's 30 B
    arrays = optimizer_time(np.ones(3), np.array([2.0, 4.0, 4.0]), np.array([2.0, 2.0, 4.0]),
                            np.array([4.0, 4.0, 8.0]), np.array([0.0, 0.0, 2.0]), True, r)
    assert arrays == pytest.approx([7e-12, 7e-12 + 6 / 14 * 4e-12, 11e-12 * 30 / 28])
    other = OptimizerRate(bandwidth=2.68e12)
    assert optimizer_time(1.0, 4.0, 4.0, 4.0, 0.0, False, other) == pytest.approx((counted_bytes(4, 4, 4, 0, False)
                                                                                    + 4) / 2.68e12)


def test_only_the_fused_adamw_gets_the_measured_rate():
    fused = FrameworkProfile()
    foreach = FrameworkProfile(optimizer_intermediates=1)
    assert fused_adamw(TrainingSettings(optimizer="adamw"), fused)
    assert not fused_adamw(TrainingSettings(optimizer="adamw"), foreach)
    assert not fused_adamw(TrainingSettings(optimizer="adamw", paged_optimizer=True), fused)
    for other in ("sgd", "momentum", "lion", "adafactor", "muon", "adam8bit"):
        assert not fused_adamw(TrainingSettings(optimizer=other), fused)


CASES = {
    "pure-bf16": (H200, dict(regime="pure"), 1, None),
    "amp-fp32-params": (H100, dict(regime="amp"), 1, FrameworkProfile(params_are_master=True)),
    "megatron-master-zero1": (H100, dict(regime="amp", zero_stage=1), 8, None),
    "deepspeed-bf16-grads": (H200, dict(regime="amp", zero_stage=2, fp32_grad_accumulation=False), 8, None),
    "adam8bit": (H100, dict(regime="amp", optimizer="adam8bit"), 1, None),
    "foreach": (H100, dict(regime="pure"), 1, FrameworkProfile(optimizer_intermediates=1)),
}


@pytest.mark.parametrize("case", CASES)
def test_the_search_prices_the_optimizer_as_the_estimate(case):
    """The layout search's quick model and the estimate call the same function with the same rates (to 1e-9). The
    search's optimizer column also holds the gradient clipping before the step (``grad_clip``), so it is compared
    with the estimate's two parts together."""
    gpu, kw, dp, prof = CASES[case]
    tr = TrainingSettings(method="full", precision="bf16", micro_batch=1, global_batch=dp, seq_len=2048,
                          offload="none", **{"optimizer": "adamw", "zero_stage": 0, **kw})
    sc = _scenario(gpu, _spec("meta-llama/Llama-3.2-1B"), tr, dp, prof)
    parts = estimate(sc).compute.breakdown
    engine = parts["optimizer"]
    _, res = quick_layout(sc)
    assert engine > 0
    assert float(res.optimizer_time[0]) == pytest.approx(engine + parts.get("gradient_clipping", 0.0), rel=1e-9)


def test_the_catalog_shares_are_the_stored_measurements():
    """fp32: the microbenchmark's 28 B per parameter; 16-bit: the mean of each card's two profiled steps at 14 B
    per parameter (rounded to 0.001). Measured on the H100 and H200 classes, the H100's elsewhere (assumption)."""
    cat = load_hardware_catalog()
    mb = DATA["microbenchmark"]
    peak = {g: cat.gpu(g).spec.memory_bandwidth for g in (H100, H200)}
    assert cat.efficiency_for(H100).adamw_fp32 == pytest.approx(
        mb["params"] * 28 / mb["seconds"] / peak[H100], abs=5e-4)
    for gpu in (H100, H200):
        shares = [r["params"] * 14 / (r["fused_adamw_us_per_step"] * 1e-6) / peak[gpu] for r in ROWS
                  if r["gpu_id"] == gpu]
        assert cat.efficiency_for(gpu).adamw_16bit == pytest.approx(sum(shares) / 2, abs=5e-4)
        assert cat.efficiency_basis_for(gpu)["adamw_16bit"].basis == "measured"
    assert cat.efficiency_basis_for(H100)["adamw_fp32"].basis == "measured"
    assert cat.efficiency_basis_for(H200)["adamw_fp32"].basis == "assumption"
    a100 = cat.efficiency_for("nvidia-a100-sxm4-80gb")
    assert (a100.adamw_fp32, a100.adamw_16bit) == (0.765, 0.561)
    assert cat.efficiency_basis_for("nvidia-a100-sxm4-80gb")["adamw_16bit"].basis == "assumption"


# fused AdamW per step, torch.profiler on three GPU-bound Hugging Face runs on an H200 SXM 141GB (torch 2.11.0+cu130,
# transformers 5.17.0, 2026-11-27; the runs of test_hf_h200_runs.py, docs/training.md "Where the time goes,
# profiled"): a check of the rule, not an input. Bands: (low, high) error of the price against the profile.
H200_PROFILED = {
    "3b-amp": (25.8e-3, (-0.08, 0.0)),  # fp32 tensors: the H100's share taken for the H200 reads 5% fast
    "8b-amp-ckpt": (65.2e-3, (-0.08, 0.0)),  # 6% fast
    # bf16 tensors: +28%, pinned where it falls. The per-parameter time of the bf16 kernel grows with the model
    # (5.2 ps here, 6.4 and 6.9 ps in the 2026-11-28 rows); the cause is open (docs/training.md, "The optimizer kernel")
    "1.5b-bf16": (8.0e-3, (0.20, 0.35)),
}


@pytest.mark.parametrize("name", H200_PROFILED)
def test_the_rule_against_earlier_h200_profiles(name):
    from tests.core.training.test_hf_h200_runs import _estimate

    measured, (lo, hi) = H200_PROFILED[name]
    _, est = _estimate(name)
    error = est.compute.breakdown["optimizer"] / measured - 1
    assert lo <= error <= hi, f"{name}: {error:+.1%}"
