"""What a serving engine adds around the model: reserved memory, cache paging, chunking.

The numbers live in ``catalogs/engines.toml`` (read by ``llmplan.catalog.engines``), each
with its source; the core cannot read catalogs, so the caller puts the chosen profile
in ``Scenario.engine_profile``. ``EngineProfile()`` with no arguments is the neutral
profile used when none is given: no framework overhead beyond a CUDA context, no
preallocation, no paging; its one number is explained in ``cuda_context_bytes``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from llmplan.core.frozen import FrozenModel
from llmplan.core.strict_fields import StrictFields

Curve = tuple[tuple[float, float], ...]  # (size, fraction) points, sizes increasing
DECODE_PARTS = ("gqa", "mla", "mlp", "moe", "step", "dp")  # decode_kernels rows (core/inference/serving_floor.py)
WEIGHT_FORMAT_KINDS = ("float", "fp8", "int8", "gptq", "awq", "bnb", "mlx", "gguf", "mxfp4")  # core.quant.WeightFormat.kind
_KIND_NAMES = {"float": "fp16/bf16/fp32", "fp8": "fp8", "int8": "int8/w8a8", "gptq": "GPTQ", "awq": "AWQ",
               "bnb": "bitsandbytes nf4/fp4", "mlx": "MLX quantized (mlx-4bit, mlx-8bit)", "gguf": "GGUF (q4_k_m, q8_0 …)",
               "mxfp4": "MXFP4 experts (gpt-oss)"}


def check_weight_format(profile: EngineProfile, weight_format: str) -> str | None:
    """Why ``profile`` cannot load ``weight_format`` (one sentence naming what it does load), or None."""
    from llmplan.core.quant import parse_weight_format

    if not profile.weight_formats:
        return None
    kind = parse_weight_format(weight_format).kind
    if kind in profile.weight_formats:
        return None
    loads = ", ".join(_KIND_NAMES[k] for k in profile.weight_formats)
    return f"{profile.name} does not load {weight_format} weights; it loads {loads}"


class EngineProfile(StrictFields, FrozenModel):
    id: str = Field("generic", min_length=1)
    name: str = "generic runtime"
    preallocates_kv: bool = Field(
        False, description="reserves a KV pool up front from a memory fraction (vLLM, SGLang, TensorRT-LLM, TGI)"
    )
    gpu_memory_utilization: float = Field(
        1.0, gt=0, le=1, description="share of GPU memory the engine may use (vLLM's --gpu-memory-utilization)"
    )
    cuda_context_bytes: int = Field(
        512 * 2**20, ge=0,
        description="CUDA context and kernels resident per GPU; ~0.3-0.6 GiB on CUDA 12 with lazy loading "
        "(NVIDIA CUDA C++ Programming Guide, 'Lazy Loading'); the figure for every back-end that "
        "backend_context_bytes does not name",
    )
    backend_context_bytes: tuple[tuple[str, int], ...] = Field(
        (), description="(back-end, bytes) where the GPU runtime keeps other than cuda_context_bytes per GPU: "
        "Metal, Vulkan and SYCL hold no CUDA-style context (core/inference/backend.py)",
    )
    framework_bytes: int = Field(0, ge=0, description="allocator reserve, CUDA graphs, sampler buffers per GPU")
    kv_block_tokens: int = Field(1, ge=1, le=4096, description="cache allocation granularity in tokens")
    prefill_chunk_tokens: int = Field(
        0, ge=0, description="tokens prefilled per forward pass (chunked prefill / n_ubatch); 0: whole prompt"
    )
    decode_bandwidth_efficiency: float | None = Field(
        None, gt=0, le=1, description="measured fraction of peak bandwidth this engine's decode reaches (GPUs)"
    )
    decode_bandwidth_efficiency_apple: float | None = Field(
        None, gt=0, le=1, description="the same on Apple Silicon (Metal kernels reach a different share)"
    )
    decode_bandwidth_efficiency_by_gpu: tuple[tuple[str, str, float], ...] = Field(
        (), description="(back-end, GPU catalog id pattern, fraction of peak bandwidth) where the engine's batch-1 "
        "mat-vec kernels stream weights at a measured share other than decode_bandwidth_efficiency (llama.cpp "
        "builds of 2024 on HBM cards); the first matching row wins (core/inference/backend.py)",
    )
    kv_dtypes: tuple[str, ...] = Field(
        (), description="the KV cache types the engine takes, in llmplan's names (bf16, fp16, fp32, fp8, fp8_e4m3, "
        "fp8_e5m2, q8_0, q4_0 …), read from its docs; a plan asking another is refused naming these "
        "(core.kvcache.kv_dtype_refusal) and the app lists only these; (): any",
    )
    partial_offload: bool = Field(False, description="can keep some layers in host RAM (llama.cpp -ngl)")
    experts_in_host: bool = Field(
        False, description="can keep an MoE model's routed experts in host RAM with the rest on the GPUs "
        "(llama.cpp --cpu-moe / --n-cpu-moe: core.inference.cpu_moe)",
    )
    splits_rows: bool = Field(
        False, description="can split each weight matrix's rows across the GPUs (llama.cpp --split-mode row, the "
        "CUDA/ROCm split buffer: core.inference.row_split)",
    )
    decode_layer_s_eager: float | None = Field(
        None, ge=0, le=0.01,
        description="seconds per decoder layer per decode step when the CUDA back-end replays no graph and the host "
        "launches every kernel (split buffers: --split-mode row, core.inference.row_split); None: the one-GPU floor",
    )
    default_format: str = Field(
        "", description="the weight format people run when they name none (llama.cpp and Ollama: Q4_K_M); with the "
        "plan's format open and no format fitting on the GPUs, the offload answer uses it "
        "(core.search.policy.offload_format); '': none",
    )
    splits_unequal_cards: bool = Field(
        False, description="splits the model's layers across GPUs of different kinds in one machine, in "
        "proportion to their memory (llama.cpp --tensor-split / --split-mode layer)",
    )
    host_memory_bandwidth: float = Field(
        0.0, ge=0, description="bytes/s the CPU reaches on layers left in host RAM (partial offload)"
    )
    allreduce_latency_s: float = Field(
        10e-6, ge=0,
        description="fixed cost of one small tensor-parallel all-reduce inside a node (kernel launch and "
        "synchronisation); llmplan assumption of ~10 µs, the order of small-message all-reduce latency over "
        "NVLink in nccl-tests and vLLM's custom all-reduce",
    )
    # --- Eager engines (PyTorch without graphs: transformers generate()): the host issues every kernel. ---
    host_op_s: float = Field(
        0.0, ge=0, le=0.01,
        description="host seconds per eager PyTorch op (Python, dispatch, launch); 0: the engine launches from "
        "CUDA graphs or C++ and its host cost is not modelled op by op",
    )
    host_ops_per_layer: float = Field(
        0.0, ge=0, description="host cost of one decoder layer's forward, in units of host_op_s"
    )
    host_ops_per_step: float = Field(0.0, ge=0, description="eager ops per decode step outside the layers")
    host_ops_per_call: float = Field(0.0, ge=0, description="eager ops of one generate() call's set-up")
    gemm_efficiency: Curve = Field(
        (), description="(tokens, fraction of dense peak) of the engine's GEMMs by token count; () : Efficiency.matmul"
    )
    attention_efficiency: Curve = Field(
        (), description="(sequence, fraction of dense peak) of causal flash attention forward by sequence length"
    )
    copy_bandwidth_efficiency: float | None = Field(
        None, gt=0, le=1, description="fraction of peak bandwidth a large device copy reaches (memory-bound ops)"
    )
    norm_bytes_per_element: float = Field(
        0.0, ge=0, description="bytes moved per element by the engine's RMSNorm (unfused: fp32 upcast), at copy speed"
    )
    act_bytes_per_element: float = Field(
        0.0, ge=0, description="bytes moved per MLP intermediate element by the activation (SiLU then multiply)"
    )
    rotary_bytes_per_element: float = Field(
        0.0, ge=0, description="bytes per query and key element the unfused rotary embedding moves; 0: fused"
    )
    residual_bytes_per_element: float = Field(
        0.0, ge=0, description="bytes per hidden element a layer's residual adds move; 0: fused"
    )
    kv_cache_copies: bool = Field(
        False, description="the cache grows by concatenation (DynamicCache): each step reads and rewrites it"
    )
    # --- Compiled / C++ engines: fixed costs every decode step pays, and the quantised prompt kernels. ---
    step_overhead_s: float = Field(
        0.0, ge=0, le=1, description="seconds every decode step pays beyond the kernels (sampling, synchronisation)"
    )
    decode_layer_s: float = Field(
        0.0, ge=0, le=0.01,
        description="GPU seconds per layer per decode step that do not shrink with bandwidth: each of the layer's "
        "small kernels takes a few microseconds however little it reads (CUDA back-end)",
    )
    decode_layer_s_apple: float | None = Field(None, ge=0, le=0.01, description="the same on Apple Silicon (Metal)")
    decode_layer_s_pipelined: float | None = Field(
        None, ge=0, le=0.01,
        description="decode_layer_s when every layer is split by layers over several CUDA GPUs: llama.cpp then turns "
        "on pipeline parallelism, whose rotating input copies change the graph every token, so builds before PR "
        "#13814 (2025-05) replay no CUDA graph and launch each kernel from the host; None: the one-GPU floor "
        "(core/inference/multi_gpu.py)",
    )
    decode_kernels_per_layer: int | None = Field(
        None, ge=1, le=200,
        description="kernels one decoder layer runs per batch-1 decode step (counted from the engine's code); with "
        "decode_kernel_s it replaces decode_layer_s off Apple",
    )
    decode_kernels_per_moe_layer: int | None = Field(
        None, ge=1, le=200,
        description="decode_kernels_per_layer for a layer whose feed-forward is routed experts (router, top-k, the "
        "experts' mat-vecs by id, their weighting and sum; counted from the engine's code); None: as a dense layer",
    )
    decode_kernel_s: float | None = Field(
        None, ge=0, le=1e-4,
        description="seconds each kernel of a captured CUDA graph costs beyond the bytes it streams (graph replay of "
        "tiny kernels, microbenchmark)",
    )
    decode_kernels: tuple[tuple[str, int, int], ...] = Field(
        (), description="(part, kernels other than GEMMs, GEMM kernels) one batch-1 decode step launches per layer "
        "part ('gqa' or 'mla' attention, 'mlp' or 'moe' feed-forward) and once per step ('step': embedding, final "
        "norm, lm_head, sampling), counted from a GPU serving engine's model code; each kernel costs "
        "decode_kernel_s and each GEMM at least its fixed cost (core/inference/serving_floor.py); (): no such floor",
    )
    decode_quant_kernels_per_gemm: int = Field(
        0, ge=0, le=4, description="extra kernels per GEMM with fp8 weights (the activations' fp8 quantisation)"
    )
    cuda_graph_max_tokens: tuple[tuple[str, int, int, int], ...] = Field(
        (), description="(GPU catalog id pattern, least GPU memory in MiB, least TP size, largest forward pass in "
        "tokens the engine replays as a CUDA graph) read from the engine's launch defaults; the first matching row "
        "wins; a larger pass runs eagerly, every kernel launched from Python (core/inference/serving_floor.py); "
        "(): graphs at every size",
    )
    cuda_graph_prefill: bool = Field(
        True, description="prompt passes within cuda_graph_max_tokens replay a graph too (vLLM V1's piecewise "
        "graphs); False: only decode steps do (SGLang, TGI), prompts run eagerly",
    )
    cuda_graph_off_formats: tuple[str, ...] = Field(
        (), description="weight-format kinds with which the engine captures no CUDA graph at any size (TGI: "
        "bitsandbytes); every pass runs eagerly",
    )
    eager_kernel_host_s: float = Field(
        0.0, ge=0, le=1e-3, description="host seconds to launch one kernel from Python when no graph is replayed "
        "(a PyTorch op's dispatch and launch, measured); the GPU idles the measured gap between eager kernels",
    )
    fp8_online_no_fp8_model_types: tuple[str, ...] = Field(
        (), description="model types whose attention and first and last layers the engine leaves bf16 when it "
        "converts a bf16 checkpoint to fp8 at load (weight format fp8-online; TGI's no_fp8 in "
        "flash_llama_modeling.py): core/inference/fp8_online.py",
    )
    dp_attention: bool = Field(
        False, description="the engine can run multi-latent attention data-parallel over the TP group (SGLang's "
        "--enable-dp-attention: core/inference/dp_attention.py); its kernels per layer are decode_kernels row 'dp'",
    )
    dp_attention_prefill_chunk_tokens: int | None = Field(
        None, ge=1, description="prefill_chunk_tokens under DP attention (SGLang halves --chunked-prefill-size)"
    )
    mla_cache: Literal["latent", "heads", "heads_padded"] = Field(
        "latent", description="what the engine caches for multi-latent attention (DeepSeek-V2/V3, Kimi K2): "
        "'latent' the compressed latent and rotary key, kv_lora_rank + qk_rope_head_dim per token and layer, on "
        "every TP rank; 'heads' K (qk_nope + qk_rope) and V (v_head_dim) per attention head, split over TP; "
        "'heads_padded' the same with K and V both padded to the larger head size (core/kvcache.py)",
    )
    allreduce_small: tuple[tuple[int, float, float], ...] = Field(
        (), description="(TP size, message bytes, seconds) of the engine's own small all-reduce inside an NVLink "
        "node (custom all-reduce), measured; interpolated by log size; (): allreduce_latency_s",
    )
    prefill_quant_int8_efficiency: float | None = Field(
        None, gt=0, le=1,
        description="fraction of the GPU's dense int8 peak the engine's quantised matmul kernels (llama.cpp MMQ) "
        "reach on a prompt, for block-quantised GGUF weights; None: dequantise and use the fp16 GEMM rate",
    )
    prefill_quant_ops_per_sm_clock: float | None = Field(
        None, gt=0, le=16384,
        description="int8 operations per SM per clock the engine's quantised matmul kernels (llama.cpp MMQ) "
        "reach on a prompt on NVIDIA GPUs with int8 mma (Turing on): they are bound by instruction issue, not "
        "by the tensor cores; None: prefill_quant_int8_efficiency, else the fp16 GEMM rate",
    )
    prefill_float_share: float | None = Field(
        None, gt=0, le=1,
        description="fraction of an NVIDIA GPU's fp16-accumulate tensor peak the engine's F16 prompt GEMMs reach on "
        "CUDA (llama.cpp: cuBLAS with CUBLAS_COMPUTE_16F, n_ubatch rows at a time); None: the plan's matmul "
        "efficiency x the fp16 peak (core/inference/backend.py)",
    )
    prefill_float_share_by_gpu: tuple[tuple[str, str, float], ...] = Field(
        (), description="(back-end, GPU catalog id pattern, share) rows that replace prefill_float_share where a GPU "
        "was measured apart (llama.cpp's cuBLAS F16 GEMMs on an A100); the first matching row wins",
    )
    prefill_quant_mmq_max_tokens: int | None = Field(
        None, ge=1, le=1_000_000,
        description="largest prompt micro-batch (tokens) the engine multiplies by block-quantised weights with its "
        "quantised kernels (MMQ) on NVIDIA GPUs with fp16 tensor cores; a larger one is dequantised to F16 and run "
        "through the F16 cuBLAS GEMM (llama.cpp before PR #8075, 2024-06: MMQ_MAX_BATCH_SIZE = 32); None: MMQ "
        "at every size (core/inference/backend.py)",
    )
    flash_attention: bool = Field(
        True, description="attention runs fused (flash attention), with no score matrix in memory; False: the "
        "engine keeps one micro-batch's f32 scores against the whole cache in its compute buffer (llama.cpp "
        "builds of 2024, Ollama by default: core/inference/score_buffer.py)",
    )
    prefill_score_bytes: float | None = Field(
        None, gt=0, le=64,
        description="bytes moved per attention score element (query x cached key x head) on a CUDA prompt when "
        "the engine runs attention without flash attention, every micro-batch against the whole cache so far "
        "(llama.cpp builds of 2024: f32 scores written, soft-maxed in place, converted to F16 for the KQV GEMM); "
        "None: fused attention, no score matrix in memory (core/inference/latency.py)",
    )
    prefill_quant_share: tuple[tuple[str, str, float], ...] = Field(
        (), description="(back-end, GPU catalog id pattern, fraction of the GPU's dense fp16 matrix peak) the "
        "engine's quantised-weight prompt kernels reach there, measured; the first matching row wins; a GPU no "
        "row matches keeps prefill_quant_int8_efficiency (core/inference/backend.py)",
    )
    prefill_metal_share: tuple[tuple[str, float], ...] = Field(
        (), description="(GGUF type or preset pattern, fraction of the Apple GPU's fp16 peak) the engine's Metal "
        "prompt kernels reach with weights of that type (llama.cpp kernel_mul_mm: the weights' tiles are "
        "dequantised to half in threadgroup memory, so the share falls with the dequantisation work); F16 "
        "weights (an fp16 plan too) match 'F16'; the first matching row wins; no row: the plan's matmul "
        "efficiency (core/inference/backend.py)",
    )
    prefill_metal_coissued: tuple[tuple[str, float], ...] = Field(
        (), description="(GGUF type or preset pattern, instructions) per thread and 32-wide K step that llama.cpp's "
        "Metal kernel_mul_mm spends dequantising its 16 weights in integer, FP16 and conversion instructions, "
        "counted from the type's dequantize_* function; Apple GPUs from the M3 on issue them beside the matrix "
        "multiply's FP32 FMAs, so they leave the prefill_metal_share cost there; the first matching row wins; no "
        "row: the share holds on every generation (core/inference/metal_dequant.py)",
    )
    moe_prompt_tiles: tuple[tuple[str, str, int, int, int], ...] = Field(
        (), description="(back-end, GPU catalog id pattern, smallest micro-batch in tokens, weight rows, token "
        "columns) of the tile the engine's MoE prompt kernel (mul_mat_id by expert) computes per expert from that "
        "micro-batch on: each expert pays whole tiles of its routed rows; a micro-batch below every row of its "
        "back-end and GPU runs the mat-vec by id, each token's routed experts read once per token; the rows of "
        "the first matching pattern apply; none: the routed share is priced as a dense GEMM (CUDA MMQ has its own "
        "rule; core/inference/moe_tiles.py)",
    )
    prefill_quant_factor_apple: Curve = Field(
        (), description="(Apple GPU generation: 1 for M1, 2 for M2 ..., fraction of the fp16 GEMM rate) the "
        "engine's quantised matmul reaches on a prompt with its own quantised weights (MLX qmm dequantises in "
        "the kernel); a generation takes the last point at or below it; (): the fp16 GEMM rate",
    )
    weight_formats: tuple[str, ...] = Field(
        (), description="kinds of inference.weight_format the engine loads (float, fp8, int8, gptq, awq, bnb, mlx, "
        "gguf, mxfp4: see core.quant.WeightFormat.kind); (): any"
    )
    describes: str = Field("", description="what run this profile describes, and what differs from it")
    source: str = ""

    @field_validator("kv_dtypes")
    @classmethod
    def _known_kv_dtypes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        """Each a cache type the estimate can size (core.kvcache.kv_element_bytes names the known ones)."""
        from llmplan.core.kvcache import kv_element_bytes

        for t in v:
            kv_element_bytes(t)
        return tuple(t.strip().lower() for t in v)

    @field_validator("weight_formats", "cuda_graph_off_formats")
    @classmethod
    def _kinds(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [k for k in v if k not in WEIGHT_FORMAT_KINDS]
        if unknown:
            raise ValueError(f"unknown weight format kind {', '.join(unknown)}; use {', '.join(WEIGHT_FORMAT_KINDS)}")
        return v

    @field_validator("default_format")
    @classmethod
    def _usual_format(cls, v: str) -> str:
        from llmplan.core.quant import parse_weight_format
        from llmplan.errors import InputError

        if v:
            try:
                parse_weight_format(v.lower())
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return v.lower()

    @field_validator("backend_context_bytes")
    @classmethod
    def _backends(cls, v: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        known = ("cuda", "rocm", "vulkan", "sycl", "metal")  # core.inference.backend.BACKENDS
        bad = [name for name, size in v if name not in known or size < 0]
        if bad or len({name for name, _ in v}) != len(v):
            raise ValueError(f"give each back-end once ({', '.join(known)}) with bytes >= 0"
                             + (f"; not {', '.join(map(str, bad))}" if bad else ""))
        return v

    @field_validator("prefill_quant_share", "decode_bandwidth_efficiency_by_gpu", "prefill_float_share_by_gpu")
    @classmethod
    def _shares(cls, v: tuple[tuple[str, str, float], ...], info: ValidationInfo) -> tuple[tuple[str, str, float], ...]:
        known = ("cuda", "rocm", "vulkan", "sycl", "metal")
        for name, pattern, share in v:
            if name not in known or not pattern or not 0 < share <= 1:
                raise ValueError(f"{info.field_name}: each row is [back-end ({', '.join(known)}), GPU id pattern, "
                                 f"share in (0, 1]]; not [{name!r}, {pattern!r}, {share}]")
        return v

    @field_validator("moe_prompt_tiles")
    @classmethod
    def _moe_tiles(cls, v: tuple[tuple[str, str, int, int, int], ...]) -> tuple[tuple[str, str, int, int, int], ...]:
        known = ("cuda", "rocm", "vulkan", "sycl", "metal")
        for name, pattern, tokens, rows, cols in v:
            if name not in known or not pattern or not 1 <= tokens <= 65536 or not 1 <= rows <= 1024 \
                    or not 1 <= cols <= 1024:
                raise ValueError(f"moe_prompt_tiles: each row is [back-end ({', '.join(known)}), GPU id pattern, "
                                 f"micro-batch tokens 1-65536, weight rows 1-1024, token columns 1-1024]; not "
                                 f"[{name!r}, {pattern!r}, {tokens}, {rows}, {cols}]")
        return v

    @field_validator("prefill_metal_share")
    @classmethod
    def _metal_shares(cls, v: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        for pattern, share in v:
            if not pattern or not 0 < share <= 1:
                raise ValueError(f"prefill_metal_share: each row is [GGUF type pattern, share in (0, 1]]; not "
                                 f"[{pattern!r}, {share}]")
        return v

    @field_validator("prefill_metal_coissued")
    @classmethod
    def _metal_coissued(cls, v: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        for pattern, ops in v:
            if not pattern or not 0 <= ops < 512:
                raise ValueError(f"prefill_metal_coissued: each row is [GGUF type pattern, instructions per 16 "
                                 f"weights in [0, 512)]; not [{pattern!r}, {ops}]")
        return v

    @field_validator("decode_kernels")
    @classmethod
    def _decode_kernels(cls, v: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, int, int], ...]:
        for part, other, gemms in v:
            if part not in DECODE_PARTS or not 0 <= other <= 200 or not 0 <= gemms <= 50:
                raise ValueError(f"decode_kernels: each row is [part in {', '.join(DECODE_PARTS)}, kernels 0-200, "
                                 f"GEMMs 0-50]; not [{part!r}, {other}, {gemms}]")
        return v

    @field_validator("cuda_graph_max_tokens")
    @classmethod
    def _graph_rows(cls, v: tuple[tuple[str, int, int, int], ...]) -> tuple[tuple[str, int, int, int], ...]:
        for pattern, mib, tp, tokens in v:
            if not pattern or mib < 0 or not 1 <= tp <= 64 or not 0 <= tokens <= 65536:
                raise ValueError(f"cuda_graph_max_tokens: each row is [GPU id pattern, MiB >= 0, TP 1-64, tokens "
                                 f"0-65536]; not [{pattern!r}, {mib}, {tp}, {tokens}]")
        return v

    @field_validator("allreduce_small")
    @classmethod
    def _allreduce_small(cls, v: tuple[tuple[int, float, float], ...]) -> tuple[tuple[int, float, float], ...]:
        for tp, size, seconds in v:
            if not 2 <= tp <= 64 or size <= 0 or not 0 < seconds < 0.01:
                raise ValueError(f"allreduce_small: each row is [TP size 2-64, bytes > 0, seconds in (0, 0.01)]; "
                                 f"not [{tp}, {size}, {seconds}]")
        return v

    @field_validator("gemm_efficiency", "attention_efficiency", "prefill_quant_factor_apple")
    @classmethod
    def _curve(cls, v: Curve) -> Curve:
        sizes = [p[0] for p in v]
        if any(not 0 < f <= 1 for _, f in v) or any(s <= 0 for s in sizes) or sizes != sorted(set(sizes)):
            raise ValueError("give (size, fraction) points with sizes increasing and fractions in (0, 1]")
        return v

    def decode_floor_per_layer(self, apple: bool, moe_share: float = 0.0) -> float:
        """GPU seconds a decoder layer adds to every decode step whatever its bytes.

        On Apple the measured Metal figure; elsewhere kernels per layer x the per-kernel cost in a CUDA graph when
        the profile gives both (llama.cpp, counted from its batch-1 code), else the flat ``decode_layer_s``.
        ``moe_share``: the fraction of the layers whose feed-forward is routed experts; where the profile counts an
        MoE layer's kernels apart (``decode_kernels_per_moe_layer``) the mean over the layers is returned.
        """
        if apple and self.decode_layer_s_apple is not None:
            return self.decode_layer_s_apple
        if self.decode_kernels_per_layer is not None and self.decode_kernel_s is not None:
            kernels = float(self.decode_kernels_per_layer)
            if self.decode_kernels_per_moe_layer is not None:
                kernels += moe_share * (self.decode_kernels_per_moe_layer - self.decode_kernels_per_layer)
            return kernels * self.decode_kernel_s
        return self.decode_layer_s
