"""The per-layer floor of a decode step on the GPU serving engines (vLLM, SGLang, TensorRT-LLM, TGI).

At batch 1 a decode step reads little per GPU (a TP rank of a 70B model ~35 MB a layer), so what sets its time
is not only bytes over bandwidth: every layer launches 10-40 small kernels, each of which takes a few
microseconds however little it reads, and each tensor-parallel all-reduce of a few KB costs its latency.

- **Kernels**: the profile's ``decode_kernels`` lists, per layer part and once per step, the kernels the engine's
  model code launches (attention GQA or MLA, feed-forward dense or fused-MoE; embedding, final norm, lm_head and
  sampling per step), counted from the engines' code (catalogs/engines.toml names the files and commits). The
  engines replay a decode step as a CUDA graph, so a kernel pays no host launch, only the GPU's hand-over:
  ``decode_kernel_s`` each (the same graph-replay microbenchmark the llama.cpp profiles use). TGI's per-step row
  also holds the kernels it launches eagerly around the replay (input copies, sampling, batch update), priced the
  same way: a lower bound, their host launches being host work.
- **CUDA-graph limit**: each engine captures graphs only up to a pass size (``cuda_graph_max_tokens``, read from
  its launch defaults: TGI 32, vLLM 512 (1,024 on data-centre Blackwell), SGLang 160 on GPUs of 25,000 MiB or
  more) and SGLang and TGI capture decode steps only. A pass outside the graphs runs eagerly: the GPU idles the
  measured gap between queued kernels (``KERNEL_GAP_S``, 1.8 µs) instead of the graph hand-over, and the host
  launches each kernel from Python (``eager_kernel_host_s``, the measured cost of one PyTorch op), in parallel
  with the GPU: the pass takes the longer of the two.
- **GEMMs**: each GEMM takes at least ``GEMM_FIXED_S`` (3 µs, the measured duration of a small cuBLAS GEMM on an
  H100: ``core.training.kernel_rates``). The step's weight bytes are already priced at the bandwidth
  (``latency.decode_step``); the floor adds what the GEMMs' fixed costs exceed them by, over the whole step
  (an aggregate: a step of many small GEMMs and a few large ones is priced as if its bytes were spread evenly).
- **fp8 weights** add ``decode_quant_kernels_per_gemm`` kernels per GEMM (the activations' fp8 quantisation
  before each scaled GEMM).
- **Collectives**: with TP inside a node every layer all-reduces its attention output and its feed-forward
  output (RowParallelLinear / the MoE's final reduce), and each step gathers the logits. A small all-reduce costs
  what the engine's own custom all-reduce was measured at (``allreduce_small``: TP size × message bytes,
  interpolated by log size, never less than the ring's bytes over the link); the logits gather is priced as one
  more all-reduce of the activations' size (an approximation: it moves vocabulary / TP logits per token).
  Profiles without that table keep ``allreduce_latency_s``.

Not modelled: the engines' host work per step (scheduling, input preparation, sampling and output processing in
Python; vLLM's multi-step RFC #6854 showed ~4 ms of GPU bubble a step before v0.6.0, and nothing was found
measured for the releases the validation rows ran), expert-parallel all-to-alls, and kernels that reach less
than the copy bandwidth at a few rows (at 128 rows the kernel-timed GEMM sweeps put the 8B MLP's at 0.71-0.82 of
peak, near the 0.80 priced). SGLang's DP attention changes the collectives and adds the ``dp`` kernels
(``core.inference.dp_attention``). docs/inference.md, "What
the dense rows miss", compares the result with published small-batch measurements and says which evidence points
where.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.eager import curve_at
from llmplan.core.inference.fp8_online import bf16_gemms
from llmplan.core.model import ModelSpec
from llmplan.core.training.kernel_rates import GEMM_FIXED_S, KERNEL_GAP_S

COLLECTIVES_PER_LAYER = 2  # attention output and feed-forward output (RowParallelLinear all-reduces)


@dataclass(frozen=True, slots=True)
class DecodeFloor:
    """One decode step's floor on one GPU (seconds; counts per step)."""

    kernels: int  # kernels the step launches, GEMMs included
    gemms: int
    kernel_s: float  # kernels × the per-kernel hand-over
    gemm_floor_s: float  # what the GEMMs' fixed costs add beyond the step's weight bytes at the bandwidth
    collectives: int
    collective_s: float
    graphed: bool = True  # replayed as a CUDA graph; False: every kernel launched eagerly
    host_s: float = 0.0  # the host launching the kernels of an eager pass (overlaps the GPU's work)

    @property
    def fixed_s(self) -> float:
        """The GPU part: kernel hand-overs (or eager gaps) and GEMM floors."""
        return self.kernel_s + self.gemm_floor_s

    @property
    def launch_s(self) -> float:
        """What the host's launches add beyond the GPU's fixed part when they overlap the GPU's work: a pass takes
        max(bytes or FLOPs, host - fixed) + fixed = max(GPU, host)."""
        return max(0.0, self.host_s - self.fixed_s)


