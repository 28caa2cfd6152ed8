"""Every shipped example plan opens, saves byte-identically, resolves, and is estimated."""

import pytest

from llmplan.core.search.planner import quick_layout
from llmplan.plan.planfile import load_plan, save_plan
from llmplan.plan.resolve import resolve
from llmplan.resources_path import resources_dir

EXAMPLES = sorted((resources_dir() / "examples").glob("*.llmplan"))


def test_the_five_examples_are_shipped():
    assert len(EXAMPLES) == 5


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_round_trips_byte_identically(path, tmp_path):
    copy = save_plan(load_plan(path), tmp_path / path.name)
    assert copy.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_resolves_from_its_inline_specs(path, monkeypatch):
    # inline specs only: no catalog lookups (an empty user data dir changes nothing)
    monkeypatch.setenv("LLMPLAN_DATA_DIR", "/nonexistent-llmplan-test-dir")
    scenario = resolve(load_plan(path))
    assert scenario.parallelism.gpus <= scenario.cluster.total_gpus


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_estimated(path):
    from llmplan.core.engine import estimate

    est = estimate(resolve(load_plan(path)))
    assert est.memory.total.value > 0


def test_llama3_405b_example_fits_in_80_gb_on_its_uneven_pipeline():
    """Llama 3 paper (arXiv 2407.21783) Table 4 and §3.3.2: 126 layers on PP16 ran on H100 80GB without
    activation checkpointing at 8K tokens, with one layer fewer on the first and the last stage. The engine
    splits it 7, 8 ×14, 7 and must fit it in what the H100 reports (81,559 MiB = 79.65 GiB): 74.69 GiB."""
    from llmplan.core.engine import estimate

    path = next(p for p in EXAMPLES if "405b" in p.name)
    sc = resolve(load_plan(path))
    est = estimate(sc)
    assert sc.training.recompute == "none" and sc.framework.id == "llama3-meta"
    assert est.fits and est.memory.total.value < 0.95 * sc.cluster.gpu.memory_bytes
    # 16 micro-batches on 16 stages: every stage holds all of them; the second stage's 8 layers outweigh the
    # first's 7 and the embedding
    assert est.memory.worst_gpu == "pipeline stage 2 of 16 (8 layers)"
    assert any("Llama 3 split" in w and "7, 8 ×14, 7" in w for w in est.warnings)


def test_llama3_405b_layout_is_valid_and_fits_by_the_quick_model():
    """Llama 3 paper Table 4: TP8 CP1 PP16 DP128 on 16,384 H100 at seq 8,192 ran (so it fits in 80 GB)."""
    path = next(p for p in EXAMPLES if "405b" in p.name)
    scenario = resolve(load_plan(path))
    ranked, _ = quick_layout(scenario)
    assert ranked.gpus == 16_384
    assert ranked.memory_bytes <= scenario.cluster.gpu.usable_memory_bytes
