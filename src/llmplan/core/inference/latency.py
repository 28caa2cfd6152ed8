"""Time to first token and time per output token from a roofline per phase.

Prefill runs every prompt token through the model at once: its time is the larger of
the matmul time (2 FLOP per active weight per token, plus attention's QK and AV) and
the time to stream the weights once per forward pass. Decode produces one token per
sequence per step: each step streams the weights the batch touches and every
sequence's KV cache, and does 2 FLOP per active weight per sequence; at small batch
it is bound by memory bandwidth, at large batch by compute (Williams et al., roofline).

Tensor parallelism divides both by ``tp`` and adds two all-reduces of the activations
per layer (ring: 2(tp-1)/tp of the buffer per GPU, NCCL). Pipeline stages run one
after another for a given token, so ``pp`` shrinks memory but not latency.
MoE decode reads only the experts the batch's tokens are routed to: for B tokens
choosing k of E experts, E·(1-(1-k/E)^B) distinct experts in expectation.
llama.cpp's MoE prompts also pay their kernels' per-expert tile padding and routing bytes (``moe_prompt_s``).
Speculative decoding (Leviathan et al., ICML 2023): with draft length k and per-token
acceptance a, one verification step yields (1-a^(k+1))/(1-a) tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import Efficiency, GpuSpec
from llmplan.core.inference.backend import (
    backend_of,
    decode_stream_efficiency,
    dequantises_prompt,
    engine_prompt_rate,
    is_block_quantised,
    metal_prompt_rate,
    stream_efficiency,
)
from llmplan.core.inference.cpu_moe import OP_OFFLOAD_MIN_BATCH, host_expert_bytes
from llmplan.core.inference.dp_attention import allgather_s, local_tokens
from llmplan.core.inference.eager import eager_decode, eager_prefill
from llmplan.core.inference.fp8_online import bf16_share, is_online_fp8
from llmplan.core.inference.memory import ACT_BYTES, MemoryPlan
from llmplan.core.inference.metal_dequant import apple_generation
from llmplan.core.inference.moe_tiles import moe_prompt_extra_s
from llmplan.core.inference.serving_floor import DecodeFloor, decode_floor, replays_graph, small_allreduce_s
from llmplan.core.kv_quant import PLAIN_BYTES
from llmplan.core.model import ModelSpec
from llmplan.core.quant import QuantizedWeights
from llmplan.core.workload import Scenario
from llmplan.errors import InputError

SPECULATIVE = "Leviathan, Kalman and Matias, Fast Inference from Transformers via Speculative Decoding, ICML 2023, §3"


@dataclass(frozen=True, slots=True)
class PhaseTime:
    """One phase's roofline terms (seconds) and what bounds it."""

    compute_s: float
    memory_s: float
    comm_s: float
    host_s: float  # layers left in host RAM (partial offload)
    flops: float
    bytes: float
    launch_s: float = 0.0  # the host issuing kernels (eager engines); overlaps the GPU's work
    fixed_s: float = 0.0  # serial per-call or per-step cost (generate() set-up, sampling and sync)

    @property
    def total_s(self) -> float:
        return max(self.compute_s, self.memory_s, self.launch_s) + self.comm_s + self.host_s + self.fixed_s

    @property
    def bound(self) -> str:
        gpu = max(self.compute_s, self.memory_s)
        if self.host_s > gpu:
            return "host memory bandwidth"
        if self.launch_s > gpu:
            return "host (kernel launches)"
        if self.fixed_s > gpu:
            return "per-step overhead (small kernels)"
        if self.comm_s > gpu:
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory bandwidth"


@dataclass(frozen=True, slots=True)
class Rates:
    """Achievable hardware rates for one scenario."""

    flops: float  # FLOP/s one GPU reaches on the format's matmuls
    bandwidth: float  # bytes/s one GPU streams during decode
    peak: float  # dense peak FLOP/s for the format's matmuls (eager engines apply their own GEMM curve)
    peak_bandwidth: float  # the GPU's peak memory bandwidth
    link: float  # bytes/s per GPU for TP all-reduces
    latency: float  # fixed seconds per collective
    host_bandwidth: float  # bytes/s for host-resident layers
    stream: float  # bytes/s of the prompt's streaming (weight reads, score matrix): the copy share, not batch 1's


