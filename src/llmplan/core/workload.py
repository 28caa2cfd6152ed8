"""What the user wants to do with the model: the workload knobs and the parallel layout.

These sections are shared verbatim by the plan file (``llmplan.plan.planfile``), so their
field names are the contract of DESIGN.md §3 (``training.zero_stage``, ``parallelism.tp``
...). A ``Scenario`` is a fully resolved plan: the model and cluster specs themselves
rather than catalog ids. ``llmplan.core.engine(scenario)`` is a pure function of it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from llmplan.core.engine_profile import EngineProfile
from llmplan.core.framework_profile import (
    DEFAULT_PROFILE,
    SWITCH_NAMES,
    FrameworkProfile,
    QuantBase,
    deepspeed_stage,
    in_effect,
    offload_option_refusal,
    offload_refusal,
    offload_view,
)
from llmplan.core.frozen import FrozenModel
from llmplan.core.hardware import ClusterSpec, Efficiency
from llmplan.core.model import ModelSpec
from llmplan.errors import LlmplanError

Workload = Literal["pretrain", "finetune", "inference"]
Precision = Literal["fp32", "fp16", "bf16", "fp8"]
Optimizer = Literal["sgd", "momentum", "adamw", "adam8bit", "adafactor", "lion", "muon"]
Recompute = Literal["none", "selective", "selective_op", "full"]
# Megatron-Core's --recompute-modules (core.training.recompute_modules, docs/training.md), in this order
RecomputeModule = Literal["core_attn", "layernorm", "mla_up_proj", "mlp", "moe", "moe_act", "shared_experts"]
RECOMPUTE_MODULES: tuple[str, ...] = RecomputeModule.__args__  # type: ignore[attr-defined]
DEFAULT_RECOMPUTE_MODULES: tuple[str, ...] = ("core_attn",)  # Megatron-Core's default: classic selective recompute
Offload = Literal["none", "cpu", "nvme"]
Method = Literal["full", "lora", "qlora"]
Regime = Literal["auto", "amp", "pure"]
Loss = Literal["auto", "fp32_logits", "upcast", "upcast_shifted", "shifted_16bit", "fused_linear", "chunked",
               "fused_ce", "te_ce", "chunked_ce"]
Batching = Literal["packed", "padded"]
GradClip = Literal["auto", "on", "off"]
BatchRule = Literal["published", "per_replica"]
LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
# How LoRA reaches a mixture of experts' routed experts (core.lora_modules: ``expert_adapters``, docs/training.md)
LoraExperts = Literal["auto", "none", "per_expert_modules", "target_parameters", "peft_converted"]
MAX_TRAINING_TOKENS = 1e17  # training.tokens' bound (100 million times a 1T-token run); also ``search --tokens``


class TrainingSettings(FrozenModel):
    method: Method = "full"
    precision: Precision = "bf16"
    optimizer: Optimizer = "adamw"
    seq_len: int = Field(4096, ge=1, le=10_000_000, description="tokens per sequence")
    micro_batch: int = Field(1, ge=1, le=100_000, description="sequences per GPU per forward/backward pass")
    global_batch: int = Field(
        0, ge=0, le=100_000_000, description="sequences per optimizer step over all replicas, fixed whatever the "
        "layout; 0: global_batch_tokens, else batch_rule"
    )
    global_batch_tokens: int = Field(
        0, ge=0, le=100_000_000_000, description="tokens per optimizer step over all replicas (used when "
        "global_batch is 0; rounded to whole sequences); 0: batch_rule"
    )
    batch_rule: BatchRule = Field(
        "published", description="what a batch left at 0 means: published: the batch published runs of the "
        "model's size used (pre-training 0.5M-63M tokens by size, fine-tuning 64 sequences; "
        "llmplan.core.training.batch); per_replica: one micro-batch per data-parallel replica, so the batch "
        "changes with the layout (plans saved before schema 4)"
    )
    tokens: float = Field(1e12, gt=0, le=MAX_TRAINING_TOKENS, description="tokens to train on (for time and cost)")
    recompute: Recompute = "selective"
    recompute_modules: tuple[RecomputeModule, ...] = Field(
        DEFAULT_RECOMPUTE_MODULES, description="recompute = selective under Megatron-Core (ignored by the other "
        "recompute settings): the modules its backward runs again (--recompute-modules; core.training.recompute_modules). core_attn: the attention core (the "
        "classic selective recompute, the default); layernorm: the norms not fused into a linear (MoE layers' pre-MLP "
        "norm, MLA's input norm); mla_up_proj: MLA's up-projections and rotary; mlp: the dense MLPs; moe: the whole "
        "MoE layer; moe_act: the experts' activation; shared_experts: the shared experts")
    flash_attention: bool = True
    zero_stage: Literal[0, 1, 2, 3] = 1
    offload: Offload = "none"
    offload_params: bool = Field(False, description="ZeRO-Infinity/FSDP: offload parameters too (stage 3)")
    optimizer_offload_fraction: float = Field(
        1.0, gt=0, le=1, description="Megatron-Core --optimizer-offload-fraction (with offload = cpu): the share of "
        "this rank's optimizer parameters whose fp32 master, Adam states and step go to the host; the rest stay on "
        "the GPU with its fused Adam (HybridDeviceOptimizer takes parameters in the optimizer's order until the "
        "share is reached). 1.0: all of them, as before; another value is a field error under a profile that "
        "offloads its whole optimizer")
    offload_gradients: bool = Field(
        False, description="torchao CPUOffloadOptimizer(offload_gradients=True) (torchtune's single-device recipes, "
        "offload = cpu on one GPU at zero_stage 0): each gradient is freed on the GPU once its copy to the host "
        "is done, so the GPU holds only the gradients PCIe has not drained yet. False: the class's default (no "
        "torchtune config sets it; its docs' example turns it on). It cannot accumulate micro-batches; a field "
        "error under a profile without CPUOffloadOptimizer")
    overlap_cpu_optimizer_copies: bool = Field(
        False, description="Megatron-Core --overlap-cpu-optimizer-d2h-h2d (with offload = cpu): one CPU optimizer "
        "per parameter, the gradient copies to the host and the parameter copies back on their own streams, so "
        "the copies overlap the CPU step parameter by parameter. False: Megatron's default (copy all, step, copy "
        "back). A field error under another profile")
    distributed_optimizer: bool = Field(False, description="Megatron's distributed optimizer (≈ ZeRO-1)")
    shard_group: int = Field(
        0, ge=0, le=1_000_000,
        description="ranks ZeRO/FSDP shards over; 0: all of dp·cp; e.g. 8: FSDP HYBRID_SHARD within a node",
    )
    fp32_grad_accumulation: bool | None = Field(
        None, description="keep a fp32 gradient buffer; None: what the framework profile does (Megatron: yes)"
    )
    framework: str = Field(
        "auto", min_length=1, max_length=64,
        description="training-framework profile id from catalogs/frameworks.toml (megatron, deepspeed, fsdp2, "
        "hf-trainer); auto: hf-trainer for LoRA/QLoRA and full fine-tunes within one node, megatron for "
        "pre-training and multi-node full fine-tunes (catalog.frameworks.auto_choice)",
    )
    regime: Regime = Field(
        "auto", description="amp: 16-bit compute with fp32 master weights (PyTorch AMP, Megatron); pure: the "
        "model loaded in 16 bits and trained as is — 16-bit weights, gradients and optimizer states, no master "
        "copy; auto: the framework profile's (torchtune: pure; axolotl: pure for full fine-tunes; the others: amp)",
    )
    loss: Loss = Field(
        "auto", description="how the loss treats the logits; auto: the framework's (upcast for Hugging Face, "
        "fp32_logits for Megatron, fused_linear with Liger); fused_linear: a chunked fused linear cross-entropy "
        "(Liger, unsloth) that never materialises the logits; chunked: the head and an fp32 cross-entropy run "
        "over 8 chunks of the tokens (torchtune's LinearCrossEntropyLoss); upcast_shifted: upcast as transformers "
        "did until PR #35646 (merged 2025-01-13, after 4.48.0), with a second, shifted fp32 copy of the logits; "
        "shifted_16bit: model code that shifts the logits itself and never upcasts them, run without autocast "
        "(Qwen 1.0's modeling_qwen.py under DeepSpeed): a shifted 16-bit copy and a 16-bit cross-entropy; "
        "fused_ce: flash-attn's fused cross-entropy on the 16-bit logits (llm-foundry's default): the 16-bit "
        "logits and their 16-bit gradient, 4 B per logit at its backward; te_ce: Transformer Engine's parallel "
        "cross-entropy (Megatron-Core with cross_entropy_loss_fusion and cross_entropy_fusion_impl te, as NeMo's "
        "performance scripts run it): the 16-bit logits read twice and the gradient written over them, 10 B per "
        "logit moved; chunked_ce: axolotl's chunked_cross_entropy (a torch.compile'd fp32 cross-entropy over 8 "
        "chunks of the head's whole 16-bit logits): 2 B per logit kept for the backward (4 with a micro-batch > 1, "
        "whose chunks are copied), 4 B at its backward",
    )
    liger: bool | None = Field(
        None, description="Liger kernels (use_liger_kernel): fused RMSNorm, RoPE, SwiGLU and linear cross-entropy; "
        "None: the framework profile's default")
    torch_compile: bool | None = Field(
        None, description="torch.compile the model: Inductor fuses the elementwise kernels; None: profile default")
    optimizer_in_backward: bool | None = Field(
        None, description="step each parameter in the backward as its gradient is ready (torchtune "
        "optimizer_in_bwd): no full gradient buffer, no gradient accumulation; None: profile default")
    paged_optimizer: bool | None = Field(
        None, description="bitsandbytes paged optimizer: states in CUDA unified memory, outside PyTorch's "
        "allocator, paged to the host when the GPU runs short; None: profile default")
    bf16_optimizer_states: bool | None = Field(
        None, description="optimizer states in bf16 (2 B per value instead of 4); None: profile default")
    activation_offload: bool | None = Field(
        None, description="saved activations moved to pinned host memory in the forward and back in the "
        "backward (torchtune enable_activation_offloading, unsloth gradient checkpointing); None: profile default")
    lora_on_lm_head: bool | None = Field(
        None, description="a LoRA adapter on the output head too (torchtune apply_lora_to_output); None: profile "
        "default")
    modules_to_save: bool | None = Field(
        None, description="train the embeddings and the output head in full beside the adapters (PEFT "
        "modules_to_save: a trainable copy of each); None: profile default")
    grad_clip: GradClip = Field(
        "auto", description="clip the gradient norm before each optimizer step (Megatron --clip-grad, the Hugging "
        "Face Trainer's max_grad_norm, torchtitan's max_norm): a pass reading the gradients this GPU holds for their "
        "norm and one scaling them (core.training.grad_clip); auto: the framework profile's default (on for all "
        "but torchtune)")
    quant_base: QuantBase = Field(
        "nf4", description="QLoRA: the quantised base's format — nf4 (bitsandbytes), gptq or awq (4-bit, group "
        "128), int8 (LLM.int8), mxfp4 (OCP microscaling)")
    batching: Batching = Field(
        "packed", description="packed: sequences concatenated to seq_len, every token real; padded: each batch "
        "padded to its longest sequence (seq_len) — memory and compute at seq_len, throughput counts real tokens")
    mean_sequence_tokens: int = Field(
        0, ge=0, le=10_000_000, description="padded batches: the mean real tokens per sequence (0: seq_len)")
    lora_dropout: float | None = Field(
        None, ge=0, lt=1, description="PEFT lora_dropout; > 0 keeps a mask and a copy of each adapted input "
        "(0.05: the QLoRA paper's setting for 7-13B models); None: the framework profile's default",
    )
    lora_rank: int = Field(16, ge=1, le=65_536)
    lora_targets: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")
    lora_experts: LoraExperts = Field(
        "auto", description="mixture of experts: how LoRA reaches the routed experts. per_expert_modules: one "
        "adapter per expert projection (transformers 4, experts as nn.Linear); target_parameters: one rank-r adapter "
        "per expert on each stacked 3-D parameter (transformers 5, PEFT target_parameters: gate_up_proj, down_proj); "
        "peft_converted: what PEFT >= 0.19 makes of gate/up/down module names under transformers 5 (stacked "
        "adapters, gate_up_proj at rank 2r; dense and shared-expert MLPs not adapted); none: routed experts not "
        "adapted; auto: peft_converted on the families PEFT converts, none elsewhere (gpt-oss, Qwen2-MoE)")
    qlora_double_quant: bool = True
    dropout: float = Field(
        0.0, ge=0, lt=1, description="attention and hidden dropout; > 0 stores 1-byte masks (modern LLMs use 0)"
    )
    overlap_grad_reduce: bool = Field(
        True, description="overlap the data-parallel gradient reduction with the last micro-batch's backward"
    )

    @field_validator("recompute_modules")
    @classmethod
    def _canonical_modules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        """One order and no repeats, so that equal lists are equal plans (Megatron-Core reads them as a set)."""
        if not v:
            raise ValueError("name at least one module (no module to recompute: set training.recompute to none)")
        return tuple(name for name in RECOMPUTE_MODULES if name in v)


class InferenceSettings(FrozenModel):
    weight_format: str = Field("bf16", min_length=1, description="fp16, bf16, fp8, int8, awq-4bit, q4_k_m ...")
    kv_dtype: str = Field("bf16", min_length=1)
    batch: int = Field(1, ge=1, le=1_000_000, description="concurrent sequences")
    prompt_tokens: int = Field(1024, ge=1, le=100_000_000)
    output_tokens: int = Field(256, ge=1, le=100_000_000)
    engine: str = Field("vllm", min_length=1, description="engine profile id (vllm, llama.cpp, ...)")
    backend: Literal["auto", "cuda", "rocm", "vulkan", "sycl", "metal"] = Field(
        "auto", description="GPU back-end of a local engine (llama.cpp, Ollama); auto: the GPU vendor's own "
        "(CUDA, ROCm, SYCL, Metal)"
    )
    weight_file_bytes: int | None = Field(
        None, gt=0, le=1 << 50, description="bytes of the weight files as stored (a GGUF file's size, from the "
        "Hub's file list); the tensors keep the format's proportions; None: computed from weight_format"
    )
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, description="vLLM's setting; None: engine default")
    gpu_layers: int | None = Field(None, ge=0, description="llama.cpp -ngl: layers on the GPU; None: as many as fit")
    host_memory_bandwidth: float | None = Field(
        None, gt=0, description="bytes/s for layers left in host RAM (partial offload); None: engine default"
    )
    dp_attention: bool = Field(
        False, description="SGLang's --enable-dp-attention: multi-latent attention held whole and run data-parallel "
        "on every GPU of the TP group, the feed-forward split over them (core/inference/dp_attention.py)"
    )
    cpu_moe_layers: Annotated[int, Field(ge=0, le=100_000)] | Literal["all"] | None = Field(
        None, description="llama.cpp --n-cpu-moe N: the routed experts of the first N layers in host RAM, the rest "
        "of every layer on the GPUs; 'all': --cpu-moe; 0: none; None: the estimate keeps them there only when the "
        "model does not fit on the GPUs and that is faster than leaving whole layers in host RAM"
    )
    split_mode: Literal["layer", "row"] = Field(
        "layer", description="llama.cpp --split-mode over several cards: 'layer' gives each card whole layers; "
        "'row' splits every weight matrix's rows over the cards by --tensor-split (core/inference/row_split.py)"
    )
    shared_prefix_tokens: int = Field(0, ge=0, description="leading prompt tokens all sequences share (cached once)")
    draft_tokens: int = Field(0, ge=0, le=64, description="speculative decoding: tokens the draft proposes per step")
    draft_acceptance: float = Field(0.7, ge=0, lt=1, description="probability the target accepts each draft token")
    draft_cost_ratio: float = Field(
        0.05, ge=0, le=1, description="time of one draft-model step relative to one target-model step"
    )

    @field_validator("cpu_moe_layers", mode="before")
    @classmethod
    def _cpu_moe_layers(cls, v):
        """One message for a value that is neither a layer count nor 'all' (not one per member of the union);
        a count given as text ('24', from --set or the CLI) is read as the number."""
        if v is None or v == "all" or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100_000):
            return v
        if isinstance(v, str) and v.strip().lower() == "all":  # "ALL", " all ": llama.cpp's --cpu-moe all the same
            return "all"
        if isinstance(v, str) and v.strip().isdigit() and int(v.strip()) <= 100_000:
            return int(v.strip())
        raise ValueError("give the number of leading layers whose experts stay in host RAM (0 or more), or 'all'")


class ParallelLayout(FrozenModel):
    tp: int = Field(1, ge=1, le=1024, description="tensor parallel size")
    pp: int = Field(1, ge=1, le=1024, description="pipeline parallel stages")
    dp: int = Field(1, ge=1, le=1_000_000, description="data parallel replicas")
    cp: int = Field(1, ge=1, le=1024, description="context parallel size (sequence split for attention)")
    ep: int = Field(1, ge=1, le=1024, description="expert parallel size (within data parallel)")
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism alongside TP")
    virtual_stages: int = Field(1, ge=1, le=128, description="interleaved pipeline chunks per GPU")
    first_stage_layers: int | None = Field(
        None, ge=0, le=100_000,
        description="transformer layers on the first pipeline stage (Megatron --decoder-first-pipeline-num-layers); "
                    "None: automatic balanced split",
    )
    last_stage_layers: int | None = Field(
        None, ge=0, le=100_000,
        description="transformer layers on the last pipeline stage (Megatron --decoder-last-pipeline-num-layers); "
                    "None: automatic balanced split",
    )

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


class EfficiencyOverrides(FrozenModel):
    """Optional per-plan overrides of the catalog's achievable fractions (None: keep default)."""

    matmul: float | None = Field(None, gt=0, le=1)
    memory_bandwidth: float | None = Field(None, gt=0, le=1)
    network: float | None = Field(None, gt=0, le=1)
    host_memory_bandwidth: float | None = Field(
        None, gt=0, le=1, description="fraction of host DRAM bandwidth the CPU optimizer reaches (offload)"
    )
    pcie: float | None = Field(None, gt=0, le=1, description="fraction of the GPU's PCIe rate copies reach (offload)")
    sustained_clock: float | None = Field(
        None, ge=0.3, le=1, description="share of its full clock the GPU holds with GEMMs and attention all of the "
        "time (a power limit; training step times)"
    )
    full_clock_share: float | None = Field(
        None, ge=0, lt=1, description="share of the GPU's time in GEMMs and attention up to which it keeps its full "
        "clock (training step times)"
    )

    def apply(self, base: Efficiency) -> Efficiency:
        changes = {k: v for k, v in self.model_dump().items() if v is not None}
        return base.model_copy(update=changes) if changes else base


