"""Inference and serving: ``estimate_inference(scenario) -> Estimate``.

Memory per GPU (``memory``), latency and throughput from a per-phase roofline
(``latency``), and the cheapest hardware for a request rate under SLOs (``serving``).
Every number is a ``Figure`` with its formula, inputs and source.
"""

from __future__ import annotations

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.explain import Figure, total, zero
from llmplan.core.inference.backend import backend_of, runtime_context_bytes
from llmplan.core.inference.cpu_moe import host_moe_layers
from llmplan.core.inference.latency import SPECULATIVE, PhaseTime, prefill_time, rates, time_per_output_token
from llmplan.core.inference.memory import LOGIT_BYTES, MemoryPlan, fewest_host_moe_layers, plan_memory
from llmplan.core.inference.report_figures import context_warning, cost_figures, experts_figure
from llmplan.core.params import count_params
from llmplan.core.result import Bottleneck, Estimate, InferenceReport, MemoryBreakdown
from llmplan.core.workload import Scenario

__all__ = ["EngineProfile", "estimate_inference"]

GIB = 2**30
_KV_FORMULA = {  # bytes one token adds to the cache, by attention kind and the engine's MLA layout (core.kvcache)
    "gqa": "2 × kv_heads × head_dim × layers × bytes",
    "latent": "(kv_lora_rank + qk_rope_head_dim) × layers × bytes",
    "heads": "heads × (qk_nope + qk_rope + v_head_dim) × layers × bytes (the engine caches per-head K and V)",
    "heads_padded": "heads × 2 × max(qk_nope + qk_rope, v_head_dim) × layers × bytes (per-head K and V, padded)",
}


