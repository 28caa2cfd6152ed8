"""Auto-planner behaviour: pruning, ranking, explanations, Pareto fronts, progress and cancellation."""

import pytest

from llmplan.core.search import search
from llmplan.core.search.explain import PARETO_TRIES
from llmplan.core.search.planner import quick_layout
from llmplan.core.search.space import gpu_counts
from llmplan.core.workload import ParallelLayout, Scenario, TrainingSettings
from llmplan.errors import LayoutError

from .specs import A100_80GB, LLAMA_405B, cluster, gpt

GPT3 = gpt("GPT-3 175B", 12288, 96, 96, vocab=50257)


def _gpt3(nodes=128, **training) -> Scenario:
    t = TrainingSettings(seq_len=2048, global_batch=1536, **training)
    return Scenario(model=GPT3, cluster=cluster(A100_80GB, 8, nodes), training=t)


def test_every_returned_layout_fits_and_uses_whole_valid_groups():
    r = search(_gpt3(), top=5)
    assert len(r.best) == 5 and r.fitting < r.evaluated  # pruning removed something
    for x in r.best:
        p = x.parallelism
        assert x.memory_bytes <= x.capacity_bytes
        assert p.tp <= 8 and 96 % p.tp == 0 and p.gpus == x.gpus
        assert x.training.global_batch % (x.training.micro_batch * p.dp) == 0
    assert [x.rank for x in r.best] == [1, 2, 3, 4, 5]
    assert all(a.tokens_per_s >= b.tokens_per_s for a, b in zip(r.best, r.best[1:], strict=False))
    assert r.best[0].why == "" and all(x.why for x in r.best[1:])


def test_pareto_fronts_are_monotone():
    r = search(_gpt3(), top=1)
    gpus = [p.gpus for p in r.pareto_gpus]
    speeds = [p.tokens_per_s for p in r.pareto_gpus]
    assert gpus == sorted(gpus) and speeds == sorted(speeds) and gpus[-1] == 1024
    costs = [p.cost_per_million_tokens for p in r.pareto_cost]
    assert costs == sorted(costs, reverse=True)  # faster points on the cost front cost more


def test_cost_objective_prefers_fewer_gpus_per_token():
    fast = search(_gpt3(), top=1, objective="time").best[0]
    cheap = search(_gpt3(), top=1, objective="cost").best[0]
    assert cheap.cost_per_million_tokens <= fast.cost_per_million_tokens
    assert cheap.tokens_per_s <= fast.tokens_per_s


def test_nothing_fits_without_offload_then_offload_is_tried():
    # 175B on 8 GPUs: 175e9 × 16 B / 8 = 350 GB per GPU of model states without offload
    r = search(_gpt3(nodes=1, zero_stage=3), top=3, use_fewer_gpus=False)
    assert "offload" in r.note
    assert all(x.training.offload == "cpu" for x in r.best)


def test_no_layout_at_all_says_so():
    sc = Scenario(model=LLAMA_405B, cluster=cluster(A100_80GB, 1, 1), training=TrainingSettings(seq_len=8192))
    r = search(sc)
    assert r.best == () and "no layout fits" in r.note


def test_progress_is_reported_and_cancel_stops_early():
    seen = []
    search(_gpt3(), progress=lambda f, m: seen.append(f))
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)
    r = search(_gpt3(), cancel=lambda: True)
    assert r.cancelled and r.evaluated == 0


def test_refine_reranks_with_the_given_engine_and_drops_what_it_rejects():
    calls = []

    def engine(scenario):
        calls.append(scenario.parallelism)
        raise LayoutError("rejected by the engine")

    r = search(_gpt3(), top=3, refine=engine, refine_count=10)
    assert r.best == () and "full engine judged all 80" in r.note
    # 80 ranking attempts, plus up to PARETO_TRIES per GPU count for the front (all rejected: no front)
    counts = len(gpu_counts(1024, 8, True))
    assert 80 < len(calls) <= 80 + PARETO_TRIES * counts and r.pareto_gpus == () and r.pareto_cost == ()


def test_pareto_front_is_on_the_engine_scale_when_the_search_refines():
    """The front was the quick model's while the ranked layouts were the engine's, so the line sat below
    the dots it should bound. Refined, every front point is the engine's figure for that layout."""
    from llmplan.core.engine import estimate

    r = search(_gpt3(), top=5, refine=estimate)
    assert r.pareto_gpus and all(p.refined for p in r.pareto_gpus)
    best = max(x.tokens_per_s for x in r.best)
    assert max(p.tokens_per_s for p in r.pareto_gpus) >= best * (1 - 1e-9)  # the front bounds the ranked dots
    assert not any(p.refined for p in search(_gpt3(), top=1).pareto_gpus)  # unrefined: quick model, said so