_DEFAULT_FRAMEWORK = DEFAULT_PROFILE


def _accumulates(tr: TrainingSettings) -> bool:
    """Whether the batch may need more than one micro-batch per replica: a batch larger than a micro-batch,
    or one in tokens or by the published rule (``training.batch``), which usually does."""
    if tr.global_batch:
        return tr.global_batch > tr.micro_batch
    return bool(tr.global_batch_tokens) or tr.batch_rule == "published"


def _torchao(tr: TrainingSettings, prof: FrameworkProfile) -> bool:
    """Whether the plan offloads with the profile's one-GPU optimizer (torchao's CPUOffloadOptimizer, which steps in
    ``step()``: torchtune's recipes build it instead of optimizer-in-backward), as far as the settings tell: offload
    without ZeRO sharding (``framework_profile.offload_view`` also needs one GPU)."""
    return bool(prof.single_gpu_offload_style) and tr.offload != "none" and tr.zero_stage == 0


def effective_training(tr: TrainingSettings, prof: FrameworkProfile) -> TrainingSettings:
    """``tr`` with "auto"/None resolved under ``prof``: the regime, every switch (on when the profile turns
    it on by default) and the loss (Liger's fused linear cross-entropy when Liger is on). A switch turned on
    that the profile does not support, a loss its code cannot run, or a quantised base it cannot load, is
    refused. Selective recompute under a framework that has none (``FrameworkProfile.selective_recompute``:
    the Hugging Face Trainer checkpoints whole blocks or nothing) is read as none, what that framework runs when
    it checkpoints nothing; with flash attention the engine priced the two alike. A plan that states it is
    refused by the plan layer (``plan.resolve.framework_refusal``), which knows what a plan states."""
    upd: dict = {}
    if tr.regime == "auto":
        upd["regime"] = (prof.full_regime or prof.regime) if tr.method == "full" else prof.regime
    for name in SWITCH_NAMES:
        value = getattr(tr, name)
        if value is None:  # optimizer-in-backward (torchtune's full recipes only) cannot accumulate: auto
            upd[name] = name in prof.on_by_default and not (  # leaves it off for adapters or accumulation
                name == "optimizer_in_backward" and (_accumulates(tr) or tr.method != "full" or _torchao(tr, prof))
            ) and not (name == "activation_offload" and tr.recompute != "full")  # unsloth offloads checkpoints
        elif value and name not in prof.switches:
            raise ValueError(f"training.{name}: the {prof.id} profile does not support it")
    field, why = offload_refusal(prof, tr.offload, tr.offload_params, tr.zero_stage, tr.optimizer_offload_fraction)
    if not field:
        field, why = offload_option_refusal(prof, tr.offload_gradients, tr.overlap_cpu_optimizer_copies)
    if field:
        raise ValueError(f"{field}: {why}")
    if tr.method == "qlora" and tr.quant_base not in prof.quant_bases:
        raise ValueError(f"training.quant_base: the {prof.id} profile trains LoRA on {', '.join(prof.quant_bases)} "
                         f"bases, not {tr.quant_base}")
    clip = tr.grad_clip
    if clip == "auto":  # torchtune refuses clipping with optimizer-in-backward, which wins where both are on auto
        clip = "on" if prof.grad_clip and not (tr.optimizer_in_backward is None and upd.get("optimizer_in_backward")) \
            else "off"
        upd["grad_clip"] = clip
    elif clip == "on" and tr.optimizer_in_backward is None and upd.get("optimizer_in_backward"):
        upd["optimizer_in_backward"] = False  # clipping needs the whole gradient: auto leaves the switch off
    why = grad_clip_refusal(clip, upd.get("optimizer_in_backward", tr.optimizer_in_backward), prof)
    if why:
        raise ValueError(f"training.grad_clip: {why}")
    if tr.lora_dropout is None:
        upd["lora_dropout"] = prof.lora_dropout
    if tr.loss == "auto":
        liger = upd.get("liger", tr.liger)
        upd["loss"] = "fused_linear" if liger else prof.loss
    elif tr.loss not in prof.losses:
        raise ValueError(f"training.loss: the {prof.id} profile does not run {tr.loss}; it runs "
                         f"{', '.join(prof.losses)}")
    if (tr.recompute == "selective" and not prof.selective_recompute
            and tr.recompute_modules == DEFAULT_RECOMPUTE_MODULES):
        upd["recompute"] = "none"  # what the framework runs when it checkpoints nothing (module doc of the field)
    return tr.model_copy(update=upd) if upd else tr


