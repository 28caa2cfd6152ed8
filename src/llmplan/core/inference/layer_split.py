"""llama.cpp's layer split (``--split-mode layer``) in bytes: which device holds which layers, and how many layers
fit on the devices together, the rest staying in host RAM.

llama.cpp gives each GPU a contiguous run of layers in proportion to ``--tensor-split``, by default each device's
free memory; the first ``n_layer - n_gpu_layers`` layers stay on the CPU, the output head counts as one more layer
of the split when every layer is offloaded, and the input embedding always stays in host RAM. Every device holds
its layers' weights and KV cache plus its own runtime context and compute buffer (with the score matrix of a whole
layer without flash attention), the output device the logits too.

One arithmetic for several different cards (``multi_gpu.split_layers``) and for N identical cards that leave
layers in host RAM (``memory.plan_memory`` with ``pp`` > 1: equal shares are the special case).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.backend import backend_of, runtime_context_bytes
from llmplan.core.inference.cpu_moe import OP_OFFLOAD_MIN_BATCH, host_expert_bytes, host_moe_flags
from llmplan.core.inference.memory import (
    ACT_BYTES,
    LOGIT_BYTES,
    _activation_elements_per_token,
    _weights_split,
)
from llmplan.core.inference.score_buffer import score_buffer_bytes
from llmplan.core.kvcache import batch_kv_bytes, kv_layout
from llmplan.core.quant import QuantizedWeights
from llmplan.core.workload import Scenario


def _assign(n_gpu: int, split: Sequence[float], with_output: bool) -> tuple[list[int], int]:
    """(layers per device, the output head's device or -1) for ``n_gpu`` offloaded layers, llama.cpp's way
    (``llm_load_tensors``, 2024 and since): the head counts as one more layer when it is offloaded
    (``act_gpu_layers = min(n_gpu_layers, n_layer + 1)``), layer i of the offloaded run goes to the first device
    whose cumulative share exceeds i / act_gpu_layers, and the head to the device of (act - 1) / act."""
    total = sum(split)
    cum, acc = [], 0.0
    for s in split:
        acc += s / total
        cum.append(acc)
    act = n_gpu + 1 if with_output else n_gpu
    counts = [0] * len(split)
    for i in range(n_gpu):
        d = min(bisect.bisect_right(cum, i / act), len(split) - 1)
        counts[d] += 1
    out = min(bisect.bisect_right(cum, (act - 1) / act), len(split) - 1) if with_output else -1
    return counts, out



@dataclass(frozen=True, slots=True)
class LayerSplit:
    """Where llama.cpp's layer split puts the model (bytes): ``gpu_layers`` offloaded, ``cards`` per device as
    (layers, holds the output head, weights, KV cache, runtime), and the per-layer sizes the rest is priced from."""

    gpu_layers: int
    cards: tuple[tuple[int, bool, float, float, float], ...]
    per_layer: float  # weights of one decoder layer
    first: float  # first-device extras (none with the embedding in host RAM)
    last: float  # the output head and final norm
    embed: float  # the input embedding (host RAM)
    kv_layer: float  # the batch's KV cache of one layer
    host_moe: tuple[int, ...] = ()  # per device, its MoE layers whose routed experts stay in host RAM (--n-cpu-moe)
    expert_layer: float = 0.0  # the routed experts of one MoE layer (bytes)


def card_runtime(scenario: Scenario, engine: EngineProfile, gpus: Sequence[GpuSpec]) -> list[float]:
    """Per device: its runtime context (CUDA, HIP) and compute buffer for one micro-batch, the score matrix of a
    whole layer too without flash attention (``core.inference.score_buffer``)."""
    inf = scenario.inference
    chunk = min(engine.prefill_chunk_tokens or inf.batch * inf.prompt_tokens, inf.batch * inf.prompt_tokens)
    buffer = chunk * _activation_elements_per_token(scenario, 1) * ACT_BYTES
    return [float(runtime_context_bytes(engine, backend_of(g, inf.backend)) + engine.framework_bytes) + buffer
            + score_buffer_bytes(scenario, engine, backend_of(g, inf.backend), engine.framework_bytes + buffer)
            for g in gpus]


def layer_split(scenario: Scenario, engine: EngineProfile, q: QuantizedWeights, gpus: Sequence[GpuSpec],
                split: Sequence[float], gpu_layers: int | None, capacities: Sequence[float],
                host_moe: int = 0) -> LayerSplit:
    """llama.cpp's memory split of ``q`` over ``gpus`` (``split``: relative shares; ``capacities``: usable bytes
    per device): with ``gpu_layers=None`` the most layers that fit every device (``-ngl`` auto-fit). The one
    arithmetic for different cards (``split_layers``) and for N identical cards with offload
    (``memory.plan_memory``: identical cards are the special case of equal shares). ``host_moe``: the first MoE
    layers (by index) whose routed experts ``--n-cpu-moe`` keeps in host RAM: the override applies on top of the
    placement, so an offloaded layer among them leaves its experts in host RAM, and its card's compute buffer
    holds one layer's experts for prompts of 32 tokens or more (``core.inference.cpu_moe``)."""
    spec, inf = scenario.model, scenario.inference
    L = spec.num_layers
    per_layer, first, last = _weights_split(q, 1, 1, L, host_embedding=True)
    embed = q.bytes_where(lambda g: g.name == "embed_tokens")
    kv = kv_layout(spec, inf.kv_dtype, engine.mla_cache)
    context = inf.prompt_tokens + inf.output_tokens
    kv_layer = batch_kv_bytes(kv, context, inf.batch, engine.kv_block_tokens, inf.shared_prefix_tokens) / L
    runtime = card_runtime(scenario, engine, gpus)
    logits = inf.batch * spec.vocab_size * LOGIT_BYTES
    flags = host_moe_flags(spec, host_moe)
    expert_layer = host_expert_bytes(spec, q, 1) if host_moe else 0.0
    chunk = min(engine.prefill_chunk_tokens or inf.batch * inf.prompt_tokens, inf.batch * inf.prompt_tokens)

    def host_experts(n: int) -> list[int]:
        """Per device, its offloaded MoE layers whose experts stay in host RAM (devices hold runs in order)."""
        counts, _ = _assign(n, split, with_output=n == L)
        start, out = L - n, []
        for c in counts:
            out.append(sum(flags[start:start + c]))
            start += c
        return out

    def shares(n: int) -> tuple[tuple[int, bool, float, float, float], ...]:
        """(layers, holds the output head, weights, KV, runtime) per device."""
        counts, out_dev = _assign(n, split, with_output=n == L)
        first_dev = min((i for i, c in enumerate(counts) if c), default=-1)
        out = []
        for i, (c, h) in enumerate(zip(counts, host_experts(n), strict=True)):
            has_out = i == out_dev
            w = per_layer * c + (first if i == first_dev else 0.0) + (last if has_out else 0.0) - expert_layer * h
            upload = expert_layer if h and chunk >= OP_OFFLOAD_MIN_BATCH else 0.0  # the op offload's copy
            out.append((c, has_out, w, kv_layer * c, runtime[i] + upload + (logits if has_out else 0.0)))
        return tuple(out)

    def fits(n: int) -> bool:
        return all(w + k + r <= cap for cap, (_, _, w, k, r) in zip(capacities, shares(n), strict=True))

    if gpu_layers is None:
        lo, hi = 0, L
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        n = lo
    else:
        n = min(gpu_layers, L)
    return LayerSplit(n, shares(n), per_layer, first, last, embed, kv_layer, tuple(host_experts(n)), expert_layer)
