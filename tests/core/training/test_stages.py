"""The stage-split rule: exact, hand-checked layers per (stage, chunk), and its validity rules."""

import pytest

from llmplan.core.training.stages import (
    automatic_split_fits,
    layers_in_flight,
    split_layers,
    stage_totals,
    warmup_chunks,
)
from llmplan.errors import LayoutError


def test_llama3_405b_on_16_stages_drops_one_layer_from_the_first_and_the_last():
    # Llama 3 paper (arXiv 2407.21783) §3.3.2: 126 layers on PP16, one Transformer layer fewer on the
    # first and the last stage: 7 + 14 × 8 + 7 = 126.
    split = split_layers(126, 16)
    assert split.per_stage == (7,) + (8,) * 14 + (7,)
    assert split.rule == "llama3" and split.slowest == 8 and not split.is_even
    assert split.describe() == "7, 8 ×14, 7"
    assert split.imbalance() == pytest.approx(8 / (126 / 16))  # 1.59% above an even spread


@pytest.mark.parametrize(("vp", "first", "middle", "last"), [
    # the embedding and the head + loss each take one layer's place (Megatron's
    # account_for_embedding/loss_in_pipeline_split: (126 + 2) / (16·v) layers per chunk)
    (2, (3, 4), (4, 4), (4, 3)),
    (4, (1, 2, 2, 2), (2, 2, 2, 2), (2, 2, 2, 1)),
    # one-layer chunks: "the first model chunk on the first stage has only the embedding, and the last
    # model chunk on the last stage has only output projection and loss" (Llama 3 §3.3.2)
    (8, (0,) + (1,) * 7, (1,) * 8, (1,) * 7 + (0,)),
])
def test_llama3_405b_interleaved_chunks(vp, first, middle, last):
    split = split_layers(126, 16, vp)
    assert split.chunks[0] == first and split.chunks[-1] == last
    assert all(c == middle for c in split.chunks[1:-1])
    assert split.per_stage == (7,) + (8,) * 14 + (7,)


def test_even_split_is_the_old_one():
    split = split_layers(32, 4, 2)
    assert split.chunks == ((4, 4),) * 4 and split.rule == "even" and split.is_even
    assert split.imbalance() == 1.0
    assert split_layers(80, 1).chunks == ((80,),)


def test_balanced_split_puts_the_remainder_on_the_last_middle_stages():
    # 96 = 64 + 32: the 32 extra layers go to stages 62, 61, …, 31 (0-based); the first and the last keep 1
    split = split_layers(96, 64)
    assert split.per_stage == (1,) * 31 + (2,) * 32 + (1,)
    assert split.rule == "balanced" and split.slowest == 2
    # 15 = 8 + 7: all six middle stages and then the last get the extras, never the first
    assert stage_totals(15, 8) == (1, 2, 2, 2, 2, 2, 2, 2)
    # pp = 2: the last stage (one micro-batch in flight) takes the odd layer
    assert stage_totals(31, 2) == (15, 16)


def test_explicit_first_and_last_stage_layers():
    # Megatron --decoder-first/last-pipeline-num-layers 6: 126 - 12 = 114 over 14 stages = 8 rem 2
    split = split_layers(126, 16, first=6, last=6)
    assert split.per_stage == (6,) + (8,) * 12 + (9, 9) + (6,)
    assert split.rule == "explicit"
    # first = 8: 118 over the other 15 stages = 7 rem 13, on stages 14 down to 2; stage 1 and the last keep 7
    assert stage_totals(126, 16, first=8) == (8, 7) + (8,) * 13 + (7,)
    only_first = stage_totals(126, 16, first=5)  # 121 over the other 15: 8 each, 1 extra on stage 14
    assert only_first == (5,) + (8,) * 13 + (9, 8)
    assert stage_totals(10, 2, first=3, last=7) == (3, 7)
    assert split_layers(126, 16, first=0, last=0).per_stage == (0,) + (9,) * 14 + (0,)