def grad_clip_refusal(clip: str, optimizer_in_backward: bool | None, prof: FrameworkProfile) -> str:
    """Why ``training.grad_clip`` = ``clip`` cannot run under ``prof``, or "": off under a framework that clips at
    every step (torchtitan), on beside optimizer-in-backward (torchtune's recipes raise "Gradient clipping is not
    supported with optimizer in bwd": each parameter is stepped before the whole gradient's norm exists)."""
    if clip == "off" and prof.grad_clip_always:
        return (f"the {prof.name} profile clips at every step ({prof.grad_clip_setting}) and has no setting that "
                "turns it off")
    if clip == "on" and optimizer_in_backward:
        return ("clipping needs the whole gradient's norm before any parameter is stepped, and optimizer in backward "
                "steps each parameter as its gradient is ready (torchtune refuses the two together): turn one off")
    return ""


class Scenario(FrozenModel):
    """A resolved plan: everything ``estimate`` needs, nothing it has to look up."""

    model: ModelSpec
    cluster: ClusterSpec
    workload: Workload = "pretrain"
    training: TrainingSettings = TrainingSettings()
    inference: InferenceSettings = InferenceSettings()
    parallelism: ParallelLayout = ParallelLayout()
    efficiency: Efficiency = Efficiency()
    engine_profile: EngineProfile | None = Field(
        None, description="inference: the engine's catalog profile (None: a neutral runtime)"
    )
    framework_profile: FrameworkProfile | None = Field(
        None, description="training: the framework's catalog profile (None: Megatron-style, FrameworkProfile())"
    )

    @property
    def framework(self) -> FrameworkProfile:
        """The training-framework profile in effect (the Megatron-style default when none was resolved), as
        DeepSpeed runs it where the plan shards with ZeRO under a profile that hands ZeRO to DeepSpeed
        (``framework_profile.in_effect``), and with its one-GPU offload where the plan offloads on one GPU without
        ZeRO (``framework_profile.offload_view``: torchtune's single-device recipes, torchao's CPUOffloadOptimizer)."""
        prof = in_effect(self.framework_profile or _DEFAULT_FRAMEWORK, self.deepspeed_stage)
        if not prof.single_gpu_offload_style:  # read on every term: the common case costs one attribute
            return prof
        t = self.training
        return offload_view(prof, t.offload, t.zero_stage, self.parallelism.gpus)

    @property
    def deepspeed_stage(self) -> int:
        """The ZeRO stage DeepSpeed's engine runs this plan at, 0 where it does not run
        (``framework_profile.deepspeed_stage``)."""
        t, p = self.training, self.parallelism
        return deepspeed_stage(self.framework_profile or _DEFAULT_FRAMEWORK, t.zero_stage, p.dp * p.cp, t.offload)

    @model_validator(mode="before")
    @classmethod
    def _resolve_auto(cls, data):
        """Resolve the training settings left on auto (regime, switches, loss) to what the framework
        profile does, so everything downstream reads concrete values."""
        if not isinstance(data, dict):
            return data
        tr, prof = data.get("training", TrainingSettings()), data.get("framework_profile")
        if isinstance(tr, dict):
            tr = TrainingSettings.model_validate(tr)
        if isinstance(prof, dict):
            prof = FrameworkProfile.model_validate(prof)
        if isinstance(tr, TrainingSettings) and (prof is None or isinstance(prof, FrameworkProfile)):
            try:
                resolved = effective_training(tr, prof or _DEFAULT_FRAMEWORK)
            except ValueError:
                if data.get("workload") != "inference":
                    raise
                # an inference plan trains nothing: the training section its Fine-tune tab left (Liger on, a
                # Megatron offload share ...) is kept in the plan, not checked against the default profile here
                resolved = effective_training(TrainingSettings(), prof or _DEFAULT_FRAMEWORK)
            model = data.get("model")
            if isinstance(model, dict):
                model = ModelSpec.model_validate(model)
            if tr.lora_dropout is None and isinstance(model, ModelSpec) and wraps_stacked_experts(model, resolved):
                resolved = resolved.model_copy(update={"lora_dropout": 0.0})  # the one value PEFT runs there
            data = {**data, "training": resolved}
        return data

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.workload == "inference":  # its training section is not run (``_resolve_auto``)
            inf = self.inference
            refusal = (cpu_moe_refusal(self.model, self.engine_profile, inf.cpu_moe_layers,
                                       self.cluster.gpu.unified_memory)
                       or dp_attention_refusal(self.model, self.engine_profile, inf.dp_attention)
                       or split_mode_refusal(self.engine_profile, inf))
            if refusal:
                raise ValueError(refusal)
            return self
        if self.workload == "pretrain" and self.training.method != "full":
            raise ValueError("pre-training trains every weight: set training.method to 'full'")
        t = self.training
        if t.recompute == "selective_op":
            _check_selective_op(self)
        if t.recompute == "selective" and t.recompute_modules != DEFAULT_RECOMPUTE_MODULES:
            _check_recompute_modules(self)
        if (t.lora_dropout or 0) > 0 and wraps_stacked_experts(self.model, t):
            raise ValueError(STACKED_DROPOUT_REFUSAL.format(t.lora_dropout))
        if t.mean_sequence_tokens > t.seq_len:
            raise ValueError(f"training.mean_sequence_tokens ({t.mean_sequence_tokens}) cannot exceed training.seq_len "
                             f"({t.seq_len}), the longest sequence a padded batch is padded to")
        return self


