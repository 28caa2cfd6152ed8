"""The engine's caches never answer for inputs that changed.

The training engine caches its heavy parts by the identity of the spec objects they read (``core.memo``):
the worst stage's memory, the compute times, the token FLOPs and the collectives. ``model_copy`` keeps the
sub-objects an edit leaves alone, so after warming the caches with a scenario, each edited copy below shares
all but one object with it. Its estimate must equal, exactly, that of a scenario rebuilt from its dump (new
objects throughout, so no identity cache can answer). A key that left out an object a cached part reads
would return the warm scenario's numbers here. Exact equality: both sides run the same arithmetic.
"""

from __future__ import annotations

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.workload import Scenario, TrainingSettings

from .helpers import A100_80GB, cluster, scenario
from .test_estimate_smoke import LLAMA3_8B


def _megatron() -> Scenario:
    return scenario(LLAMA3_8B, 16, tp=2, pp=2, seq_len=8192, global_batch=128)


def _hf_paged() -> Scenario:
    """An eager profile with a paged optimizer: the stage's memory reads the GPU's usable memory."""
    return Scenario(model=LLAMA3_8B, cluster=cluster(1), workload="finetune",
                    training=TrainingSettings(method="lora", seq_len=4096, global_batch=16, recompute="full",
                                              zero_stage=0, framework="hf-trainer", paged_optimizer=True),
                    framework_profile=load_framework_profiles()["hf-trainer"])


def _edit(sc: Scenario, part: str, **changes) -> Scenario:
    return sc.model_copy(update={part: getattr(sc, part).model_copy(update=changes)})


EDITS = {
    "training: ZeRO-3": (_megatron, lambda sc: _edit(sc, "training", zero_stage=3)),
    "training: full recompute": (_megatron, lambda sc: _edit(sc, "training", recompute="full")),
    "training: shorter sequences": (_megatron, lambda sc: _edit(sc, "training", seq_len=4096)),
    "training: micro-batch 2 (fewer micro-batches per step)": (_megatron, lambda sc: _edit(sc, "training",
                                                                                            micro_batch=2)),
    "parallelism: tp 4, pp 1": (_megatron, lambda sc: _edit(sc, "parallelism", tp=4, pp=1)),
    "efficiency: matmul": (_megatron, lambda sc: _edit(sc, "efficiency", matmul=0.5)),
    "model: fewer layers": (_megatron, lambda sc: _edit(sc, "model", num_layers=16)),
    "cluster: slower network": (_megatron, lambda sc: _edit(sc, "cluster", network=sc.cluster.network.model_copy(
        update={"bandwidth_per_gpu": 5e9}))),
    "GPU: less memory (paged optimizer)": (_hf_paged, lambda sc: _edit(sc, "cluster", gpu=A100_80GB.model_copy(
        update={"memory_bytes": 20 * 2**30}))),
    "framework: more fragmentation": (_hf_paged, lambda sc: sc.model_copy(update={
        "framework_profile": sc.framework.model_copy(update={"fragmentation": 0.3})})),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_scenario_is_estimated_afresh(edit):
    make, change = EDITS[edit]
    warm = make()
    before = estimate(warm)
    edited = change(warm)
    rebuilt = Scenario.model_validate(edited.model_dump())
    assert rebuilt == edited and rebuilt.model is not edited.model
    after = estimate(edited)
    assert after == estimate(rebuilt)
    assert after != before  # the edit matters, so a stale cache entry would have shown


def test_the_layout_is_kept_per_spec_objects_and_a_broken_rule_raises_each_time():
    """``layout.resolve`` is cached by the identity of what it reads (model, parallelism, training, cluster,
    framework profile) and the workload: the same objects give the very same ``Layout``; a new workload changes
    the batch the published rule gives (no global batch stated), so it is worked out again; a layout that breaks
    a rule is never cached."""
    from llmplan.core.training.layout import resolve
    from llmplan.errors import LayoutError

    sc = _megatron()
    assert resolve(sc) is resolve(sc)
    by_rule = _edit(sc, "training", global_batch=0, batch_rule="published")
    pretrain = by_rule.model_copy(update={"workload": "pretrain"})
    finetune = by_rule.model_copy(update={"workload": "finetune"})
    fresh = Scenario.model_validate(finetune.model_dump())
    assert resolve(finetune) == resolve(fresh) and resolve(pretrain).global_batch != resolve(finetune).global_batch
    broken = _edit(sc, "parallelism", dp=3)
    for _ in range(2):
        with pytest.raises(LayoutError, match="tp·pp·dp·cp"):
            resolve(broken)