def _memory_figures(s: Scenario, p: MemoryPlan) -> MemoryBreakdown:
    inf = s.inference
    weights = Figure.of(
        p.weights_gpu, "B",
        formula="Σ tensor bytes in the format ÷ tp (split tensors) over the worst pipeline stage",
        inputs={"format": p.weights.format.name, "total_bytes": p.weights.total_bytes,
                "bits_per_weight": round(p.weights.bits_per_weight, 4), "tp": p.tp, "pp": p.pp,
                "gpu_layers": p.gpu_layers},
        source=p.weights.format.source,
    )
    kv = Figure.of(
        p.kv_batch_gpu, "B",
        formula="batch × KV bytes(prompt + output, paged) × GPU share (kv heads ÷ tp, layers ÷ pp)",
        inputs={"batch": inf.batch, "context_tokens": inf.prompt_tokens + inf.output_tokens,
                "kv_bytes_per_token": p.kv.bytes_per_token, "kv_dtype": inf.kv_dtype,
                "block_tokens": p.engine.kv_block_tokens, "shared_prefix_tokens": inf.shared_prefix_tokens,
                "gpu_share": round(p.kv_share, 6)},
        source="deepseek-v2" if s.model.mla else "vllm",
    )
    if p.engine.flash_attention and p.scores:  # a quantised cache the engine attends to unfused (kv_quant)
        mlx = p.kv.quant is not None and p.kv.quant.per_head_groups
        acts = Figure.of(
            p.activations + p.scores, "B",
            formula="prefill chunk tokens × (2h + (q+2kv)/tp + MLP hidden/tp) × 2 B + attention phase: max(0, " + (
                "2 × batch × heads × step × prompt × 2 B" if mlx else
                "2 × batch × one layer's cache at the model's dtype") + " − the activations)",
            inputs={"chunk_tokens": p.chunk_tokens, "tp": p.tp, "score_matrix": p.scores},
            source="mlx-quant-kv" if mlx else "hf-quant-kv",
            assumptions=(("a quantised cache (--kv-bits) attends through mx.quantized_matmul: the scores of the "
                          "prompt's last step against the whole prompt are materialised, two such tensors live"
                          if mlx else "each decode step dequantises a layer's cache and concatenates it with the "
                          "residual tokens: both live while the layer attends") + " (core/inference/score_buffer.py)",
                         "layer tensors freed after each layer"),
        )
    elif p.engine.flash_attention:
        acts = Figure.of(
            p.activations, "B",
            formula="prefill chunk tokens × (2h + (q+2kv)/tp + MLP hidden/tp) × 2 B",
            inputs={"chunk_tokens": p.chunk_tokens, "tp": p.tp},
            source="flash-attention",
            assumptions=("flash attention: no materialised score matrix", "layer tensors freed after each layer"),
        )
    else:
        acts = Figure.of(
            p.activations + p.scores, "B",
            formula="prefill chunk tokens × (2h + (q+2kv)/tp + MLP hidden/tp) × 2 B + score matrix: "
            "max(0, n_ctx × n_ubatch × (heads + 1) × 4 B + residual and kqv − compute buffer with flash attention)"
            " + n_ctx × n_ubatch × heads × 2 B (F16 copy, CUDA/ROCm)",
            inputs={"chunk_tokens": p.chunk_tokens, "tp": p.tp, "score_matrix": p.scores},
            source="llama.cpp-graph",
            assumptions=("no flash attention: one micro-batch's f32 scores against the whole cache, soft-maxed "
                         "in place", "layer tensors freed after each layer"),
        )
    buffers = Figure.of(p.logits, "B", formula="batch × vocab × 4 B (fp32 logits for sampling)",
                        inputs={"batch": inf.batch, "vocab": s.model.vocab_size, "bytes": LOGIT_BYTES},
                        source="assumption")
    backend = backend_of(s.cluster.gpu, inf.backend)
    overhead = Figure.of(p.overhead, "B", formula="runtime context of the back-end + engine framework memory "
                         "(engine profile)",
                         inputs={"engine": p.engine.id, "backend": backend,
                                 "runtime_context": runtime_context_bytes(p.engine, backend),
                                 "framework": p.engine.framework_bytes}, source=p.engine.source or "assumption")
    if p.expert_upload:  # the compute buffer's copy of one layer's routed experts, uploaded for prompts
        acts = Figure.of(acts.value + p.expert_upload, "B", formula=acts.formula + " + one layer's routed experts "
                         "(llama.cpp uploads host-RAM experts for prompt micro-batches of 32 tokens or more)",
                         inputs={**acts.inputs, "expert_upload": p.expert_upload}, source=acts.source,
                         assumptions=acts.assumptions)
    parts = {"weights": weights, "kv_cache": kv, "activations": acts, "buffers": buffers, "overhead": overhead}
    gpu = s.cluster.gpu
    capacity = Figure.of(
        p.capacity, "B", formula="usable GPU memory × engine memory utilization",
        inputs={"usable_memory_bytes": gpu.usable_memory_bytes,
                "utilization": round(p.capacity / gpu.usable_memory_bytes, 4)},
        source=p.engine.source or "assumption",
    )
    host = Figure.of(p.weights_host + p.kv_host, "B",  # also with every layer on the GPU: the embedding is there
                     formula="weights and KV cache in host RAM: layers left there (with the output head, which "
                             "llama.cpp puts on a GPU only when every layer is), routed experts kept there "
                             "(--n-cpu-moe), and the input embedding (llama.cpp and Ollama look tokens up on the CPU)",
                     inputs={"weights": p.weights_host, "kv": p.kv_host}, source="llama.cpp")
    no = "inference does not train"
    return MemoryBreakdown(
        weights=weights, gradients=zero("B", no), optimizer=zero("B", no), master_weights=zero("B", no),
        activations=acts, kv_cache=kv, buffers=buffers, overhead=overhead,
        total=total(parts, "B", "memory per GPU"), capacity=capacity, host_ram=host,
        nvme=zero("B", "nothing is offloaded to NVMe"),
    )


