"""The operations of one training step on one GPU, after the layout's split.

One list serves time and memory: every GEMM with its (m, n, k) on this GPU and whether its
weight is trained or NF4-quantised; the elementwise kernels with the bytes they move and how many
launches they take; flash attention's FLOPs; and (for eager modeling code) the bytes the
autograd graph keeps for the backward. ``op_time`` prices the list, ``eager_memory`` sums what
it keeps.

Two kernel styles (``FrameworkProfile.kernels``):
- fused (Megatron-Core, Transformer Engine): one kernel per norm, rotary, SwiGLU and residual
  add, each reading and writing its tensor once; QKV and gate/up as fused GEMMs where the profile says so
  (``fused_projections``: Megatron-Core, MPT; torchtitan keeps wq, wk, wv, w1 and w3 apart).
- eager (Hugging Face transformers' modeling code, read op by op): RMSNorm upcasts to fp32 and
  runs pow, mean, add, rsqrt, mul and the weight mul as separate kernels; rotary is
  ``q·cos + rotate_half(q)·sin`` (slice, neg, cat, two muls, add); the MLP is ``act(gate) · up``;
  under autocast every linear casts its fp32 input to bf16 itself, and PEFT's LoRA adds dropout,
  two small GEMMs, a scale and an add to each adapted module (a fused q/k/v once). Per token and layer, for a
  residual stream of x bytes (4 under AMP or QLoRA's fp32 stream, 2 in pure 16-bit training):
  the bytes below are the reads and writes of those kernels. torchtitan's Llama modules run uncompiled
  (``FrameworkProfile.eager_modules``) are the same list in their bf16 stream (FSDP2's mixed precision, no
  autocast), with their complex-multiply rotary and ``repeat_kv`` copies (``titan_eager``).
The backward of an elementwise kernel reads the gradient and the saved inputs and writes the input
gradients; each op states how many times its forward's bytes that is (``Elementwise.backward``), from
what its autograd formula reads and writes: a cast, a dropout, a scale or a rotary multiply by a
constant moves the gradient once (1×); a residual add passes the gradient through (0×, or a cast of it
to the branch's dtype); SiLU·up reads the gradient and three saved tensors and writes two gradients
(1.6×); a norm's chain of pow, mean, rsqrt and muls about twice its forward (2×). Launches follow the
same factor, at least one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from llmplan.core.framework_profile import FrameworkProfile, kbit_upcast, transformers_modules_eager
from llmplan.core.lora_modules import adapted_modules, expert_adapters, lora_modules
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown, TensorGroup
from llmplan.core.training.autograd_kernels import amp_rotary, fork_sums, rotate_half_backward, sdpa_gqa_sums
from llmplan.core.training.comms import per_micro_batch
from llmplan.core.training.elementwise import Elementwise
from llmplan.core.training.fp8_casts import Fp8Casts, block_casts
from llmplan.core.training.kernel_rates import EW_NORM, EW_POINTWISE
from llmplan.core.training.layout import Layout
from llmplan.core.training.lora import (
    dequant_bytes_per_weight,
    merged_expert_bytes,
    nf4_dequant_bytes,
    nf4_dequant_launches,
)
from llmplan.core.workload import TrainingSettings


@dataclass(frozen=True, slots=True)
class Gemm:
    name: str
    m: float  # rows (tokens through it)
    n: float  # output width on this GPU
    k: float  # input width on this GPU
    count: float  # per (average) layer
    trainable: bool  # the backward computes its weight gradient
    quantised: bool = False  # NF4 base weight, dequantised to bf16 before each use (QLoRA)
    fp8: bool = False  # runs in fp8 (training.precision = fp8: the block's linears, not adapters or routers)
    split: str = ""  # tensor-parallel split of the weight ("column", "row"; ``TensorGroup.tp_split``)
    group: float = 1.0  # GEMMs one call runs (a mixture of experts' local experts run grouped: ``expert_grouping``)
    fixed: float = 1.0  # fixed GEMM costs that call pays (``expert_grouping``)


@dataclass(frozen=True, slots=True)
class LayerOps:
    """One average transformer block, one micro-batch, on one GPU."""

    gemms: tuple[Gemm, ...]
    elementwise: tuple[Elementwise, ...]
    attention_flops: float  # flash-attention forward FLOPs, causal (2·b·heads·s·s_kv·(d_qk+d_v)/2 ·2)
    attention_seq: float  # per-GPU query length, for the efficiency lookup
    head_dim: float
    flash: bool
    scores_bytes: float  # without flash: bytes of the s×s scores the softmax path moves (forward)
    saved: float  # eager: bytes the autograd graph keeps for the backward
    cast_params: float  # fp32 weights autocast copies to 16 bits per forward (params_are_master)
    dequant_params: float  # NF4 weights dequantised per use
    residual_bytes: float  # x: bytes per element of the residual stream
    dequant_bytes: float  # bytes moved per quantised weight dequantised (training.quant_base)
    dequant_kernels: float  # launches per dequantisation (NF4: lora.nf4_dequant_launches; other bases 2)
    fp8_casts: Fp8Casts | None  # fp8 training: the casts around the fp8 matmuls (``fp8_casts``)
    # FSDP with fp32 parameters: n, each weight gather casts its local 1/n of ``cast_params`` (``fsdp_cast_shard``);
    # 0: autocast casts all of them every forward
    cast_shard: int = 0
    cast_gathers: int = 1  # FSDP: gathers per micro-batch, each with its cast (2 FULL_SHARD, 1 SHARD_GRAD_OP)
    sliding_flops: float = 0.0  # the sliding-window layers' share of ``attention_flops`` (their window's keys)
    window: float = 0.0  # keys a sliding layer's query sees (``kernel_rates.window_share``)
    square_flops: float = 0.0  # without flash: both matmuls over every layer's whole s×s square (a window only masks)


@dataclass(frozen=True, slots=True)
class HeadOps:
    gemm: Gemm
    elementwise: tuple[Elementwise, ...]
    logits: float  # logit elements per micro-batch on this GPU (tokens × vocab / tp)
    cast_params: float
    extra: tuple[Gemm, ...] = ()  # LoRA on the head: its two rank-r GEMMs
    loss_bytes: float = 0.0  # bytes per logit the loss kernels move (0: the measured fp32 cross-entropy's)
    cast_shard: int = 0  # as ``LayerOps.cast_shard``
    cast_gathers: int = 1  # as ``LayerOps.cast_gathers``


def residual_bytes(tr: TrainingSettings, prof: FrameworkProfile) -> float:
    """Bytes per element of the residual stream: fp32 under AMP with fp32 parameters (the embedding
    output is fp32 and every residual add keeps it so) and in QLoRA (prepare_model_for_kbit_training
    casts the embeddings and norms to fp32, except on a GPTQ or a sharded base: ``kbit_upcast``); the training dtype
    otherwise."""
    if tr.precision == "fp32":
        return 4.0
    if transformers_modules_eager(prof) and (
            kbit_upcast(tr.method, tr.quant_base, prof, tr.zero_stage)
            or (tr.method == "full" and prof.params_are_master and tr.regime == "amp")):
        return 4.0
    return 2.0


def projection_bytes(tr: TrainingSettings, prof: FrameworkProfile) -> float:
    """Bytes per element of the projections' outputs in eager code: bf16 under autocast, but fp32 in QLoRA,
    whose bitsandbytes Linear4bit casts its output back to its input's dtype (fp32 after
    prepare_model_for_kbit_training), so rotary, the MLP's activation and the LoRA adds run in fp32. A
    framework that keeps the stream 16-bit (no kbit upcast: torchtune, unsloth, LLaMA-Factory) stays at 2."""
    return 4.0 if tr.method == "qlora" and residual_bytes(tr, prof) == 4.0 else 2.0


def _tokens(lay: Layout) -> float:
    return lay.micro_batch * lay.seq_len / lay.cp


# projections that read the same input and that a fused-projection framework runs as one GEMM
_FUSED = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "gate_proj": "gate_up_proj",
          "up_proj": "gate_up_proj"}


def fuse_projections(gemms: tuple[Gemm, ...]) -> tuple[Gemm, ...]:
    """Merge q, k, v into one GEMM and gate, up into one (``FrameworkProfile.fused_projections``): same tokens and
    input width, the output widths added (Megatron-Core's linear_qkv is (q + 2·kv) wide, its gated linear_fc1
    2·ffn). A quantised base or LoRA adapter stays apart, and so does any pair whose shapes differ."""
    out: list[Gemm] = []
    at: dict[str, int] = {}
    for g in gemms:
        prefix, _, leaf = g.name.rpartition(".")
        fused = _FUSED.get(leaf)
        key = f"{prefix}.{fused}"
        if fused is None or g.quantised:
            out.append(g)
        elif key in at and _same_input(out[at[key]], g):
            out[at[key]] = replace(out[at[key]], n=out[at[key]].n + g.n)
        else:
            at[key] = len(out)
            out.append(replace(g, name=key))
    return tuple(out)


def _same_input(a: Gemm, b: Gemm) -> bool:
    return ((a.m, a.k, a.count, a.trainable, a.fp8, a.split, a.group, a.fixed)
            == (b.m, b.k, b.count, b.trainable, b.fp8, b.split, b.group, b.fixed))


# Transformer Engine's compute streams for a multi-GEMM call (transformer_engine/common/util/multi_stream.cpp,
# get_num_compute_streams, NVIDIA/TransformerEngine at d0067d0)
TE_COMPUTE_STREAMS = 4


def expert_grouping(m: ModelSpec, lay: Layout, style: str) -> tuple[float, float]:
    """(GEMMs per call, fixed GEMM costs per call) of one projection of the experts this GPU holds
    (``FrameworkProfile.expert_gemms``; the local experts get equal rows, routing being balanced):
    - separate: (1, 1), each local expert's GEMM is its own call with its own fixed cost;
    - multi_stream: Megatron-Core's TEGroupedMLP (``--moe-grouped-gemm``; megatron/core/transformer/moe/experts.py,
      NVIDIA/Megatron-LM at d98e8a6) calls Transformer Engine's GroupedLinear once per projection, whose default
      path (``nvte_multi_tensor_gemm`` → ``multi_stream_cublas_gemm``, transformer_engine/common/gemm/cublaslt_gemm.cu
      at d0067d0; the CUTLASS grouped kernel only with NVTE_USE_CUTLASS_GROUPED_GEMM=1 on Hopper) issues one cuBLAS
      GEMM per expert round-robin on 4 streams: one host call, and the fixed costs of the GEMMs on different
      streams overlap, so ceil(local / 4) of them are paid;
    - grouped: one grouped kernel over all local experts (torch._grouped_mm in torchtitan's GroupedExperts,
      ``MoEArgs.use_grouped_mm = True``, pytorch/torchtitan torchtitan/models/moe/moe.py at 003edbe): one call, one
      fixed cost.
    The FLOPs and bytes are every expert's (``kernel_rates.gemm_time``'s ``group``)."""
    local = m.moe.num_experts / lay.ep if m.moe else 1.0
    if style == "separate" or local <= 1:
        return 1.0, 1.0
    return local, float(math.ceil(local / TE_COMPUTE_STREAMS)) if style == "multi_stream" else 1.0


def layer_gemms(m: ModelSpec, pb: ParamBreakdown, lay: Layout, tr: TrainingSettings,
                fused: bool = False, experts: str = "separate") -> tuple[Gemm, ...]:
    """Every weight matmul of an average block on this GPU (MoE experts: the tokens routed to the
    experts this GPU holds), plus the LoRA adapters' two rank-r GEMMs per adapted module (``core.lora_modules``:
    one pair on a fused module's whole width, after its last projection); ``fused``: the profile's
    ``fused_projections`` (``fuse_projections``); ``experts``: its ``expert_gemms`` (``expert_grouping``).
    Routed experts adapted as stacked parameters (``lora_modules.expert_adapters``: PEFT's ``ParamWrapper``) run
    no adapter GEMM per token: their matmuls use W + s·B·A, rebuilt for every local expert each forward by one
    batched GEMM (``<stack>.lora_merge``: (out × r)·(r × in) per expert, whose backward gives the gradients of B
    and A), and compute the full weight gradient of that stack in their backward (``trainable``)."""
    T = _tokens(lay)
    full = tr.method == "full"
    how = expert_adapters(m, tr.lora_experts)
    adapted = {} if full else {g.name: g for g in lora_modules(pb, tr.lora_targets, how)}
    stacked = how in ("target_parameters", "peft_converted")
    unquantised = m.is_moe and how != "per_expert_modules"  # lora.unquantised_expert_share
    last = {_adapter_key(g, stacked): i for i, g in enumerate(pb.groups)} if adapted else {}
    out: list[Gemm] = []
    for i, g in enumerate(pb.groups):
        if len(g.shape) != 2 or g.place != "layer" or g.category in ("norm",):
            continue
        mm, n, k, per_layer = _gemm_dims(g, m, lay, T)
        # QLoRA: bitsandbytes quantises Linear weights; transformers 5's stacked experts stay 16-bit
        quant = tr.method == "qlora" and g.category != "router" and not (g.category == "expert" and unquantised)
        # routers: too narrow for fp8 GEMMs, kept bf16; a quantised base is dequantised to bf16 for its matmul
        fp8 = tr.precision == "fp8" and g.category != "router" and not quant
        group, fixed = expert_grouping(m, lay, experts) if g.tp_split == "expert" else (1.0, 1.0)
        module = adapted.get(_adapter_key(g, stacked))
        merged = stacked and g.category == "expert" and module is not None
        out.append(Gemm(g.name, mm, n, k, per_layer, full or merged, quant, fp8, g.tp_split, group, fixed))
        if merged and last[module.name] == i:  # the stack rebuilt once per forward, every local expert in one call
            _, n, k, per_layer = _gemm_dims(module, m, lay, T)
            local = m.moe.num_experts / lay.ep if m.moe else 1.0
            out.append(Gemm(module.name + ".lora_merge", n, k, float(tr.lora_rank), per_layer, True, group=local))
        elif module is not None and not merged and last[module.name] == i:
            mm, n, k, per_layer = _gemm_dims(module, m, lay, T)
            r = float(tr.lora_rank)
            out.append(Gemm(module.name + ".lora_A", mm, r, k, per_layer, True))
            out.append(Gemm(module.name + ".lora_B", mm, n, r, per_layer, True))
    return fuse_projections(tuple(out)) if fused else tuple(out)


def _adapter_key(g: TensorGroup, stacked: bool) -> str:
    """The name of the adapted module ``g`` belongs to (``lora_modules``): its fused module or its own, and for
    stacked routed experts their ``gate_up_proj`` (gate and up) or ``down_proj``."""
    if stacked and g.category == "expert" and not g.name.endswith("down_proj"):
        return g.name.rsplit(".", 1)[0] + ".gate_up_proj"
    return g.module or g.name


def _gemm_dims(g: TensorGroup, m: ModelSpec, lay: Layout, T: float) -> tuple[float, float, float, float]:
    """(rows, output width, input width, count per average layer) of a block weight's matmul on this GPU."""
    rows, cols = g.shape  # (out, in)
    per_layer = g.count / m.num_layers
    mm = T
    n, k = float(rows), float(cols)
    if g.tp_split == "column":
        n /= lay.tp
    elif g.tp_split == "row":
        k /= lay.tp
    elif g.tp_split == "expert" and m.moe:
        e = m.moe
        per_layer /= lay.ep
        mm = T * e.experts_per_token * lay.ep / e.num_experts
        n, k = (n / lay.tp, k) if not g.name.endswith("down_proj") else (n, k / lay.tp)
    return mm, n, k, per_layer


def _adapted_widths(m: ModelSpec, lay: Layout, tr: TrainingSettings) -> list[tuple[str, float, float]]:
    """(first projection's target name, input width, output width) on this GPU of each module of a block that LoRA
    adapts (``core.lora_modules.adapted_modules``: a fused module once, on its whole output width)."""
    if tr.method == "full":
        return []
    h, q, kv, inter = m.hidden_size, m.q_width / lay.tp, m.kv_width / lay.tp, m.intermediate_size / lay.tp
    widths = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h), "gate": (h, inter), "up": (h, inter),
              "down": (inter, h)}
    mods = adapted_modules(m, tr.lora_targets, expert_adapters(m, tr.lora_experts))
    return [(mod[0], widths[mod[0]][0], sum(widths[t][1] for t in mod)) for mod in mods]


