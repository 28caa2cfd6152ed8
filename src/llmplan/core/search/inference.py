"""Inference layouts: the fewest GPUs that hold the weights and the KV cache, or the fastest.

A serving replica is TP (inside a node) × PP GPUs; the rest of the cluster runs
replicas side by side (DP). Quick model: the weights at the plan's format plus the KV
cache of ``batch`` sequences of prompt+output tokens must fit in each GPU; a decode
step reads each GPU's weights and cache once at the achievable memory bandwidth
(roofline: decode is bandwidth-bound at small batch), and the PP stages run one after
another for one token. The full engine re-estimates the short list when given.
"""

from __future__ import annotations

from llmplan.core.params import count_params
from llmplan.core.search.results import ParetoPoint, RankedLayout, SearchResult
from llmplan.core.workload import ParallelLayout, Scenario
from llmplan.errors import LayoutError, LlmplanError

# Bits per weight of common formats: block layouts of llama.cpp's ggml-quants (q8_0: 34 bytes per
# 32 weights; q4_0: 18/32; q4_k: 144/256; q5_k: 176/256; q6_k: 210/256) and 4-bit GPTQ/AWQ with
# one fp16 scale and zero per 128 weights. Q4_K_M / Q5_K_M mix in q6_k tensors: about 4.85 / 5.7.
_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "q8_0": 8.5, "q6_k": 6.5625,
         "q5_k_m": 5.7, "q5_k_s": 5.5, "q4_k_m": 4.85, "q4_k_s": 4.5, "q4_0": 4.5, "gptq-4bit": 4.25,
         "awq-4bit": 4.25, "nf4": 4.127}
_KV_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "q8_0": 1.0625, "q4_0": 0.5625}
OVERHEAD_BYTES = 2 * 2**30  # CUDA graphs, activations of one step, allocator reserve (assumption)


def search_inference(scenario: Scenario, top: int = 5, objective: str = "cost", refine=None, cancel=None
                     ) -> SearchResult:
    from llmplan.core.search.planner import scenario_for  # planner imports this module lazily

    if objective not in ("time", "cost"):
        raise LayoutError(f"search objective '{objective}' is unknown; use 'time' or 'cost'")
    m, c, inf = scenario.model, scenario.cluster, scenario.inference
    params = count_params(m).total
    bits = _BITS.get(inf.weight_format.lower(), 16)
    kv_b = _KV_BYTES.get(inf.kv_dtype.lower(), 2)
    kv_token = 2 * m.num_layers * m.kv_width * kv_b
    if m.mla:
        kv_token = m.num_layers * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * kv_b
    ctx = inf.batch * (inf.prompt_tokens + inf.output_tokens)
    cap = c.gpu.usable_memory_bytes * (inf.gpu_memory_utilization or 0.9)
    bw = c.gpu.memory_bandwidth * scenario.efficiency.memory_bandwidth
    price = c.hourly_price
    rows = []
    for tp in (1, 2, 4, 8, 16, 32, 64):
        if tp > c.gpus_per_node or m.num_heads % tp or c.total_gpus % tp:
            continue
        for pp in range(1, min(m.num_layers, c.total_gpus // tp) + 1):
            if (c.total_gpus // tp) % pp:
                continue
            per_gpu = (params * bits / 8 + kv_token * ctx) / (tp * pp) + OVERHEAD_BYTES
            if per_gpu > cap:
                continue
            tpot = pp * (per_gpu - OVERHEAD_BYTES) / bw
            dp = c.total_gpus // (tp * pp)
            rows.append((tp, pp, dp, per_gpu, tpot))
    if cancel and cancel():
        return SearchResult((), (), (), len(rows), 0, 0, True, objective)
    if not rows:
        return SearchResult((), (), (), 0, 0, 0, False, objective,
                            "the weights and KV cache do not fit on these GPUs: add GPUs or quantise")
    if objective == "cost":
        rows.sort(key=lambda r: (r[0] * r[1], r[4]))
    else:
        rows.sort(key=lambda r: (r[4], r[0] * r[1]))
    out = []
    for tp, pp, _replicas, mem, tpot in rows[: top * 3]:
        layout = ParallelLayout(tp=tp, pp=pp, dp=1, sequence_parallel=False)
        gpus = tp * pp
        tps = inf.batch / tpot
        est = None
        if refine is not None:
            try:
                est = refine(scenario_for(scenario, layout, scenario.training))
            except LlmplanError:
                continue
            if not est.fits or est.inference is None:
                continue
            tpot, tps, mem = est.inference.tpot_s.value, est.inference.tokens_per_s.value, est.memory.total.value
        cost = None if price is None else gpus * price / 3600.0 / tps * 1e6
        out.append(RankedLayout(len(out) + 1, gpus, layout, scenario.training, tpot, tps, mem,
                                float(c.gpu.usable_memory_bytes), 0.0, cost, est is not None,
                                "" if not out else _why(gpus, tpot, out[0]), est, serving=True))
        if len(out) == top:
            break
    return SearchResult(tuple(out), (), _front(rows, inf.batch, price), len(rows), len(rows),
                        sum(r.refined for r in out), False,
                        objective,
                        f"{c.total_gpus // out[0].gpus} replica(s) of the best layout fit in the cluster" if out else "")


def _front(rows: list[tuple], batch: int, price: float | None) -> tuple:
    """Fastest replica per GPU count, kept when faster than every smaller one (quick model)."""
    best: dict[int, tuple] = {}
    for tp, pp, _replicas, _mem, tpot in rows:
        g = tp * pp
        if g not in best or tpot < best[g][4]:
            best[g] = (tp, pp, _replicas, _mem, tpot)
    out, fastest = [], 0.0
    for g, (tp, pp, _r, _m, tpot) in sorted(best.items()):
        tps = batch / tpot
        if tps > fastest:
            cost = None if price is None else g * price / 3600.0 / tps * 1e6
            out.append(ParetoPoint(g, tps, cost, f"TP{tp} PP{pp}"))
            fastest = tps
    return tuple(out)


def _why(gpus: int, tpot: float, best) -> str:
    if gpus > best.gpus:
        return f"needs {gpus} GPUs per replica instead of {best.gpus}"
    return f"{tpot / best.step_time_s - 1:.0%} slower per output token than #1"
