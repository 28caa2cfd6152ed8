"""The cheapest hardware that serves a request rate within latency SLOs.

In the spirit of Mélange (Griggs et al., 2024): every GPU type has a different cost per
request depending on request sizes and SLOs, so we price each candidate (GPU type ×
tensor-parallel degree) by the requests per second one replica sustains, buy enough
replicas for the rate, and also try two-type mixes, which can beat either type alone
when whole replicas round up badly.

One replica at decode batch B (the largest batch whose time per output token meets the
TPOT SLO and whose KV cache fits) spends, per request, P / prefill_rate seconds on its
prompt and O · tpot(B) / B seconds on its share of the decode steps, so it serves
1 / (P / prefill_rate + O · tpot(B) / B) requests per second. Replicas are bought for the
rate divided by ``max_utilization`` to leave queueing headroom. TTFT is checked as the
prefill time of the longest prompt on an idle replica (queueing delay is not modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field, model_validator

from llmplan.core.engine_profile import EngineProfile, check_weight_format
from llmplan.core.explain import Figure
from llmplan.core.frozen import FrozenModel
from llmplan.core.hardware import ClusterSpec, Efficiency, GpuSpec
from llmplan.core.inference.latency import decode_step, prefill_time, rates
from llmplan.core.inference.memory import plan_memory
from llmplan.core.kvcache import kv_dtype_refusal
from llmplan.core.model import ModelSpec
from llmplan.core.workload import InferenceSettings, ParallelLayout, Scenario
from llmplan.errors import InputError, LayoutError

MELANGE = "Griggs et al., Mélange: Cost Efficient Large Language Model Serving by Exploiting GPU Heterogeneity, 2024"


MAX_RATE_PER_S = 1e6  # a million requests a second is beyond any single service's fleet; `inf` overflowed
MAX_MIX_REPLICAS = 10_000  # past this, a mix saves < 1/10,000 of the cost (its point is whole-replica slack)


class RequestClass(FrozenModel):
    prompt_tokens: int = Field(ge=1, le=10_000_000)
    output_tokens: int = Field(ge=1, le=10_000_000)
    share: float = Field(1.0, gt=0, description="relative frequency of this request size")


class ServingRequest(FrozenModel):
    """The load and the SLOs: a rate of requests of one size (or a small mix of sizes)."""

    rate_per_s: float = Field(gt=0, le=MAX_RATE_PER_S, allow_inf_nan=False, description="requests per second")
    prompt_tokens: int = Field(1024, ge=1, le=10_000_000)
    output_tokens: int = Field(256, ge=1, le=10_000_000)
    ttft_s: float = Field(gt=0, le=1e6, allow_inf_nan=False, description="time-to-first-token SLO, seconds")
    tpot_s: float = Field(gt=0, le=1e6, allow_inf_nan=False, description="time-per-output-token SLO, seconds")
    mix: tuple[RequestClass, ...] = Field(default=(), description="request sizes; () = one size as above")
    max_utilization: float = Field(0.85, gt=0, le=1, description="busy share per replica, headroom for queueing")

    @model_validator(mode="after")
    def _check(self) -> ServingRequest:
        if self.mix and sum(c.share for c in self.mix) <= 0:
            raise ValueError("the request mix needs a positive share")
        return self

    @property
    def classes(self) -> tuple[RequestClass, ...]:
        return self.mix or (RequestClass(prompt_tokens=self.prompt_tokens, output_tokens=self.output_tokens),)


@dataclass(frozen=True, slots=True)
class ServingOption:
    """One way to serve the load: replicas of one GPU type (or two, for a mix)."""

    label: str  # e.g. "3 × (2 × NVIDIA H100 SXM 80GB, tp=2)"
    parts: tuple[tuple[str, int, int], ...]  # (gpu id, replicas, tp)
    gpus: int
    feasible: bool
    cost_per_hour: Figure | None
    requests_per_s: Figure | None  # capacity of the whole option
    ttft_s: float | None
    tpot_s: float | None
    batch: int  # decode batch per replica
    why: str  # why it is rejected, or how it compares with the best


@dataclass(frozen=True, slots=True)
class ServingPlan:
    request: ServingRequest
    options: tuple[ServingOption, ...]  # feasible first, cheapest first; then rejected ones

    @property
    def best(self) -> ServingOption | None:
        return self.options[0] if self.options and self.options[0].feasible else None


@dataclass(frozen=True, slots=True)
class _Replica:
    gpu: GpuSpec
    tp: int
    batch: int
    rate: float  # requests/s one replica serves
    ttft: float
    tpot: float


def _replica(model: ModelSpec, req: ServingRequest, gpu: GpuSpec, tp: int, settings: dict,
             engine: EngineProfile, eff: Efficiency) -> _Replica | str:
    classes = req.classes
    longest = max(c.prompt_tokens + c.output_tokens for c in classes)
    max_prompt = max(c.prompt_tokens for c in classes)
    out_max = longest - max_prompt
    sc = Scenario(model=model, cluster=ClusterSpec(gpu=gpu, gpus_per_node=tp), workload="inference",
                  inference=InferenceSettings(prompt_tokens=max_prompt, output_tokens=max(1, out_max), **settings),
                  parallelism=ParallelLayout(tp=tp), efficiency=eff, engine_profile=engine)
    try:
        plan = plan_memory(sc, engine)
    except LayoutError as e:  # e.g. 40 heads over tp=8: this replica cannot be built
        return str(e)
    if plan.fixed_gpu + plan.kv_per_seq_gpu > plan.capacity:
        need = (plan.fixed_gpu + plan.kv_per_seq_gpu) / 2**30
        return f"does not fit: needs {need:.1f} GiB per GPU, {plan.capacity / 2**30:.1f} GiB usable"
    r = rates(sc, plan, eff)
    ttft = prefill_time(sc, plan, r, 1, max_prompt).total_s
    if ttft > req.ttft_s:
        return f"TTFT {ttft * 1e3:.0f} ms > SLO {req.ttft_s * 1e3:.0f} ms"
    mean_ctx = max(1, round(sum(c.share * (c.prompt_tokens + c.output_tokens / 2) for c in classes)
                            / sum(c.share for c in classes)))

    def tpot(b: int) -> float:
        return decode_step(sc, plan, r, b, mean_ctx).total_s

    if tpot(1) > req.tpot_s:
        return f"TPOT {tpot(1) * 1e3:.1f} ms at batch 1 > SLO {req.tpot_s * 1e3:.1f} ms"
    lo, hi = 1, max(1, plan.max_concurrency)
    while lo < hi:  # the largest batch that meets the TPOT SLO (tpot grows with the batch)
        mid = (lo + hi + 1) // 2
        if tpot(mid) <= req.tpot_s:
            lo = mid
        else:
            hi = mid - 1
    b = lo
    t = tpot(b)
    prefill_rate = max_prompt / ttft
    total_share = sum(c.share for c in classes)
    per_request = sum(c.share * (c.prompt_tokens / prefill_rate + c.output_tokens * t / b) for c in classes)
    return _Replica(gpu, tp, b, total_share / per_request, ttft, t)


def _price(gpu: GpuSpec) -> float | None:
    return gpu.price_per_hour


def plan_serving(model: ModelSpec, request: ServingRequest, gpus: tuple[GpuSpec, ...] | list[GpuSpec],
                 weight_format: str = "bf16", kv_dtype: str = "bf16", engine: EngineProfile | None = None,
                 efficiency: Efficiency | None = None, tp_options: tuple[int, ...] = (1, 2, 4, 8),
                 efficiency_by_gpu: dict[str, Efficiency] | None = None) -> ServingPlan:
    """Rank every candidate (GPU type × tp, and two-type mixes) by hourly cost for the load and SLOs.

    ``efficiency_by_gpu`` gives a GPU's own achievable fractions (the hardware catalog's), else
    ``efficiency`` (default ``Efficiency()``) applies to all.
    """
    if not gpus:
        raise InputError("no candidate GPUs given; pass at least one GPU type (--gpus id,id)")
    engine = engine or EngineProfile()
    why = check_weight_format(engine, weight_format) or kv_dtype_refusal(kv_dtype, engine.name,
                                                                         engine.kv_dtypes)
    if why:  # as a plan's estimate refuses it (plan.resolve)
        raise InputError(f"{why}: choose another engine, weight format or KV cache type")
    eff = efficiency or Efficiency()
    settings = {"weight_format": weight_format, "kv_dtype": kv_dtype, "engine": engine.id}
    needed = request.rate_per_s / request.max_utilization
    feasible: list[ServingOption] = []
    rejected: list[ServingOption] = []
    best_per_gpu: dict[str, tuple[_Replica, float]] = {}
    for gpu in gpus:
        price = _price(gpu)
        for tp in (1,) if gpu.unified_memory else tp_options:
            gpu_eff = (efficiency_by_gpu or {}).get(gpu.id, eff)
            rep = _replica(model, request, gpu, tp, settings, engine, gpu_eff)
            label = f"{gpu.name}, tp={tp}"
            if isinstance(rep, str):
                rejected.append(ServingOption(label, ((gpu.id, 0, tp),), 0, False, None, None, None, None, 0, rep))
                continue
            if price is None:
                rejected.append(ServingOption(label, ((gpu.id, 0, tp),), 0, False, None, None, rep.ttft, rep.tpot,
                                              rep.batch, "no price per GPU-hour known: give one to compare"))
                continue
            n = math.ceil(needed / rep.rate)
            option = _single(rep, n, price, needed)
            feasible.append(option)
            per_req_cost = tp * price / rep.rate
            if gpu.id not in best_per_gpu or per_req_cost < best_per_gpu[gpu.id][1]:
                best_per_gpu[gpu.id] = (rep, per_req_cost)
    feasible.extend(_mixes([r for r, _ in best_per_gpu.values()], needed))
    feasible.sort(key=lambda o: (o.cost_per_hour.value, o.gpus))
    if feasible:
        cheapest = feasible[0].cost_per_hour.value
        feasible = [feasible[0]] + [
            _with_why(o, f"{100 * (o.cost_per_hour.value / cheapest - 1):.0f}% more per hour than the best")
            for o in feasible[1:]
        ]
    return ServingPlan(request, tuple(feasible + rejected))


def _with_why(o: ServingOption, why: str) -> ServingOption:
    return ServingOption(o.label, o.parts, o.gpus, o.feasible, o.cost_per_hour, o.requests_per_s, o.ttft_s, o.tpot_s,
                         o.batch, why)


def _gpus_label(rep: _Replica, n: int) -> str:
    """``n`` replicas of ``rep`` by the GPUs they take: "2 × NVIDIA A100 SXM4 40GB (1 replica of TP 2)". It read
    "1 × NVIDIA A100 SXM4 40GB (tp=2)", which a reader takes for one GPU while the price was for two."""
    if rep.tp == 1:
        return f"{n} × {rep.gpu.name}"
    return f"{n * rep.tp} × {rep.gpu.name} ({n} replica{'s' if n != 1 else ''} of TP {rep.tp})"


def _single(rep: _Replica, n: int, price: float, needed: float) -> ServingOption:
    gpus = n * rep.tp
    cost = Figure.of(gpus * price, "USD", formula="replicas × tp × price per GPU-hour",
                     inputs={"replicas": n, "tp": rep.tp, "price_per_gpu_hour": price}, source=MELANGE)
    cap = Figure.of(n * rep.rate, "1", formula="replicas ÷ (P ÷ prefill rate + O · tpot(B) ÷ B) requests/s",
                    inputs={"replicas": n, "per_replica": rep.rate, "batch": rep.batch, "needed": needed},
                    source=MELANGE)
    label = _gpus_label(rep, n)
    return ServingOption(label, ((rep.gpu.id, n, rep.tp),), gpus, True, cost, cap, rep.ttft, rep.tpot, rep.batch,
                         "cheapest")


def _mixes(reps: list[_Replica], needed: float) -> list[ServingOption]:
    """For each pair of GPU types, the cheapest whole-replica split of the rate (both types used), kept
    only when it costs less than either type alone: a mix no cheaper than one of its own parts is not an
    alternative worth listing (Mélange's point is that mixing pays when whole replicas leave slack)."""
    out = []
    for i, a in enumerate(reps):
        for b in reps[i + 1:]:
            pa, pb = a.tp * (a.gpu.price_per_hour or 0), b.tp * (b.gpu.price_per_hour or 0)
            if math.ceil(needed / a.rate) > MAX_MIX_REPLICAS:  # the split search is linear in the replicas
                continue
            alone = min(math.ceil(needed / a.rate) * pa, math.ceil(needed / b.rate) * pb)
            best = None
            for na in range(1, math.ceil(needed / a.rate) + 1):
                nb = max(1, math.ceil((needed - na * a.rate) / b.rate))
                cost = na * pa + nb * pb
                if best is None or cost < best[0]:
                    best = (cost, na, nb)
            if best is None or best[0] >= alone:
                continue
            cost, na, nb = best
            label = f"{_gpus_label(a, na)} + {_gpus_label(b, nb)}"
            cost_fig = Figure.of(cost, "USD", formula="Σ replicas × tp × price per GPU-hour",
                                 inputs={"replicas_a": na, "replicas_b": nb}, source=MELANGE)
            cap = Figure.of(na * a.rate + nb * b.rate, "1", formula="Σ replicas × requests/s per replica",
                            inputs={"needed": needed}, source=MELANGE)
            out.append(ServingOption(label, ((a.gpu.id, na, a.tp), (b.gpu.id, nb, b.tp)), na * a.tp + nb * b.tp,
                                     True, cost_fig, cap, max(a.ttft, b.ttft), max(a.tpot, b.tpot),
                                     min(a.batch, b.batch), "mix"))
    return out
