"""One evaluation checks each catalog file on disk once (``catalog.snapshot.one_catalog_read``), and a user's
edit of their catalog files still shows on the next evaluation.

Before (2026-11-28, issue speed33's profile), resolving one plan checked the user's hardware folder four
times and the frameworks files twice: about ten catalog loads, each a ``stat`` of every file it reads."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from llmplan.core.workload import InferenceSettings, ParallelLayout, TrainingSettings
from llmplan.plan.document import HardwareRef, ModelRef, PlanDocument
from llmplan.plan.evaluate import evaluate_plan
from llmplan.resources_path import catalogs_dir

MODEL = ModelRef(id="meta-llama/Meta-Llama-3-8B")
H100 = "nvidia-h100-sxm-80gb"
PLANS = {
    "fine-tune": PlanDocument(model=MODEL, hardware=HardwareRef(gpu=H100), workload="finetune",
                              training=TrainingSettings(method="lora", seq_len=4096, tokens=1e8)),
    "pre-train": PlanDocument(model=MODEL, hardware=HardwareRef(gpu=H100, gpus_per_node=8, nodes=2, node="dgx-h100",
                                                                network="ib-ndr-400"), workload="pretrain",
                              parallelism=ParallelLayout(tp=8, dp=2)),
    "inference": PlanDocument(model=MODEL, hardware=HardwareRef(gpu=H100), workload="inference",
                              inference=InferenceSettings(engine="vllm")),
}


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A user data folder with a file of each user catalog kind, so their checks are counted too."""
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "notes.toml").write_text("")
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "mine.toml").write_text("")
    (tmp_path / "engines.toml").write_text("[vllm]\nname = 'vLLM'\n")
    (tmp_path / "frameworks.toml").write_text("[megatron]\nname = 'Megatron-Core'\n")
    return tmp_path


def _stats_during(monkeypatch, fn) -> Counter:
    """How often each path was ``stat``-ed (links followed: what the catalogs' file stamps read) during ``fn()``."""
    seen: Counter = Counter()
    real = os.stat

    def counting(path, *args, **kwargs):
        if kwargs.get("follow_symlinks", True):
            seen[os.fspath(path)] += 1
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    try:
        fn()
    finally:
        monkeypatch.setattr(os, "stat", real)
    return seen


@pytest.mark.parametrize("name", PLANS)
def test_one_evaluation_checks_each_catalog_file_once(name, user_dir, monkeypatch):
    doc = PLANS[name]
    evaluate_plan(doc)  # the caches are filled; what follows is a knob change's cost
    seen = _stats_during(monkeypatch, lambda: evaluate_plan(doc.model_copy()))
    twice = {path: n for path, n in seen.items() if n > 1}
    assert not twice, f"checked more than once in one evaluation: {twice}"
    # the count is of the catalogs' own checks: each one this plan uses was made (else this test proves nothing)
    profiles = "engines.toml" if name == "inference" else "frameworks.toml"
    for path in (user_dir / "hardware", user_dir / "system", user_dir / profiles, catalogs_dir() / profiles,
                 catalogs_dir() / "system" / "power.toml"):
        assert seen[str(path)] == 1, path


def test_an_edit_of_the_users_engines_file_shows_on_the_next_evaluation(user_dir):
    """The override semantics the caches keep (catalog.file_stamp): the user's engines.toml is read again when it
    changes, between two evaluations."""
    doc = PLANS["inference"]
    scenario, est = evaluate_plan(doc)
    shipped = scenario.engine_profile.framework_bytes
    (user_dir / "engines.toml").write_text(f"[vllm]\nframework_bytes = {shipped + 2**30}\n")
    scenario2, est2 = evaluate_plan(doc)
    assert scenario2.engine_profile.framework_bytes == shipped + 2**30
    # 1 GiB more reserved by the engine: the overhead figure grows by exactly that (tolerance: float rounding)
    assert est2.memory.overhead.value - est.memory.overhead.value == pytest.approx(2**30, rel=1e-9)


def test_an_edit_of_the_users_frameworks_file_shows_on_the_next_evaluation(user_dir):
    doc = PLANS["pre-train"]
    scenario, _ = evaluate_plan(doc)
    assert scenario.framework_profile.id == "megatron" and scenario.framework_profile.name == "Megatron-Core"
    (user_dir / "frameworks.toml").write_text("[megatron]\nname = 'Megatron-Core, edited by the user'\n")
    assert evaluate_plan(doc)[0].framework_profile.name == "Megatron-Core, edited by the user"


def test_the_framework_profile_of_a_document_is_worked_out_once_while_the_catalog_stays(user_dir, monkeypatch):
    """The app asks for the profile of each new document (its training tabs) before evaluating it; resolve then
    reuses it. A new document, or an edit of the user's frameworks.toml, works it out again."""
    from llmplan.plan import resolve as resolve_module

    calls = []
    real = resolve_module.framework_profile
    monkeypatch.setattr(resolve_module, "framework_profile", lambda *a, **k: calls.append(a) or real(*a, **k))
    doc = PLANS["fine-tune"]
    shown = resolve_module.plan_framework_profile(doc)
    assert resolve_module.resolve(doc).framework_profile is shown and len(calls) == 1
    edited = doc.model_copy(update={"training": doc.training.model_copy(update={"seq_len": 2048})})
    assert resolve_module.resolve(edited).framework_profile == shown and len(calls) == 2
    (user_dir / "frameworks.toml").write_text("[hf-trainer]\nname = 'Trainer, edited by the user'\n")
    assert resolve_module.resolve(edited).framework_profile.name == "Trainer, edited by the user" and len(calls) == 3