def test_check_layout_names_the_broken_rule():
    sc = _gpt3()
    with pytest.raises(LayoutError, match=r"parallelism\.tp \(32\) must fit in one node of 8 GPUs, or two"):
        quick_layout(sc, ParallelLayout(tp=32, dp=32))  # TP may span two nodes (issue 23), not four
    with pytest.raises(LayoutError, match="zero_stage 2 and 3 do not combine with pipeline"):
        quick_layout(sc, ParallelLayout(tp=8, pp=2, dp=64), sc.training.model_copy(update={"zero_stage": 3}))
    with pytest.raises(LayoutError, match="global_batch"):
        quick_layout(sc, ParallelLayout(tp=8, pp=1, dp=128), sc.training.model_copy(update={"micro_batch": 5}))


def test_unknown_objective_is_refused():
    with pytest.raises(LayoutError, match="objective"):
        search(_gpt3(), objective="speed")


def test_moe_layouts_include_expert_parallelism():
    from llmplan.core.model import ModelSpec, MoESpec
    from llmplan.core.search.shape import model_shape
    from llmplan.core.search.space import training_columns

    # Mixtral 8x7B config.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, 8 experts of 14336, top-2
    mixtral = ModelSpec(name="Mixtral 8x7B", model_type="mixtral", vocab_size=32000, hidden_size=4096,
                        num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128, intermediate_size=14336,
                        layer_mlp=("moe",) * 32,
                        moe=MoESpec(num_experts=8, experts_per_token=2, expert_intermediate_size=14336))
    t = TrainingSettings(seq_len=4096, global_batch=512)
    cols = training_columns(model_shape(mixtral, t), [32], 8, 4096, 512, offload=False)
    assert set(cols.ep.tolist()) == {1, 2, 4, 8}
    assert ((cols.dp % cols.ep) == 0).all()
    sc = Scenario(model=mixtral, cluster=cluster(A100_80GB, 8, 4), training=t)
    assert all(x.memory_bytes <= x.capacity_bytes for x in search(sc, use_fewer_gpus=False).best)


def test_mfu_never_exceeds_the_matmul_efficiency():
    sc = Scenario(model=gpt("small", 2048, 16, 24), cluster=cluster(A100_80GB, 8, 1),
                  training=TrainingSettings(method="lora", seq_len=2048, global_batch=64), workload="finetune")
    for x in search(sc).best:
        assert 0 < x.mfu <= sc.efficiency.matmul


def test_refined_figures_replace_the_quick_ones_and_decide_the_order():
    """A stand-in engine that prefers fewer pipeline stages re-orders the short list accordingly."""
    from dataclasses import replace

    from llmplan.core.explain import Figure
    from tests.cli.test_report import _estimate

    def engine(scenario):
        est = _estimate(scenario)
        tps = 1e6 / scenario.parallelism.pp + scenario.parallelism.tp
        compute = replace(est.compute, tokens_per_s=Figure.of(tps, "tokens/s"), mfu=Figure.of(0.3, "1"))
        return replace(est, compute=compute)

    r = search(_gpt3(), top=5, refine=engine, refine_count=40)
    assert r.refined == 40 and len(r.best) == 5 and all(x.refined for x in r.best)
    pps = [x.parallelism.pp for x in r.best]
    assert pps == sorted(pps) and r.best[0].tokens_per_s == 1e6 / pps[0] + r.best[0].parallelism.tp
    assert r.best[0].memory_bytes == 50 * 2**30  # the engine's memory, not the quick model's


def test_inference_search_finds_the_fewest_gpus_that_hold_the_weights():
    """Llama 3.1 405B in BF16 (≈ 811 GB of weights) needs more than 8 H100 (8 × 79.6 GiB) per replica;
    8-bit weights (≈ 405 GB) fit on 8."""
    from .specs import H100_80GB, NDR_IB

    def sc(fmt):
        from llmplan.core.workload import InferenceSettings

        return Scenario(model=LLAMA_405B, cluster=cluster(H100_80GB, 8, 4, NDR_IB), workload="inference",
                        inference=InferenceSettings(weight_format=fmt, batch=8, prompt_tokens=2048))

    bf16 = search(sc("bf16"), objective="cost")
    fp8 = search(sc("fp8"), objective="cost")
    assert bf16.best[0].gpus == 16 and fp8.best[0].gpus == 8
    assert all(a.gpus <= b.gpus for a, b in zip(fp8.best, fp8.best[1:], strict=False))
    assert [p.gpus for p in fp8.pareto_gpus] == sorted(p.gpus for p in fp8.pareto_gpus)


def test_refine_keeps_looking_when_the_engine_rejects_the_quick_favourites():
    """An engine stricter than the quick model (here: it rejects the first 30 it sees) still yields a top 5."""
    from tests.cli.test_report import _estimate

    calls = []

    def engine(scenario):
        calls.append(scenario.parallelism)
        if len(calls) <= 30:
            raise LayoutError("rule: rejected by this stand-in engine")
        return _estimate(scenario)

    r = search(_gpt3(), top=5, refine=engine, refine_count=5)
    assert len(r.best) == 5 and all(x.refined for x in r.best) and r.refined == 5
    # the ranking needed 35 calls (30 rejected, then 5 kept); the calls after those re-estimate the front
    assert len(calls) > 35 and all(p.refined for p in r.pareto_gpus)