def cpu_moe_refusal(model: ModelSpec, engine: EngineProfile | None, n: int | str | None,
                    unified: bool = False) -> str:
    """Why ``inference.cpu_moe_layers = n`` cannot run ("" when it can, as far as the plan says without its layout:
    tensor parallelism is the estimate's check, ``core.inference.cpu_moe.check``): it needs an MoE model, an engine
    that keeps experts in host RAM (llama.cpp) and a GPU with memory of its own (-ngl below the layer count composes
    with it: ``core.inference.cpu_moe``). Checked
    here, once for the plan, so a search that tries every layout says this, not "no layout fits"."""
    if n is None or n == 0:
        return ""
    field = f"inference.cpu_moe_layers={n}"
    if not model.is_moe:
        return (f"{field}: {model.name} has no routed experts (a dense model); clear it and "
                "use inference.gpu_layers to keep whole layers in host RAM")
    if engine is not None and not engine.experts_in_host:
        return (f"{field}: {engine.name or engine.id} cannot keep the experts in host RAM "
                "(llama.cpp's --cpu-moe / --n-cpu-moe; Ollama exposes no such option); choose inference.engine = "
                "llama.cpp or clear it")
    if unified:
        return (f"{field}: the GPU shares the host's memory (unified memory), so experts in host RAM free "
                "nothing; clear cpu_moe_layers")
    return ""


