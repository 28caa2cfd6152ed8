"""Which GPU back-end a local engine runs on, and the device memory its runtime takes beyond buffers.

llama.cpp (and Ollama) build one ggml back-end per GPU API: CUDA on NVIDIA, HIP/ROCm on AMD, SYCL on Intel,
Metal on Apple, and Vulkan on any of the first three. ``inference.backend = "auto"`` takes the vendor's own
API; a plan may name another (``vulkan`` on an AMD or Intel card), and a back-end the card cannot run is
refused with the ones it can.

Why the runtime context differs: the CUDA driver keeps a context per process and GPU (the module's code for
the kernels it loads, the local-memory and printf heaps), which nvidia-smi shows beside llama.cpp's own
buffers; HIP's runtime loads the compiled code objects of the kernels into device memory the same way. Metal
has no such per-process device reservation: llama.cpp's Metal back-end allocates its weights, KV cache and
compute buffer as MTLBuffers (ggml-metal's log line "allocated buffer, size = ... MiB, ( used / max )" counts
only those against ``recommendedMaxWorkingSetSize``), and its shader library is a few MB of host memory.
Vulkan and SYCL (Level Zero) keep pipelines / kernel modules built from SPIR-V, not a fat binary resident in
device memory. The numbers per back-end are data in the engine profile (``backend_context_bytes``).

The same back-end decides which kernels multiply a prompt by block-quantised weights (``quant_prompt_rate``):
CUDA's MMQ at a rate per SM per clock (``core.inference.mmq``), else a measured share of the GPU's dense fp16
matrix peak for that back-end and GPU family (``prefill_quant_share``: ROCm's MMQ on RDNA 3 and CDNA, Vulkan's
cooperative-matrix shaders, SYCL on Xe2), else the shared fraction of int8 peak. F16 weights run cuBLAS
(``float_prompt_rate``): ggml-cuda's ``ggml_cuda_op_mul_mat_cublas`` multiplies F16 weights with
``CUBLAS_COMPUTE_16F`` (fp16 accumulate; only AMD CDNA switches to fp32), which GeForce RTX cards run at twice
the fp32-accumulate rate the catalog stores for them (Turing, Ampere GA10x, Ada and Blackwell whitepapers);
workstation and data-centre cards run both at the same rate.

On Metal every weight type multiplies a prompt through one kernel, ``kernel_mul_mm`` (ggml-metal.metal): each
threadgroup dequantises a tile of the weights to half in threadgroup memory and runs 8x8 ``simdgroup_matrix``
multiply-accumulates on it, so the rate falls with each type's dequantisation work (``metal_prompt_rate``, from
``prefill_metal_share``: a measured share of the fp16 peak per GGUF type). Apple's M1-M4 GPUs run fp16 at their
fp32 rate, which is the catalog's peak. From the M3 on part of that dequantisation issues beside the multiply
(``core.inference.metal_dequant``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.hardware import GpuSpec
from llmplan.core.inference.metal_dequant import coissued_share, coissues
from llmplan.core.inference.mmq import mmq_rate
from llmplan.core.quant import WeightFormat
from llmplan.errors import InputError

Backend = Literal["cuda", "rocm", "vulkan", "sycl", "metal"]
BACKENDS: tuple[Backend, ...] = ("cuda", "rocm", "vulkan", "sycl", "metal")
BACKEND_NAMES = {"cuda": "CUDA", "rocm": "ROCm (HIP)", "vulkan": "Vulkan", "sycl": "SYCL", "metal": "Metal"}
# The vendor's own API first (what "auto" picks); then the others llama.cpp builds for that vendor's GPUs.
_RUNS_ON: dict[str, tuple[Backend, ...]] = {
    "nvidia": ("cuda", "vulkan"),
    "amd": ("rocm", "vulkan"),
    "intel": ("sycl", "vulkan"),
    "apple": ("metal",),
}


def backends_for(gpu: GpuSpec) -> tuple[Backend, ...]:
    """The back-ends ``gpu`` runs, its vendor's own first (other vendors: Vulkan)."""
    return _RUNS_ON.get(gpu.vendor, ("vulkan",))


def backend_of(gpu: GpuSpec, chosen: str = "auto") -> Backend:
    """The back-end a plan's ``inference.backend`` means on ``gpu``; InputError when the card cannot run it."""
    choices = backends_for(gpu)
    if chosen == "auto":
        return choices[0]
    if chosen not in choices:
        names = ", ".join(f"{c} ({BACKEND_NAMES[c]})" for c in choices)
        raise InputError(f"inference.backend = {chosen!r} does not run on {gpu.name}; it runs {names} "
                         "(or 'auto': the vendor's own)")
    return chosen  # type: ignore[return-value]  # checked against the tuple of Backend literals above