def casts_weights(tr: TrainingSettings, prof: FrameworkProfile) -> bool:
    """Whether the trained weights are fp32 parameters that the forward computes with in 16 bits (autocast, or
    FSDP's mixed precision), so that a cast to 16 bits precedes their use."""
    return tr.method == "full" and prof.params_are_master and tr.regime == "amp" and tr.precision != "fp32"


def fsdp_cast_shard(tr: TrainingSettings, prof: FrameworkProfile, n: int) -> int:
    """The sharding group ``n`` where FSDP gathers fp32 parameters per micro-batch (ZeRO-3, or SHARD_GRAD_OP
    under ``fsdp_zero2``): its mixed precision casts only the local 1/n shard to ``param_dtype`` before each
    all-gather, and the gathered weights are already 16-bit (PyTorch FSDP1 ``FlatParamHandle.pre_unshard`` →
    ``_use_low_precision_shard``, a copy of the fp32 shard into ``_mp_shard``; FSDP2
    ``FSDPParam.all_gather_inputs`` → ``_to_dtype_if_needed`` on the sharded parameter). 0 elsewhere: autocast
    casts every weight in full each forward."""
    return n if casts_weights(tr, prof) and per_micro_batch(tr.zero_stage, prof) else 0


def layer_ops(m: ModelSpec, pb: ParamBreakdown, lay: Layout, tr: TrainingSettings,
              prof: FrameworkProfile, cast_shard: int = 0) -> LayerOps:
    """One average block's operations. ``cast_shard``: ``fsdp_cast_shard`` (the time model's; memory reads
    ``cast_params`` only)."""
    T = _tokens(lay)
    tp = lay.tp
    rep = tp if lay.sp else 1
    h = m.hidden_size
    q, kv = m.q_width / tp, (m.kv_width / (1 if lay.kv_replicated else tp))
    heads = m.num_heads / tp
    if m.mla:
        d_qk = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim
        d_v = m.mla.v_head_dim
    else:
        d_qk = d_v = m.head_dim
    inter = (m.moe.expert_intermediate_size * m.moe.experts_per_token if m.is_moe and m.moe
             else m.intermediate_size) / tp
    if m.is_moe and m.moe and m.moe.num_shared_experts:
        inter += m.moe.shared_intermediate_size * m.moe.num_shared_experts / tp
    x = residual_bytes(tr, prof)
    full = tr.method == "full"
    gemms = layer_gemms(m, pb, lay, tr, prof.fused_projections, prof.expert_gemms)
    window = min(lay.seq_len, m.sliding_window) if m.sliding_window else lay.seq_len
    slide = m.sliding_layer_count / m.num_layers
    per_key = 2.0 * lay.micro_batch * heads * (lay.seq_len / lay.cp) * (d_qk + d_v)  # both matmuls, per key seen
    sliding = per_key * slide * min(window, lay.seq_len / 2)
    attn_flops = per_key * (1 - slide) * lay.seq_len / 2 + sliding
    # without flash: bytes per score element of the forward. Eager (transformers): bf16 scores written, softmax
    # to fp32 (read 2, write 4), cast back (read 4, write 2), read by AV (2): 20 B (+3 with dropout: mask and
    # output). Fused (Megatron's scaled_masked_softmax): scores written and read, probabilities written and
    # read: 8 B (+5 with dropout: 1-byte mask, dropout output written and read); torch.compile fuses the eager
    # chain into such kernels.
    eager_softmax = prof.kernels == "eager" and not tr.torch_compile
    per_score = (20.0 if eager_softmax else 8.0) + ((3.0 if eager_softmax else 5.0) if tr.dropout > 0 else 0.0)
    scores = 0.0 if tr.flash_attention else per_score * lay.micro_batch * heads * (lay.seq_len / lay.cp) * lay.seq_len
    ew: list[Elementwise] = []
    fused = fused_elementwise(tr, prof)
    y = projection_bytes(tr, prof)
    # rotary runs in every block of a RoPE model only; learned positions (GPT, OPT) are added once to the
    # embedding output and ALiBi (BLOOM) is a bias inside the attention kernel (Megatron-Core GPTModel:
    # position_embedding_type "learned_absolute" builds no RotaryEmbedding; transformers' OPT and BLOOM blocks)
    rope = m.position == "rope"
    if fused:
        ew += [_fused_norms(h, rep, T),
               *([Elementwise("fused rotary", 4 * (q + kv) * T, 1, 1.0, kind=EW_POINTWISE)] if rope else []),
               Elementwise("residual adds", 2 * 6 * h / rep * T, 2, 0.0, kind=EW_POINTWISE),
               Elementwise("fused SwiGLU" if m.gated_mlp else "activation", (6 if m.gated_mlp else 4) * inter * T, 1,
                           1.6, kind=EW_POINTWISE)]
        saved = 0.0
        if prof.kernels != "fused":  # Liger, unsloth or torch.compile over eager modeling code (switches module doc)
            ew += _eager_extras(m, lay, tr, x, y, h, q, kv, inter, T, bool(tr.torch_compile) or prof.kernels == "triton",
                                not shared_lora_inputs(prof))
            saved = _eager_saved(m, lay, tr, x, q, kv, heads, inter, full, y, shared_lora_inputs(prof),
                                 fused=True) * T
    else:
        up32 = x == 2.0  # the norm's .to(float32) copies (and casts back) only when the stream is 16-bit
        norm_bytes = (6 * h if up32 else 0) + 20 * h + (6 * h if up32 else 0) + 2 * x * h
        ew += [_fused_norms(h, rep, T) if titan_eager(tr, prof) == "fused_rmsnorm" else
               Elementwise("RMSNorm (fp32 upcast, 6-8 kernels)", 2 * norm_bytes * T, 2 * (8 if up32 else 6), 2.0,
                           kind=EW_NORM),
               *([_titan_rotary(q, kv, T)] if rope and prof.eager_modules == "torchtitan" else []),
               Elementwise("attention output transpose", 4 * q * T, 1, 1.0),
               # the gradient passes the add; under AMP it is cast to the bf16 branch (read 4, write 2)
               Elementwise("residual adds", 2 * (2 * x + 2) * h * T, 2, 0.6 if x == 4.0 else 0.0,
                           kind=EW_POINTWISE),
               Elementwise("act(gate)·up" if m.gated_mlp else "activation", (5 if m.gated_mlp else 2) * y * inter * T,
                           2 if m.gated_mlp else 1, 1.6, kind=EW_POINTWISE)]
        if rope and prof.eager_modules == "transformers":
            ew += _hf_rotary(x, y, q, kv, T)
        if prof.eager_modules == "torchtitan" and kv < q and not m.mla:
            ew.append(_repeat_kv(q, kv, T))
        ew += _eager_extras(m, lay, tr, x, y, h, q, kv, inter, T, False, not shared_lora_inputs(prof))
        saved = _eager_saved(m, lay, tr, x, q, kv, heads, inter, full, y, shared_lora_inputs(prof)) * T
    if transformers_eager_sdpa(prof) and tr.flash_attention and kv < q and not m.mla:
        ew.append(sdpa_gqa_sums(q, kv, T))
    ew += moe_permutation(m, lay, rep, y, prof)
    ew += grouped_mlp_extras(m, lay, prof)
    ew += fork_sums(gemms, tr, prof, x, y, (h, q, inter), rep, T)
    cast = sum(g.n * g.k * g.count for g in gemms) if casts_weights(tr, prof) else 0.0
    dequant = sum(g.n * g.k * g.count for g in gemms if g.quantised)
    saved += gptq_saved_weights(tr, prof, dequant)
    saved += merged_expert_bytes(m, lay, tr, prof=prof)  # PEFT's rebuilt expert stack, kept by the experts' matmuls
    nf4 = tr.quant_base == "nf4"
    dq = nf4_dequant_bytes(tr.qlora_double_quant) if nf4 else dequant_bytes_per_weight(tr.quant_base, False)
    fp8 = block_casts(gemms, prof.fp8_recipe, tr.zero_stage >= 3, rep) if tr.precision == "fp8" else None
    return LayerOps(gemms, tuple(ew), attn_flops, lay.seq_len / lay.cp, float(d_qk), tr.flash_attention, scores,
                    saved, cast, dequant, x, dq, nf4_dequant_launches(tr.qlora_double_quant) if nf4 else 2.0, fp8,
                    cast_shard, 2 if tr.zero_stage == 3 else 1, sliding, float(window), per_key * lay.seq_len)