def dp_attention_refusal(model: ModelSpec, engine: EngineProfile | None, on: bool) -> str:
    """Why ``inference.dp_attention`` cannot run ("" when it can): SGLang's flag, for multi-latent-attention models
    (``core.inference.dp_attention``). Checked for the plan, so a search does not answer "no layout fits"."""
    if not on:
        return ""
    if engine is not None and not engine.dp_attention:
        return (f"inference.dp_attention: {engine.name or engine.id} has no data-parallel attention "
                "(SGLang's --enable-dp-attention); choose inference.engine = sglang or clear it")
    if not model.mla:
        return ("inference.dp_attention: SGLang applies --enable-dp-attention to multi-latent-attention "
                "models only (DeepSeek-V2/V3: srt/models/deepseek_v2.py); clear it for this model")
    return ""


def split_mode_refusal(engine: EngineProfile | None, inf: InferenceSettings) -> str:
    """Why ``inference.split_mode`` cannot run on the engine ("" when it can; one card, and the back-ends without
    a split buffer, are the estimate's to refuse: ``core.inference.row_split``). Ollama passes no split_mode to its
    runner (ollama/ollama PR #2190, which would have, was closed unmerged)."""
    if inf.split_mode == "layer" or engine is None or engine.splits_rows:
        return ""
    return (f"inference.split_mode={inf.split_mode}: {engine.name or engine.id} cannot split weight rows across "
            "cards (llama.cpp's --split-mode row; Ollama exposes no split mode); choose inference.engine = "
            "llama.cpp or set split_mode = layer")