def runtime_context_bytes(engine: EngineProfile, backend: Backend) -> int:
    """Device memory the engine's GPU runtime keeps per GPU beyond its buffers, on ``backend``: the
    profile's figure for that back-end, else its CUDA context figure."""
    for name, size in engine.backend_context_bytes:
        if name == backend:
            return int(size)
    return engine.cuda_context_bytes


def fp16_accumulate_peak(gpu: GpuSpec) -> float:
    """Dense fp16 tensor FLOP/s with fp16 accumulate: twice the catalog's fp16 figure (fp32 accumulate, what
    training uses) on GeForce RTX cards, the same figure on every other GPU."""
    fp16 = gpu.peak_flops.fp16 or 0.0
    geforce_rtx = gpu.vendor == "nvidia" and gpu.segment == "consumer" and gpu.id.startswith("nvidia-rtx-")
    return 2 * fp16 if geforce_rtx else fp16


def is_f16_weights(fmt: WeightFormat) -> bool:
    """F16 weights (an F16 GGUF, or fp16 that llama.cpp loads as one): the cuBLAS fp16 path; BF16 and F32 are not."""
    return (fmt.kind == "gguf" and fmt.variant == "F16") or (fmt.kind == "float" and fmt.name == "fp16")


def float_prompt_rate(engine: EngineProfile, gpu: GpuSpec, backend: Backend) -> float | None:
    """FLOP/s of the engine's F16-weight prompt GEMMs on ``gpu`` (None: the plan's matmul efficiency applies):
    the profile's measured share of the fp16-accumulate peak (the first ``prefill_float_share_by_gpu`` row for
    this back-end whose pattern matches the GPU's catalog id, else ``prefill_float_share``), on CUDA (NVIDIA,
    Volta on: tensor cores)."""
    share = row_for(engine.prefill_float_share_by_gpu, backend, gpu) or engine.prefill_float_share
    if backend != "cuda" or not share or gpu.vendor != "nvidia":
        return None
    try:
        major = int(str(gpu.compute_capability).split(".")[0])
    except ValueError:
        return None
    return fp16_accumulate_peak(gpu) * share if major >= 7 and gpu.peak_flops.fp16 else None


def dequantises_prompt(engine: EngineProfile, gpu: GpuSpec, backend: Backend, micro_batch: int) -> bool:
    """Whether a prompt micro-batch of ``micro_batch`` tokens multiplies block-quantised weights by dequantising
    them to F16 and running the F16 cuBLAS GEMM, rather than with MMQ.

    llama.cpp builds before PR #8075 (2024-06-23) did so above ``MMQ_MAX_BATCH_SIZE`` = 32 rows wherever fp16
    tensor cores are present (ggml-cuda.cu ``ggml_cuda_mul_mat``: ``use_mul_mat_q`` only for ``src1->ne[1] <=
    MMQ_MAX_BATCH_SIZE`` when ``fp16_performance_good``; then ``ggml_cuda_op_mul_mat_cublas`` converts src0 to F16
    in the pool and calls cublasGemmEx): the profile's ``prefill_quant_mmq_max_tokens``. The dequantisation is a
    kernel of its own, reading the quantised weights and writing them as F16 once per micro-batch
    (``core.inference.latency.dequant_s``)."""
    cap = engine.prefill_quant_mmq_max_tokens
    return cap is not None and micro_batch > cap and float_prompt_rate(engine, gpu, backend) is not None


def is_block_quantised(fmt: WeightFormat) -> bool:
    """A GGUF with block-quantised weights (Q4_K_M, Q8_0, IQ…), not one stored as F16, BF16 or F32."""
    return fmt.kind == "gguf" and fmt.variant not in ("F16", "BF16", "F32")