@pytest.mark.parametrize(("args", "kwargs", "rule"), [
    ((30, 32), {}, "pp ≤ layers"),
    ((32, 1), {"first": 4}, "need a pipeline"),
    ((32, 2), {"first": 10, "last": 20}, r"first_stage_layers \+ last_stage_layers = layers with pp = 2.*add up "
                                        "to 32"),
    ((126, 16), {"first": 100, "last": 20}, r"first_stage_layers \+ last_stage_layers \+ middle stages = layers"),
    ((32, 16, 3), {}, "a layer in every pipeline chunk"),
    ((126, 16, 2), {"first": 0}, "a layer in every pipeline chunk: the first stage holds 0"),
])
def test_broken_rules_are_named(args, kwargs, rule):
    with pytest.raises(LayoutError, match=rule):
        split_layers(*args, **kwargs)


def test_the_search_predicate_agrees_with_the_rule():
    for layers in range(1, 41):
        for pp in range(1, layers + 2):
            for vp in (1, 2, 3, 4, 6, 8):
                try:
                    split_layers(layers, pp, vp)
                    ok = not (pp == 1 and vp > 1)  # layout.resolve refuses interleaving without a pipeline
                except LayoutError:
                    ok = False
                assert automatic_split_fits(layers, pp, vp) == ok, (layers, pp, vp)


def test_in_flight_activations_follow_the_schedule():
    # 1F1B: stage s holds min(m, p - s) micro-batches
    assert [warmup_chunks(4, 1, s, 8) for s in range(4)] == [4, 3, 2, 1]
    assert warmup_chunks(4, 1, 0, 2) == 2
    # interleaved, p = 4, v = 2: first stage 2·3 + 4 + 1 = 11 chunk passes = 4·(1 + 3/8) stages' worth
    assert warmup_chunks(4, 2, 0, 8) == 11 and warmup_chunks(4, 2, 3, 8) == 5
    even = split_layers(32, 4, 2)
    assert layers_in_flight(even, 0, 8) == 11 * 4 == 8 * 4 * (1 + 3 / 8)
    # Llama 3 405B, PP16 × v2, 32 micro-batches: the first stage's 47 passes are chunk 0 (3 layers) for
    # micro-batches 0-15, chunk 1 (4 layers) for 0-15, then chunk 0 for 16-30: 48 + 64 + 45 = 157
    llama = split_layers(126, 16, 2)
    assert layers_in_flight(llama, 0, 32) == 16 * 3 + 16 * 4 + 15 * 3
    # its last stage: (v-1)·p + 1 = 17 passes: chunk 0 (4 layers) × 16 + chunk 1 (3 layers) × 1
    assert layers_in_flight(llama, 15, 32) == 16 * 4 + 3
    # 16 micro-batches = p: Megatron-LM runs every forward first (schedules.py, num_microbatches ==
    # pipeline_parallel_size) and a step has only 16 · 2 chunk passes, on every stage: 48 + 64 = 112
    assert layers_in_flight(llama, 0, 16) == layers_in_flight(llama, 15, 16) == 16 * 7
    # fewer micro-batches than the warm-up (m·v = 24 < 2·15 + 16 + 1): capped at m·v
    assert warmup_chunks(16, 2, 0, 12) == 24


def test_megatron_flags_follow_megatron_cores_pipeline_arguments():
    """Megatron-Core (megatron/training/arguments.py, TransformerConfig.__post_init__, main 2026-08-22):
    the same layers in every chunk of a rank; even, account-for-embedding/loss, or uneven first/last."""
    from llmplan.core.training.stages import megatron_flags

    assert megatron_flags(80, 16, 1) == ""  # 5 per rank
    assert megatron_flags(80, 16, 4) is None  # 1.25 layers per chunk (issue 18 item 12)
    assert megatron_flags(126, 32, 3) is None  # 3, 4 ×30, 3 cannot be cut in 3 equal chunks per rank
    both = "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
    assert megatron_flags(126, 16, 1) == both  # Llama 3 405B: 7, 8 ×14, 7 (arXiv 2407.21783 §3.3.2)
    assert megatron_flags(126, 16, 8) == both  # 128 / 16 = 8 per rank, one per chunk
    assert megatron_flags(126, 16, 6) is None
    assert megatron_flags(80, 3, 1) == "--account-for-embedding-in-pipeline-split"  # 26, 27, 27
    assert megatron_flags(80, 6, 1) is None  # 13, 13, 13, 14, 14, 13: unequal middle ranks
    assert megatron_flags(32, 1, 2) is None and megatron_flags(32, 1, 1) == ""