def gptq_saved_weights(tr: TrainingSettings, prof: FrameworkProfile, quantised: float) -> float:
    """Bytes a block's autograd graph keeps of its GPTQ base weights: auto-gptq's QuantLinear (AutoGPTQ v0.5.1,
    2023-11-09, qlinear_cuda_old.py: what ``dynamically_import_QuantLinear`` picks for a model without act-order
    once both exllama kernels are disabled, as PEFT trains a GPTQ model) dequantises the whole weight with torch
    ops once a call has ``kernel_switch_threshold`` (128) rows or more and multiplies with ``torch.matmul``, whose
    backward keeps that fp16 weight for the input's gradient: 2 B per quantised weight, saved as the block's
    activations are (one block under full recompute, every block without). bitsandbytes' NF4 runs its matmul
    in an autograd Function that dequantises again in the backward and keeps no weight (``MatMul4Bit``)."""
    if tr.method != "qlora" or tr.quant_base != "gptq" or prof.kernels == "fused":
        return 0.0
    return 2.0 * quantised


def dequant_transient_bytes(tr: TrainingSettings, prof: FrameworkProfile) -> float:
    """Bytes per element of the one matrix a QLoRA step dequantises at a time: bitsandbytes writes it in bf16
    (2 B); auto-gptq's torch path (``gptq_saved_weights``) unpacks the int32 words with a shift into an int32
    tensor of every element and casts that to int8 before the int32 is freed (4 + 1 B; the fp16 result, 2 B, is
    made after it, beside two int8 tensors)."""
    return 5.0 if tr.quant_base == "gptq" and prof.kernels != "fused" else 2.0