def rates(scenario: Scenario, plan: MemoryPlan, eff: Efficiency) -> Rates:
    gpu, cluster = scenario.cluster.gpu, scenario.cluster
    dtype = plan.weights.format.compute_dtype
    peak = gpu.peak_flops.for_dtype(dtype)
    if peak <= 0:
        raise InputError(
            f"{gpu.name} has no peak FLOP/s for {dtype} matmuls; set its peak_flops.{dtype} (or a wider type) "
            "in the GPU spec"
        )
    engine = plan.engine
    flops = peak * eff.matmul
    wide = bf16_share(plan.weights, scenario.model, engine)  # fp8-online: the matmuls the engine left bf16
    if wide:
        flops = 1 / ((1 - wide) / flops + wide / (gpu.peak_flops.for_dtype("bf16") * eff.matmul))
    fmt = plan.weights.format
    backend = backend_of(gpu, scenario.inference.backend)
    flops = engine_prompt_rate(engine, gpu, backend, fmt, plan.chunk_tokens)[0] or flops  # dequantising: prefill_time
    flops = metal_prompt_rate(engine, gpu, backend, fmt) or flops
    if engine.prefill_quant_factor_apple and fmt.kind == engine_quant_kind(engine) and gpu.vendor == "apple":
        flops *= curve_at_or_below(engine.prefill_quant_factor_apple, apple_generation(gpu.name))
    bw_eff = decode_stream_efficiency(engine, gpu, backend) or eff.memory_bandwidth
    stream = gpu.memory_bandwidth * (stream_efficiency(engine, gpu) or eff.memory_bandwidth)
    link = cluster.intra_bandwidth * eff.intra_node
    latency = plan.engine.allreduce_latency_s  # one collective inside a node
    if plan.tp > cluster.gpus_per_node:  # across nodes: every ring hop pays the network latency
        link = cluster.network.per_gpu(cluster.gpus_per_node) * eff.network
        latency = 2 * (plan.tp - 1) * cluster.network.latency_s
    host = scenario.inference.host_memory_bandwidth or plan.engine.host_memory_bandwidth or gpu.pcie_bandwidth
    if (plan.gpu_layers < scenario.model.num_layers or plan.host_moe_layers) and not host:
        kept = scenario.model.num_layers - plan.gpu_layers
        what = f"{kept} layers" if kept else f"the routed experts of {plan.host_moe_layers} layers"  # --n-cpu-moe
        raise InputError(
            f"{what} stay in host RAM but no host memory bandwidth is "
            "known; set inference.host_memory_bandwidth (bytes/s) or the engine's host_memory_bandwidth"
        )
    return Rates(flops, gpu.memory_bandwidth * bw_eff, peak, gpu.memory_bandwidth, link, latency, host, stream)


def curve_at_or_below(curve: tuple[tuple[float, float], ...], x: float) -> float:
    """The value of the last (key, value) point whose key is at or below ``x`` (the first point below all)."""
    value = curve[0][1]
    for key, v in curve:
        if key <= x:
            value = v
    return value


def engine_quant_kind(engine) -> str:
    """The engine's own quantised weight kind ('mlx' for MLX): the one its prompt factor applies to."""
    return next((k for k in engine.weight_formats if k not in ("float", "gguf")), "")


def _linear_params(spec: ModelSpec, plan: MemoryPlan) -> tuple[float, float]:
    """(active parameters of the blocks per token, parameters of the output head)."""
    head = spec.vocab_size * (spec.embedding_proj_dim or spec.hidden_size)
    groups = [g.group for g in plan.weights.groups]
    block = sum(g.params for g in groups if g.place == "layer" and g.category not in ("expert",))
    experts = sum(g.params for g in groups if g.category == "expert")
    if spec.moe and experts:
        block += experts * spec.moe.experts_per_token / spec.moe.num_experts
    return float(block), float(head)


def _causal_pairs(n: int, window: int | None) -> float:
    """Sum over query positions 0..n-1 of the keys each sees: min(i+1, window)."""
    if window is None or n <= window:
        return n * (n + 1) / 2
    return window * (window + 1) / 2 + (n - window) * window


