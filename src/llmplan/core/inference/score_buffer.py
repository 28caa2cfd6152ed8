"""The attention score matrix that llama.cpp keeps in GPU memory when flash attention is off.

llama.cpp reserves its compute buffer once, at start, for the worst-case graph: one micro-batch of
``n_ubatch`` tokens against the whole cache (``n_kv = n_ctx``), whatever the prompt (llama.cpp
``llama_new_context_with_model``: ``llama_build_graph(..., worst_case = true)`` then
``ggml_backend_sched_reserve``). Without flash attention (builds of 2024, where ``-fa`` was opt-in, and Ollama
unless ``OLLAMA_FLASH_ATTENTION=1``) each layer's attention in that graph is ``llm_build_kqv``'s
``kq = ggml_mul_mat(k, q)``, an f32 tensor of ``n_kv × n_ubatch × n_head``; ``ggml_soft_max_ext`` overwrites it
in place (``ggml_op_can_inplace`` lists ``GGML_OP_SOFT_MAX`` in ggml-alloc.c), and ``kqv = ggml_mul_mat(v, kq)``
is allocated while it is live. Beside it live the f32 mask ``n_kv × n_ubatch`` (``KQ_mask``, an input every
layer reads), the layer's residual input and the ``kqv`` output (n_ubatch × width each, f32). Counted for Llama 3
8B at n_ctx 8,192 and n_ubatch 512: 512 + 16 + 8 + 8 = 544 MiB; an Ollama log of that model (flash_attn = 0,
2024-08-30) prints "CUDA0 compute buffer size = 560.00 MiB" (the rest is the allocator's alignment and holes),
and Metal logs print the same figure: the graph is reserved alike on every back-end.

The buffer is the largest of the graph's phases, so this phase replaces, not adds to, what the profile already
charges for the compute buffer with flash attention (``framework_bytes`` + the prefill activations: the logits
of a micro-batch dominate there). On CUDA and ROCm (HIP builds the same ggml-cuda code) the two attention GEMMs
run through cuBLAS in F16 (``ggml_cuda_mul_mat_batched_cublas``): ``kq`` is written as an F16 copy first and the
soft-maxed scores are converted to F16 before ``kqv``, both in ggml-cuda's memory pool outside the compute buffer,
which keeps its peak: 2 B more per score element. Metal multiplies the f32 scores directly; Vulkan's and SYCL's
staging buffers are not counted. Current builds run flash attention (``-fa auto``, 2025): no such matrix.

mlx-lm with a quantised cache (``--kv-bits``) keeps a score matrix too, whatever the engine's flash attention:
``mx.fast.scaled_dot_product_attention`` takes no quantised cache, so ``quantized_scaled_dot_product_attention``
(ml-explore/mlx-lm models/base.py, d78bf58e) multiplies the queries by the cache with ``mx.quantized_matmul`` into
a ``[B, heads, L, S]`` tensor of the model's dtype (2 bytes), masks it with ``mx.where`` and soft-maxes it, each
a new tensor of that size: two are live at once (an op's input and its output). The largest is the prompt's last
2,048-token step against the whole prompt, once the cache has been converted (``--quantized-kv-start``: the
step that ends at or past it converts, the steps after it run the quantised path). mlx-lm issue #1587 and the
measurements in unslothai/unsloth-zoo PR #1151 (2026-09) show the effect: a 4-bit cache raises the prompt's
peak above a bf16 cache's.

Transformers' quantised cache (``cache_implementation="quantized"``) rebuilds each layer's keys and values at the
model's dtype every decode step (``QuantizedLayer.update``: ``_dequantize`` of the quantised part, then
``torch.cat`` with the residual and the new token), so while a layer attends its dequantised part and the
concatenation are both live, for the keys and for the values: twice one layer's cache in the model's dtype.
"""

from __future__ import annotations

import math

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.kv_quant import PLAIN_BYTES, kv_quant
from llmplan.core.kvcache import kv_layout, paged_tokens
from llmplan.core.workload import Scenario

GRAPH_BYTES = 4  # ggml keeps activations, scores and the mask in f32 (2024 builds)
POOL_BYTES = 2  # the F16 copy of the scores in ggml-cuda's pool for the cuBLAS GEMMs
POOL_BACKENDS = ("cuda", "rocm")


