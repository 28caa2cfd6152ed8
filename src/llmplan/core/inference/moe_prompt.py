"""llama.cpp's MoE prompt kernels on CUDA: what ``mul_mat_id`` computes beyond a dense GEMM over the routed share.

Read from ggml's CUDA back-end at ggml-org/ggml d99724f2 (2026-08-21, synced from llama.cpp) and llama.cpp's
``build_moe_ffn`` (src/llama-graph.cpp @00395eb2):

- ``ggml_cuda_mul_mat_id`` (ggml-cuda.cu): above the mat-vec batch limit, block-quantised experts on NVIDIA from
  Turing on always take MMQ (``ggml_cuda_should_use_mmq`` returns true with int8 mma), one launch for all experts:
  ``mm_ids_helper`` (mmid.cu) sorts the (token, slot) pairs by expert into ``expert_bounds``, the activations are
  quantised once per routed copy (``quantize_mmq_q8_1`` with the ids), then ``mul_mat_q`` (mmq.cuh).
- ``mul_mat_q`` tiles the output by I = 128 weight rows and J token columns, J picked for the micro-batch's
  **whole** token count (``mul_mat_q_switch_J``: ``ncols_max`` = n_tokens, so J = 128 for prompts of 128 tokens or
  more; the MXFP4, IQ4_NL, Q4_K ... configurations of mmq-config-ampere.cuh / -blackwell.cuh). An expert with r
  routed rows computes ceil(r / J) full tiles; the stream-k loop skips the empty ones (``jt*J >= col_diff``). So an
  expert's GEMM costs as many J-row tiles as it touches, however few of the J rows are filled: at n_ubatch 512 a
  gpt-oss-20b expert (4 of 32) gets ~64 rows and pays a 128-row tile, twice its FLOPs.
- Weight rows are tiled by 128 too: a matrix of 2,880 rows (gpt-oss) runs 23 tiles, 2.2 % over.

Priced with the engine's measured MMQ rate per SM-clock (no new constant): the expert GEMMs' FLOPs times the
padding factor below, which assumes uniform routing (each token picks each expert with probability k/E,
independently: the rows an expert gets are Binomial(n, k/E), the assumption behind decode's touched experts).
Real routers are less even, which only adds tiles: the factor is a floor.

The MoE layer's own element-wise traffic beyond a dense SwiGLU feed-forward (whose share the MMQ rate, measured
on dense models, already carries) is charged at the stream bandwidth: k copies of the quantised input instead
of one, k f32 expert outputs instead of one, their weighting (``ggml_mul``) and their sum (k - 1 ``ggml_add``,
fused into one kernel), the router's logits and top-k, and with expert biases (gpt-oss) the ``add_id`` of each
projection's output, which at prompt sizes runs as a kernel of its own (its fusion is for mat-vecs only).
"""

from __future__ import annotations

from functools import lru_cache
from math import ceil, exp, lgamma, log

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.backend import Backend, dequantises_prompt, is_block_quantised
from llmplan.core.inference.mmq import mmq_rate
from llmplan.core.model import ModelSpec
from llmplan.core.quant import WeightFormat

MMQ_TILE_ROWS = 128  # I: weight rows per MMQ tile on every NVIDIA configuration (mmq-config-*.cuh)
MMQ_MAX_J = 128  # the largest token-column tile
# Token-column tiles the configurations offer: all multiples of 8 to 48, then 64 ... 128 by 16; a matrix whose rows
# are not a multiple of 128 ("fallback") only 8, 16, 32, 64 and 128 (mmq-config-ampere.cuh, MXFP4 and IQ4_NL rows).
_J_ALIGNED = (8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128)
_J_FALLBACK = (8, 16, 32, 64, 128)
F32, Q8_1_MMQ = 4, 1.125  # bytes per value: f32 activations; block_q8_1_mmq, 144 B per 128 values


def tile_columns(tokens: int, rows: int) -> int:
    """J: the token columns of MMQ's tile for a micro-batch of ``tokens`` tokens (``mul_mat_q_switch_J``: the
    smallest J that gives the fewest tiles over all the tokens, up to 128) on a matrix of ``rows`` weight rows."""
    choices = _J_FALLBACK if rows % MMQ_TILE_ROWS else _J_ALIGNED
    if tokens >= MMQ_MAX_J:
        return MMQ_MAX_J
    return next(j for j in choices if j >= tokens)


@lru_cache(maxsize=256)
def expected_tiles(tokens: int, k: int, experts: int, j: int) -> float:
    """Expected token-column tiles over all experts: E x E[ceil(R / j)], R ~ Binomial(tokens, k / experts)."""
    p = k / experts
    if p >= 1.0:
        return experts * ceil(tokens / j)
    lp, lq = log(p), log(1.0 - p)
    lg_n = lgamma(tokens + 1)
    mean = 0.0
    for r in range(1, tokens + 1):
        pmf = exp(lg_n - lgamma(r + 1) - lgamma(tokens - r + 1) + r * lp + (tokens - r) * lq)
        mean += pmf * ceil(r / j)
    return experts * mean