# peft 0.21.2 (PyPI wheel), peft/tuners/lora/layer.py, ParamWrapper.__init__ and ParamWrapper.update_layer:
# ``raise ValueError(f"lora.{self.__class__.__name__} does not work with lora_dropout != 0.")`` ("It's not possible
# to factor out x from lora_B(lora_A(dropout(x)))": the adapter is added to the weight, not to the output).
STACKED_DROPOUT_REFUSAL = (
    "training.lora_dropout: PEFT's ParamWrapper (target_parameters, the adapters on the stacked routed experts) "
    "does not support lora_dropout ({:g} here; peft raises \"does not work with lora_dropout != 0\"); set it to 0 "
    "or training.lora_experts = none")


def wraps_stacked_experts(m: ModelSpec, tr: TrainingSettings) -> bool:
    """Whether a LoRA/QLoRA plan puts PEFT ``ParamWrapper``s on ``m``'s stacked expert parameters
    (``lora_modules.stacked_expert_params``), where PEFT refuses any dropout: the framework's dropout on auto then
    resolves to 0, and a stated dropout above 0 is a field error."""
    if tr.method == "full" or not m.is_moe:
        return False
    # imported after the test: a knob change asks twice, and in the app each import statement costs ~13 µs
    from llmplan.core.lora_modules import expert_adapters, stacked_expert_params

    try:
        return stacked_expert_params(m, tr.lora_targets, expert_adapters(m, tr.lora_experts)) > 0
    except LlmplanError:
        return False  # a refused lora_experts choice: the estimate says why


