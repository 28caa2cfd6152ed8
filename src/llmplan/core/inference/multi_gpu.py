"""Several different cards in one machine: llama.cpp's layer split (``--split-mode layer``), with the
layers that fit nowhere left in host RAM.

Where the layers and bytes go is ``core.inference.layer_split`` (llama.cpp's assignment, shared with N identical
cards that offload); this module prices the split: per card, the runtime context (CUDA, HIP; none on Metal, Vulkan
or SYCL: ``core.inference.backend``) and compute buffer (with the score matrix of a whole layer without flash
attention: ``core.inference.score_buffer``) are counted there.

A token visits the devices in turn, so decode time is the *sum* over devices of each one's weights and
KV read at its own bandwidth, plus its layers' kernel floor (the engine profile's ``decode_floor_per_layer``; with
every layer on two or more CUDA GPUs, 2024 builds replay no CUDA graph and pay ``decode_layer_s_pipelined``:
``floor_without_graphs``), plus the host layers at the host's memory bandwidth; the copy of the hidden state
from one device to the next (a few KB) is not counted; prefill is likewise the sum of each device's
matmul time at its own rate. Split mode ``row`` (every matrix's rows over the cards) is
``core.inference.row_split``; ``split_cards`` picks by the plan's ``inference.split_mode``.

A mixture of experts is priced as on one GPU (``latency.decode_step``): a decode step reads only the experts its
tokens route to, E·(1-(1-k/E)^B) of E per layer in expectation, and a prompt token multiplies k of E experts
(gpt-oss-120b: 4 of 128), wherever the layer lives, on a card or in host RAM; every expert is held. On a CUDA
card whose experts run MMQ by id, and on ROCm and Vulkan by the engine's tile ladder, their tiles and routing bytes
are priced as on one GPU (``core.inference.moe_prompt``, ``core.inference.moe_tiles``). With ``--n-cpu-moe N``
(``inference.cpu_moe_layers``) the offloaded layers among the first N keep their routed experts in host RAM, as
llama.cpp composes the tensor override with the layer placement: the CPU reads the routed ones per decode step,
and a prompt micro-batch of 32 tokens or more uploads the ones it routes to (``core.inference.cpu_moe``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference import cpu_moe
from llmplan.core.inference.backend import (
    backend_of,
    decode_stream_efficiency,
    engine_prompt_rate,
    stream_efficiency,
)
from llmplan.core.inference.latency import dequant_s, score_traffic_s, touched_expert_fraction
from llmplan.core.inference.layer_split import layer_split
from llmplan.core.inference.moe_tiles import moe_prompt_extra_s
from llmplan.core.quant import QuantizedWeights, quantized_weights
from llmplan.core.workload import Scenario
from llmplan.errors import InputError


@dataclass(frozen=True, slots=True)
class CardShare:
    """One GPU's part of the split (bytes, seconds)."""

    gpu: GpuSpec
    layers: int
    has_output: bool
    weights: float
    kv_cache: float
    runtime: float  # runtime context (CUDA, HIP) + compute buffer, score matrix too without flash attention
    # (core.inference.score_buffer) (+ logits on the output card)
    capacity: float
    decode_s: float
    prefill_s: float

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.runtime

    @property
    def fits(self) -> bool:
        return self.total <= self.capacity


@dataclass(frozen=True, slots=True)
class MixedPlan:
    cards: tuple[CardShare, ...]
    host_layers: int
    host_bytes: float  # weights + KV left in host RAM (always the input embedding)
    tpot_s: float
    ttft_s: float
    split_mode: str = "layer"  # llama.cpp --split-mode: whole layers per card, or every matrix's rows (row_split)

    @property
    def fits(self) -> bool:
        return all(c.fits for c in self.cards)

    @property
    def gpu_layers(self) -> int:
        return sum(c.layers for c in self.cards)

    @property
    def fullest(self) -> CardShare:
        """The card with the least memory to spare (bytes): it decides whether the split fits."""
        return min(self.cards, key=lambda c: c.capacity - c.total)


def split_cards(scenario: Scenario, gpus: Sequence[GpuSpec], tensor_split: Sequence[float] | None = None,
                gpu_layers: int | None = None) -> MixedPlan:
    """The plan's split over ``gpus`` in its ``inference.split_mode``: whole layers per card (``split_layers``)
    or every weight matrix's rows over the cards (``core.inference.row_split``)."""
    if scenario.inference.split_mode == "row":
        from llmplan.core.inference.row_split import split_rows  # it builds on this module's CardShare

        return split_rows(scenario, gpus, tensor_split, gpu_layers)
    return split_layers(scenario, gpus, tensor_split, gpu_layers)


