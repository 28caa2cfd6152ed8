"""Explained numbers: every figure the engine reports carries its own derivation.

A ``Figure`` is a value plus the formula that produced it, the inputs it used, the
assumptions behind it and the published source. The GUI's tooltips and "Explain"
panel, the CLI's ``--explain`` output and the accuracy report all read these; nothing
is hand-written twice (DESIGN.md §1 rule 4).

Units are SI base units inside the core: bytes, FLOP, seconds, bytes/s, FLOP/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from llmplan.core.input_units import input_unit

# Citations used across the engine. Keys are short and stable; the GUI's Help page
# lists them all, so a source is written once here and referenced by key elsewhere.
SOURCES: Mapping[str, str] = MappingProxyType(
    {
        "batch-published": "Published pre-training batches by model size: Brown et al. 2020 (GPT-3) Table 2.1, Touvron et al. 2023 (Llama 2) §2.2 and §3.1, Dubey et al. 2024 (Llama 3) §3.4.1 and Table 4, DeepSeek-AI 2024 (DeepSeek-V3) §4.2",
        "checkpoint": "Tensor shapes of the Hugging Face transformers implementation of the model family",
        "zero": "Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, SC 2020, §3 and §5",
        "zero-offload": "Ren et al., ZeRO-Offload: Democratizing Billion-Scale Model Training, USENIX ATC 2021",
        "torchao-offload": "pytorch/ao torchao/optim/cpu_offload.py at 36027d8 (2026-08-21): CPUOffloadOptimizer's backward hook copies each gradient to the host on a side stream; offload_gradients frees it with record_stream once copied",
        "megatron-hybrid-offload": "NVIDIA/Megatron-LM megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py at d98e8a6 (2026-08-22): HybridDeviceOptimizer with overlap_cpu_optimizer_d2h_h2d, one CPU optimizer per parameter, copies on D2H and H2D streams",
        "zero-infinity": "Rajbhandari et al., ZeRO-Infinity: Breaking the GPU Memory Wall, SC 2021",
        "korthikanti": "Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models, MLSys 2023 (arXiv:2205.05198), §4",
        "megatron-2021": "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, SC 2021 (arXiv:2104.04473)",
        "kaplan": "Kaplan et al., Scaling Laws for Neural Language Models, 2020 (arXiv:2001.08361), §2.1",
        "chinchilla": "Hoffmann et al., Training Compute-Optimal Large Language Models, 2022 (arXiv:2203.15556), App. F",
        "palm-mfu": "Chowdhery et al., PaLM: Scaling Language Modeling with Pathways, 2022 (arXiv:2204.02311), App. B",
        "vllm": "Kwon et al., Efficient Memory Management for Large Language Model Serving with PagedAttention, SOSP 2023",
        "deepseek-v2": "DeepSeek-AI, DeepSeek-V2 Technical Report, 2024 (arXiv:2405.04434), §2.1 (MLA)",
        "deepseek-v3": "DeepSeek-AI, DeepSeek-V3 Technical Report, 2024 (arXiv:2412.19437)",
        "nccl": "NVIDIA NCCL performance notes (nccl-tests PERFORMANCE.md): ring all-reduce moves 2(n-1)/n, all-gather and reduce-scatter (n-1)/n of the buffer per rank",
        "llama.cpp": "llama.cpp ggml-quants / llama_model_quantize: block layouts and per-tensor type choice of each GGUF type",
        "llama.cpp-graph": "llama.cpp llm_build_kqv and the worst-case compute-buffer reservation (ggml-alloc, ggml_backend_sched), 2024 builds without flash attention; ggml-cuda ggml_cuda_mul_mat_batched_cublas (F16 pool copies)",
        "llama.cpp-row-split": "llama.cpp --split-mode row as its 2025 code runs it: src/llama-model.cpp make_gpu_buft_list and load_tensors; ggml-cuda.cu split buffer (get_row_split, MATRIX_ROW_PADDING) and ggml_cuda_op_mul_mat (llmplan.core.inference.row_split)",
        "mlx-quant-kv": "ml-explore/mlx-lm models/base.py quantized_scaled_dot_product_attention and models/cache.py QuantizedKVCache (d78bf58e, 2026-08-22); peaks measured in unslothai/unsloth-zoo PR #1151 (2026-09)",
        "hf-quant-kv": "huggingface/transformers cache_utils.py QuantizedLayer / QuantoQuantizedLayer / HQQQuantizedLayer (004999d9): dequantise + torch.cat every decode step, residual_length 128, q_group_size 64",
        "lora": "Hu et al., LoRA: Low-Rank Adaptation of Large Language Models, ICLR 2022",
        "qlora": "Dettmers et al., QLoRA: Efficient Finetuning of Quantized LLMs, NeurIPS 2023, §3",
        "flash-attention": "Dao et al., FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness, NeurIPS 2022",
        "roofline": "Williams, Waterman and Patterson, Roofline: An Insightful Visual Performance Model, CACM 2009",
        "young-daly": "Young 1974 and Daly 2006: optimum checkpoint interval ≈ sqrt(2·δ·M)",
        "adam8bit": "Dettmers et al., 8-bit Optimizers via Block-wise Quantization, ICLR 2022 (bitsandbytes: blocks of 2048 with an fp32 absmax)",
        "adafactor": "Shazeer and Stern, Adafactor: Adaptive Learning Rates with Sublinear Memory Cost, ICML 2018, §3 (factored second moment)",
        "lion": "Chen et al., Symbolic Discovery of Optimization Algorithms (Lion), NeurIPS 2023: one momentum buffer",
        "muon": "Jordan et al., Muon: an optimizer for hidden layers (2024); Liu et al., Muon is Scalable for LLM Training (arXiv:2502.16982): momentum for matrices, AdamW for the rest",
        "transformer-engine": "NVIDIA Transformer Engine documentation: fp8 GEMMs with cached fp8 weight copies and bf16/fp32 master weights",
        "megatron-memory": "NVIDIA Megatron-LM, megatron/training/theoretical_memory_usage.py (weights 18 B/param, 6 + 12/dp with the distributed optimizer)",
        "hf-eager": "Hugging Face transformers modeling code (modeling_llama.py: LlamaRMSNorm, apply_rotary_pos_emb, LlamaMLP; loss_utils.ForCausalLMLoss), PEFT LoRA layers and PyTorch autograd/autocast, read op by op; checked against peaks measured on an H100 SXM 80GB, torch 2.11 / transformers 5.17, 2026-11-24",
        "framework-switches": "Fine-tuning framework switches read from each framework's code: torchtune (optimizer_in_bwd, OffloadActivations, LinearCrossEntropyLoss, apply_lora_to_output), Liger-Kernel (RMSNorm, SwiGLU, RoPE, fused linear cross-entropy), bitsandbytes paged optimizers (cudaMallocManaged), PEFT ModulesToSaveWrapper, unsloth offloaded gradient checkpointing (llmplan.core.training.switches)",
        "microbench-h100": "Kernel microbenchmarks on an H100 SXM 80GB HBM3, torch 2.11 / CUDA 13.0, 2026-11-24: bf16 GEMM sweep by shape, e4m3 fp8 square GEMMs, SDPA flash attention by length and head size, 1 GiB copy, fp32 cross-entropy, fused AdamW, one-element kernel launch (docs/training.md, 'Step time')",
        "caching-allocator": "PyTorch's CUDA caching allocator (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp, commit 001074d: per-stream block pools, record_stream frees deferred to the recorded stream's event, 512 B / 2 MiB / 20 MiB segment rules) with the gathering framework's code: torch FSDP1 _limiter_utils.py and _flat_param.py (limit_all_gathers, two all-gathers in flight), DeepSpeed v0.12.3 (commit 6ea44d0) partitioned_param_coordinator.py and partition_parameters.py (llmplan.core.training.allocator_reserve)",
        "grad-clip": "Gradient clipping as the frameworks run it: torch.nn.utils.clip_grad_norm_ (pytorch/pytorch torch/nn/utils/clip_grad.py at 01a57d8, _foreach_norm then _foreach_mul_; multi-tensor launch limits from aten/src/ATen/native/cuda/MultiTensorApply.cuh), Megatron-Core clip_grad_norm_fp32 (NVIDIA/Megatron-LM megatron/core/optimizer/clip_grads.py at 0293807), DeepSpeed ZeRO get_grad_norm_direct and unscale_and_clip_grads (microsoft/DeepSpeed runtime/zero/stage_1_and_2.py at 022f223) (llmplan.core.training.grad_clip)",
        "assumption": "llmplan modelling assumption (see README, 'What the engine does not model')",
    }
)


_NO_INPUTS: Mapping[str, object] = MappingProxyType({})
_new_tuple = tuple.__new__  # Figure.of builds the tuple directly, skipping NamedTuple's Python-level __new__


class Figure(NamedTuple):
    """One reported number with its derivation.

    ``unit`` is one of the core's SI units ("B", "FLOP", "s", "B/s", "FLOP/s", "params",
    "tokens/s", "USD", "J", "W", "1" for ratios). ``source`` is a key of ``SOURCES``.

    An immutable named tuple rather than a frozen dataclass: an estimate builds a few dozen
    figures, and a tuple is built in C about three times faster, which keeps one training
    estimate under 0.2 ms (benchmarks/bench_training.py). Build one with ``Figure.of`` so the
    inputs are copied into a read-only mapping.
    """

    value: float
    unit: str
    formula: str = ""
    inputs: Mapping[str, object] = _NO_INPUTS
    source: str = ""
    assumptions: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        value: float,
        unit: str,
        formula: str = "",
        inputs: Mapping[str, object] | None = None,
        source: str = "",
        assumptions: tuple[str, ...] = (),
    ) -> Figure:
        frozen = MappingProxyType(dict(inputs)) if inputs else _NO_INPUTS
        return _new_tuple(cls, (float(value), unit, formula, frozen, source, assumptions))

    @classmethod
    def own(cls, value: float, unit: str, formula: str, inputs: dict[str, object], source: str = "",
            assumptions: tuple[str, ...] = ()) -> Figure:
        """``of`` for an ``inputs`` dict made for this call alone (a literal at the call site): the figure
        wraps that dict in its read-only view instead of copying it first. The result is the same as
        ``of``'s; the training estimate builds about 30 figures, and the copies were a measurable part of
        its budget (benchmarks/bench_training.py)."""
        return _new_tuple(cls, (float(value), unit, formula, MappingProxyType(inputs) if inputs else _NO_INPUTS,
                                source, assumptions))

    def citation(self) -> str:
        """The full text of the source, or '' when the figure has none."""
        return SOURCES.get(self.source, self.source)

    def __float__(self) -> float:
        return self.value

    def describe(self) -> str:
        """A plain-text explanation: formula, inputs, assumptions and source, one per line. Each input prints in
        its unit at a readable scale ("capacity = 23.99 GiB", "bandwidth = 2,680.0 GB/s"; ``core.input_units``),
        so the app's tooltips and the exports read the same text."""
        lines = [f"{self.formula}" if self.formula else ""]
        if self.inputs:
            lines.append("inputs: " + ", ".join(f"{k} = {_fmt(k, v, self.unit)}" for k, v in self.inputs.items()))
        lines.extend(f"assumes: {a}" for a in self.assumptions)
        if self.source:
            lines.append(f"source: {self.citation()}")
        return "\n".join(line for line in lines if line)


_quantity = None  # core.present.quantity, bound on first use (present imports this module)


def _fmt(name: str, v: object, figure_unit: str) -> str:
    """An input's value with its unit (``core.input_units``, ``core.present.quantity``); text as it is."""
    global _quantity
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if _quantity is None:
        from llmplan.core.present import quantity

        _quantity = quantity
    return _quantity(float(v), input_unit(name, figure_unit))


def zero(unit: str, why: str) -> Figure:
    """A figure that is zero for a stated reason (e.g. no gradients in inference)."""
    return Figure.of(0.0, unit, formula=f"0 ({why})")


def total(parts: Mapping[str, Figure], unit: str, what: str) -> Figure:
    """Sum of named figures, explained as such."""
    value = sum(p.value for p in parts.values())
    return Figure.own(value, unit, f"{what} = " + " + ".join(parts), {k: p.value for k, p in parts.items()})