def engine_prompt_rate(engine: EngineProfile, gpu: GpuSpec, backend: Backend, fmt: WeightFormat,
                       micro_batch: int) -> tuple[float | None, bool]:
    """The engine's prompt GEMM rate for weights of ``fmt`` (None: the plan's matmul efficiency applies) and
    whether the weights are dequantised to F16 first (``dequantises_prompt``; its kernel is priced apart:
    ``latency.dequant_s``). One choice for the single-GPU path (``latency.rates``) and the layer split
    (``multi_gpu``): dequantised weights run the F16 cuBLAS GEMM, block-quantised ones the engine's quantised
    kernels (``quant_prompt_rate``), F16 weights ``float_prompt_rate``."""
    if is_block_quantised(fmt):
        if dequantises_prompt(engine, gpu, backend, micro_batch):
            return float_prompt_rate(engine, gpu, backend), True
        return quant_prompt_rate(engine, gpu, backend), False
    return (float_prompt_rate(engine, gpu, backend) if is_f16_weights(fmt) else None), False


def decode_stream_efficiency(engine: EngineProfile, gpu: GpuSpec, backend: Backend) -> float | None:
    """Measured fraction of ``gpu``'s peak bandwidth the engine's batch-1 decode streams weights at (None: the
    plan's ``efficiency.memory_bandwidth``). The first ``decode_bandwidth_efficiency_by_gpu`` row for this
    back-end whose pattern matches the GPU's catalog id (llama.cpp 2024 builds on HBM cards), else
    ``stream_efficiency``."""
    return row_for(engine.decode_bandwidth_efficiency_by_gpu, backend, gpu) or stream_efficiency(engine, gpu)


def row_for(rows: tuple[tuple[str, str, float], ...], backend: Backend, gpu: GpuSpec) -> float | None:
    """The value of the first (back-end, GPU catalog id pattern, value) row for ``backend`` whose pattern matches
    ``gpu``'s id (None: no row does)."""
    return next((v for name, pattern, v in rows if name == backend and fnmatchcase(gpu.id, pattern)), None)


def stream_efficiency(engine: EngineProfile, gpu: GpuSpec) -> float | None:
    """The engine's share of peak bandwidth for large streaming kernels (a device copy; the prompt's weight reads
    and score matrix): the Apple figure on Apple GPUs, else the engine's one figure; None: the plan's."""
    if gpu.vendor == "apple" and engine.decode_bandwidth_efficiency_apple:
        return engine.decode_bandwidth_efficiency_apple
    return engine.decode_bandwidth_efficiency


def quant_prompt_rate(engine: EngineProfile, gpu: GpuSpec, backend: Backend) -> float | None:
    """FLOP/s of the engine's quantised-weight prompt kernels on ``gpu`` under ``backend`` (None: the engine
    dequantises and uses the fp16 GEMM rate). First CUDA's MMQ rate, then the first ``prefill_quant_share``
    row for this back-end whose pattern matches the GPU's catalog id, then the shared int8 share."""
    if backend == "cuda" and engine.prefill_quant_ops_per_sm_clock:
        rate = mmq_rate(gpu, engine.prefill_quant_ops_per_sm_clock)
        if rate:
            return rate
    for name, pattern, share in engine.prefill_quant_share:
        if name == backend and fnmatchcase(gpu.id, pattern):
            peak = gpu.peak_flops.for_dtype("fp16")
            if peak:
                return peak * share
    if engine.prefill_quant_int8_efficiency and gpu.vendor != "apple" and gpu.peak_flops.int8:
        return gpu.peak_flops.int8 * engine.prefill_quant_int8_efficiency
    return None


def metal_prompt_rate(engine: EngineProfile, gpu: GpuSpec, backend: Backend, fmt: WeightFormat) -> float | None:
    """FLOP/s of the engine's Metal prompt kernels on ``gpu`` with weights of ``fmt`` (None: the plan's matmul
    efficiency): the first ``prefill_metal_share`` row whose pattern matches the GGUF type or preset (F16 weights,
    an fp16 plan's too, match 'F16'), times the GPU's fp16 peak. From the M3 on, the dequantisation's integer,
    FP16 and conversion instructions (``prefill_metal_coissued``) issue beside the multiply's FP32 FMAs and
    leave that share's cost (``metal_dequant.coissued_share``)."""
    if backend != "metal" or not engine.prefill_metal_share:
        return None
    name = "F16" if is_f16_weights(fmt) else fmt.variant if fmt.kind == "gguf" else ""
    peak = gpu.peak_flops.for_dtype("fp16")
    share = next((s for pattern, s in engine.prefill_metal_share if name and fnmatchcase(name, pattern)), None)
    if not share or not peak:
        return None
    coissued = next((n for pattern, n in engine.prefill_metal_coissued if fnmatchcase(name, pattern)), None)
    if coissued and coissues(gpu.name):
        share = coissued_share(share, coissued)
    return peak * share