def padding_factor(tokens: int, k: int, experts: int, rows: int) -> float:
    """FLOPs MMQ computes over the FLOPs routed for one expert matrix of ``rows`` weight rows and a micro-batch of
    ``tokens`` tokens: the token-column tiles (``expected_tiles`` x J over tokens x k) times the row tiles."""
    j = tile_columns(tokens, rows)
    columns = expected_tiles(tokens, k, experts, j) * j / (tokens * k)
    return columns * ceil(rows / MMQ_TILE_ROWS) * MMQ_TILE_ROWS / rows


def expert_padding(spec: ModelSpec, tokens: int) -> float:
    """The padding factor of one MoE layer's routed-expert GEMMs, weighted by their FLOPs: gate and up
    (expert_intermediate_size rows each) and down (hidden_size rows)."""
    moe = spec.moe
    if moe is None or tokens <= 0:
        return 1.0
    ff, h, k, e = moe.expert_intermediate_size, spec.hidden_size, moe.experts_per_token, moe.num_experts
    up_mats = 2 if spec.gated_mlp else 1
    up = padding_factor(tokens, k, e, ff) * up_mats
    down = padding_factor(tokens, k, e, h)
    return (up + down) / (up_mats + 1)


def extra_bytes_per_token(spec: ModelSpec, routed_copies: bool = True) -> float:
    """Bytes one token moves through one MoE layer's element-wise kernels beyond a dense gated feed-forward's;
    ``routed_copies``: the input is quantised once per routed copy (MMQ by id; Metal and Vulkan read it in place)."""
    moe = spec.moe
    if moe is None:
        return 0.0
    h, ff, k, e = spec.hidden_size, moe.expert_intermediate_size, moe.experts_per_token, moe.num_experts
    total = (k - 1) * h * Q8_1_MMQ if routed_copies else 0.0  # quantize_mmq_q8_1 with ids: one copy per slot
    total += (k - 1) * h * F32  # k expert outputs of the down projection instead of one
    total += 2 * k * h * F32  # ggml_mul by the routing weights: read and write k rows
    total += (k + 1) * h * F32 if k > 1 else 0.0  # the fused sum of the k weighted rows
    total += 2 * e * F32 + 2 * k * F32  # router logits written and read by the top-k, the ids and weights
    if moe.expert_bias:
        up_mats = 2 if spec.gated_mlp else 1
        total += 2 * k * (up_mats * ff + h) * F32  # add_id after each projection: read and write
    return total


def runs_moe_mmq(spec: ModelSpec, engine: EngineProfile, gpu: GpuSpec, backend: Backend, fmt: WeightFormat,
                 micro_batch: int) -> bool:
    """Whether a prompt's routed experts run llama.cpp's MMQ by expert id: an MoE model with block-quantised
    weights, on CUDA with the engine's MMQ rate for this GPU, in micro-batches that are not dequantised to cuBLAS.
    (A last micro-batch of a few tokens takes the mat-vec path instead, ``get_mmvq_mmid_max_batch``; it is priced
    as MMQ here, a negligible difference.)"""
    if not spec.is_moe or not is_block_quantised(fmt) or not engine.prefill_quant_ops_per_sm_clock:
        return False
    if backend != "cuda" or mmq_rate(gpu, engine.prefill_quant_ops_per_sm_clock) is None:
        return False
    return not dequantises_prompt(engine, gpu, backend, micro_batch)


def moe_mmq_s(spec: ModelSpec, expert_params: float, tokens: int, micro_batch: int, rate: float,
              stream: float) -> float:
    """Seconds the MoE kernels add to a prompt of ``tokens`` tokens run in micro-batches of ``micro_batch``:
    the routed GEMMs' padding (``expert_padding`` - 1 times their FLOPs) at the MMQ ``rate`` (FLOP/s) and the
    MoE layers' extra element-wise bytes at ``stream`` (bytes/s). ``expert_params``: every routed expert's
    weights over all MoE layers (a token multiplies k / E of them)."""
    moe = spec.moe
    if moe is None or tokens <= 0:
        return 0.0
    routed = expert_params * moe.experts_per_token / moe.num_experts
    full, rest = divmod(tokens, micro_batch)
    padded = full * micro_batch * (expert_padding(spec, micro_batch) - 1)
    if rest:
        padded += rest * (expert_padding(spec, rest) - 1)
    moved = tokens * spec.moe_layer_count * extra_bytes_per_token(spec)
    return 2 * routed * padded / rate + moved / stream