def test_the_engine_ranks_uneven_pipelines_too():
    """Llama 3.1 405B (126 layers) on 16,384 GPUs: the quick model's favourites have uneven stages
    (PP16 as in the Llama 3 paper); the full engine splits them (7, 8 ×14, 7) and keeps them."""
    from llmplan.core.engine import estimate

    from .specs import H100_80GB, NDR_IB

    sc = Scenario(model=LLAMA_405B, cluster=cluster(H100_80GB, 8, 2048, NDR_IB),
                  training=TrainingSettings(seq_len=8192, global_batch=2048))
    r = search(sc, top=3, use_fewer_gpus=False, refine=estimate)
    assert len(r.best) == 3 and all(x.refined for x in r.best)
    assert r.note.startswith("TP kept inside a node")  # the only note: why TP stays in a node (issue 23)
    uneven = [x for x in r.best if 126 % (x.parallelism.pp * x.parallelism.virtual_stages)]
    assert uneven
    assert all(any("uneven pipeline" in w for w in x.estimate.warnings) for x in uneven)


def test_why_names_the_part_of_the_step_that_costs_more():
    from llmplan.core.search.explain import explain_ranking

    sc = _gpt3()
    layout = ParallelLayout(tp=8, pp=8, dp=16)
    fast, _ = quick_layout(sc, layout, sc.training.model_copy(update={"recompute": "none"}))
    slow, _ = quick_layout(sc, layout, sc.training.model_copy(update={"recompute": "full"}))
    ranked = explain_ranking([fast, slow], "time")
    assert [x.rank for x in ranked] == [1, 2] and ranked[0].why == ""
    assert "fewer tokens/s than #1; most of the gap: recomputation ('full' vs 'none'), +" in ranked[1].why
    interleaved, _ = quick_layout(sc, ParallelLayout(tp=8, pp=8, dp=16, virtual_stages=2), fast.training)
    assert interleaved.tokens_per_s > fast.tokens_per_s
    plain = explain_ranking([interleaved, fast], "time")[1]
    assert "its pipeline bubble (PP8, v1 vs PP8, v2)" in plain.why


def test_kept_knobs_are_held_and_the_rest_is_searched():
    """A user who fixed ZeRO-3, micro-batch 2 and full recompute gets layouts with exactly those;
    the search still varies TP/PP/DP/CP (found: more than one distinct layout)."""
    sc = _gpt3(zero_stage=3, micro_batch=2, recompute="full")
    free = search(sc, top=5)
    assert {(x.training.zero_stage, x.training.micro_batch, x.training.recompute) for x in free.best} != {
        (3, 2, "full")}  # without keep the search chooses other settings: the test below means something
    held = search(sc, top=5, keep=("zero_stage", "micro_batch", "recompute"))
    assert held.best and held.evaluated < free.evaluated
    for x in held.best:
        assert (x.training.zero_stage, x.training.micro_batch, x.training.recompute) == (3, 2, "full")
    assert len({x.parallelism for x in held.best}) > 1


def test_kept_offload_none_never_offloads_and_says_why_nothing_fits():
    """A 13B model's full training states (16 B/param, 208 GB) fit one 80 GB GPU only with ZeRO-Offload."""
    sc = Scenario(model=gpt("13B", 5120, 40, 40), cluster=cluster(A100_80GB, 1, 1),
                  training=TrainingSettings(seq_len=2048))
    free = search(sc, top=3)
    assert free.best and all(x.training.offload == "cpu" for x in free.best)
    r = search(sc, top=3, keep=("offload",))
    assert not r.best and "training.offload=none as set" in r.note


def test_keep_names_only_searchable_knobs():
    with pytest.raises(LayoutError, match="cannot hold precision fixed"):
        search(_gpt3(), top=1, keep=("precision",))


def test_a_gpu_count_no_layout_can_use_names_the_rules_not_memory():
    """trial33: a 1.3B GPT (32 heads, 24 layers) on exactly 7 A100s, global batch 512: 7 divides neither the heads
    nor the batch nor the layers, so the search has nothing to try, though the model fits on one GPU. The note read
    "no layout fits in memory ... add GPUs"; it now names the rules (DP must divide the global batch ...) and says
    to change the count."""
    small = gpt("GPT 1.3B", 2048, 32, 24)
    sc = Scenario(model=small, cluster=cluster(A100_80GB, 7, 1), training=TrainingSettings(seq_len=2048,
                                                                                           global_batch=512))
    r = search(sc, use_fewer_gpus=False)
    assert r.best == () and r.evaluated == 0
    assert r.note.startswith("no layout can use 7 GPUs: ")
    assert "DP must divide the global batch of 512 sequences" in r.note and "in memory" not in r.note
    assert search(sc.model_copy(update={"cluster": cluster(A100_80GB, 8, 1)}), use_fewer_gpus=False).best