def _attention_pairs(spec: ModelSpec, queries_from: int, queries_to: int) -> float:
    """Sum over layers of (query, key) pairs for query positions [from, to) under causal masking."""
    full = spec.full_attention_layer_count * (_causal_pairs(queries_to, None) - _causal_pairs(queries_from, None))
    w = spec.sliding_window
    sliding = spec.sliding_layer_count * (_causal_pairs(queries_to, w) - _causal_pairs(queries_from, w))
    return full + sliding


def _attn_width(spec: ModelSpec) -> int:
    """Query width of QK plus value width of AV over all heads."""
    if spec.mla:
        return spec.num_heads * (spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim + spec.mla.v_head_dim)
    return 2 * spec.num_heads * spec.head_dim


def _allreduce_one_s(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: float) -> float:
    """One TP all-reduce of ``tokens`` tokens' activations: the ring's bytes over the link plus the fixed latency,
    or, inside a node with an engine whose own small all-reduce is measured (``allreduce_small``), the larger of
    that measurement and the ring's bytes over the link."""
    tp = plan.tp
    if tp == 1:
        return 0.0
    buf = tokens * scenario.model.hidden_size * ACT_BYTES
    ring = 2 * (tp - 1) / tp * buf / r.link
    small = small_allreduce_s(plan.engine, tp, buf) if tp <= scenario.cluster.gpus_per_node else None
    return max(small, ring) if small is not None else ring + r.latency


def _tp_allreduce_s(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: float) -> float:
    return 2 * scenario.model.num_layers * _allreduce_one_s(scenario, plan, r, tokens)


def _dp_collectives_s(scenario: Scenario, plan: MemoryPlan, r: Rates, rows: int) -> float:
    """DP attention (``core.inference.dp_attention``): per layer one all-gather of ``rows`` hidden states and the
    feed-forward's all-reduce of them."""
    gather = allgather_s(r.latency, plan.tp, rows, scenario.model.hidden_size, ACT_BYTES, r.link)
    return scenario.model.num_layers * (gather + _allreduce_one_s(scenario, plan, r, rows))


def _pp_send_s(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: float) -> float:
    if plan.pp == 1:
        return 0.0
    buf = tokens * scenario.model.hidden_size * ACT_BYTES
    return (plan.pp - 1) * (buf / r.link + r.latency)


def score_elements(spec: ModelSpec, prompt: int, chunk: int, layers: int) -> float:
    """Attention score elements of one prompt run in micro-batches of ``chunk`` tokens without flash attention:
    each micro-batch scores its queries against every cached key so far (the causal mask is applied to the full
    n_kv x n_tokens matrix, not skipped; llama.cpp pads n_kv to 32 cells without flash attention, ignored here);
    per head, over ``layers`` layers (sliding-window layers see at most their window)."""
    full = spec.full_attention_layer_count * layers / spec.num_layers
    sliding = layers - full
    total = full * _chunked_keys(prompt, chunk, None)
    if sliding:
        total += sliding * _chunked_keys(prompt, chunk, spec.sliding_window)
    return total * spec.num_heads