def moe_permutation(m: ModelSpec, lay: Layout, rep: float, y: float, prof: FrameworkProfile) -> list[Elementwise]:
    """The copies that route tokens to their experts and back, per average block (MoE layers' share).

    Megatron-Core's all-to-all dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
    ``MoEAlltoAllTokenDispatcher``, NVIDIA/Megatron-LM at d98e8a6): ``permute`` gathers each token once per
    routed expert into expert order (reads and writes k rows of h), ``sort_chunks_by_idxs`` re-sorts what the
    all-to-all brought in by local expert when a GPU holds more than one (k rows read and written), and on
    the way back ``sort_chunks_by_idxs`` un-sorts and ``unpermute`` sums each token's k weighted rows into
    one (reads k rows, writes one). The permutations run on this GPU's sequence shard (1/tp under sequence
    parallelism), the sorts on the tokens gathered for its experts. Per token, with b bytes per element:
    b·h·(2k + 2k·sorts + k + 1) forward; the backward runs the inverse permutations on the gradient, the
    same bytes (1×). Kernels: fused (TE's moe_permute/moe_unpermute), one per copy. Eager code
    (transformers' Mixtral-style loop, ``MixtralSparseMoeBlock.forward``) runs per local expert a gather of
    its tokens, a multiply by their routing weights and an ``index_add_`` into the zeroed output:
    b·h·(2k + 2k + 2k + 1) per token, three launches per local expert."""
    e = m.moe
    if e is None or not m.is_moe:
        return []
    share = m.moe_layer_count / m.num_layers
    T = _tokens(lay)
    h, k = float(m.hidden_size), float(e.experts_per_token)
    local = e.num_experts / lay.ep
    if prof.kernels == "eager" and prof.eager_modules == "transformers":
        per_token, kernels = y * h * (6 * k + 1), 3.0 * local
    else:
        sorts = 2.0 if local > 1 else 0.0
        per_token, kernels = y * h * ((2 * k + k + 1) / rep + 2 * k * sorts), 2.0 + sorts
    return [Elementwise("MoE token permutation", share * per_token * T, share * kernels, 1.0)]


