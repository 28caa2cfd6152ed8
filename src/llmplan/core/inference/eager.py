"""Prefill and decode of an eager PyTorch engine (Hugging Face ``generate()``), operation by operation.

An eager engine has no CUDA graphs: the Python host issues every kernel of every layer for
every token. Two clocks run side by side and the slower one sets the pace:

* the **host** spends ``host_op_s`` per eager op; a decoder layer costs ``host_ops_per_layer``
  of them, a decode step ``host_ops_per_step`` more (sampling, stopping criteria, cache and mask
  bookkeeping), and one ``generate()`` call ``host_ops_per_call`` to set up before the prompt;
* the **GPU** runs each operation at what its kernel reaches: GEMMs at the efficiency that
  cuBLAS measures for that token count, causal flash attention at its efficiency for that
  sequence length, the unfused memory-bound kernels (RMSNorm with its fp32 upcast, SiLU·mul,
  rotary, residual adds) at the measured copy bandwidth times the bytes each really moves, and
  DynamicCache's ``torch.cat`` rewriting the whole cache every step.

Host and GPU overlap within a forward pass (launches are asynchronous), so a pass takes the
larger of the two; set-up happens before the GPU has work. Prefill of a long prompt is GPU
bound; decode of a single sequence is host bound whatever the model size. The figures (ops per
layer, bytes per element, efficiency curves) are the engine profile's, each with its source.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from llmplan.core.engine_profile import Curve, EngineProfile
from llmplan.core.inference.memory import MemoryPlan
from llmplan.core.model import ModelSpec


@dataclass(frozen=True, slots=True)
class EagerPass:
    """One forward pass (or one decode step): GPU seconds by kind of operation, and host seconds."""

    gemm_s: float
    attention_s: float
    memory_bound_s: float  # norms, activation, rotary, residuals, cache copies, weight streaming floor
    host_s: float  # the host issuing the pass's kernels
    setup_s: float  # serial host work before the pass (generate() set-up); 0 for a decode step

    @property
    def gpu_s(self) -> float:
        return self.gemm_s + self.attention_s + self.memory_bound_s

    @property
    def total_s(self) -> float:
        return self.setup_s + max(self.gpu_s, self.host_s)


def curve_at(points: Curve, x: float) -> float:
    """Piecewise log-linear interpolation of (size, value) points, clamped at both ends."""
    if not points:
        raise ValueError("empty curve")
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            t = math.log(x / x0) / math.log(x1 / x0)
            return y0 + t * (y1 - y0)
    return points[-1][1]


def host_forward_s(engine: EngineProfile, layers: int) -> float:
    return engine.host_op_s * (engine.host_ops_per_layer * layers + engine.host_ops_per_step)


def _elementwise_s(spec: ModelSpec, engine: EngineProfile, tokens: float, copy_bw: float) -> float:
    """Unfused memory-bound kernels of all layers for ``tokens`` tokens (seconds)."""
    m = spec
    inter = m.intermediate_size
    if m.moe:
        inter = m.moe.experts_per_token * m.moe.expert_intermediate_size + \
            m.moe.num_shared_experts * m.moe.shared_intermediate_size
    per_layer = (2 * m.hidden_size * engine.norm_bytes_per_element
                 + inter * engine.act_bytes_per_element
                 + (m.q_width + m.kv_width) * engine.rotary_bytes_per_element
                 + m.hidden_size * engine.residual_bytes_per_element)
    final_norm = m.hidden_size * engine.norm_bytes_per_element
    return tokens * (m.num_layers * per_layer + final_norm) / copy_bw


def eager_prefill(spec: ModelSpec, plan: MemoryPlan, engine: EngineProfile, peak: float, bandwidth: float,
                  linear_flops_per_token: float, head_flops: float, attention_flops: float,
                  sequences: int, prompt: int) -> EagerPass:
    """The prompt's forward pass. ``linear_flops_per_token``: 2 × active block parameters;
    ``head_flops``: the output head for the last token of each sequence (generate() keeps only that)."""
    tokens = sequences * prompt
    copy_bw = bandwidth * (engine.copy_bandwidth_efficiency or 1.0)
    gemm_eff = curve_at(engine.gemm_efficiency, tokens)
    gemm = max(linear_flops_per_token * tokens / (peak * gemm_eff), plan.weights_gpu / copy_bw)
    gemm += head_flops / (peak * curve_at(engine.gemm_efficiency, sequences))
    attn = attention_flops / (peak * curve_at(engine.attention_efficiency, prompt)) if attention_flops else 0.0
    mem = _elementwise_s(spec, engine, tokens, copy_bw)
    kv_write = sequences * plan.kv.bytes_for_context(prompt) * plan.kv_share
    mem += (2 if engine.kv_cache_copies else 1) * kv_write / copy_bw
    return EagerPass(gemm, attn, mem, host_forward_s(engine, spec.num_layers),
                     engine.host_op_s * engine.host_ops_per_call)


def eager_decode(spec: ModelSpec, plan: MemoryPlan, engine: EngineProfile, peak: float, bandwidth: float,
                 weights_read: float, kv_read: float, flops: float, batch: int, kv_plain: float = 0.0) -> EagerPass:
    """One decode step of ``batch`` sequences: weights and KV streamed, the cache rewritten by
    concatenation where the engine grows it that way, the host issuing every kernel. ``kv_plain``: the
    group-quantised cache dequantised to the model's dtype (``KvLayout.plain_bytes``), 0 for a plain cache."""
    copy_bw = bandwidth * (engine.copy_bandwidth_efficiency or 1.0)
    gemm = max(weights_read / copy_bw, flops / (peak * curve_at(engine.gemm_efficiency, batch)))
    mem = _elementwise_s(spec, engine, batch, copy_bw)
    q = plan.kv.quant
    if q is not None and q.plain_window and kv_plain:
        # Transformers' QuantizedLayer.update, every step and layer: _dequantize the whole quantised cache (read it,
        # write it plain), torch.cat it with the residual and the new token (read and write plain), and attention
        # reads that; every residual_length - 1 steps it quantises everything again (read plain, write quantised).
        attn = kv_plain / copy_bw
        mem += ((kv_read + kv_plain) + 2 * kv_plain + (kv_plain + kv_read) / q.plain_window) / copy_bw
    else:
        attn = kv_read / copy_bw
        if engine.kv_cache_copies:  # torch.cat([cache, new]) reads the old cache and writes the new one
            mem += 2 * kv_read / copy_bw
    return EagerPass(gemm, attn, mem, host_forward_s(engine, spec.num_layers), 0.0)