def _chunked_keys(prompt: int, chunk: int, window: int | None) -> float:
    """Σ over micro-batches of (its tokens × the keys it sees: all cached so far, at most ``window``), closed form:
    m full micro-batches of c tokens see c, 2c ... mc keys, the last r tokens see the whole prompt."""
    m, r = divmod(prompt, chunk)
    w = window or prompt
    k = min(m, w // chunk)  # full micro-batches whose keys fit in the window
    total = chunk * chunk * k * (k + 1) / 2 + chunk * w * (m - k)
    return total + r * min(prompt, w)


def score_traffic_s(scenario: Scenario, gpu: GpuSpec, engine: EngineProfile, layers: int, bandwidth: float,
                    sequences: int, prompt: int, chunk: int) -> float:
    """Seconds a prompt spends moving its attention score matrix (``engine.prefill_score_bytes`` per element)
    over ``layers`` layers on ``gpu``, at ``bandwidth``; 0 with flash attention or off CUDA (Metal, Vulkan, ROCm
    and SYCL keep their measured prompt figures)."""
    if not engine.prefill_score_bytes or backend_of(gpu, scenario.inference.backend) != "cuda":
        return 0.0
    elements = score_elements(scenario.model, prompt, chunk, layers)
    return sequences * elements * engine.prefill_score_bytes / bandwidth


# mlx-lm's quantized_scaled_dot_product_attention (models/base.py, d78bf58e) per score element: mx.quantized_matmul
# writes it, mx.where reads and writes it, mx.softmax reads and writes it, the second quantized_matmul reads it.
MLX_SCORE_PASSES = 6


def mlx_quant_score_traffic_s(scenario: Scenario, plan: MemoryPlan, layers: int, stream: float, sequences: int,
                              prompt: int, chunk: int) -> float:
    """Seconds a prompt spends moving the score matrices mlx-lm materialises once its cache is quantised (the
    steps after the conversion, core/inference/score_buffer.py), at the copy stream ``stream``; 0 otherwise."""
    q = plan.kv.quant
    if q is None or not q.per_head_groups:
        return 0.0
    start = q.converted_at(chunk)
    if prompt - 1 <= start:
        return 0.0
    spec = scenario.model
    elements = score_elements(spec, prompt, chunk, layers) - score_elements(spec, start, chunk, layers)
    return sequences * elements * MLX_SCORE_PASSES * PLAIN_BYTES / stream


def pool_dequant_bytes(spec: ModelSpec, plan: MemoryPlan) -> float:
    """Bytes one forward pass moves where the engine dequantises its whole cache pool on read: SGLang's fp4_e2m1
    pool for multi-head attention (``MHATokenToKVPoolFP4._get_key_buffer`` / ``_get_value_buffer``, PR #12612 and
    #13547: ``KVFP4QuantizeUtil.batched_dequantize`` of the layer's whole ``k_buffer`` and ``v_buffer``, every slot
    of the pool, each time the attention backend asks ``get_kv_buffer``): each stage reads its pool and writes it in
    the model's dtype. 0 for every other cache, and for SGLang's MLA pool (its read path is not priced)."""
    q = plan.kv.quant
    if q is None or not q.dequant_on_read or spec.mla is not None or not plan.engine.preallocates_kv:
        return 0.0
    return plan.kv_budget * (1 + PLAIN_BYTES / q.element_bytes) * plan.pp


def prefill_time(scenario: Scenario, plan: MemoryPlan, r: Rates, sequences: int, prompt: int) -> PhaseTime:
    spec = scenario.model
    block, head = _linear_params(spec, plan)
    tokens = sequences * prompt
    flops = 2 * block * tokens + 2 * head * sequences
    flops += 2 * sequences * _attention_pairs(spec, 0, prompt) * _attn_width(spec)
    frac = plan.gpu_layers / spec.num_layers
    compute = flops * frac / (plan.tp * r.flops)
    local = min(tokens, plan.chunk_tokens)  # one pass's tokens on a GPU
    if plan.dp_attention:  # a request's prompt runs on its own rank; the busiest rank's share sets the pace
        local = min(local_tokens(sequences, plan.tp) * prompt, plan.chunk_tokens)
        compute *= plan.tp * local_tokens(sequences, plan.tp) / sequences
    passes = max(1, -(-tokens // plan.chunk_tokens))
    gpu_weights = plan.weights_gpu * plan.pp  # every stage streams its weights once per pass
    gpu_weights -= untouched_expert_bytes(spec, plan, plan.tp * local if plan.dp_attention else local)
    memory = passes * (gpu_weights + pool_dequant_bytes(spec, plan)) / r.stream
    # Host-resident layers: llama.cpp copies their weights to the GPU for large batches (PCIe bound); the input
    # embedding is a row lookup and the head multiplies only the last tokens, so neither goes up (as multi_gpu).
    host_bytes = plan.weights.bytes_where(lambda g: g.place == "layer") * (1 - frac)
    pcie = scenario.cluster.gpu.pcie_bandwidth or r.host_bandwidth
    host = passes * host_bytes / pcie if plan.gpu_layers < spec.num_layers else 0.0
    host += host_experts_prompt_s(scenario, plan, r, tokens, passes, pcie)
    comm = _tp_allreduce_s(scenario, plan, r, tokens) + _pp_send_s(scenario, plan, r, tokens)
    if plan.dp_attention:  # per layer an all-gather and the feed-forward's all-reduce of every rank's rows, padded
        comm = passes * _dp_collectives_s(scenario, plan, r, plan.tp * local)
    if plan.engine.host_op_s and plan.tp == plan.pp == 1 and plan.gpu_layers == spec.num_layers:
        attn = 2 * sequences * _attention_pairs(spec, 0, prompt) * _attn_width(spec)
        e = eager_prefill(spec, plan, plan.engine, r.peak, r.peak_bandwidth, 2 * block, 2 * head * sequences,
                          attn, sequences, prompt)
        return PhaseTime(e.gpu_s, e.memory_bound_s, comm, host, flops, gpu_weights, e.host_s, e.setup_s)
    # llama.cpp without flash attention: the score matrix goes through memory between its GEMMs, in turn with them
    compute += score_traffic_s(scenario, scenario.cluster.gpu, plan.engine, plan.gpu_layers, r.stream,
                               sequences, prompt, plan.chunk_tokens) / plan.tp
    compute += mlx_quant_score_traffic_s(scenario, plan, plan.gpu_layers, r.stream, sequences, prompt,
                                         plan.chunk_tokens) / plan.tp
    fmt = plan.weights.format
    floor = serving_floor(scenario, plan, r, min(tokens, plan.chunk_tokens), gpu_weights, prefill=True, local=local)
    fixed = passes * floor.fixed_s if floor is not None else 0.0  # each pass launches every layer's kernels
    launch = passes * floor.launch_s if floor is not None else 0.0  # eager passes: the host's launches
    if is_block_quantised(fmt) and dequantises_prompt(
            plan.engine, scenario.cluster.gpu, backend_of(scenario.cluster.gpu, scenario.inference.backend),
            plan.chunk_tokens):
        compute += dequant_s(plan.weights, frac, passes, r.stream) / plan.tp
    compute += moe_prompt_s(scenario, plan, r, tokens) * frac / plan.tp
    return PhaseTime(compute, memory, comm, host, flops, passes * gpu_weights, launch, fixed)


def host_experts_prompt_s(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: int, passes: int,
                          pcie: float) -> float:
    """Seconds a prompt spends on the routed experts kept in host RAM (``core.inference.cpu_moe``): a micro-batch of
    32 tokens or more uploads the experts it routes to over PCIe, layer by layer, and the GPU multiplies them (op
    offload); a shorter one leaves them to the CPU, which reads them from host RAM."""
    if not plan.host_moe_layers:
        return 0.0
    spec = scenario.model
    per_pass = min(tokens, plan.chunk_tokens)
    moved = host_expert_bytes(spec, plan.weights, plan.host_moe_layers) * touched_expert_fraction(spec, per_pass)
    return passes * moved / (pcie if per_pass >= OP_OFFLOAD_MIN_BATCH else r.host_bandwidth)


def moe_prompt_s(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: int) -> float:
    """Seconds llama.cpp's MoE prompt kernels add to the dense pricing of the routed share: on CUDA where the
    routed experts run MMQ by id (``core.inference.moe_prompt``), on Metal, Vulkan and ROCm by the engine's tile
    ladder (``core.inference.moe_tiles``): the experts' GEMMs padded to whole tiles at the prompt rate ``r.flops``
    (or, below the matrix kernel's threshold, the mat-vec's expert reads at ``r.bandwidth``), and the MoE layers'
    routing, gather and weighted-sum bytes at ``r.stream``; 0 for dense models and elsewhere."""
    gpu = scenario.cluster.gpu
    experts = [g for g in plan.weights.groups if g.group.category == "expert"]
    return moe_prompt_extra_s(scenario.model, plan.engine, gpu, backend_of(gpu, scenario.inference.backend),
                              plan.weights.format, sum(g.group.params for g in experts),
                              sum(g.bytes for g in experts), tokens, plan.chunk_tokens, r.flops, r.stream,
                              r.bandwidth)


def dequant_s(q: QuantizedWeights, layer_share: float, passes: int, stream: float) -> float:
    """Seconds the dequantise-to-F16 kernels take over a prompt (``backend.dequantises_prompt``): each micro-batch
    (``passes``) reads the decoder layers' quantised weights and writes them as F16, 2 B per weight, at ``stream``
    bytes/s, before the GEMMs that use them; ``layer_share``: the fraction of the layers on this GPU. The output
    head multiplies only the last token's row, below the MMQ threshold, and the embedding is a row lookup."""
    layer_bytes = q.bytes_where(lambda g: g.place == "layer")
    layer_params = sum(gb.group.params for gb in q.groups if gb.group.place == "layer")
    return passes * layer_share * (layer_bytes + 2 * layer_params) / stream


def touched_expert_fraction(spec: ModelSpec, tokens: float) -> float:
    """Expected share of routed experts that ``tokens`` tokens touch in one MoE layer."""
    if not spec.moe:
        return 1.0
    e, k = spec.moe.num_experts, spec.moe.experts_per_token
    return 1.0 - (1.0 - k / e) ** tokens


def untouched_expert_bytes(spec: ModelSpec, plan: MemoryPlan, routed: float) -> float:
    """Bytes of the GPUs' routed experts that a pass of ``routed`` tokens does not read: experts no token routes
    to. The MoE kernels read an expert only for the tokens routed to it - llama.cpp's mat-vec by id reads the ids'
    experts, MMQ by id and Metal's ``kernel_mul_mm_id`` skip an expert's empty tiles (ggml-org/ggml d99724f2),
    vLLM's fused MoE launches blocks only for experts with tokens (``moe_align_block_size``) - as decode counts
    them (``touched_expert_fraction``); summed over pipeline stages, per TP rank, less experts in host RAM."""
    if not spec.moe:
        return 0.0
    experts = sum(gb.bytes / (1 if gb.group.tp_split == "replicated" else plan.tp)
                  for gb in plan.weights.groups if gb.group.category == "expert")
    on_gpu = experts * plan.gpu_layers / spec.num_layers - host_expert_bytes(spec, plan.weights, plan.host_moe_layers)
    return max(0.0, on_gpu) * (1.0 - touched_expert_fraction(spec, routed))


def decode_step(scenario: Scenario, plan: MemoryPlan, r: Rates, batch: int, context: int,
                tokens_per_seq: int = 1) -> PhaseTime:
    """One decode step: ``batch`` sequences at ``context`` tokens each, ``tokens_per_seq`` new tokens each."""
    spec = scenario.model
    block, head = _linear_params(spec, plan)
    tokens = batch * tokens_per_seq
    flops = 2 * (block + head) * tokens
    flops += 2 * tokens * _attention_pairs(spec, context, context + 1) * _attn_width(spec)
    frac = plan.gpu_layers / spec.num_layers
    compute = flops * frac / (plan.tp * r.flops)
    routed = local = tokens
    if plan.dp_attention:  # the busiest rank: its own tokens through attention and head, tp x as many through the FFN
        local = local_tokens(batch, plan.tp) * tokens_per_seq
        compute *= plan.tp * local / tokens
        routed = plan.tp * local
    # Weights the step streams, summed over pipeline stages (a token visits them in turn), per TP rank.
    touched = touched_expert_fraction(spec, routed)
    read = layer_read = 0.0
    for gb in plan.weights.groups:
        g = gb.group
        if g.name == "embed_tokens":
            continue  # a lookup of `tokens` rows, negligible
        b = gb.bytes / (1 if g.tp_split == "replicated" else plan.tp)
        b = b * touched if g.category == "expert" else b
        read += b
        layer_read += b if g.place == "layer" else 0.0
    # With layers left in host RAM llama.cpp keeps the output head there too (``llm_load_tensors``: the output goes
    # to a GPU only when n_gpu_layers > n_layer), as plan_memory counts it: the cards read their layers only.
    gpu_read = layer_read * frac if plan.gpu_layers < spec.num_layers else read
    # Routed experts kept in host RAM (--n-cpu-moe): the CPU multiplies the ones the tokens route to, in place
    gpu_read -= host_expert_bytes(spec, plan.weights, plan.host_moe_layers) * touched
    kv_read = batch * plan.kv.held_bytes(context) * plan.kv_share * plan.pp
    if plan.dp_attention:  # kv_share is the mean 1/tp of a sequence; the busiest rank reads its whole sequences
        kv_read = local_tokens(batch, plan.tp) * plan.kv.held_bytes(context) * plan.kv_share * plan.tp * plan.pp
    memory = (gpu_read + kv_read) / r.bandwidth
    if pool := pool_dequant_bytes(spec, plan):  # attention then reads the batch's tokens from the dequantised copy
        kv_read *= PLAIN_BYTES / plan.kv.element_bytes
        memory = (gpu_read + kv_read) / r.bandwidth + pool / r.stream
    host = 0.0
    if plan.gpu_layers < spec.num_layers or plan.host_moe_layers:
        host_kv = batch * plan.kv.held_bytes(context) * (1 - frac)
        host = (read - gpu_read + host_kv) / r.host_bandwidth
    engine = plan.engine
    floor = serving_floor(scenario, plan, r, tokens, gpu_read, local=local)
    tp_comm = floor.collective_s if floor is not None else _tp_allreduce_s(scenario, plan, r, tokens)
    comm = tp_comm + _pp_send_s(scenario, plan, r, tokens)
    if engine.host_op_s and plan.tp == plan.pp == 1 and plan.gpu_layers == spec.num_layers:
        kv_plain = batch * plan.kv.plain_bytes(context) * plan.kv_share if plan.kv.quant is not None else 0.0
        e = eager_decode(spec, plan, engine, r.peak, r.peak_bandwidth, gpu_read, kv_read, flops, tokens, kv_plain)
        return PhaseTime(e.gemm_s + e.attention_s, e.gpu_s, comm, host, flops, gpu_read + kv_read, e.host_s)
    per_layer = engine.decode_floor_per_layer(scenario.cluster.gpu.vendor == "apple",
                                              spec.moe_layer_count / spec.num_layers)
    layers = plan.gpu_layers if plan.gpu_layers < spec.num_layers else plan.layers_per_stage * plan.pp
    fixed = engine.step_overhead_s + per_layer * layers  # once per pass, however many tokens it verifies
    launch = 0.0
    if floor is not None:
        fixed += floor.fixed_s
        launch = floor.launch_s  # above the CUDA-graph limit the host launches every kernel, beside the GPU
    return PhaseTime(compute, memory, comm, host, flops, gpu_read + kv_read, launch, fixed)


def serving_floor(scenario: Scenario, plan: MemoryPlan, r: Rates, tokens: int, weight_bytes: float,
                  prefill: bool = False, local: int | None = None) -> DecodeFloor | None:
    """The GPU serving engines' kernel and collective floor of one forward pass of ``tokens`` tokens reading
    ``weight_bytes`` (``core.inference.serving_floor``), as a CUDA graph where the engine captures one of that
    size, else eager; None for profiles without a decode kernel list. With DP attention ``local`` is the busiest
    rank's share of the tokens: its pass is that size, and the feed-forward runs on tp x as many rows."""
    layers = plan.layers_per_stage * plan.pp
    fp8 = plan.weights.format.kind == "fp8"
    rows, gather = tokens, None
    if plan.dp_attention:  # a rank's graph holds its own tokens; the feed-forward runs on every rank's, gathered
        tokens = local if local is not None else local_tokens(tokens, plan.tp)
        rows = plan.tp * tokens
        gather = allgather_s(r.latency, plan.tp, rows, scenario.model.hidden_size, ACT_BYTES, r.link)
    graphed = replays_graph(plan.engine, scenario.cluster.gpu, plan.tp, tokens, prefill, plan.weights.format.kind)
    return decode_floor(scenario.model, plan.engine, layers, plan.tp, tokens, fp8, weight_bytes, r.bandwidth,
                        _allreduce_one_s(scenario, plan, r, rows), graphed, gather, is_online_fp8(plan.weights))


def time_per_output_token(scenario: Scenario, plan: MemoryPlan, r: Rates, batch: int, context: int) -> tuple[
        float, PhaseTime, float]:
    """(seconds per output token per sequence, the plain step, tokens per verification step)."""
    inf = scenario.inference
    step = decode_step(scenario, plan, r, batch, context)
    k = inf.draft_tokens
    if k == 0:
        return step.total_s, step, 1.0
    a = inf.draft_acceptance
    expected = (1 - a ** (k + 1)) / (1 - a)
    verify = decode_step(scenario, plan, r, batch, context, tokens_per_seq=k + 1)
    per_step = k * inf.draft_cost_ratio * step.total_s + verify.total_s
    return per_step / expected, step, expected