def _phase_inputs(t: PhaseTime) -> dict[str, float]:
    return {"compute_s": t.compute_s, "memory_s": t.memory_s, "comm_s": t.comm_s, "host_s": t.host_s,
            "fixed_s": t.fixed_s, "flops": t.flops, "bytes": t.bytes}


def estimate_inference(scenario: Scenario) -> Estimate:
    """Memory, latency, throughput and cost of serving ``scenario.model`` as the plan says; llama.cpp's row split
    over the machine's identical cards is ``row_estimate`` (the CLI's ``split_cards``: one truth)."""
    s, inf = scenario, scenario.inference
    if inf.split_mode == "row" and s.cluster.total_gpus > 1:
        from llmplan.core.inference.row_estimate import estimate_rows

        return estimate_rows(s)
    engine = s.engine_profile or EngineProfile()
    avg_context = inf.prompt_tokens + inf.output_tokens // 2
    plan, chosen = _experts_or_layers(s, engine, plan_memory(s, engine), avg_context)
    memory = _memory_figures(s, plan)
    r = rates(s, plan, s.efficiency)
    pre = prefill_time(s, plan, r, inf.batch, inf.prompt_tokens)
    tpot_s, step, per_verify = time_per_output_token(s, plan, r, inf.batch, avg_context)
    replicas = s.parallelism.dp
    gpus = plan.tp * plan.pp * replicas

    ttft = Figure.of(pre.total_s, "s", formula="max(FLOPs ÷ (tp·peak·eff), weight bytes ÷ bandwidth) + TP/PP comm + fixed",
                     inputs={**_phase_inputs(pre), "batch": inf.batch, "prompt_tokens": inf.prompt_tokens,
                             "flops_per_s": r.flops},
                     source="roofline", assumptions=("the batch's prompts are prefilled together",))
    tpot_inputs = {**_phase_inputs(step), "batch": inf.batch, "context": avg_context, "bandwidth": r.bandwidth}
    # fixed_s: the per-step floor (kernel hand-overs and GEMM minimums: core/inference/serving_floor.py; llama.cpp's
    # per-layer floor; the engine's per-step overhead)
    tpot_formula = "max(FLOPs ÷ (tp·peak·eff), (weights read + KV read) ÷ bandwidth) + comm + fixed"
    tpot_source = "roofline"
    if inf.draft_tokens:
        tpot_inputs |= {"draft_tokens": inf.draft_tokens, "acceptance": inf.draft_acceptance,
                        "tokens_per_step": per_verify}
        tpot_formula = "(k·c·t_step + t_verify(k+1 tokens)) ÷ ((1 - a^(k+1)) ÷ (1 - a))"
        tpot_source = SPECULATIVE
    tpot = Figure.of(tpot_s, "s", formula=tpot_formula, inputs=tpot_inputs, source=tpot_source,
                     assumptions=(f"KV read at the mean context {avg_context} tokens",))
    per_user = Figure.of(1 / tpot_s, "tokens/s", formula="1 ÷ tpot", inputs={"tpot_s": tpot_s}, source="roofline")
    agg = inf.batch * replicas / tpot_s
    tokens_per_s = Figure.of(agg, "tokens/s", formula="batch × dp ÷ tpot",
                             inputs={"batch": inf.batch, "dp": replicas, "tpot_s": tpot_s}, source="roofline")
    prefill_tps = inf.batch * inf.prompt_tokens * replicas / pre.total_s
    prefill_fig = Figure.of(prefill_tps, "tokens/s", formula="batch × prompt × dp ÷ ttft",
                            inputs={"ttft_s": pre.total_s}, source="roofline")
    maxc = Figure.of(plan.max_concurrency, "1", formula="floor(KV budget ÷ KV bytes per sequence on one GPU)",
                     inputs={"kv_budget": plan.kv_budget, "kv_per_sequence": plan.kv_per_seq_gpu}, source="vllm")
    pool = Figure.of(plan.kv_budget, "B", formula="capacity − weights − activations − buffers − overhead",
                     inputs={"capacity": plan.capacity, "fixed": plan.fixed_gpu}, source="vllm")
    cost_in, cost_out = cost_figures(s.cluster.hourly_price, gpus, agg, prefill_tps)
    kvpt = Figure.of(plan.kv.bytes_per_token, "B", formula=_KV_FORMULA["gqa" if not s.model.mla else plan.kv.mla_cache],
                     inputs={"layers": s.model.num_layers, "element_bytes": plan.kv.element_bytes,
                             **({"mla_cache": plan.kv.mla_cache} if s.model.mla else {})},
                     source="deepseek-v2" if s.model.mla else "vllm")
    wbytes = Figure.of(plan.weights.total_bytes, "B", formula="Σ tensor bytes in the format (all GPUs)",
                       inputs={"bits_per_weight": round(plan.weights.bits_per_weight, 4)},
                       source=plan.weights.format.source)
    L = s.model.num_layers
    gpu_layers = None
    if engine.partial_offload:
        most = ("largest n with weights(n) + KV(n) + fixed ≤ capacity" if plan.pp == 1 else
                "largest n whose layer split (n ÷ pp a card, llama.cpp's assignment) fits every card")
        gpu_layers = Figure.of(plan.gpu_layers, "1", formula=most if inf.gpu_layers is None else "inference.gpu_layers",
                               inputs={"layers": L, "cards": plan.pp}, source="llama.cpp")
    cpu_moe = None
    if engine.experts_in_host and s.model.is_moe:
        # the stated --n-cpu-moe, which with -ngl below the layer count also names layers left whole in host RAM
        n_set = host_moe_layers(s.model, inf.cpu_moe_layers) if inf.cpu_moe_layers is not None and not chosen \
            else plan.host_moe_layers
        cpu_moe = experts_figure(
            s.model, plan.weights, n_set, plan.host_moe_layers,
            ("fewest leading layers whose routed experts must stay in host RAM for the rest to fit on the GPUs, "
             "chosen where faster than whole layers in host RAM") if chosen
            else "inference.cpu_moe_layers" if inf.cpu_moe_layers is not None else "none: every expert on the GPUs")
    report = InferenceReport(
        ttft_s=ttft, tpot_s=tpot, tokens_per_s=tokens_per_s, tokens_per_s_per_user=per_user, max_concurrency=maxc,
        kv_bytes_per_token=kvpt, weight_bytes=wbytes, prefill_bound=pre.bound, decode_bound=step.bound,
        cost_per_million_input=cost_in, cost_per_million_output=cost_out, gpu_layers=gpu_layers,
        cpu_moe_layers=cpu_moe,
        kv_pool_bytes=pool,
        request_latency_s=Figure.of(pre.total_s + inf.output_tokens * tpot_s, "s", formula="ttft + output × tpot",
                                    inputs={"output_tokens": inf.output_tokens}, source="roofline"),
        prefill_tokens_per_s=prefill_fig,
        host_weight_bytes=Figure.of(plan.weights_host, "B", formula="weights of layers in host RAM",
                                    source="llama.cpp"),
        weight_format=plan.weights.format.name, engine=engine.id,
    )
    return Estimate(params=count_params(s.model), memory=memory, compute=None, communication=None,
                    inference=report, bottleneck=_bottleneck(s, memory, plan, step), warnings=_warnings(s, plan))


