"""The auto-planner against Narayanan et al. 2021 (Megatron-LM, arXiv:2104.04473), Table 1.

Table 1 lists, for GPT models of 1.7B to 1T parameters (vocab 51,200, seq 2,048), the
tensor- and pipeline-parallel sizes, GPU count and global batch used on Selene (DGX
A100 80GB, 8 GPUs per node, 8×200 Gb/s HDR InfiniBand), and the measured TFLOP/s per GPU.
Checks: (1) the paper's own layout is valid and fits in 80 GB by our estimate (with the
activation recomputation the paper used); (2) the search, given the same GPUs, puts a
layout at least as fast as the paper's (by our own quick model) in its top 5.
Tolerance: exact comparison of our own estimates (same model for both), 1e-9 relative.
"""



import pytest

from llmplan.core.engine import estimate
from llmplan.core.search import search
from llmplan.core.search.planner import quick_layout
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings

from .specs import A100_80GB, cluster, gpt

# params (B), heads, hidden, layers, TP, PP, GPUs, global batch, measured TFLOP/s per GPU
TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def _scenario(row) -> tuple[Scenario, ParallelLayout, TrainingSettings]:
    size, heads, hidden, layers, tp, pp, gpus, batch, _tflops = row
    model = gpt(f"GPT {size}B", hidden, heads, layers)
    training = TrainingSettings(seq_len=2048, global_batch=batch, micro_batch=1, recompute="full", zero_stage=0)
    sc = Scenario(model=model, cluster=cluster(A100_80GB, 8, gpus // 8), training=training)
    return sc, ParallelLayout(tp=tp, pp=pp, dp=gpus // (tp * pp)), training


@pytest.mark.parametrize("row", TABLE_1, ids=lambda r: f"{r[0]}B")
def test_paper_layout_is_valid_and_fits(row):
    sc, layout, training = _scenario(row)
    ranked, _ = quick_layout(sc, layout, training)
    assert ranked.memory_bytes <= A100_80GB.usable_memory_bytes, ranked.memory_bytes / 2**30


@pytest.mark.parametrize("row", TABLE_1, ids=lambda r: f"{r[0]}B")
def test_search_top5_is_at_least_as_good_as_the_paper(row):
    sc, layout, training = _scenario(row)
    paper, _ = quick_layout(sc, layout, training)
    result = search(sc, top=5, use_fewer_gpus=False)
    assert result.best, result.note
    assert all(r.gpus == row[6] for r in result.best)
    assert max(r.tokens_per_s for r in result.best) >= paper.tokens_per_s * (1 - 1e-9)
    for r in result.best:
        assert r.memory_bytes <= r.capacity_bytes


@pytest.mark.parametrize("row", TABLE_1, ids=lambda r: f"{r[0]}B")
def test_quick_model_throughput_of_the_paper_layout_matches_the_measurement(row):
    """Hardware TFLOP/s per GPU (recompute included, as Table 1 counts it, eq. 3) within ±15% of the
    measured figure, with the default matmul efficiency (0.6 of the A100's 312 TFLOP/s dense BF16)."""
    sc, layout, training = _scenario(row)
    _, res = quick_layout(sc, layout, training)
    hardware_flops = float(res.model_flops[0]) * 4 / 3  # full recompute: one extra forward pass
    per_gpu = hardware_flops / float(res.step_time[0]) / row[6]
    assert per_gpu == pytest.approx(row[8] * 1e12, rel=0.15)


@pytest.mark.parametrize("row", TABLE_1, ids=lambda r: f"{r[0]}B")
def test_with_the_full_engine(row):
    """Same two checks, judged by the full training engine (the search refines its short list with it)."""
    sc, layout, training = _scenario(row)
    paper = estimate(sc.model_copy(update={"parallelism": layout, "training": training}))
    assert paper.fits, paper.memory.total.value / 2**30
    result = search(sc, top=5, use_fewer_gpus=False, refine=estimate)
    assert result.best, result.note
    assert max(r.tokens_per_s for r in result.best) >= paper.compute.tokens_per_s.value * (1 - 1e-9)