def graph_limit(engine: EngineProfile, gpu: GpuSpec, tp: int) -> int | None:
    """Largest pass (tokens) the engine replays as a CUDA graph on ``gpu`` at TP ``tp``: the first
    ``cuda_graph_max_tokens`` row whose GPU id pattern matches and whose least memory (MiB) and TP size the plan
    meets; None: no limit (no rows, or none matches)."""
    mib = gpu.memory_bytes / 2**20
    return next((n for pattern, least_mib, least_tp, n in engine.cuda_graph_max_tokens
                 if fnmatchcase(gpu.id, pattern) and mib >= least_mib and tp >= least_tp), None)


def replays_graph(engine: EngineProfile, gpu: GpuSpec, tp: int, tokens: int, prefill: bool,
                  weight_kind: str = "float") -> bool:
    """Whether a forward pass of ``tokens`` tokens replays a CUDA graph (a prompt pass only where the engine
    captures prompts: ``cuda_graph_prefill``; none with a weight-format kind in ``cuda_graph_off_formats``)."""
    if weight_kind in engine.cuda_graph_off_formats:
        return False
    if not engine.cuda_graph_max_tokens:
        return True
    if prefill and not engine.cuda_graph_prefill:
        return False
    limit = graph_limit(engine, gpu, tp)
    return limit is None or tokens <= limit


def _row(engine: EngineProfile, part: str) -> tuple[int, int]:
    return next(((o, g) for p, o, g in engine.decode_kernels if p == part), (0, 0))


def step_kernels(spec: ModelSpec, engine: EngineProfile, layers: int, fp8: bool,
                 dp_attention: bool = False, online_fp8: bool = False) -> tuple[int, int]:
    """(kernels other than GEMMs, GEMMs) of one decode step over ``layers`` layers (the model's own mix of MLA or
    GQA attention and dense or MoE feed-forward, scaled to ``layers``), plus the per-step kernels; with DP attention
    each layer also runs the ``dp`` row (the hidden states' pad, all-gather and concatenation). ``online_fp8``
    (weight format fp8-online): only the GEMMs the engine converted quantise their activations
    (``core.inference.fp8_online.bf16_gemms``)."""
    attn = _row(engine, "mla" if spec.mla else "gqa")
    moe_share = spec.moe_layer_count / spec.num_layers
    mlp, moe = _row(engine, "mlp"), _row(engine, "moe")
    dp = _row(engine, "dp") if dp_attention else (0, 0)
    other = layers * (attn[0] + (1 - moe_share) * mlp[0] + moe_share * moe[0] + dp[0])
    gemms = layers * (attn[1] + (1 - moe_share) * mlp[1] + moe_share * moe[1] + dp[1])
    step = _row(engine, "step")
    other, gemms = other + step[0], gemms + step[1]
    if fp8:
        wide = bf16_gemms(spec, engine, layers, attn[1], (1 - moe_share) * mlp[1] + moe_share * moe[1],
                          step[1]) if online_fp8 else 0
        other += (gemms - wide) * engine.decode_quant_kernels_per_gemm
    return round(other), round(gemms)