def split_layers(scenario: Scenario, gpus: Sequence[GpuSpec], tensor_split: Sequence[float] | None = None,
                 gpu_layers: int | None = None) -> MixedPlan:
    """The split of ``scenario``'s model across ``gpus`` (one each, in device order) and its speed.

    ``tensor_split``: relative shares per device (None: each device's usable memory, llama.cpp's default);
    ``gpu_layers``: layers offloaded (None: as many as fit on all devices together, like ``-ngl`` auto-fit).
    """
    engine = scenario.engine_profile or EngineProfile()
    if not gpus:
        raise InputError("give at least one GPU for a layer split")
    if not engine.partial_offload:
        raise InputError(f"the {engine.name} profile does not split layers across unequal GPUs; use llama.cpp "
                         "or Ollama (--split-mode layer)")
    cpu_moe.check(scenario.model, engine, scenario.inference.cpu_moe_layers, 1, any(g.unified_memory for g in gpus))
    split = list(tensor_split) if tensor_split is not None else [g.usable_memory_bytes for g in gpus]
    if len(split) != len(gpus) or any(s < 0 for s in split) or sum(split) <= 0:
        raise InputError(f"tensor_split needs {len(gpus)} non-negative shares with a positive sum")
    spec, inf = scenario.model, scenario.inference
    L = spec.num_layers
    q = quantized_weights(spec, inf.weight_format)
    n_moe = cpu_moe.host_moe_layers(spec, inf.cpu_moe_layers)
    placed = layer_split(scenario, engine, q, gpus, split, gpu_layers, [g.usable_memory_bytes for g in gpus], n_moe)
    n, per_layer, last, embed, kv_layer = placed.gpu_layers, placed.per_layer, placed.last, placed.embed, \
        placed.kv_layer
    read_share = _moe_read_share(scenario, q, inf.batch)
    layer_flop_params, head_params = _flop_params(scenario, q)
    chunk = min(engine.prefill_chunk_tokens or inf.batch * inf.prompt_tokens, inf.batch * inf.prompt_tokens)
    tokens = inf.batch * inf.prompt_tokens
    no_graphs = floor_without_graphs(engine, [backend_of(g, inf.backend) for g in gpus], n == L)
    cards = []
    touched = touched_expert_fraction(spec, inf.batch)
    for g, (c, has_out, w, k, r), h in zip(gpus, placed.cards, placed.host_moe, strict=True):
        floor = no_graphs if no_graphs is not None else engine.decode_floor_per_layer(
            g.vendor == "apple", spec.moe_layer_count / L)
        layers_w = per_layer * c
        # the experts a decode step does not route to stay unread; those kept in host RAM are not on the card
        read = w - layers_w * (1 - read_share) + placed.expert_layer * h * (1 - touched)
        flop_params = layer_flop_params * c * tokens + (head_params * inf.batch if has_out else 0.0)
        cards.append(_card(scenario, engine, g, c, has_out, w, k, r, flop_params, floor, read))
    host_layers = L - n
    moved = placed.expert_layer * sum(placed.host_moe)  # offloaded layers' experts kept in host RAM (--n-cpu-moe)
    host_bytes = per_layer * host_layers + embed + (0.0 if n == L else last) + kv_layer * host_layers + moved
    host_bw = inf.host_memory_bandwidth or engine.host_memory_bandwidth
    if (host_layers or moved) and not host_bw:
        what = f"{host_layers} layers" if host_layers else f"the routed experts of {sum(placed.host_moe)} layers"
        raise InputError(f"{what} stay in host RAM but no host memory bandwidth is known; set "
                         "inference.host_memory_bandwidth (bytes/s)")
    host_read = per_layer * host_layers * read_share + (0.0 if n == L else last) + kv_layer * host_layers \
        + moved * touched  # the CPU multiplies the routed experts of a decode step where they are
    tpot = sum(c.decode_s for c in cards) + (host_read / host_bw if host_read else 0.0) + engine.step_overhead_s
    pcie = min((g.pcie_bandwidth for g in gpus if g.pcie_bandwidth), default=0.0) or host_bw
    passes = max(1, -(-tokens // chunk))
    upload = passes * per_layer * host_layers / pcie if host_layers else 0.0  # host layers' weights go up per batch
    if moved:  # a micro-batch of 32 tokens or more uploads the experts it routes to (op offload), else the CPU
        micro = min(chunk, tokens)
        upload += passes * moved * touched_expert_fraction(spec, micro) / (
            pcie if micro >= cpu_moe.OP_OFFLOAD_MIN_BATCH else host_bw)
    ttft = sum(c.prefill_s for c in cards) + upload
    return MixedPlan(tuple(cards), host_layers, host_bytes, tpot, ttft)


def floor_without_graphs(engine: EngineProfile, backends: Sequence[str], all_offloaded: bool) -> float | None:
    """Seconds per layer per decode step when a layer split decodes without CUDA graphs (the profile's
    ``decode_layer_s_pipelined``), or None: each device keeps its one-GPU floor.

    llama.cpp turns on pipeline parallelism when it splits by layers over more than one GPU with every layer and the
    output offloaded (llama_new_context_with_model, 2024: ``pipeline_parallel``); the scheduler then keeps
    GGML_SCHED_MAX_COPIES = 4 copies of each split's inputs and uses the next one every evaluation, so the node
    addresses of each GPU's graph change every token, the CUDA back-end re-captures it, and after four updates in a
    row disables its CUDA graphs (ggml-cuda.cu, ``disable_due_to_too_many_updates``). llama.cpp PR #13814
    (2025-05-27) made the graph stable; the 2026 profile leaves the field unset. CUDA only: no other back-end here
    replays graphs in these builds, and their per-layer figures were measured without them."""
    if all_offloaded and len(backends) > 1 and all(b == "cuda" for b in backends):
        return engine.decode_layer_s_pipelined
    return None


def _moe_read_share(scenario: Scenario, q: QuantizedWeights, batch: int) -> float:
    """Share of the decoder layers' bytes a decode step of ``batch`` tokens reads: 1 for a dense model; for a
    mixture of experts the routed experts count at the expected share the batch touches
    (``latency.touched_expert_fraction``)."""
    layer = q.bytes_where(lambda g: g.place == "layer")
    experts = q.bytes_where(lambda g: g.place == "layer" and g.category == "expert")
    if not scenario.model.moe or layer <= 0:
        return 1.0
    return 1 - experts / layer * (1 - touched_expert_fraction(scenario.model, batch))


def _flop_params(scenario: Scenario, q: QuantizedWeights) -> tuple[float, float]:
    """(weights one prompt token multiplies per decoder layer, the output head's weights): a routed expert's
    weights count k/E, as each token goes to k of E experts."""
    spec = scenario.model
    active = spec.moe.experts_per_token / spec.moe.num_experts if spec.moe else 1.0
    layer = sum(gb.group.params * (active if gb.group.category == "expert" else 1.0)
                for gb in q.groups if gb.group.place == "layer")
    head = sum(gb.group.params for gb in q.groups if gb.group.place == "last")
    return layer / spec.num_layers, float(head)


def _card(scenario: Scenario, engine: EngineProfile, g: GpuSpec, layers: int, has_output: bool, weights: float,
          kv: float, runtime: float, weight_params_x_tokens: float, floor: float, read: float) -> CardShare:
    """One device's memory and time; ``weight_params_x_tokens``: Σ weights × the tokens they multiply;
    ``floor``: seconds per layer per decode step whatever its bytes; ``read``: the weight bytes a decode step
    reads (all of ``weights`` but the experts no token routes to)."""
    eff = decode_stream_efficiency(engine, g, backend_of(g, scenario.inference.backend)) \
        or scenario.efficiency.memory_bandwidth
    decode = (read + kv) / (g.memory_bandwidth * eff) + floor * layers if layers else 0.0
    q = quantized_weights(scenario.model, scenario.inference.weight_format)
    fmt = q.format
    inf = scenario.inference
    chunk = min(engine.prefill_chunk_tokens or inf.prompt_tokens, inf.prompt_tokens)
    total = inf.batch * inf.prompt_tokens
    micro = min(engine.prefill_chunk_tokens or total, total)  # n_ubatch tokens, all sequences together
    rate, dequant = engine_prompt_rate(engine, g, backend_of(g, inf.backend), fmt, micro)
    rate = rate or g.peak_flops.for_dtype(fmt.compute_dtype) * scenario.efficiency.matmul
    if rate <= 0:
        raise InputError(f"{g.name} has no peak FLOP/s for this weight format; set its peak_flops")
    prefill = 2 * weight_params_x_tokens / rate if layers else 0.0  # 2 FLOP per weight per token
    stream = stream_efficiency(engine, g) or scenario.efficiency.memory_bandwidth  # the prompt's kernels, not batch 1's
    prefill += score_traffic_s(scenario, g, engine, layers, g.memory_bandwidth * stream, inf.batch,
                               inf.prompt_tokens, chunk)
    if dequant and layers:
        prefill += dequant_s(q, layers / scenario.model.num_layers, -(-total // micro), g.memory_bandwidth * stream)
    if layers:
        experts = [gb for gb in q.groups if gb.group.category == "expert"]
        prefill += moe_prompt_extra_s(scenario.model, engine, g, backend_of(g, inf.backend), fmt,
                                      sum(gb.group.params for gb in experts), sum(gb.bytes for gb in experts),
                                      total, micro, rate, g.memory_bandwidth * stream, g.memory_bandwidth * eff) \
            * layers / scenario.model.num_layers
    return CardShare(g, layers, has_output, weights, kv, runtime, float(g.usable_memory_bytes), decode, prefill)