def grouped_mlp_extras(m: ModelSpec, lay: Layout, prof: FrameworkProfile) -> list[Elementwise]:
    """Elementwise work of Megatron-Core's TEGroupedMLP (``expert_gemms = "multi_stream"``) that runs as separate
    eager PyTorch ops beside its fused activation, per average block (MoE layers' share). Read in
    megatron/core/transformer/moe/experts.py and megatron/core/fusions/fused_bias_geglu.py (NVIDIA/Megatron-LM at
    23dd639, the Megatron-Core that Megatron-Bridge c0b9a0003 / NeMo 26.02 pins); the backward ops are autograd's
    (PyTorch torch/csrc/autograd/FunctionsManual.cpp ``clamp_backward``; ``split`` backs up through ``cat``).
    Per routed row (T·k rows per GPU, balanced), bf16, I = expert intermediate width / tp, h = hidden size:

    - clamped GLU (a model with ``expert_activation_clamp``, gpt-oss's ``swiglu_limit``):
      ``weighted_bias_quick_geglu_impl`` clamps the gate half (``clamp(max=limit)``) and the linear half
      (``clamp(-limit, limit)``) and ``torch.cat``s them back before its compiled activation: 2 × (2I read + 2I
      written) + (4I + 4I) = 16·I bytes, 3 kernels. Backward: ``where(x <= limit, grad, 0)`` (a ``le`` mask, 3I;
      the ``where``, 5I), ``where((x >= -limit).logical_and_(x <= limit), grad, 0)`` (3I + 3I + 3I + 5I) and the
      ``cat`` of the two halves' gradients (8I): 30·I bytes, 9 kernels (each ``where`` fills a zero scalar first).
    - expert output biases (``expert_bias``): the second GroupedLinear returns its biases (``return_bias``) and
      ``TEGroupedMLP._apply_bias`` adds them per local expert, ``t + b · p`` (the bias times each row's routing
      probability, bf16 like the router's probabilities), then ``torch.cat``s the experts' outputs: 2h (b · p
      written) + 6h (the add) + 4h (the cat) = 12·h bytes, 2 kernels per local expert + 1. Backward (MulBackward
      of b · p; the add and the cat pass views): grad · p and its sum over the rows for the bias (2h + 2h read,
      2h written), grad · b and its sum over h for the probability (the same): 12·h bytes, 4 kernels per local
      expert. The first GroupedLinear's bias is the GEMM's epilogue (Transformer Engine GroupedLinear at
      5671fd3), free here as in the engine's GEMM price.

    Other profiles' experts are charged their own way (the fused activation, or the eager loop's ops)."""
    e = m.moe
    if e is None or not m.is_moe or prof.expert_gemms != "multi_stream" or prof.kernels != "fused":
        return []
    share = m.moe_layer_count / m.num_layers
    rows = _tokens(lay) * e.experts_per_token
    out: list[Elementwise] = []
    if e.expert_activation_clamp is not None and m.gated_mlp:
        i = e.expert_intermediate_size / lay.tp
        out.append(Elementwise("clamped GLU: clamps and cat (eager)", share * 16 * i * rows, share * 3,
                               30 / 16, share * 9))
    if e.expert_bias:
        local = e.num_experts / lay.ep
        out.append(Elementwise("expert output bias: b·p, add, cat (eager)", share * 12 * m.hidden_size * rows,
                               share * (2 * local + 1), 1.0, share * 4 * local))
    return out


def loss_kind(tr: TrainingSettings, prof: FrameworkProfile) -> str:
    """The loss in effect: the plan's, else Liger's fused linear cross-entropy when Liger is on, else the
    framework's."""
    if tr.loss != "auto":
        return tr.loss
    return "fused_linear" if tr.liger else prof.loss