def small_allreduce_s(engine: EngineProfile, tp: int, size: float) -> float | None:
    """Seconds of one all-reduce of ``size`` bytes over ``tp`` GPUs of a node with the engine's custom all-reduce
    (log-size interpolation of its measured rows for the nearest TP size at or above ``tp``, else the largest;
    beyond the largest size measured, that row's time plus the extra bytes at the last interval's rate), or None
    when the profile measured none."""
    if not engine.allreduce_small or tp < 2:
        return None
    pts = _points(engine.allreduce_small, tp)
    if size <= pts[-1][0] or len(pts) == 1:
        return curve_at(pts, size)
    (b0, s0), (b1, s1) = pts[-2], pts[-1]
    return s1 + (size - b1) * (s1 - s0) / (b1 - b0)


_POINTS: dict[tuple[int, int], tuple[object, tuple[tuple[float, float], ...]]] = {}


def _points(rows: tuple[tuple[int, float, float], ...], tp: int) -> tuple[tuple[float, float], ...]:
    """(bytes, seconds) of the rows for the smallest measured TP size at or above ``tp`` (else the largest), by size.
    Memoised by the rows' identity (the serving search prices the same group at many batch sizes; hashing the
    nested tuple on every call cost more than the lookup saved)."""
    hit = _POINTS.get((id(rows), tp))
    if hit is not None and hit[0] is rows:
        return hit[1]
    sizes = sorted({t for t, _, _ in rows})
    pick = next((t for t in sizes if t >= tp), sizes[-1])
    pts = tuple(sorted((b, s) for t, b, s in rows if t == pick))
    if len(_POINTS) > 256:
        _POINTS.clear()
    _POINTS[(id(rows), tp)] = (rows, pts)
    return pts


def decode_floor(spec: ModelSpec, engine: EngineProfile, layers: int, tp: int, tokens: int, fp8: bool,
                 weight_bytes: float, bandwidth: float, allreduce_s: float, graphed: bool = True,
                 dp_allgather_s: float | None = None, online_fp8: bool = False) -> DecodeFloor | None:
    """The floor of one forward pass of ``tokens`` tokens over ``layers`` layers on one GPU of a TP group of
    ``tp`` (None: the profile lists no decode kernels). ``weight_bytes``: what the pass reads at ``bandwidth``;
    ``allreduce_s``: one all-reduce of the pass's activations (``small_allreduce_s`` or the flat latency);
    ``graphed``: the pass replays a CUDA graph (``replays_graph``), else each kernel costs the eager gap on the GPU
    and its launch on the host. ``dp_allgather_s``: with DP attention (``core.inference.dp_attention``), one
    layer's all-gather of the hidden states; each layer then all-gathers and all-reduces once (the feed-forward's)
    and the step gathers no logits (the head is replicated)."""
    if not engine.decode_kernels:
        return None
    dp = dp_allgather_s is not None
    other, gemms = step_kernels(spec, engine, layers, fp8, dp, online_fp8)
    kernels = other + gemms
    kernel_s = kernels * ((engine.decode_kernel_s or 0.0) if graphed else KERNEL_GAP_S)
    host_s = 0.0 if graphed else kernels * engine.eager_kernel_host_s
    gemm_floor = max(0.0, gemms * GEMM_FIXED_S - weight_bytes / bandwidth)
    if dp and tp > 1:
        return DecodeFloor(kernels, gemms, kernel_s, gemm_floor, 2 * layers,
                           layers * (allreduce_s + dp_allgather_s), graphed, host_s)
    collectives = COLLECTIVES_PER_LAYER * layers + 1 if tp > 1 else 0
    return DecodeFloor(kernels, gemms, kernel_s, gemm_floor, collectives, collectives * allreduce_s, graphed, host_s)