def _check_selective_op(sc: Scenario) -> None:
    """Operator-level selective checkpointing is torchtitan's policy for its dense Llama blocks
    (``core.training.selective_op``); the other frameworks have no such option, and the policy's
    every-second-matmul rule is modelled for the projections of dense blocks (not routers and experts)."""
    prof, m = sc.framework, sc.model
    if not prof.selective_op:
        raise ValueError(f"training.recompute: selective_op is torchtitan's operator-level checkpointing; the "
                         f"{prof.name} profile has none (set recompute to none, selective or full, or "
                         "training.framework to fsdp2)")
    if sc.training.method != "full":
        raise ValueError("training.recompute: selective_op is modelled for full training (torchtitan trains every "
                         "weight); set recompute to full or none for LoRA")
    if m.is_moe or m.mla:
        raise ValueError(f"training.recompute: selective_op is modelled for dense attention and MLP blocks; "
                         f"{m.name} has {'experts' if m.is_moe else 'latent attention'} (set recompute "
                         "to full or none)")


def _check_recompute_modules(sc: Scenario) -> None:
    """Named-module recompute is Megatron-Core's (``--recompute-granularity selective --recompute-modules``), and
    each name recomputes something only where the model has it (``core.training.recompute_modules``). Other
    recompute settings ignore the list, as Megatron-Core does with ``--recompute-granularity full``."""
    t, prof, m = sc.training, sc.framework, sc.model
    if not prof.recompute_modules:
        raise ValueError(f"training.recompute_modules: named-module recompute is Megatron-Core's "
                         f"(--recompute-modules); the {prof.name} profile recomputes the attention core only "
                         "(leave the modules at core_attn, or set training.framework to megatron)")
    allowed = valid_recompute_modules(m, prof, t.precision)
    wrong = [name for name in t.recompute_modules if name not in allowed]
    if wrong:
        raise ValueError(f"training.recompute_modules: nothing for Megatron-Core to recompute in {m.name} under "
                         f"{', '.join(wrong)} ({'; '.join(f'{n}: {RECOMPUTE_MODULE_LIMITS[n]}' for n in wrong)}); allowed here: "
                         f"{', '.join(allowed)}")