def fused_elementwise(tr: TrainingSettings, prof: FrameworkProfile) -> bool:
    """Norms, rotary and the gated activation run as fused kernels: the profile's style (Megatron's fused
    kernels, unsloth's Triton kernels), Liger's kernels or torch.compile's Inductor fusion."""
    return prof.kernels != "eager" or bool(tr.liger) or bool(tr.torch_compile)


def _fused_norms(h: float, rep: float, T: float) -> Elementwise:
    """A block's two fused norms: each reads x and writes its output (2 + 2 B), the backward reads x and the
    gradient and writes one (1.5×)."""
    return Elementwise("fused norms", 2 * 4 * h / rep * T, 2, 1.5)


def titan_eager(tr: TrainingSettings, prof: FrameworkProfile) -> str:
    """The norm type of torchtitan's modules where they run uncompiled (``FrameworkProfile.eager_modules``,
    torch_compile off: "rmsnorm" or "fused_rmsnorm", ``FrameworkProfile.titan_norm``), "" otherwise: the eager
    op list prices them and their blocks keep what ``activations.eager_block_extra`` adds."""
    return prof.titan_norm if prof.eager_modules == "torchtitan" and not fused_elementwise(tr, prof) else ""


def _titan_rotary(q: float, kv: float, T: float) -> Elementwise:
    """torchtitan's ``apply_rotary_emb`` (models/llama/model.py at 9dec370a) for q and k: ``.float()`` (read 2 B,
    write 4 B), the complex multiply by ``freqs_cis`` (read 4, write 4) and ``type_as`` back (read 4, write 2):
    20 B per element as ``rotate_half``, in 3 kernels per tensor; the backward multiplies the gradient by the
    conjugate constant (1×)."""
    return Elementwise("rotary (complex multiply in fp32)", 20 * (q + kv) * T, 6, 1.0, kind=EW_POINTWISE,
                       upcast=6 / 20, backward_upcast=6 / 20)


def _hf_rotary(x: float, y: float, q: float, kv: float, T: float) -> list[Elementwise]:
    """transformers' ``apply_rotary_pos_emb`` for q and k: ``q·cos + rotate_half(q)·sin``, where ``rotate_half``
    slices, negates one half and ``cat``s: 2 + 1 + 2 + 2 + 3 element-bytes of q's dtype per element in 5 kernels
    per tensor. Backward: the two muls (2 + 2), the neg (1) and two adds of q's three gradients (3 + 3): 11 per
    element in 5 kernels, beside the slices' zero fills and copies (``autograd_kernels.rotate_half_backward``).
    Under AMP with an fp32 stream (fp32 q·cos products): ``autograd_kernels.amp_rotary``."""
    if x == 4.0 and y == 2.0:
        return [*amp_rotary(q, kv, T), rotate_half_backward(2.0, q, kv, T)]
    return [Elementwise("rotary (rotate_half)", 10 * y * (q + kv) * T, 10, 1.1, 10, kind=EW_POINTWISE),
            rotate_half_backward(y, q, kv, T)]


def transformers_eager_sdpa(prof: FrameworkProfile) -> bool:
    """Hugging Face modeling code calling SDPA (eager, Liger or compiled; not unsloth's own attention): without a
    mask it passes ``enable_gqa`` and the flash backend sums the grouped K/V gradients
    (``autograd_kernels.sdpa_gqa_sums``)."""
    return prof.kernels == "eager" and prof.eager_modules == "transformers"


def _repeat_kv(q: float, kv: float, T: float) -> Elementwise:
    """torchtitan's ``repeat_kv`` (models/llama/model.py at 9dec370a): with fewer K/V heads than query heads,
    ``expand`` then ``reshape`` copies K and V to the query heads' width before SDPA (read 2·kv, write 2·q B per
    token each); the backward sums the copies back (the same bytes, 1×)."""
    return Elementwise("repeat_kv copies of K and V", 2 * (2 * kv + 2 * q) * T, 2, 1.0)


def shared_lora_inputs(prof: FrameworkProfile) -> bool:
    """Without dropout, lora_A reads the input the block already made, one tensor shared by the projections
    that read it (torchtune's LoRALinear in the model's dtype; unsloth's fused LoRA kernels save X once per
    group). PEFT under AMP casts each projection's input to its fp32 adapter and back: a copy each."""
    return prof.kernels == "triton" or not prof.params_are_master


def _eager_extras(m: ModelSpec, lay: Layout, tr: TrainingSettings, x: float, y: float, h: float, q: float,
                  kv: float, inter: float, T: float, compiled: bool, peft_casts: bool = True) -> list[Elementwise]:
    """Eager code's kernels beyond the norms, rotary and activation: bitsandbytes' and autocast's casts and
    the LoRA adapters' pointwise work. Compiled (torch.compile, or unsloth's fused LoRA kernels), the casts
    fuse into their neighbours and each adapter's pointwise work is one kernel reading its input and writing
    the dropped copy, one adding into the output. ``peft_casts``: PEFT's fp32 adapters under AMP cast the
    input up and back; torchtune's LoRALinear (adapters in the model's dtype) runs dropout (2 + 2 B and a
    1-byte mask), the scale (2 + 2) and the add (2 + 2 + 2) on the 16-bit tensors as they are."""
    ew: list[Elementwise] = []
    if not compiled:
        if y == 4.0:  # bitsandbytes returns each 4-bit linear's output in its input's dtype: fp32 here, except
            # o_proj, whose input is SDPA's bf16 output (autocast runs SDPA in bf16) and so stays bf16
            outs = q + 2 * kv + (2 if m.gated_mlp else 1) * inter + h
            ew += [Elementwise("bitsandbytes output casts to fp32", 6 * outs * T, 6, 1.0, kind=EW_POINTWISE, upcast=1.0),
                   Elementwise("autocast casts of fp32 q, k, v for SDPA and of the down input",
                               6 * (q + 2 * kv + inter) * T, 4, 1.0, kind=EW_POINTWISE, backward_upcast=1.0)]
        if x == 4.0:  # autocast casts each linear's fp32 input to bf16 (qkv and gate/up read the norms)
            casts = 3 + (2 if m.gated_mlp else 1)
            # backward: each cast's gradient cast back up (6 B); their sum into the one fp32 input gradient is
            # autograd's (``autograd_kernels.fork_sums``)
            ew.append(Elementwise("autocast input casts", casts * 6 * h * T, casts, 1.0, casts, kind=EW_POINTWISE,
                                  backward_upcast=1.0))
    drop = 9 if (tr.lora_dropout or 0) > 0 else 0
    if peft_casts and not compiled and tr.method == "qlora" and tr.quant_base == "nf4":
        return ew + _peft_linear4bit(m, lay, tr, x, y, T)
    for _, k_in, n_out in _adapted_widths(m, lay, tr):
        if compiled and drop:
            ew.append(Elementwise("LoRA dropout, scale, add (fused)", ((x + 2) * k_in + 6 * n_out) * T, 2, 1.0,
                                  kind=EW_POINTWISE))
            continue
        if compiled:  # p = 0: nn.Identity, no dropped copy; out + scale·lora_B(...) is one kernel (2 + 2 + 2 B), its
            # backward the scale on the incoming gradient (2 + 2 B: 2/3 of the forward's bytes)
            ew.append(Elementwise("LoRA scale, add (fused)", 6 * n_out * T, 1, 2 / 3, kind=EW_POINTWISE))
            continue
        # PEFT casts a 16-bit input to the fp32 adapter dtype first (_cast_input_dtype: 2 -> 4 B), dropout
        # reads and writes fp32 (+ a 1-byte mask), autocast casts it back for lora_A (4 -> 2 B); after
        # lora_B the scale (2 + 2) and the add to the base output (2 + 2 + 2); autocast also casts A and B.
        if not peft_casts:
            ew.append(Elementwise("LoRA dropout, scale, add", ((5 if drop else 0) * k_in + 10 * n_out) * T,
                                  (1 if drop else 0) + 2, 1.0, kind=EW_POINTWISE))
            continue
        lora = ((6 if x == 2.0 else 0) + drop + 6) * k_in + (6 + 2 * y) * n_out
        kernels = (1 if x == 2.0 else 0) + (1 if drop else 0) + 1 + 2 + 2
        # the bf16 -> fp32 input cast forward (a 16-bit stream), the gradient of autocast's cast back backward
        ew.append(Elementwise("LoRA input casts, dropout, scale, add", lora * T, kernels, 1.0, kind=EW_POINTWISE,
                              upcast=(6 if x == 2.0 else 0) * k_in / lora, backward_upcast=6 * k_in / lora))
    return ew


