"""Overlap per framework profile: what each collective hides behind, and what no compute can hide.

The schedules are the frameworks' own: PyTorch DDP all-reduces 25 MiB buckets as the backward fills
them (torch.nn.parallel.DistributedDataParallel, bucket_cap_mb=25); Megatron-Core reduces buckets of
max(40M, 1M·dp) parameters during the backward (--overlap-grad-reduce) and gathers the distributed
optimizer's weights during the next forward (--overlap-param-gather); FSDP2 and DeepSpeed ZeRO-3
prefetch the next layer's weights during the current layer's compute. In each, one call has nothing
left to overlap with: the last gradient bucket (ready when the backward ends) or the first weight
gather (needed before the first layer runs). These tests check that schedule, not a fitted number.
"""

import pytest

from llmplan.catalog.frameworks import load_framework_profiles
from llmplan.core.engine import estimate
from llmplan.core.training.comms import OVERLAP_SLOWDOWN, Overlap, chunk_tail, exposure, interleaved_windows
from llmplan.formats.hf_config import spec_from_config

from .helpers import scenario

LLAMA3_8B = spec_from_config(dict(model_type="llama", vocab_size=128256, hidden_size=4096, num_hidden_layers=32,
                                  num_attention_heads=32, num_key_value_heads=8, intermediate_size=14336))
PROFILES = load_framework_profiles()


def _with(profile: str, gpus: int = 16, **training):
    sc = scenario(LLAMA3_8B, gpus, seq_len=4096, framework=profile, **training)
    return estimate(sc.model_copy(update={"framework_profile": PROFILES[profile]}))


def _dp(e, word: str):
    return next(c for c in e.communication.collectives if c.group == "dp" and word in c.name)


def test_exposure_is_unhidden_calls_plus_what_the_window_leaves_plus_the_contention():
    """Exposed = unhidden calls + what the window leaves + OVERLAP_SLOWDOWN × the hidden seconds: a hidden
    collective slows the compute beside it by 18.9% on average (comms module doc; Lee et al. 2025, arXiv
    2507.03114, abstract), so hiding is not free. By hand: 0.5 s with a 0.1 s last call and a 1 s window hides
    0.4 s and exposes 0.1 + 0.189 × 0.4 = 0.1756 s."""
    s = OVERLAP_SLOWDOWN
    assert s == 0.189
    ov = Overlap(window=1.0, behind="backward", unhidden="last call")
    assert exposure(0.5, 0.1, ov) == (pytest.approx(0.1 + s * 0.4), pytest.approx(0.1))  # all but the last hides
    assert exposure(3.0, 0.1, ov) == (pytest.approx(0.1 + 1.9 + s * 1.0), pytest.approx(0.1))  # window too short
    assert exposure(0.5, 0.1, Overlap(1.0, "attention")) == (pytest.approx(s * 0.5), 0.0)  # every call can hide
    assert exposure(0.5, 0.1, Overlap(0.0, "nothing", "last call")) == (0.5, 0.0)  # no window: all exposed
    assert exposure(0.5, 0.1, None) == (0.5, 0.5)  # on the critical path


def test_ddp_buckets_of_25_mib_leave_the_last_bucket_exposed():
    e = _with("hf-trainer", zero_stage=0, global_batch=64)
    ar = _dp(e, "all-reduce")
    assert ar.message_bytes == pytest.approx(25 * 2**20, rel=0.01)  # 6,553,600 fp32 gradients per bucket
    one_call = ar.time_s.value / ar.calls
    assert ar.unhidden_s == pytest.approx(one_call, rel=0.05)
    assert ar.exposed_s.value >= ar.unhidden_s
    assert "backward" in ar.hides_behind and "last bucket" in ar.hides_behind


def test_no_overlap_leaves_every_bucket_exposed():
    e = _with("hf-trainer", zero_stage=0, global_batch=64, overlap_grad_reduce=False)
    ar = _dp(e, "all-reduce")
    assert ar.exposed_s.value == pytest.approx(ar.time_s.value)
    assert ar.hides_behind == ""


def test_megatron_param_gather_hides_behind_the_next_forward_but_its_first_bucket():
    on = _dp(_with("megatron", zero_stage=1, global_batch=64), "all-gather")
    assert "first forward" in on.hides_behind
    assert on.unhidden_s == pytest.approx(on.time_s.value / on.calls, rel=0.05)
    off_profile = PROFILES["megatron"].model_copy(update={"overlap_param_gather": False})
    sc = scenario(LLAMA3_8B, 16, seq_len=4096, framework="megatron", zero_stage=1, global_batch=64)
    off = _dp(estimate(sc.model_copy(update={"framework_profile": off_profile})), "all-gather")
    assert off.exposed_s.value == pytest.approx(off.time_s.value)  # after the optimizer step, exposed
    assert on.exposed_s.value < off.exposed_s.value