def _experts_or_layers(s: Scenario, engine: EngineProfile, plan: MemoryPlan, context: int
                       ) -> tuple[MemoryPlan, bool]:
    """The plan as stated, or, where it leaves both ``gpu_layers`` and ``cpu_moe_layers`` open and llama.cpp would
    leave whole layers of an MoE model in host RAM, the fewest layers' routed experts in host RAM with the rest on
    the GPUs (``--n-cpu-moe``), when that is faster per output token (it is wherever it fits: a token reads only
    k of E experts from host RAM, where a whole layer in host RAM takes its attention and KV cache along). True
    when the experts were chosen."""
    inf, L = s.inference, s.model.num_layers
    if (inf.cpu_moe_layers is not None or inf.gpu_layers is not None or plan.gpu_layers >= L
            or not engine.experts_in_host or not s.model.is_moe or plan.tp > 1 or s.cluster.gpu.unified_memory):
        return plan, False
    n = fewest_host_moe_layers(s, engine)
    if n is None:
        return plan, False
    experts = plan_memory(s, engine, host_moe=n)

    def tpot(p: MemoryPlan) -> float:
        return time_per_output_token(s, p, rates(s, p, s.efficiency), inf.batch, context)[0]

    return (experts, True) if tpot(experts) < tpot(plan) else (plan, False)