def _peft_linear4bit(m: ModelSpec, lay: Layout, tr: TrainingSettings, x: float, y: float,
                     T: float) -> list[Elementwise]:
    """PEFT's LoRA on a bitsandbytes 4-bit base (``peft/tuners/lora/bnb.py`` ``Linear4bit.forward``), under
    autocast: the base output is cloned (``result = result.clone()``, "defensively", per its comment: read and
    write it once, no backward kernel); the input is not cast to the adapter's dtype (``requires_conversion``
    is false under autocast), so dropout runs on it as it comes (the stream's dtype for q, k, v, gate and up,
    the MLP product's for down, SDPA's bf16 output for o) and autocast casts an fp32 dropped copy to bf16 for
    lora_A; then the scale and the add into the base output, and autocast's casts of A and B."""
    p = (tr.lora_dropout or 0) > 0
    ins = {"o": 2.0, "down": y}
    lora = clone = kernels = up = 0.0
    widths = _adapted_widths(m, lay, tr)
    for t, k_in, n_out in widths:
        xin = ins.get(t, x)
        out = 2.0 if t == "o" else y  # bitsandbytes returns the output in its input's dtype
        lora += ((2 * xin + 1 if p else 0) + (6 if xin == 4.0 else 0)) * k_in + (6 + 2 * out) * n_out
        up += (6 if xin == 4.0 else 0) * k_in  # autocast's fp32 -> bf16 cast for lora_A: its gradient cast up
        clone += 2 * out * n_out
        kernels += (1 if p else 0) + (1 if xin == 4.0 else 0) + 2 + 2
    n = len(widths)
    return [Elementwise("LoRA dropout, casts, scale, add (PEFT, 4-bit base)", lora * T, kernels, 1.0, kind=EW_POINTWISE,
                        backward_upcast=up / lora if lora else 0.0),
            Elementwise("PEFT 4-bit LoRA output clone", clone * T, n, 0.0)]


def _eager_saved(m: ModelSpec, lay: Layout, tr: TrainingSettings, x: float, q: float, kv: float,
                 heads: float, inter: float, full: bool, y: float = 2.0, shared_lora: bool = False,
                 fused: bool = False) -> float:
    """Bytes per token one block keeps for the backward, tensor by tensor as PyTorch's autograd saves
    them for the eager modeling code (module doc). ``full``: every weight trained. ``fused`` (Liger,
    torch.compile): each norm keeps its input and one fp32 rstd per token, the gated activation its two
    inputs (LigerRMSNorm, LigerSiLUMulFunction save exactly these)."""
    h = m.hidden_size
    if fused:
        norms = 2 * (x * h + 4)
    else:
        norms = 2 * (4 * h + (x * h if full else 0))  # pow saves the fp32 input; the weight mul its input
    if full:  # linears save their inputs: one bf16 cast each under autocast, the shared tensor otherwise
        linear_inputs = ((3 + (2 if m.gated_mlp else 1)) * 2 * h if x == 4.0 else 2 * 2 * h) + 2 * q
        down_input = 2 * inter
    else:
        linear_inputs = down_input = 0.0
    attention = 2 * q + 4 * kv + 2 * q + 4 * heads  # SDPA keeps q, k, v, its output and the log-sum-exp
    if not tr.flash_attention:
        attention += 6 * heads * lay.seq_len  # eager softmax: fp32 probabilities and their bf16 copy per key
    # gate (SiLU input), act out and up (the mul), in the projections' dtype; fused kernels keep gate and up only
    mlp = (2 if m.gated_mlp and fused else 3 if m.gated_mlp else 1) * y * inter + down_input
    lora = 0.0
    drop = (tr.lora_dropout or 0) > 0
    if tr.method != "full" and (drop or not shared_lora):
        # dropout mask (1 B, with lora_dropout) + the bf16 input lora_A keeps, per adapted module (PEFT's cast copies)
        lora = sum((2 + (1 if drop else 0)) * k_in + 2 * tr.lora_rank for _, k_in, _ in _adapted_widths(m, lay, tr))
    elif tr.method != "full":
        lora = _undropped_lora_inputs(m, lay, tr, x) + 2 * tr.lora_rank * len(_adapted_widths(m, lay, tr))
    return norms + linear_inputs + attention + mlp + lora