def test_interleaved_chunks_reduce_one_after_another():
    """Megatron-LM's interleaved schedule calls a chunk's ``grad_sync_func`` once that chunk's last micro-batch is
    through its backward (core/pipeline_parallel/schedules.py, ``is_last_microbatch_for_model_chunk``), and the
    last round runs N = p micro-batches per chunk (``microbatch_group_size_per_vp_stage``, default p). So with v
    chunks the reduction hides behind (v−1)/v · N micro-batch backwards, and the last chunk's 1/v cannot hide.
    Same layout without interleaving: the last micro-batch's backward, the last bucket exposed."""
    sc = scenario(LLAMA3_8B, 64, tp=2, pp=4, seq_len=4096, framework="megatron", zero_stage=1,
                  global_batch=128, vp=2)
    inter = estimate(sc.model_copy(update={"framework_profile": PROFILES["megatron"]}))
    flat = estimate(sc.model_copy(update={"framework_profile": PROFILES["megatron"],
                                          "parallelism": sc.parallelism.model_copy(update={"virtual_stages": 1})}))
    rs_i, rs_f = _dp(inter, "reduce-scatter"), _dp(flat, "reduce-scatter")
    n = min(4, inter.compute.accumulation.value)
    per_mb_bwd = rs_f.exposed_s.inputs["overlappable_s"]  # without interleaving: one micro-batch's backward
    # v = 2: half of N micro-batch backwards (a micro-batch costs the same in both layouts to 2%)
    assert rs_i.exposed_s.inputs["overlappable_s"] == pytest.approx((2 - 1) / 2 * n * per_mb_bwd, rel=0.02)
    assert rs_i.unhidden_s == pytest.approx(max(rs_i.time_s.value / 2, rs_i.time_s.value / rs_i.calls))
    assert "last chunk's share cannot hide" in rs_i.hides_behind and "last bucket" in rs_f.hides_behind
    assert "first chunk's share" in _dp(inter, "all-gather").hides_behind


def test_interleaved_windows_and_chunk_tail_are_one_formula_for_floats_and_rows():
    import numpy as np

    vp, pp, m = np.array([1, 2, 8, 8]), np.array([4, 4, 16, 16]), np.array([8.0, 8.0, 16.0, 32.0])
    bwd, fwd = interleaved_windows(np.full(4, 0.2), np.full(4, 0.1), vp, pp, m)
    for i in range(4):
        b, f = interleaved_windows(0.2, 0.1, int(vp[i]), int(pp[i]), float(m[i]))
        assert (b, f) == (pytest.approx(bwd[i]), pytest.approx(fwd[i]))
        assert chunk_tail(0.4, 0.01, int(vp[i])) == pytest.approx(chunk_tail(np.full(4, 0.4), 0.01, vp)[i])
    assert bwd.tolist() == pytest.approx([0.2, 0.2 * 0.5 * 4, 0.2 * 7 / 8 * 16, 0.2 * 7 / 8 * 16])
    assert chunk_tail(0.4, 0.01, 1) == 0.01 and chunk_tail(0.4, 0.01, 8) == pytest.approx(0.05)


@pytest.mark.parametrize("profile", ["fsdp2", "deepspeed"])
def test_zero3_prefetch_exposes_the_first_layers_gather(profile):
    e = _with(profile, zero_stage=3, global_batch=64)
    ag = _dp(e, "all-gather")
    assert "prefetch" in ag.hides_behind
    assert ("50M parameters" in ag.hides_behind) == (profile == "deepspeed")  # stage3_prefetch_bucket_size
    assert ag.unhidden_s == pytest.approx(ag.time_s.value / ag.calls, rel=0.05)  # one layer's gather
    assert ag.exposed_s.value >= ag.unhidden_s


def test_explain_json_and_text_carry_the_overlap():
    from llmplan.cli.report import estimate_json, estimate_text

    sc = scenario(LLAMA3_8B, 16, seq_len=4096, framework="hf-trainer", zero_stage=0, global_batch=64)
    sc = sc.model_copy(update={"framework_profile": PROFILES["hf-trainer"]})
    data = estimate_json(estimate(sc), sc)
    row = next(x for x in data["communication"]["collectives"] if x["group"] == "dp")
    assert row["hides_behind"] and row["unhidden_s"] > 0
    assert "hides behind the last micro-batch's backward" in estimate_text(data)