RECOMPUTE_MODULE_LIMITS = {"layernorm": "only norms not fused into a linear: MoE layers' pre-MLP norm and MLA's input norm; not under "
                     "fp8 delayed scaling",
        "mla_up_proj": "needs multi-latent attention",
        "mlp": "needs dense (non-MoE) MLP layers",
        "moe": "needs MoE layers",
        "moe_act": "needs MoE layers with grouped expert GEMMs; not under fp8 delayed scaling",
        "shared_experts": "needs shared experts",
        "core_attn": ""}


def valid_recompute_modules(m: ModelSpec, prof: FrameworkProfile, precision: str) -> tuple[str, ...]:
    """The module names that recompute something for this model under this profile, in canonical order, read from
    NVIDIA/Megatron-LM core_r0.13.0 (transformer_config.py ``__post_init__``, transformer_layer.py,
    gpt_layer_specs.py): moe_act needs ``moe_grouped_gemm``; mla_up_proj multi-latent attention; fp8 with delayed
    scaling (Transformer Engine's, ``FrameworkProfile.fp8_recipe``) refuses moe_act and layernorm; under the
    Transformer Engine spec a dense attention's input norm and a dense MLP's norm are fused into their linears
    (``IdentityOp``), so layernorm reaches only MoE layers' pre-MLP norm and MLA's input norm."""
    if not prof.recompute_modules:
        return DEFAULT_RECOMPUTE_MODULES
    moe = m.is_moe and m.moe is not None and m.moe_layer_count > 0
    delayed_fp8 = precision == "fp8" and prof.fp8_recipe == "transformer-engine"
    ok = {"core_attn": True,
          "layernorm": (moe or m.mla is not None) and not delayed_fp8,
          "mla_up_proj": m.mla is not None,
          "mlp": m.dense_layer_count > 0,
          "moe": moe,
          "moe_act": moe and prof.expert_gemms != "separate" and not delayed_fp8,
          "shared_experts": moe and bool(m.moe and m.moe.num_shared_experts)}
    return tuple(n for n in RECOMPUTE_MODULES if ok[n])