def _score_shape(scenario: Scenario, engine: EngineProfile, tp: int) -> tuple[int, int, int]:
    """(n_kv, n_ubatch, heads per GPU) of the worst-case graph: the whole cache against one micro-batch."""
    inf = scenario.inference
    n_kv = inf.batch * paged_tokens(inf.prompt_tokens + inf.output_tokens, engine.kv_block_tokens)
    return n_kv, min(engine.prefill_chunk_tokens or n_kv, n_kv), math.ceil(scenario.model.num_heads / tp)


def score_phase_bytes(scenario: Scenario, engine: EngineProfile, tp: int = 1) -> float:
    """Compute-buffer bytes live at one layer's attention without flash attention (worst-case graph): scores and
    mask (n_kv × n_ubatch × (heads + 1)), the residual input and the ``kqv`` output, all f32."""
    n_kv, n_ub, heads = _score_shape(scenario, engine, tp)
    spec = scenario.model
    return (n_kv * n_ub * (heads + 1) + n_ub * (spec.hidden_size + spec.q_width / tp)) * GRAPH_BYTES


def score_buffer_bytes(scenario: Scenario, engine: EngineProfile, backend: str, flash_buffer: float,
                       tp: int = 1) -> float:
    """Bytes a GPU holds beyond ``flash_buffer`` (what the plan charges for the compute buffer with flash
    attention: the profile's ``framework_bytes`` + the prefill activations) because the engine keeps the score
    matrix: the attention phase where it is the larger, plus the F16 pool copy on CUDA and ROCm. 0 with flash
    attention. The one figure ``plan_memory``, ``split_layers`` and the longest-context search all use."""
    mlx = mlx_quantised_score_bytes(scenario, engine, tp) or transformers_dequant_bytes(scenario, engine)
    if mlx:
        return max(0.0, mlx - flash_buffer)
    if engine.flash_attention:
        return 0.0
    extra = max(0.0, score_phase_bytes(scenario, engine, tp) - flash_buffer)
    if backend in POOL_BACKENDS:
        n_kv, n_ub, heads = _score_shape(scenario, engine, tp)
        extra += n_kv * n_ub * heads * POOL_BYTES
    return extra


def mlx_quantised_score_bytes(scenario: Scenario, engine: EngineProfile, tp: int = 1) -> float:
    """Bytes live at the attention of mlx-lm's quantised cache (module doc): two ``[batch, heads, step, prompt]``
    tensors of the model's dtype for the prompt's last step after the conversion; 0 for any other cache, or when
    the whole prompt ran on the plain cache."""
    q = kv_quant(scenario.inference.kv_dtype)
    if q is None or not q.per_head_groups:
        return 0.0
    inf = scenario.inference
    prompt = inf.prompt_tokens
    step = engine.prefill_chunk_tokens or prompt
    # generate_step prefills all but the last prompt token in steps, converting after the first step that ends at
    # or past the start; the last token and every decode step attend with one query row (negligible).
    converted_at = q.converted_at(step)
    if prompt - 1 <= converted_at:
        return 0.0
    end = prompt - 1
    last = (end - converted_at) % step or step
    pairs = last * end  # query rows x cached keys of the last step; a full step before it may hold more
    if end - last > converted_at:
        pairs = max(pairs, step * (end - last))
    heads = math.ceil(scenario.model.num_heads / tp)
    return 2 * inf.batch * heads * pairs * PLAIN_BYTES


def transformers_dequant_bytes(scenario: Scenario, engine: EngineProfile) -> float:
    """Bytes Transformers' quantised cache holds while one layer attends (module doc): the dequantised cache and
    its concatenation with the plain tokens, keys and values, at the full context; 0 for any other cache."""
    q = kv_quant(scenario.inference.kv_dtype)
    if q is None or not q.plain_window:
        return 0.0
    inf = scenario.inference
    layer = kv_layout(scenario.model, inf.kv_dtype, engine.mla_cache).plain_bytes(inf.prompt_tokens + inf.output_tokens)
    return 2 * inf.batch * layer / scenario.model.num_layers
