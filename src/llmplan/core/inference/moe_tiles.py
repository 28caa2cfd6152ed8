"""llama.cpp's MoE prompt kernels on Metal, Vulkan and ROCm: whole tiles per expert, and the mat-vec by id below
a batch threshold.

Read from ggml-org/ggml d99724f2 (2026-08-21, synced from llama.cpp), the same tree as the CUDA path
(``core.inference.moe_prompt``):

- **Metal** (ggml-metal-ops.cpp ``ggml_metal_op_mul_mat_id``): from ``ne21_mm_id_min`` = 32 tokens on,
  ``kernel_mul_mm_id_map0`` lists each expert's routed (token, slot) rows, then ``kernel_mul_mm_id``
  (ggml-metal.metal) runs threadgroups of NR0 = 64 weight rows x NR1 = 32 token columns per expert; a
  threadgroup past the expert's row count returns at once (``r1 >= neh1``), a partly filled one computes the
  whole 64 x 32 tile. Below 32 tokens ``kernel_mul_mv_id`` runs one mat-vec per (token, slot): each reads its
  expert's whole matrix.
- **Vulkan** (ggml-vulkan.cpp ``ggml_vk_mul_mat_id``, ``ggml_vk_guess_matmul_id_pipeline``; vulkan-shaders
  mul_mm.comp with MUL_MAT_ID): above 8 tokens, workgroups of BM x BN per expert (empty ones return after
  counting the expert's rows), the tile picked by the micro-batch's token count: small (32 x 32) to 32 tokens,
  medium (64 x 64) to 64, large (128 x 128) above; AMD drivers disable the large mul_mat_id tile
  (``mul_mat_id_l = false``), coopmat2 (NVIDIA) runs 128 x 64 to 64 tokens and 128 x 128 above. At 8 tokens or
  fewer ``mul_mat_vec_id`` runs per token, one workgroup row per routed slot.
- **ROCm** (HIP builds the CUDA code: ggml-cuda/mmq.cuh, mmq-config-rdna3.cuh / -rdna3-5 / -rdna4 / -cdna):
  the routed experts run MMQ by id as on NVIDIA, J picked for the whole micro-batch (``mul_mat_q_switch_J``),
  with AMD's tiles: on RDNA 3 / 3.5 64 weight rows at J = 16 and 32, 128 rows at 64 and 128; RDNA 4 64 rows to
  J = 64, 128 at 128; CDNA 128 rows with J at most 64. The engine's rows list the fallback ladder (16, 32, 64,
  128), which every matrix offers; a matrix whose rows are a multiple of the tile also offers 48, 80, 96 and
  112, so between 33 and 127 tokens the padding is a little overstated there.

The tile shapes and thresholds are data (engines.toml ``moe_prompt_tiles``); the FLOPs of the padded tiles run at
the rate the dense path already uses for that back-end and GPU (no new constant), with the same binomial rows
per expert as the CUDA path (uniform routing: a floor). The mat-vec micro-batch is charged its expert reads at
the decode bandwidth, less the dense GEMM time already counted for those tokens. The id maps (Metal's map0: one
threadgroup, a loop over the micro-batch's ids; Vulkan's expert count and each workgroup's ballot over the ids)
are not priced: a few microseconds each (docs/inference.md).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from math import ceil

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.backend import Backend, is_block_quantised, is_f16_weights
from llmplan.core.inference.moe_prompt import expected_tiles, extra_bytes_per_token, moe_mmq_s, runs_moe_mmq
from llmplan.core.model import ModelSpec
from llmplan.core.quant import WeightFormat

Tile = tuple[int, int]  # (weight rows, token columns)


def tile_ladder(engine: EngineProfile, gpu: GpuSpec, backend: Backend) -> tuple[tuple[int, int, int], ...]:
    """(smallest micro-batch, weight rows, token columns) of the engine's MoE prompt tiles on ``gpu`` under
    ``backend``: the ``moe_prompt_tiles`` rows of the first pattern that matches the GPU's id, by micro-batch."""
    rows = engine.moe_prompt_tiles
    pattern = next((p for b, p, *_ in rows if b == backend and fnmatchcase(gpu.id, p)), None)
    return tuple(sorted((t, r, c) for b, p, t, r, c in rows if b == backend and p == pattern))


def tile_at(ladder: tuple[tuple[int, int, int], ...], micro_batch: int) -> Tile | None:
    """The tile a micro-batch of ``micro_batch`` tokens runs (the last rung at or below it); None: below the
    matrix kernel's threshold, the mat-vec by id."""
    tile = None
    for tokens, rows, cols in ladder:
        if tokens <= micro_batch:
            tile = (rows, cols)
    return tile


