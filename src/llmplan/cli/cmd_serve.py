"""``llmplan-cli serve``: the cheapest GPUs that serve a request rate within TTFT/TPOT SLOs."""

from __future__ import annotations

import argparse
import json

from pydantic import ValidationError

from llmplan.cli import positive_int
from llmplan.cli.models import resolve_model_arg
from llmplan.core.hardware import Efficiency, GpuSpec
from llmplan.core.inference.serving import RequestClass, ServingPlan, ServingRequest, plan_serving
from llmplan.errors import CatalogError, InputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="cheapest GPU type and count for a request rate under latency SLOs")
    p.add_argument("--model", required=True, help="catalog id, or a path to a config.json / model folder")
    p.add_argument("--rate", type=float, required=True, help="requests per second")
    p.add_argument("--prompt", type=int, default=1024, help="prompt tokens per request (default 1024)")
    p.add_argument("--output", type=int, default=256, help="output tokens per request (default 256)")
    p.add_argument("--ttft", type=float, required=True, help="time-to-first-token SLO in seconds")
    p.add_argument("--tpot", type=float, required=True, help="time-per-output-token SLO in seconds")
    p.add_argument("--weight-format", default="bf16", help="bf16, fp8, awq-4bit, q4_k_m ... (default bf16)")
    p.add_argument("--kv-dtype", default="bf16", help="KV cache type (default bf16): one the engine takes, e.g. fp8, "
                   "q8_0, int8 (TensorRT-LLM), fp4_e2m1 (SGLang); docs/inference.md, KV cache types per engine")
    p.add_argument("--engine", default="vllm", help="engine profile id (default vllm)")
    p.add_argument("--mix", default="", metavar="P:O:SHARE,...",
                   help="a small distribution of request sizes, e.g. 256:64:3,4000:500:1 (overrides --prompt/--output)")
    p.add_argument("--gpus", default="", help="comma-separated GPU catalog ids (default: every priced GPU)")
    p.add_argument("--top", type=positive_int, default=10, metavar="N",
                   help="show the N cheapest options that meet the SLOs (default 10; --json lists all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def parse_mix(text: str) -> tuple[RequestClass, ...]:
    """'P:O:SHARE,...' into request classes; SHARE may be left out (1)."""
    out = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        parts = item.split(":")
        try:
            if len(parts) not in (2, 3):
                raise ValueError
            nums = [float(x) for x in parts]
            out.append(RequestClass(prompt_tokens=int(nums[0]), output_tokens=int(nums[1]),
                                    share=nums[2] if len(nums) == 3 else 1.0))
        except ValueError:
            raise InputError(f"--mix entry '{item}' must be PROMPT:OUTPUT[:SHARE] with positive numbers, "
                             "e.g. 256:64:3") from None
    return tuple(out)


def resolve_gpu_efficiencies(gpus: list[GpuSpec]) -> dict[str, Efficiency]:
    """The catalog's achievable fractions per GPU, where the catalog provides them."""
    try:
        from llmplan.catalog.hardware import load_hardware_catalog
    except ImportError:
        return {}
    catalog = load_hardware_catalog()
    if not hasattr(catalog, "efficiency_for"):
        return {}
    return {g.id: catalog.efficiency_for(g.id) for g in gpus}


def resolve_gpus(ids: str) -> list[GpuSpec]:
    """GPU specs from the hardware catalog (every priced GPU when ``ids`` is empty)."""
    from llmplan.catalog.hardware import load_hardware_catalog

    catalog = load_hardware_catalog()
    if not ids.strip():
        gpus = [g.spec for g in catalog.gpus if g.spec.price_per_hour is not None]
        if not gpus:
            raise CatalogError("no GPU in the catalog has a price; pass --gpus with ids of priced GPUs")
        return gpus
    return [catalog.gpu(i.strip()).spec for i in ids.split(",") if i.strip()]


def _engine(engine_id: str):
    from llmplan.catalog.engines import engine_profile

    return engine_profile(engine_id)


def plan_to_json(plan: ServingPlan) -> dict:
    rows = []
    for o in plan.options:
        rows.append({
            "label": o.label, "feasible": o.feasible, "gpus": o.gpus,
            "parts": [{"gpu": g, "replicas": n, "tp": tp} for g, n, tp in o.parts],
            "cost_per_hour_usd": o.cost_per_hour.value if o.cost_per_hour else None,
            "capacity_requests_per_s": o.requests_per_s.value if o.requests_per_s else None,
            "ttft_s": o.ttft_s, "tpot_s": o.tpot_s, "batch_per_replica": o.batch, "why": o.why,
        })
    r = plan.request
    return {"request": {"rate_per_s": r.rate_per_s, "prompt_tokens": r.prompt_tokens,
                        "output_tokens": r.output_tokens, "ttft_s": r.ttft_s, "tpot_s": r.tpot_s,
                        "max_utilization": r.max_utilization},
            "best": rows[0] if plan.best else None, "options": rows}


def run(args: argparse.Namespace) -> int:
    spec = resolve_model_arg(args.model)
    try:
        request = ServingRequest(rate_per_s=args.rate, prompt_tokens=args.prompt, output_tokens=args.output,
                                 ttft_s=args.ttft, tpot_s=args.tpot, mix=parse_mix(args.mix))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"bad serving request: {first['loc'][0]}: {first['msg']}") from None
    gpus = resolve_gpus(args.gpus)
    plan = plan_serving(spec, request, gpus, weight_format=args.weight_format, kv_dtype=args.kv_dtype,
                        engine=_engine(args.engine), efficiency_by_gpu=resolve_gpu_efficiencies(gpus))
    return print_plan(plan, spec.name, args.json, top=max(args.top, 1))


def print_plan(plan: ServingPlan, model_name: str, as_json: bool, top: int = 10) -> int:
    if as_json:
        print(json.dumps(plan_to_json(plan), indent=2))
        return 0 if plan.best else 1
    r = plan.request
    print(f"{model_name}: {r.rate_per_s:g} req/s, {r.prompt_tokens} in / {r.output_tokens} out, "
          f"SLO TTFT {r.ttft_s * 1e3:.0f} ms, TPOT {r.tpot_s * 1e3:.0f} ms")
    if not plan.best:
        print("  no candidate meets the SLOs:")
    feasible = [o for o in plan.options if o.feasible]
    shown = feasible[:top] if feasible else plan.options
    width = max([60, *(len(o.label) for o in shown)])  # the columns after the label stay aligned
    for o in shown:
        if o.feasible:
            print(f"  ${o.cost_per_hour.value:8.2f}/h  {o.label:<{width}} batch {o.batch:>5}  "
                  f"TTFT {o.ttft_s * 1e3:7.1f} ms  TPOT {o.tpot_s * 1e3:6.1f} ms  {o.why}")
        else:
            print(f"  rejected   {o.label:<{width}} {o.why}")
    if len(feasible) > len(shown):
        print(f"  ... {len(feasible) - len(shown)} more options meet the SLOs (--top N shows more, --json all)")
    return 0 if plan.best else 1