def _bottleneck(s: Scenario, memory: MemoryBreakdown, plan: MemoryPlan, step: PhaseTime) -> Bottleneck:
    if not memory.fits:
        short = (memory.total.value - memory.capacity.value) / GIB
        return Bottleneck("memory capacity", f"The plan needs {memory.total.value / GIB:.1f} GiB per GPU but "
                          f"{memory.capacity.value / GIB:.1f} GiB is usable ({short:.1f} GiB short): use a smaller "
                          "weight format, a shorter context or smaller batch, or more GPUs (tensor parallel).")
    if step.bound == "host memory bandwidth" and plan.host_moe_layers:
        return Bottleneck("memory bandwidth", f"The routed experts of {plan.host_moe_layers} MoE layers stay in host "
                          "RAM; decode speed is set by the CPU's memory bandwidth: keep fewer there (more GPU "
                          "memory, a shorter context) or use faster host RAM.")
    if step.bound == "host memory bandwidth":
        return Bottleneck("memory bandwidth", f"{s.model.num_layers - plan.gpu_layers} layers stay in host RAM; "
                          "decode speed is set by the CPU's memory bandwidth: fit more layers on the GPU.")
    if step.bound == "host (kernel launches)" and plan.engine.cuda_graph_max_tokens:
        return Bottleneck("cpu", f"The batch is larger than the largest CUDA graph {plan.engine.name} captures by "
                          "default, so each step launches every kernel from Python and the host CPU sets the pace: "
                          "raise the engine's graph limit (vLLM compilation_config max_cudagraph_capture_size, "
                          "SGLang --cuda-graph-max-bs, TGI --cuda-graphs) or run a smaller batch per replica.")
    if step.bound == "host (kernel launches)":
        return Bottleneck("cpu", f"The {plan.engine.name} engine issues every kernel from Python: the host CPU, not "
                          "the GPU, sets the pace of each token. A compiled static cache or a serving engine "
                          "(vLLM, SGLang, llama.cpp) removes most of it.")
    if step.bound == "per-step overhead (small kernels)":
        return Bottleneck("kernel overhead", "Each token runs many small kernels that take a few microseconds "
                          "however little they read, which outweighs streaming the weights: a larger batch "
                          "raises throughput almost for free.")
    if step.bound == "interconnect":
        return Bottleneck("interconnect", "Tensor-parallel all-reduces take longer than the math: use fewer "
                          "GPUs per replica or a faster link (NVLink).")
    if step.bound == "memory bandwidth":
        return Bottleneck("memory bandwidth", "Each generated token streams the weights and KV cache from memory; "
                          "a larger batch or a smaller weight format raises throughput.")
    return Bottleneck("compute", "The batch is large enough that decode is limited by matmul throughput.")


def _warnings(s: Scenario, plan: MemoryPlan) -> tuple[str, ...]:
    out = list(context_warning(s))
    inf = s.inference
    if plan.max_concurrency < inf.batch and plan.kv_budget > 0:
        out.append(f"only {plan.max_concurrency} sequences of this length fit in the KV budget; batch {inf.batch} "
                   "would queue or be preempted")
    if s.model.mtp_layers:
        out.append("multi-token-prediction modules are not loaded (normal generation does not use them)")
    return tuple(out)