def _undropped_lora_inputs(m: ModelSpec, lay: Layout, tr: TrainingSettings, x: float) -> float:
    """Bytes per token lora_A keeps as its input when there is no dropout (PEFT and torchtune use
    nn.Identity for p = 0): with a 16-bit stream, one tensor per distinct input — the attention norm's
    output for q/k/v, the attention output for o, the MLP norm's for gate/up, act·up for down — shared
    by the projections that read it; with an fp32 stream, autocast's own bf16 copy per projection."""
    widths = {t: k_in for t, k_in, _ in _adapted_widths(m, lay, tr)}
    if x == 4.0:
        return sum(2 * k_in for k_in in widths.values())
    groups = ({"q", "k", "v"}, {"o"}, {"gate", "up"}, {"down"})
    return sum(2 * widths[next(iter(g & widths.keys()))] for g in groups if g & widths.keys())


# Bytes per logit a loss's kernels move where they are read in its code (others: the measured fp32 cross-entropy's,
# kernel_rates.CE_BYTES_PER_LOGIT). fused_linear: Liger's kernel reads the bf16 logits chunk twice (online max and
# sum, then the gradient) and writes the gradient over it, 3 × 2 B (ops/cross_entropy.py). te_ce: Transformer
# Engine's parallel_cross_entropy (transformer_engine/pytorch/triton/cross_entropy.py at 5671fd3, TE 2.12), which
# Megatron-Core calls under cross_entropy_loss_fusion with cross_entropy_fusion_impl "te"
# (megatron/core/models/common/language_module/language_module.py at 23dd639): ``online_softmax_kernel`` reads
# the 16-bit logits (2 B), ``cross_entropy_kernel`` reads them again and writes the gradient in place (4 B), and
# the backward's ``element_mul_kernel`` scales it by the per-token loss gradient in place (4 B; Megatron's loss is
# per token, reduce_loss False): 10 B. chunked_ce: axolotl's chunked_cross_entropy (monkeypatch/loss/chunked.py at
# 067b021): each chunk's torch.compile'd cross-entropy reads the bf16 logits in the forward (2 B) and again in the
# backward, writing the bf16 gradient (4 B); the chunks' backward (SplitBackward) concatenates their gradients
# into the whole one (a read and a write, 4 B): 10 B; above a micro-batch of 1 the forward's reshape copies each
# chunk first (4 B more: ``head_ops``).
LOSS_BYTES = {"fused_linear": 6.0, "te_ce": 10.0, "chunked_ce": 10.0}
CHUNK_COPY_BYTES = 4.0  # chunked_ce above a micro-batch of 1: each chunk's reshape(-1, vocab) reads and writes it


def head_ops(m: ModelSpec, pb: ParamBreakdown, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile,
             x: float, cast_shard: int = 0) -> HeadOps:
    T = _tokens(lay)
    h, v = m.hidden_size, m.vocab_size
    full = tr.method == "full"
    trained = full or bool(tr.modules_to_save)
    gemm = Gemm("lm_head", T, v / lay.tp, h, 1.0, trained)
    extra: tuple[Gemm, ...] = ()
    if tr.lora_on_lm_head and not full:
        r = float(tr.lora_rank)
        extra = (Gemm("lm_head.lora_A", T, r, h, 1.0, True), Gemm("lm_head.lora_B", T, v / lay.tp, r, 1.0, True))
    ew: list[Elementwise] = []
    if not fused_elementwise(tr, prof) and titan_eager(tr, prof) != "fused_rmsnorm":
        up32 = x == 2.0
        ew.append(Elementwise("final RMSNorm", ((12 * h if up32 else 0) + 20 * h + 2 * x * h) * T, 8 if up32 else 6,
                              kind=EW_NORM))
    else:
        ew.append(Elementwise("final norm", 4 * h * T, 1, 1.5))
    logits = T * v / lay.tp
    loss = loss_kind(tr, prof)
    if x == 4.0 and prof.kernels != "fused" and not tr.torch_compile and loss != "fused_linear":
        # autocast casts the fp32 final norm's output to bf16 for lm_head; its backward casts the gradient up
        ew.append(Elementwise("autocast cast of the lm_head input", 6 * h * T, 1, 1.0, 1, kind=EW_POINTWISE,
                              backward_upcast=1.0))
    if loss in ("upcast", "upcast_shifted", "chunked"):  # chunked: the same upcast, a chunk at a time
        ew.append(Elementwise("logits .float() upcast", 6 * logits, 8 if loss == "chunked" else 1, 1.0,
                              kind=EW_POINTWISE, upcast=1.0))  # backward: the fp32 gradient cast down
    if loss == "upcast_shifted":  # .contiguous() of the shifted fp32 logits: read 4 B, write 4 B; its backward
        # (SliceBackward) writes a zero-filled fp32 gradient and copies the shifted one into it: 12 B, 1.5x
        ew.append(Elementwise("shifted logits .contiguous() copy", 8 * logits, 1, 1.5))
    if loss == "shifted_16bit":  # the same copy of the 16-bit logits (2 B read, 2 B written; backward 1.5x);
        # the 16-bit cross-entropy is charged the measured fp32 one's bytes (no 16-bit measurement)
        ew.append(Elementwise("shifted logits .contiguous() copy", 4 * logits, 1, 1.5))
    # head weight cast per forward: fp32 embeddings/lm_head under autocast (AMP full, or QLoRA's fp32 head)
    head_params = v * h / lay.tp
    cast = head_params if (prof.kernels != "fused" and x == 4.0) or casts_weights(tr, prof) else 0.0
    if extra:  # the adapter's elementwise work: its output (V wide) scaled and added into the logits
        ew.append(Elementwise("lm_head LoRA scale, add", 6 * logits + 2 * h * T, 2, 1.0, kind=EW_POINTWISE))
    # the loss kernels' bytes per logit: LOSS_BYTES. flash-attn's fused cross-entropy (fused_ce) has no upcast
    # kernel; its code moves 6 B (a read of each 16-bit row in the forward, a read and the gradient's write in
    # the backward), but no measurement of that 2023 kernel is at hand, so it keeps the measured fp32
    # cross-entropy's rate, an upper bound (docs/training.md, "Memory of the llm-foundry runs", gives what the
    # 6 B would move)
    loss_bytes = LOSS_BYTES.get(loss, 0.0) + (CHUNK_COPY_BYTES if loss == "chunked_ce" and lay.micro_batch > 1 else 0.0)
    return HeadOps(gemm, tuple(ew), logits, cast, extra, loss_bytes,
                   cast_shard if casts_weights(tr, prof) else 0, 2 if tr.zero_stage == 3 else 1)
