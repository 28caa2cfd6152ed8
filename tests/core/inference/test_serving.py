"""The serving planner: cheapest feasible hardware, honest rejections, two-type mixes.

These are consistency checks of the planner's logic (no published serving cost is reproduced here:
Mélange's own tables depend on its measured profiles, which we do not have)."""

import math

import pytest

from llmplan.catalog.engines import engine_profile
from llmplan.core.inference.serving import RequestClass, ServingRequest, plan_serving
from llmplan.errors import InputError
from llmplan.formats.hf_config import spec_from_config
from tests.core.inference.gpus import A100, H100, L4
from tests.core.inference.models import LLAMA3_8B

SPEC = spec_from_config(LLAMA3_8B)
VLLM = engine_profile("vllm")


def test_best_is_cheapest_and_meets_slos():
    req = ServingRequest(rate_per_s=20, prompt_tokens=1024, output_tokens=256, ttft_s=1.0, tpot_s=0.05)
    plan = plan_serving(SPEC, req, [H100, L4, A100], engine=VLLM)
    best = plan.best
    assert best is not None
    feasible = [o for o in plan.options if o.feasible]
    assert all(best.cost_per_hour.value <= o.cost_per_hour.value for o in feasible)
    for o in feasible:
        assert o.ttft_s <= 1.0 and o.tpot_s <= 0.05
        assert o.requests_per_s.value >= 20 / req.max_utilization - 1e-9
    # An L4 alone streams 16 GB at 0.8 × 300 GB/s: ~67 ms per token, over the 50 ms TPOT SLO.
    l4 = next(o for o in plan.options if o.label == "NVIDIA L4, tp=1")
    assert not l4.feasible and "TPOT" in l4.why


def test_replicas_scale_with_rate():
    lo = plan_serving(SPEC, ServingRequest(rate_per_s=5, ttft_s=2, tpot_s=0.1), [H100], engine=VLLM)
    hi = plan_serving(SPEC, ServingRequest(rate_per_s=50, ttft_s=2, tpot_s=0.1), [H100], engine=VLLM)
    assert hi.best.gpus > lo.best.gpus
    one = next(o for o in hi.options if o.parts == (("nvidia-h100-sxm-80gb", o.parts[0][1], 1),))
    per_replica = one.requests_per_s.value / one.parts[0][1]
    assert one.parts[0][1] == math.ceil(50 / 0.85 / per_replica)


def test_model_too_big_is_rejected_with_reason():
    plan = plan_serving(SPEC, ServingRequest(rate_per_s=1, ttft_s=1, tpot_s=0.1), [L4], engine=VLLM,
                        weight_format="fp32", tp_options=(1,))
    assert plan.best is None
    assert "does not fit" in plan.options[0].why


def test_request_mix_and_mixes_of_two_types():
    req = ServingRequest(rate_per_s=10, ttft_s=1.5, tpot_s=0.06,
                         mix=(RequestClass(prompt_tokens=256, output_tokens=64, share=3),
                              RequestClass(prompt_tokens=4000, output_tokens=500, share=1)))
    plan = plan_serving(SPEC, req, [H100, A100], engine=VLLM)
    assert plan.best is not None
    singles = {o.parts[0][0]: o.cost_per_hour.value for o in plan.options if o.feasible and len(o.parts) == 1}
    for mix in (o for o in plan.options if o.feasible and len(o.parts) == 2):  # any mix listed beats its parts
        assert all(mix.cost_per_hour.value < singles[gpu] for gpu, _, _ in mix.parts), mix.label


def test_no_candidates_is_an_error():
    with pytest.raises(InputError, match="GPU"):
        plan_serving(SPEC, ServingRequest(rate_per_s=1, ttft_s=1, tpot_s=0.1), [])


def _rep(name: str, price: float, rate: float):
    from llmplan.core.inference.serving import _Replica

    gpu = H100.model_copy(update={"id": name, "name": name, "price_per_hour": price})
    return _Replica(gpu=gpu, tp=1, batch=8, rate=rate, ttft=0.1, tpot=0.02)


def test_a_mix_is_listed_only_when_it_beats_both_of_its_parts():
    """Big: 10 req/s for $4/h; small: 3 req/s for $1.5/h. For 12 req/s, big alone needs 2 ($8), small
    alone 4 ($6); 1 big + 1 small covers 13 for $5.5, cheaper than either: listed. For 9 req/s small alone
    (3 for $4.5) beats every mix with a big replica ($5.5 at best): no mix listed."""
    from llmplan.core.inference.serving import _mixes

    big, small = _rep("big", 4.0, 10.0), _rep("small", 1.5, 3.0)
    (mix,) = _mixes([big, small], 12.0)
    assert mix.parts == (("big", 1, 1), ("small", 1, 1)) and mix.cost_per_hour.value == pytest.approx(5.5)
    assert _mixes([big, small], 9.0) == []
