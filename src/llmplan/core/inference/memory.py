"""Memory of one GPU while serving: weights, KV cache, activations, buffers, runtime.

Weights are sharded tensor by tensor: Megatron-style splits (column, row, vocab,
expert) divide by ``tp``; replicated tensors (norms, MLA's down-projections, routers)
do not. Pipeline stages hold ``ceil(layers / pp)`` layers, the first stage also the
embedding and the last the head (we report the heavier end stage).

Engines that preallocate (vLLM, SGLang, TensorRT-LLM, TGI) take a fixed share of the
GPU and turn what the weights and workspace leave into a KV pool; the pool decides how
many sequences run at once. llama.cpp-style engines can leave layers in host RAM
(``gpu_layers``); with ``gpu_layers=None`` as many layers as fit go to the GPU. On ``pp`` > 1 identical
cards (llama.cpp's layer split over every visible GPU) a model that does not fit on them all leaves its
first layers in host RAM and splits the rest over every card, llama.cpp's way (``layer_split``, the
arithmetic of several different cards with equal shares).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.inference.backend import backend_of, runtime_context_bytes
from llmplan.core.inference.cpu_moe import (
    OP_OFFLOAD_MIN_BATCH,
    host_expert_bytes,
    host_moe_layers,
    host_moe_on_gpus,
)
from llmplan.core.inference.cpu_moe import check as check_cpu_moe
from llmplan.core.inference.dp_attention import local_tokens, replicate_attention, uses_dp_attention
from llmplan.core.inference.fp8_online import online_fp8_weights
from llmplan.core.inference.score_buffer import score_buffer_bytes
from llmplan.core.kvcache import KvLayout, batch_kv_bytes, kv_layout, kv_split_by_heads
from llmplan.core.params import TensorGroup
from llmplan.core.quant import QuantizedWeights, quantized_weights, stored_as
from llmplan.core.training.layout import check_head_split
from llmplan.core.workload import Scenario
from llmplan.errors import LayoutError

LOGIT_BYTES = 4  # engines keep logits in fp32 for sampling
ACT_BYTES = 2  # activations in bf16/fp16


@dataclass(frozen=True, slots=True)
class MemoryPlan:
    """Intermediate quantities shared by the memory, latency and serving code (bytes)."""

    weights: QuantizedWeights
    kv: KvLayout
    engine: EngineProfile
    tp: int
    pp: int
    layers_per_stage: int
    gpu_layers: int  # layers whose weights and KV live on the GPU (== num_layers unless offloading)
    weights_gpu: float  # worst GPU
    weights_host: float  # per replica, layers left in host RAM (and llama.cpp's input embedding)
    kv_share: float  # fraction of one sequence's KV one GPU holds (heads / tp, layers / pp, offload)
    kv_per_seq_gpu: float  # one sequence of prompt+output tokens, paged, on the worst GPU
    kv_batch_gpu: float  # the plan's batch, with prefix sharing
    kv_host: float
    activations: float
    logits: float
    overhead: float
    capacity: float  # usable bytes of one GPU for this engine
    chunk_tokens: int  # tokens per prefill forward pass
    scores: float = 0.0  # the score matrix an engine without flash attention keeps (core.inference.score_buffer)
    dp_attention: bool = False  # SGLang's DP attention (core.inference.dp_attention): kv_share is a mean per GPU
    host_moe_layers: int = 0  # MoE layers whose routed experts stay in host RAM (llama.cpp --n-cpu-moe: cpu_moe)
    expert_upload: float = 0.0  # the compute buffer's copy of one such layer's experts, for prompts (op offload)

    @property
    def fixed_gpu(self) -> float:
        """Everything on the GPU except the KV cache."""
        return self.weights_gpu + self.activations + self.scores + self.logits + self.overhead + self.expert_upload

    @property
    def kv_budget(self) -> float:
        """Bytes left for KV (vLLM's pool when the engine preallocates)."""
        return max(0.0, self.capacity - self.fixed_gpu)

    @property
    def max_concurrency(self) -> int:
        return int(self.kv_budget // self.kv_per_seq_gpu) if self.kv_per_seq_gpu > 0 else 0


def _tp_divisor(g: TensorGroup, tp: int) -> int:
    return 1 if g.tp_split == "replicated" else tp


def _kv_head_share(scenario: Scenario, tp: int, mla_cache: str) -> float:
    """Share of a token's cache one TP rank keeps: its heads (GQA; MLA decompressed to heads: the attention
    heads, which TP splits evenly), or all of it (the MLA latent, shared by all heads)."""
    spec = scenario.model
    if not kv_split_by_heads(spec, mla_cache):
        return 1.0
    heads = spec.num_heads if spec.mla else spec.num_kv_heads
    return math.ceil(heads / tp) / heads


def _weights_split(q: QuantizedWeights, tp: int, pp: int, L: int, host_embedding: bool) -> tuple[float, float, float]:
    """(per-GPU bytes of one full layer set / L, first-stage extras, last-stage extras), TP-sharded."""
    layer = first = last = 0.0
    for gb in q.groups:
        b = gb.bytes / _tp_divisor(gb.group, tp)
        if gb.group.place == "layer":
            layer += b
        elif gb.group.place == "first":
            if not (host_embedding and gb.group.name == "embed_tokens"):
                first += b
        else:
            last += b
    return layer / L, first, last


def plan_memory(scenario: Scenario, engine: EngineProfile, host_moe: int | None = None) -> MemoryPlan:
    """The plan's memory on its GPUs and in host RAM; ``host_moe``: MoE layers whose experts stay in host RAM,
    in place of what ``inference.cpu_moe_layers`` says (the estimate's own choice: ``fewest_host_moe_layers``)."""
    spec, inf, par = scenario.model, scenario.inference, scenario.parallelism
    tp, pp = par.tp, par.pp
    if tp * pp * par.dp > scenario.cluster.total_gpus:
        raise LayoutError(
            f"parallelism needs tp·pp·dp = {tp * pp * par.dp} GPUs but the cluster has {scenario.cluster.total_gpus}; "
            "lower parallelism.tp/pp/dp or add GPUs"
        )
    if pp > spec.num_layers:
        raise LayoutError(f"parallelism.pp ({pp}) exceeds the model's {spec.num_layers} layers; lower it")
    check_head_split(spec, tp)  # vLLM, SGLang, TensorRT-LLM refuse the same (e.g. 32 heads over tp=3)
    if inf.split_mode == "row":
        raise LayoutError(row_split_refusal(scenario.cluster.gpus_per_node * scenario.cluster.nodes))
    gpu = scenario.cluster.gpu
    q = quantized_weights(spec, inf.weight_format)
    if inf.weight_file_bytes is not None:  # the real files' size (a Hub GGUF file) wins over the computed one
        q = stored_as(q, inf.weight_file_bytes)
    q = online_fp8_weights(q, spec, engine)  # fp8-online: what the engine leaves bf16 as it converts
    dp_attention = uses_dp_attention(scenario, engine)
    if dp_attention:  # attention, embedding and head held whole on every GPU
        q = replicate_attention(q)
    kv = kv_layout(spec, inf.kv_dtype, engine.mla_cache)
    L = spec.num_layers
    lps = math.ceil(L / pp)
    offload = engine.partial_offload and tp == 1 and not gpu.unified_memory
    per_layer, first, last = _weights_split(q, tp, pp, L, host_embedding=engine.partial_offload)
    host_embed = q.bytes_where(lambda g: g.name == "embed_tokens") if engine.partial_offload else 0.0
    ends = first + last if pp == 1 else max(first, last)

    util = engine.gpu_memory_utilization if engine.preallocates_kv else 1.0
    if inf.gpu_memory_utilization is not None:
        util = inf.gpu_memory_utilization
    capacity = gpu.usable_memory_bytes * util
    context = inf.prompt_tokens + inf.output_tokens
    head_share = _kv_head_share(scenario, tp, engine.mla_cache)
    kv_seq_full = batch_kv_bytes(kv, context, 1, engine.kv_block_tokens)
    kv_batch_full = batch_kv_bytes(kv, context, inf.batch, engine.kv_block_tokens, inf.shared_prefix_tokens)
    chunk = engine.prefill_chunk_tokens
    if dp_attention:  # each rank caches its own requests: 1/tp of a sequence on average, the busiest rank's batch
        kv_batch_full *= local_tokens(inf.batch, tp) / inf.batch * tp
        head_share /= tp
        chunk = engine.dp_attention_prefill_chunk_tokens or chunk

    chunk = chunk or inf.batch * inf.prompt_tokens
    chunk = min(chunk, inf.batch * inf.prompt_tokens)
    activations = chunk * _activation_elements_per_token(scenario, tp) * ACT_BYTES
    logits = inf.batch * spec.vocab_size * LOGIT_BYTES
    backend = backend_of(gpu, inf.backend)
    overhead = float(runtime_context_bytes(engine, backend) + engine.framework_bytes)
    scores = score_buffer_bytes(scenario, engine, backend, engine.framework_bytes + activations, tp)

    def gpu_part(n_layers: int) -> tuple[float, float, float]:
        layer_frac = n_layers / L
        w = per_layer * n_layers + (ends if n_layers == L or not offload else first)
        share = head_share * layer_frac
        return w, kv_seq_full * share, kv_batch_full * share

    fixed = activations + scores + logits + overhead
    check_cpu_moe(spec, engine, inf.cpu_moe_layers, tp, gpu.unified_memory)
    n_moe = host_moe if host_moe is not None else host_moe_layers(spec, inf.cpu_moe_layers)
    if n_moe and not (offload and inf.gpu_layers is not None and inf.gpu_layers < L):  # -ngl 99
        return _experts_in_host(scenario, engine, q, kv, n_moe, per_layer, first, last, host_embed,
                                head_share, kv_seq_full * head_share, kv_batch_full * head_share, activations,
                                logits, overhead, capacity, chunk, scores)
    if offload and pp > 1:
        full = per_layer * lps + ends + kv_batch_full * head_share * lps / L + fixed <= capacity
        if inf.gpu_layers is not None or not full:
            return _split_with_offload(scenario, engine, q, kv, capacity, lps, head_share, kv_seq_full,
                                       kv_batch_full, activations, logits, overhead, chunk, scores, n_moe)
        offload = False  # every layer on the cards: the pipeline-stage arithmetic below, as before
    if offload:
        n = inf.gpu_layers if inf.gpu_layers is not None else _layers_that_fit(gpu_part, capacity, fixed, L)
        n = min(n, L)
    else:
        if inf.gpu_layers is not None and inf.gpu_layers < L and not gpu.unified_memory:
            raise LayoutError(
                f"inference.gpu_layers={inf.gpu_layers} needs an engine with partial offload (llama.cpp, Ollama) "
                "and tp = 1; clear gpu_layers or choose inference.engine = llama.cpp"
            )
        n = lps
    h, upload = 0, 0.0
    if offload:
        w_gpu, kv_seq, kv_batch = gpu_part(n)
        w_host = per_layer * (L - n) + host_embed + (0.0 if n == L else last)
        kv_host = kv_batch_full - kv_batch
        h = host_moe_on_gpus(spec, n_moe, n)  # -ngl n with --n-cpu-moe: the offloaded layers' experts in host RAM
        w_gpu -= host_expert_bytes(spec, q, h)
        w_host += host_expert_bytes(spec, q, h)
        upload = host_expert_bytes(spec, q, 1) if h and chunk >= OP_OFFLOAD_MIN_BATCH else 0.0
    else:
        w_gpu = per_layer * lps + ends
        share = head_share * lps / L
        kv_seq, kv_batch = kv_seq_full * share, kv_batch_full * share
        w_host, kv_host = host_embed, 0.0
    return MemoryPlan(q, kv, engine, tp, pp, lps, n if offload else L, w_gpu, w_host,
                      head_share * (n / L if offload else lps / L), kv_seq, kv_batch, kv_host, activations,
                      logits, overhead, capacity, chunk, scores, dp_attention, host_moe_layers=h, expert_upload=upload)


def row_split_refusal(gpus: int) -> str:
    """Why a plan of identical GPUs (not the machine's listed cards) cannot take ``split_mode = row`` here: one
    card has nothing to split rows over; several are estimated as the machine's cards (``row_split``)."""
    if gpus < 2:
        return ("inference.split_mode=row splits each matrix over several cards, and this plan has one; set "
                "split_mode = layer (or add a card)")
    return ("inference.split_mode=row is estimated over the machine's cards: list them (hardware.cards; the "
            "CLI's --gpu X --gpus N --split-mode row or --gpu X --gpu X; the app's 'Cards in this machine'), or "
            "set split_mode = layer")


def _split_with_offload(scenario: Scenario, engine: EngineProfile, q: QuantizedWeights, kv: KvLayout,
                        capacity: float, lps: int, head_share: float, kv_seq_full: float, kv_batch_full: float,
                        activations: float, logits: float, overhead: float, chunk: int, scores: float,
                        n_moe: int = 0) -> MemoryPlan:
    """``pp`` identical cards in one llama.cpp layer split with layers in host RAM (``inference.gpu_layers``, or as
    many as fit every card): ``layer_split`` with equal shares, the fullest card reported as "per GPU". ``kv_share``
    is a card's mean share, so that the pipeline's sum over cards (``latency``: × pp) reads the GPUs' KV once.
    ``n_moe``: --n-cpu-moe's MoE layers; the offloaded ones among them keep their experts in host RAM."""
    from llmplan.core.inference.layer_split import layer_split  # it builds on this module's helpers

    pp, L = scenario.parallelism.pp, scenario.model.num_layers
    gpus = [scenario.cluster.gpu] * pp
    placed = layer_split(scenario, engine, q, gpus, [1.0] * pp, scenario.inference.gpu_layers, [capacity] * pp,
                         n_moe)
    if placed.gpu_layers == L and scenario.inference.gpu_layers is None:
        # plan_memory judged every layer on the cards by its stage arithmetic (ceil(L/pp) layers and the head on the
        # worst card, which the validated multi-card rows use) and found it short; llama.cpp's own assignment is a
        # little more even (the head counts as a layer) and may squeeze them in by a few MiB, a margin no estimate
        # resolves: the fit stays the stage arithmetic's, and the last layer and the head stay in host RAM.
        placed = layer_split(scenario, engine, q, gpus, [1.0] * pp, L - 1, [capacity] * pp, n_moe)
    n = placed.gpu_layers
    fullest = max(range(pp), key=lambda i: sum(placed.cards[i][2:5]))
    layers, has_out, w_gpu, kv_batch, _ = placed.cards[fullest]
    host_embed = placed.embed
    moved = placed.expert_layer * sum(placed.host_moe)
    w_host = placed.per_layer * (L - n) + host_embed + (0.0 if n == L else placed.last) + moved
    upload = placed.expert_layer if placed.host_moe[fullest] and chunk >= OP_OFFLOAD_MIN_BATCH else 0.0
    return MemoryPlan(q, kv, engine, 1, pp, lps, n, w_gpu, w_host, head_share * n / L / pp,
                      kv_seq_full * head_share * layers / L, kv_batch, kv_batch_full * (L - n) / L, activations,
                      logits if has_out else 0.0, overhead, capacity, chunk, scores,
                      host_moe_layers=sum(placed.host_moe), expert_upload=upload)


def _experts_in_host(scenario: Scenario, engine: EngineProfile, q: QuantizedWeights, kv: KvLayout, n_moe: int,
                     per_layer: float, first: float, last: float, host_embed: float, head_share: float,
                     kv_seq: float, kv_batch: float,
                     activations: float, logits: float, overhead: float, capacity: float, chunk: int,
                     scores: float) -> MemoryPlan:
    """Every layer on the GPUs (``-ngl 99``) but the routed experts of the first ``n_moe`` MoE layers, which stay in
    host RAM (``core.inference.cpu_moe``). On ``pp`` cards each holds ceil(L/pp) layers in order, the last the head
    (the stage arithmetic of the all-on-GPU split): the first cards lose their experts first; the fullest card is
    "per GPU". A prompt micro-batch of 32 tokens or more multiplies those experts on the GPU, so the compute
    buffer holds a copy of one layer's experts (the scheduler's split input, a tensor of full size)."""
    spec, pp = scenario.model, scenario.parallelism.pp
    L = spec.num_layers
    lps = math.ceil(L / pp)
    per_expert_layer = host_expert_bytes(spec, q, 1)
    moe_seen, cards = 0, []
    for c in range(pp):
        kinds = spec.layer_mlp[c * lps:min(L, (c + 1) * lps)]
        moe_here = sum(1 for k in kinds if k == "moe")
        host_here = max(0, min(moe_here, n_moe - moe_seen))
        moe_seen += moe_here
        w = per_layer * len(kinds) - per_expert_layer * host_here + (first if c == 0 else 0.0) + (
            last if c == pp - 1 else 0.0)
        upload = per_expert_layer if host_here and chunk >= OP_OFFLOAD_MIN_BATCH else 0.0  # only where it multiplies
        cards.append((w + kv_batch * len(kinds) / L + upload, w, len(kinds), upload))
    _, w_gpu, layers, upload = max(cards)
    w_host = host_embed + host_expert_bytes(spec, q, n_moe)
    return MemoryPlan(q, kv, engine, 1, pp, lps, L, w_gpu, w_host, head_share * lps / L,
                      kv_seq * layers / L, kv_batch * layers / L, 0.0, activations, logits, overhead, capacity,
                      chunk, scores, host_moe_layers=n_moe, expert_upload=upload)


def fewest_host_moe_layers(scenario: Scenario, engine: EngineProfile) -> int | None:
    """The fewest MoE layers whose experts must stay in host RAM for the rest of the model to fit on the GPUs
    (llama.cpp's users lower ``--n-cpu-moe`` until the model no longer loads), None when even every expert in
    host RAM (``--cpu-moe``) leaves too little room."""
    spec = scenario.model

    def fits(n: int) -> bool:
        p = plan_memory(scenario, engine, host_moe=n)
        return p.fixed_gpu + p.kv_batch_gpu <= p.capacity

    top = spec.moe_layer_count
    if not fits(top):
        return None
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
    return lo


def _layers_that_fit(gpu_part, capacity: float, fixed: float, L: int) -> int:
    lo, hi = 0, L
    while lo < hi:  # largest n with everything on the GPU under capacity
        mid = (lo + hi + 1) // 2
        w, _, kvb = gpu_part(mid)
        if w + kvb + fixed <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _activation_elements_per_token(scenario: Scenario, tp: int) -> float:
    """Peak live activations of one layer's forward pass per prompt token (elements, flash attention).

    Residual stream and its normed copy (2h), q/k/v (split by TP), and the MLP's hidden
    (gate and up when gated, split by TP); inference frees each layer's tensors before the next.
    """
    m = scenario.model
    inter = m.intermediate_size
    if m.moe:
        inter = max(inter, m.moe.experts_per_token * m.moe.expert_intermediate_size
                    + m.moe.num_shared_experts * m.moe.shared_intermediate_size)
    mlp = inter * (2 if m.gated_mlp else 1)
    return 2 * m.hidden_size + (m.q_width + 2 * m.kv_width) / tp + mlp / tp