def tile_padding(spec: ModelSpec, tokens: int, tile: Tile) -> float:
    """FLOPs the tiles compute over the FLOPs routed in one MoE layer, weighted by the routed GEMMs' FLOPs: gate
    and up (expert_intermediate_size weight rows each) and down (hidden_size rows); each expert's rows are
    Binomial(tokens, k / E) and pay whole tiles of ``tile[1]`` token columns, each matrix whole tiles of
    ``tile[0]`` weight rows."""
    moe = spec.moe
    if moe is None or tokens <= 0:
        return 1.0
    tile_rows, cols = tile
    k, e = moe.experts_per_token, moe.num_experts
    columns = expected_tiles(tokens, k, e, cols) * cols / (tokens * k)

    def padded(rows: int) -> float:
        return columns * ceil(rows / tile_rows) * tile_rows / rows

    up_mats = 2 if spec.gated_mlp else 1
    return (padded(moe.expert_intermediate_size) * up_mats + padded(spec.hidden_size)) / (up_mats + 1)


def runs_moe_tiles(spec: ModelSpec, engine: EngineProfile, gpu: GpuSpec, backend: Backend, fmt: WeightFormat) -> bool:
    """Whether a prompt's routed experts are priced by ``moe_prompt_tiles``: an MoE model, a tile ladder for this
    back-end and GPU, and weights its kernel multiplies by id (Metal and Vulkan: any GGUF type and F16; ROCm:
    block-quantised weights, MMQ's types)."""
    if not spec.is_moe or backend == "cuda" or not tile_ladder(engine, gpu, backend):
        return False
    if backend == "rocm":
        return is_block_quantised(fmt)
    return fmt.kind == "gguf" or is_f16_weights(fmt)


def moe_tiled_s(spec: ModelSpec, ladder: tuple[tuple[int, int, int], ...], expert_params: float,
                expert_bytes: float, tokens: int, micro_batch: int, rate: float, stream: float,
                matvec_bandwidth: float, routed_copies: bool) -> float:
    """Seconds the MoE kernels add to a prompt of ``tokens`` tokens in micro-batches of ``micro_batch`` beyond the
    dense pricing of the routed share: each micro-batch's tile padding at ``rate`` (FLOP/s), or below the
    ladder the mat-vec's per-token expert reads (``expert_bytes`` x k / E a token, at ``matvec_bandwidth``) less
    the GEMM time counted for them; and the MoE layers' element-wise bytes at ``stream``. ``routed_copies``: the
    input is quantised once per routed slot (MMQ by id), not read in place."""
    moe = spec.moe
    if moe is None or tokens <= 0:
        return 0.0
    share = moe.experts_per_token / moe.num_experts
    routed = expert_params * share  # weights one token multiplies in the routed experts, all MoE layers
    full, rest = divmod(tokens, micro_batch)
    seconds = 0.0
    for n, count in ((micro_batch, full), (rest, 1 if rest else 0)):
        if not count:
            continue
        tile = tile_at(ladder, n)
        if tile is None:
            gemm = 2 * routed * n / rate
            seconds += count * max(0.0, n * expert_bytes * share / matvec_bandwidth - gemm)
        else:
            seconds += count * 2 * routed * n * (tile_padding(spec, n, tile) - 1) / rate
    moved = tokens * spec.moe_layer_count * extra_bytes_per_token(spec, routed_copies)
    return seconds + moved / stream


def moe_prompt_extra_s(spec: ModelSpec, engine: EngineProfile, gpu: GpuSpec, backend: Backend, fmt: WeightFormat,
                       expert_params: float, expert_bytes: float, tokens: int, micro_batch: int, rate: float,
                       stream: float, matvec_bandwidth: float) -> float:
    """Seconds llama.cpp's MoE prompt kernels add on one GPU, whichever back-end runs them: CUDA's MMQ by id
    (``moe_prompt.moe_mmq_s``), else the engine's tile ladder for Metal, Vulkan or ROCm; 0 for dense models and
    where neither applies."""
    if runs_moe_mmq(spec, engine, gpu, backend, fmt, micro_batch):
        return moe_mmq_s(spec, expert_params, tokens, micro_batch, rate, stream)
    if not runs_moe_tiles(spec, engine, gpu, backend, fmt):
        return 0.0
    return moe_tiled_s(spec, tile_ladder(engine, gpu, backend), expert_params, expert_bytes, tokens, micro_batch,
                       rate, stream, matvec_bandwidth, routed_copies=backend == "rocm")
