"""What a training framework does to a step's memory and time, as data.

Papers describe one framework each (the ZeRO and Megatron papers: fused kernels, 16-bit
weights with an fp32 master copy in the optimizer); people run several. A profile names the
choices that change the numbers, so one per-operation model (``core.training.ops``) serves
them all. The numbers live in ``catalogs/frameworks.toml`` (read by
``llmplan.catalog.frameworks``), each with its source; the caller puts the chosen profile in
``Scenario.framework_profile``. ``FrameworkProfile()`` with no arguments is the Megatron-style
profile every estimate used before profiles existed, so old plans keep their numbers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from llmplan.core.frozen import FrozenModel
from llmplan.core.strict_fields import StrictFields

KernelStyle = Literal["fused", "eager", "triton"]
LossKind = Literal["fp32_logits", "upcast", "upcast_shifted", "shifted_16bit", "fused_linear", "chunked", "fused_ce",
                   "te_ce", "chunked_ce"]
LOSS_KINDS: tuple[str, ...] = LossKind.__args__  # type: ignore[attr-defined]
RegimeKind = Literal["amp", "pure"]
# The on/off switches a plan may set (``TrainingSettings`` fields of the same names; None there: the
# profile's default). What each changes, with its source: ``core.training.switches``.
SwitchName = Literal["liger", "torch_compile", "optimizer_in_backward", "paged_optimizer", "bf16_optimizer_states",
                     "activation_offload", "lora_on_lm_head", "modules_to_save"]
SWITCH_NAMES: tuple[str, ...] = ("liger", "torch_compile", "optimizer_in_backward", "paged_optimizer",
                                 "bf16_optimizer_states", "activation_offload", "lora_on_lm_head", "modules_to_save")
QuantBase = Literal["nf4", "gptq", "awq", "int8", "mxfp4"]
OffloadTarget = Literal["optimizer", "parameters"]
OffloadDevice = Literal["cpu", "nvme"]
OffloadStyle = Literal["zero", "fsdp", "optimizer", "torchao"]
ZeroStage = Literal[0, 1, 2, 3]


class FrameworkProfile(StrictFields, FrozenModel):
    id: str = Field("megatron", min_length=1)
    name: str = "Megatron-LM (Megatron-Core)"
    kernels: KernelStyle = Field(
        "fused", description="fused: one kernel per norm, rotary, SwiGLU and bias-dropout-add (Megatron-Core, "
        "Transformer Engine); eager: the modeling code's own PyTorch ops, each a kernel that reads and writes "
        "memory (Hugging Face transformers, torchtune); triton: eager modeling code whose norms, rotary and "
        "gated MLP run as fused Triton kernels (unsloth)"
    )
    eager_modules: Literal["transformers", "torchtitan"] = Field(
        "transformers", description="the modeling code a step runs where its kernels are eager (kernels eager and "
        "no torch.compile): transformers: Hugging Face-style modules under torch.autocast (an fp32 residual stream "
        "with fp32 parameters), one process per GPU, memory as the peak over the step's phases "
        "(core.training.eager_memory); torchtitan: torchtitan's Llama modules handed bf16 parameters and inputs by "
        "FSDP2's MixedPrecisionPolicy (no autocast: a bf16 stream), with complex-number rotary and repeat_kv "
        "copies, each block checkpoint-wrapped, memory counted block by block as for fused kernels with what the "
        "uncompiled modules keep (core.training.activations)"
    )
    titan_norm: Literal["rmsnorm", "fused_rmsnorm"] = Field(
        "rmsnorm", description="eager_modules torchtitan: its model.norm_type — rmsnorm (the default: "
        "_norm(x.float()).type_as(x) * weight, op by op) or fused_rmsnorm (a Triton kernel that keeps its input "
        "and one rsqrt per row, as a fused norm); compiled, both are fused"
    )
    params_are_master: bool = Field(
        False, description="trainable parameters are kept in fp32 and ARE the master copy; each forward casts "
        "them to 16 bits (PyTorch AMP autocast, FSDP2 mixed precision); False: 16-bit weights plus an fp32 "
        "master copy inside the optimizer (Megatron, DeepSpeed)"
    )
    fp32_grad_accumulation: bool = Field(
        True, description="gradients kept in an fp32 buffer (Megatron's main_grad; AMP's fp32 .grad)"
    )
    grads_freed_after_step: bool = Field(
        False, description="gradients are freed after the optimizer step (zero_grad(set_to_none=True)) and "
        "exist only from the backward on; False: a persistent gradient buffer (Megatron, DeepSpeed)"
    )
    loss: LossKind = Field(
        "fp32_logits", description="fp32_logits: vocab-parallel cross-entropy over fp32 logits (Megatron); "
        "upcast: 16-bit logits copied to fp32, log-softmax and its gradient materialised (transformers' "
        "ForCausalLMLoss); upcast_shifted: the same with a second, shifted fp32 copy (ForCausalLMLoss before "
        "transformers PR #35646); shifted_16bit: a shifted 16-bit copy and a 16-bit cross-entropy, no upcast (Qwen 1.0's "
        "remote code under DeepSpeed); fused_linear: the head and loss computed in chunks, logits never whole (Liger); "
        "chunked: the head and an fp32 cross-entropy over 8 chunks (torchtune); fused_ce: flash-attn's fused "
        "cross-entropy kernel on the 16-bit logits, which keeps them in 16 bits and writes a 16-bit gradient "
        "(llm-foundry's loss_fn fused_crossentropy); te_ce: Transformer Engine's parallel cross-entropy on the "
        "16-bit logits, gradient written in place (Megatron-Core's cross_entropy_fusion_impl te); chunked_ce: the "
        "head's whole 16-bit logits, a compiled fp32 cross-entropy per chunk of 8 (axolotl's chunked_cross_entropy)"
    )
    launch_s: float = Field(
        15.5e-6, ge=0, le=1e-3,
        description="host time to issue one kernel from eager PyTorch; a step is never faster than its "
        "kernels' launches (one-element kernel, measured on an H100 SXM, torch 2.11, 2026-11-24)"
    )
    gemm_launch_s: float = Field(
        28.2e-6, ge=0, le=1e-3,
        description="host time of one cuBLAS GEMM call from eager PyTorch (median of the smallest GEMMs of a "
        "bf16 sweep on an H100 SXM, torch 2.11, 2026-11-24, which the GPU finishes sooner)"
    )
    context_bytes: int = Field(
        1 << 30, ge=0, description="CUDA context, cuBLAS/NCCL workspaces per process"
    )
    fragmentation: float = Field(
        0.05, ge=0, le=1, description="caching-allocator reserve beyond the allocated bytes, share of them"
    )
    overlap_grad_reduce: bool = Field(True, description="DP gradient reduction overlaps the backward")
    overlap_param_gather: bool = Field(
        False, description="the distributed optimizer's weight all-gather overlaps the next forward "
        "(Megatron --overlap-param-gather); False: it runs exposed after the optimizer step"
    )
    tp_comm_overlap: bool = Field(
        False, description="TP collectives overlap the GEMMs (Megatron --tp-comm-overlap, Transformer Engine "
        "userbuffers); False: they sit on the critical path"
    )
    pp_comm_overlap: bool = Field(
        False, description="pipeline send/receive runs asynchronously behind the stage's compute (Llama 3's "
        "asynchronous point-to-point, arXiv 2407.21783 §3.3.2); False: each transfer waits on the critical path"
    )
    cp_comm: Literal["ring", "all-gather"] = Field(
        "ring", description="context parallelism: ring: K/V passed around the ring behind the attention compute "
        "(Megatron-Core, Liu et al. 2023); all-gather: every K/V all-gathered before the attention and the "
        "gradients reduce-scattered after, on the critical path (Llama 3, arXiv 2407.21783 §3.3.2)"
    )
    zero2_with_pp: bool = Field(
        False, description="gradient sharding (ZeRO-2) runs under pipeline parallelism: Llama 3's FSDP, which "
        "\"shards optimizer states and gradients\" beside PP16 (arXiv 2407.21783 §3.3.2); False: DeepSpeed's and "
        "Megatron's rule, ZeRO ≤ 1 with pp > 1"
    )
    dp_bucket_params: int = Field(
        40_000_000, ge=0, description="parameters per gradient bucket of the DP reduction (Megatron "
        "bucket_size: max(40M, 1M·dp)); 0: one bucket per layer (FSDP units)"
    )
    prefetch_params: int = Field(
        0, ge=0, description="ZeRO-3/FSDP: parameters whose all-gather is issued ahead of the layer computing "
        "(DeepSpeed stage3_prefetch_bucket_size, default 5e7); 0: the next wrapped layer (FSDP2). With equal "
        "layers the depth does not change the exposed time: the first gather is exposed either way"
    )
    fsdp_zero2: bool = Field(
        False, description="training.zero_stage = 2 runs as FSDP's SHARD_GRAD_OP (reshard_after_forward=False): "
        "each micro-batch all-gathers a block's 16-bit weights at its forward, keeps them through its backward and "
        "reduce-scatters the block's gradients; False: DeepSpeed's ZeRO-2, gradients reduce-scattered in buckets "
        "and the updated weights all-gathered after the optimizer step"
    )
    fused_projections: bool = Field(
        False, description="the block's projections that read one input run as one GEMM: q, k and v as a fused "
        "QKV and a gated MLP's gate and up as one (Megatron-Core linear_qkv and linear_fc1, llm-foundry MPT's "
        "Wqkv); False: one GEMM per projection, as the modeling code declares them (transformers, torchtitan)"
    )
    expert_gemms: Literal["separate", "multi_stream", "grouped"] = Field(
        "separate", description="how a mixture of experts' local experts run each projection: separate: one GEMM "
        "per expert, one after another (Megatron-Core SequentialMLP without --moe-grouped-gemm, DeepSpeed-MoE's "
        "expert loop, transformers' per-expert loop); multi_stream: one call that issues each expert's cuBLAS GEMM "
        "round-robin on 4 streams (Transformer Engine GroupedLinear's default path, Megatron-Core TEGroupedMLP "
        "with --moe-grouped-gemm); grouped: one grouped-GEMM kernel over all local experts (torch._grouped_mm in "
        "torchtitan, CUTLASS grouped GEMM). ``training.ops.expert_grouping``"
    )
    supports_pp: bool = True
    supports_tp: bool = True
    supports_cp: bool = True
    supports_ep: bool = True
    fp8_recipe: Literal["transformer-engine", "torchao-tensorwise"] = Field(
        "transformer-engine", description="how training.precision = fp8 runs (core.training.fp8_casts): "
        "transformer-engine: Transformer Engine's delayed scaling, casts fused with the norms and "
        "cast_transpose; torchao-tensorwise: torchao's Float8Linear with dynamic tensorwise scaling (torchtitan), "
        "an amax pass and a cast per operand and transposed fp8 copies for the backward"
    )
    losses: tuple[LossKind, ...] = Field(
        LOSS_KINDS, description="the training.loss kinds the framework's code can run (its default ``loss`` among "
        "them; ``fused_linear`` wherever it offers Liger); a plan that names another is a field error naming the "
        "profiles that run it (plan.resolve.framework_refusal). Every kind where a profile does not say"
    )
    selective_recompute: bool = Field(
        True, description="the framework has selective recompute of the attention core (Korthikanti et al. 2022: "
        "Megatron's --recompute-granularity selective); False: it checkpoints whole blocks or nothing (the Hugging "
        "Face Trainer's gradient_checkpointing, torchtune's and torchtitan's activation checkpointing), so a plan "
        "left on the default \"selective\" runs as none there (with flash attention the two are the same step) and "
        "one that states it is a field error"
    )
    recompute_words: str = Field(
        "", description="what the framework calls checkpointing every block (training.recompute = full), in its "
        "own words, for the app's recompute list (\"gradient checkpointing\": the Hugging Face Trainer); empty: "
        "\"full recompute\""
    )
    selective_op: bool = Field(
        False, description="runs operator-level selective activation checkpointing (training.recompute = "
        "\"selective_op\"): torchtitan's ac_mode selective, selective_ac_option op"
    )
    recompute_modules: bool = Field(
        False, description="runs Megatron-Core's named-module selective recompute (training.recompute_modules, "
        "--recompute-modules); False: selective recompute is the attention core only"
    )
    regime: RegimeKind = Field(
        "amp", description="the precision regime a plan on \"auto\" gets: amp (fp32 master weights) or pure (the "
        "model's 16-bit dtype throughout, torchtune's dtype: bf16)"
    )
    full_regime: RegimeKind | None = Field(
        None, description="the regime a full fine-tune on \"auto\" gets, where it differs from ``regime`` (the "
        "adapters'): axolotl loads the model in its bf16 training dtype and trains a full fine-tune as loaded (pure), "
        "while PEFT keeps LoRA adapters in fp32 under autocast; None: ``regime`` for every method"
    )
    kbit_fp32_modules: bool = Field(
        False, description="quantised bases: what is not quantised (embeddings, head, norms) is cast to fp32 "
        "(PEFT's prepare_model_for_kbit_training), and the residual stream with it"
    )
    switches: tuple[SwitchName, ...] = Field(
        (), description="the switches a plan may turn on under this profile (core.training.switches)"
    )
    on_by_default: tuple[SwitchName, ...] = Field(
        (), description="the switches this framework turns on when the plan leaves them on auto"
    )
    quant_bases: tuple[QuantBase, ...] = Field(
        ("nf4",), description="quantised base formats LoRA can train on under this profile (training.quant_base)"
    )
    lora_dropout: float = Field(
        0.05, ge=0, lt=1, description="the LoRA dropout a plan on auto gets: the framework's default or its "
        "examples' (torchtune configs, unsloth and LLaMA-Factory: 0; the QLoRA paper and axolotl's examples: 0.05)"
    )
    offload_prefetch: bool = Field(
        True, description="activation offload: the backward brings the next block's saved tensors back while one "
        "computes (torchtune's OffloadActivations, a second stream), two blocks' on the GPU; False: one layer "
        "input brought back at a time (unsloth's offloaded gradient checkpointer and the copies LLaMA-Factory "
        "and axolotl use)"
    )
    fsdp_root_unsharded: bool = Field(
        False, description="ZeRO-3/FSDP under an eager profile: the embeddings and the head sit in the root FSDP "
        "unit (accelerate's TRANSFORMER_BASED_WRAP wraps only the decoder layers and the trainable LoRA leaves), "
        "which FSDP1 does not reshard after the forward, so they stay gathered from the forward's start to the "
        "backward's end (torch/distributed/fsdp/_runtime_utils.py _post_forward_reshard: free_unsharded_flat_param "
        "= not state._is_root and ...); False: sharded as units of their own (torchtune's custom_sharded_layers) "
        "or gathered per use (DeepSpeed ZeRO-3)"
    )
    zero_engine: Literal["native", "deepspeed"] = Field(
        "native", description="what runs training.zero_stage > 0: native (the framework's own sharding: Megatron's "
        "distributed optimizer, FSDP) or deepspeed (the Hugging Face Trainer's --deepspeed: DeepSpeed's engine casts "
        "the model to 16 bits, keeps an fp32 master in its ZeRO optimizer and the Trainer runs no autocast; "
        "``core.training.deepspeed_zero``)"
    )
    zero2_reduce_bucket: int = Field(
        500_000_000, ge=0, description="zero_engine deepspeed, ZeRO-1/2: the DeepSpeed config's "
        "zero_optimization.reduce_bucket_size in elements (DeepSpeed's default 5e8, as the ZeRO-2 examples of "
        "transformers' docs and LLaMA-Factory; axolotl's leaves it at the default); 0: \"auto\", which the "
        "Trainer fills with hidden_size² (transformers HfTrainerDeepSpeedConfig.trainer_config_finalize)"
    )
    zero3_reduce_bucket: int = Field(
        0, ge=0, description="zero_engine deepspeed, ZeRO-3: the same setting; 0: \"auto\" (hidden_size²), as the "
        "ZeRO-3 examples of LLaMA-Factory, axolotl and Qwen set it"
    )
    optimizer_intermediates: int = Field(
        0, ge=0, le=2, description="tensor lists the size of one Adam moment that torch.optim's foreach AdamW "
        "allocates during its step, beside the states: 2 in torch 2.0 (exp_avg_sq_sqrt and denom, "
        "_multi_tensor_adamw), 1 from torch 2.1 (pytorch/pytorch PR #104898, 2023-07-10); 0: a fused step "
        "(torch's fused AdamW, the Trainer's adamw_torch_fused, DeepSpeed's FusedAdam), which allocates none. The "
        "Trainer's default optim was adamw_torch (foreach) from transformers 4.32 (PR #25109) until it became "
        "adamw_torch_fused"
    )
    block_host_s: tuple[tuple[str, float], ...] = Field(
        (), description="(kind, seconds) rows: measured host (CPU) time of one decoder block per micro-batch of "
        "eager training, forward + backward (+ recompute), for kinds full_16bit, full_autocast, lora and qlora, "
        "each also with _recompute (gradient checkpointing); a step is never faster than its blocks' host time "
        "(core/training/host_time.py); empty: the kernel count × launch_s alone"
    )
    gather_pending_blocks: int = Field(
        0, ge=0, le=4, description="ZeRO-3/FSDP gathers on a side CUDA stream: gathered blocks the caching "
        "allocator keeps reserved beyond the allocated bytes, freed with record_stream onto the compute stream and "
        "not reusable until its event completes (core.training.allocator_reserve): 1 for FSDP1 with "
        "limit_all_gathers (torch fsdp _limiter_utils: two all-gathers in flight) and for DeepSpeed ZeRO-3 (the "
        "least its code allows); 0 for FSDP2 (no record_stream) and Megatron's persistent buffers"
    )
    gather_flat_copy: bool = Field(
        False, description="ZeRO-3 copies each coalesced flat all-gather output into per-parameter tensors on the "
        "all-gather stream while the flat buffer is alive (DeepSpeed AllGatherCoalescedHandle.wait: torch.cat), "
        "so that stream's pool holds one fetch's flat buffer beyond the allocated bytes; False: FSDP's flat "
        "parameters are used in place"
    )
    grad_clip: bool = Field(
        True, description="the framework clips the gradient norm when a plan leaves training.grad_clip on auto: its "
        "default (Megatron --clip-grad 1.0, the Hugging Face Trainer's max_grad_norm 1.0, torchtitan's max_norm 1.0; "
        "torchtune's clip_grad_norm: null is off). core.training.grad_clip prices it"
    )
    grad_clip_setting: str = Field(
        "--clip-grad 1.0", description="the framework's own setting behind ``grad_clip``, in its words (shown with "
        "the switch: \"Hugging Face Trainer default: on (max_grad_norm 1.0)\")"
    )
    grad_clip_kernels: Literal["foreach", "multi_tensor", "deepspeed"] = Field(
        "multi_tensor", description="how the clipping runs (core.training.grad_clip): foreach: "
        "torch.nn.utils.clip_grad_norm_ (a _foreach_norm pass reading the gradients, a _foreach_mul_ pass reading "
        "and writing them); multi_tensor: Megatron-Core's clip_grad_norm_fp32 with Transformer Engine's "
        "multi_tensor_l2norm and multi_tensor_scale_tensor (the same passes); deepspeed: DeepSpeed's ZeRO optimizer, "
        "which computes the norm at every step, clipping or not (an fp64 copy of each gradient, its norm) and "
        "scales the fp32 gradient partition"
    )
    grad_clip_always: bool = Field(
        False, description="the framework clips at every step and has no setting that turns it off (torchtitan "
        "calls clip_grad_norm_ unconditionally; its max_norm 0 would zero the gradients): training.grad_clip = off "
        "is refused under it"
    )
    grad_norm_item: bool = Field(
        False, description="the training loop reads the gradient norm on the host at every step (.item(): the "
        "Hugging Face Trainer under DeepSpeed, model.get_global_grad_norm().item()), a device-to-host sync that "
        "stops the host from running ahead"
    )
    offload_targets: tuple[OffloadTarget, ...] = Field(
        ("optimizer", "parameters"), description="what the framework's code can keep off the GPUs "
        "(training.offload, training.offload_params): optimizer (the fp32 master and the optimizer states, stepped "
        "on the CPU), parameters (the weights too); empty: no optimizer or parameter offload (unsloth, whose offload "
        "is checkpointed activations). A plan asking for more is a field error naming the profiles that have it "
        "(plan.resolve.framework_refusal)"
    )
    offload_devices: tuple[OffloadDevice, ...] = Field(
        ("cpu", "nvme"), description="where it offloads to: cpu (pinned host RAM), nvme (ZeRO-Infinity's "
        "offload_optimizer/offload_param device nvme, DeepSpeed only); empty with offload_targets"
    )
    offload_style: OffloadStyle = Field(
        "zero", description="what training.offload moves and when (core.training.states, core.training.offload_time): "
        "zero: DeepSpeed ZeRO-Offload/Infinity — the fp32 master and optimizer states on the host, the gradient "
        "partition too at ZeRO-2/3 (copied per micro-batch behind the backward), the parameters only with "
        "offload_params at ZeRO-3; fsdp: FSDP's CPU offload (FSDP1 CPUOffload(offload_params=True), FSDP2 "
        "CPUOffloadPolicy) — the sharded parameters, their gradients and the optimizer states all on the host and "
        "the optimizer step on the CPU, parameters always with the optimizer; optimizer: Megatron-Core's "
        "HybridDeviceOptimizer (--optimizer-cpu-offload) — the fp32 master and states on the host, the gradient "
        "buffer and the parameters stay on the GPU, the gradients copied to the host in the step"
    )
    offload_setting: str = Field(
        "", description="the framework's own offload setting, in its words (shown in refusals and the app)"
    )
    single_gpu_offload_style: Literal["", "torchao"] = Field(
        "", description="the offload a one-GPU run without ZeRO sharding uses instead of offload_style (its "
        "single-device recipes, no FSDP): torchao: torchao's CPUOffloadOptimizer (torchtune's single-device recipes "
        "take it as their optimizer) — a host copy of each parameter, its gradient and the optimizer states in "
        "pinned host RAM, each gradient copied behind the backward, the step on the CPU, the parameters copied back "
        "as each is stepped; with training.offload_gradients (which cannot accumulate) the GPU's gradients freed as "
        "they are copied. Empty: offload_style everywhere"
    )
    single_gpu_offload_setting: str = Field(
        "", description="the framework's words for the one-GPU offload (shown in the app and the explanation)"
    )
    zero_stages: tuple[ZeroStage, ...] = Field(
        (0, 1, 2, 3), description="the training.zero_stage values the framework's code runs on several GPUs "
        "(each profile cites where it read them); what the search, the auto policy, the nearest changes and the "
        "app's ZeRO picker offer (``zero_choices``); a plan that states another is a field error (``zero_refusal``) "
        "and one that leaves it automatic runs at the nearest (``auto_zero``). unsloth: 0 only (one GPU, no "
        "DeepSpeed ZeRO or FSDP); FSDP: 0, 2 and 3 (NO_SHARD or DDP, SHARD_GRAD_OP, FULL_SHARD: no ZeRO-1)"
    )
    single_gpu_zero_stages: tuple[ZeroStage, ...] | None = Field(
        None, description="the same on one GPU where it differs from zero_stages: torchtune's one-GPU recipes are "
        "its single-device ones (no sharding: 0; their offload is single_gpu_offload_style). None: zero_stages"
    )
    zero_setting: str = Field(
        "", description="the framework's own settings behind its ZeRO stages, in its words (shown in the field error "
        "for a stage it does not run)"
    )
    policy: str = Field("", description="the auto policy in words, shown beside the switches")
    describes: str = Field("", description="what the profile describes, in one sentence (shown with it)")
    source: str = ""

    @field_validator("block_host_s")
    @classmethod
    def _block_host(cls, v: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
        kinds = ("full_16bit", "full_autocast", "lora", "qlora")
        known = kinds + tuple(k + "_recompute" for k in kinds)
        for key, seconds in v:
            if key not in known or not 0 < seconds <= 0.1:
                raise ValueError(f"block_host_s: each row is [kind ({', '.join(known)}), seconds in (0, 0.1]]; "
                                 f"not [{key!r}, {seconds}]")
        return v

    @model_validator(mode="after")
    def _defaults_supported(self) -> FrameworkProfile:
        extra = [s for s in self.on_by_default if s not in self.switches]
        if extra:
            raise ValueError(f"on_by_default names switches the profile does not list in switches: {', '.join(extra)}")
        if self.loss not in self.losses:
            raise ValueError(f"losses must include the profile's own loss {self.loss!r}")
        if "liger" in self.switches and "fused_linear" not in self.losses:
            raise ValueError("losses must include fused_linear where the profile offers liger (its loss)")
        if bool(self.offload_targets) != bool(self.offload_devices):
            raise ValueError("offload_targets and offload_devices are both empty (no offload) or both set")
        if self.offload_targets and "optimizer" not in self.offload_targets:
            raise ValueError("offload_targets: every framework that offloads parameters offloads the optimizer too")
        if self.offload_style == "optimizer" and "parameters" in self.offload_targets:
            raise ValueError("offload_style optimizer keeps the parameters on the GPU: drop parameters from "
                             "offload_targets")
        if self.offload_style == "fsdp" and self.offload_targets and "parameters" not in self.offload_targets:
            raise ValueError("offload_style fsdp offloads the parameters with the optimizer: list both targets")
        if not self.zero_stages or self.single_gpu_zero_stages == ():
            raise ValueError("zero_stages (and single_gpu_zero_stages when set) name at least one stage")
        if self.single_gpu_offload_style and 0 not in (self.single_gpu_zero_stages or self.zero_stages):
            raise ValueError("single_gpu_offload_style runs at ZeRO-0 on one GPU: list 0 in single_gpu_zero_stages")
        if self.offload_style == "torchao":
            raise ValueError("offload_style torchao is a one-GPU offload: set single_gpu_offload_style instead")
        if self.single_gpu_offload_style and not ("cpu" in self.offload_devices
                                                  and transformers_modules_eager(self)):
            raise ValueError("single_gpu_offload_style needs CPU offload (offload_devices) and a profile priced "
                             "phase by phase (kernels eager or triton, eager_modules transformers)")
        return self


# Quantised bases whose remaining 16-bit weights PEFT's prepare_model_for_kbit_training leaves as they are: it
# casts to fp32 only when the model is not GPTQ-, AQLM-, EETQ-, HQQ- or torchao-quantised (huggingface/peft
# src/peft/utils/other.py, since the GPTQ integration, PR #771, commit a916465, 2023-08-11).
KBIT_KEEPS_DTYPE: tuple[str, ...] = ("gptq",)


def transformers_modules_eager(prof: FrameworkProfile) -> bool:
    """Whether the step runs Hugging Face-style modeling code op by op (eager, or with Triton kernels or
    torch.compile over it): its fp32 residual stream under AMP and its phase-by-phase memory. Not fused
    kernels, and not torchtitan's modules, compiled or not (``eager_modules``)."""
    return prof.kernels != "fused" and prof.eager_modules == "transformers"


def kbit_upcast(method: str, quant_base: str, prof: FrameworkProfile | None, zero_stage: int = 0) -> bool:
    """Whether a LoRA run on a quantised base has its embeddings, head and norms in fp32 (and so an fp32
    residual stream): the profile runs prepare_model_for_kbit_training and the base is one it upcasts.

    Not on a sharded base (``zero_stage`` 3: FSDP FULL_SHARD or ZeRO-3): FSDP and ZeRO-3 need every
    parameter of a wrapped unit in one dtype, the 4-bit weights stored in it (bnb_4bit_quant_storage), so
    TRL's SFTTrainer skips prepare_model_for_kbit_training when its Params4bit sit on the CPU or the meta
    device, as a sharded load leaves them ("one should never call ... prepare_model_for_kbit_training when
    doing QLoRA + FSDP / DS-Zero3": huggingface/trl PR #1416, 2024-03-13, v0.8.0, trainer/sft_trainer.py
    ``is_sharded_qlora``; trl/experimental/utils.py today), and axolotl's model loader sets
    ``skip_prepare_model_for_kbit_training`` for QLoRA under FSDP (``qlora_fsdp``)."""
    return (method == "qlora" and prof is not None and prof.kbit_fp32_modules
            and quant_base not in KBIT_KEEPS_DTYPE and zero_stage != 3)


def offload_refusal(prof: FrameworkProfile, offload: str, offload_params: bool, zero_stage: int = 1,
                    fraction: float = 1.0) -> tuple[str, str]:
    """(field, reason) when the framework's code has no such offload, ("", "") when it has: ``offload`` (none,
    cpu, nvme) on a device it does not offload to, ``offload_params`` where it offloads only the optimizer
    (Megatron-Core), or DeepSpeed's offload (style ``zero``: deepspeed, hf-trainer's ``--deepspeed``) at ZeRO-0:
    ZeRO-Offload is a ZeRO optimizer's, "Valid for ZeRO stage 1, 2, 3" (DeepSpeed's ``DeepSpeedZeroConfig.
    offload_optimizer``, deepspeed/runtime/zero/config.py, and docs/_pages/config-json.md); at stage 0 the engine
    builds no ZeRO optimizer to offload. Under an FSDP-style profile the parameters go with the optimizer whatever
    offload_params says (``offloads_params``), so a plan without it is not refused. A ``fraction`` below 1
    (``training.optimizer_offload_fraction``) needs a profile that splits its optimizer between host and GPU
    (style ``optimizer``: Megatron-Core's ``--optimizer-offload-fraction``); it is refused elsewhere, offload or
    not, and ignored without offload where the profile has it (as Megatron ignores the flag without
    ``--optimizer-cpu-offload``)."""
    if fraction < 1 and not (prof.offload_style == "optimizer" and prof.offload_targets):
        return "training.optimizer_offload_fraction", (
            f"the {prof.id} profile offloads the whole optimizer or none of it, not a share "
            f"({prof.offload_setting or 'no offload'}); set it to 1.0")
    if offload == "none":
        return "", ""
    setting = f" ({prof.offload_setting})" if prof.offload_setting else ""
    if not prof.offload_targets:
        return "training.offload", f"the {prof.id} profile has no optimizer or parameter offload{setting}"
    if offload not in prof.offload_devices:
        return "training.offload", (f"the {prof.id} profile offloads to {', '.join(prof.offload_devices)} only, "
                                    f"not {offload}{setting}")
    if offload_params and "parameters" not in prof.offload_targets:
        return "training.offload_params", (f"the {prof.id} profile offloads only the optimizer states, not the "
                                           f"parameters{setting}")
    if prof.offload_style == "zero" and zero_stage == 0:
        return "training.zero_stage", ("DeepSpeed's ZeRO-Offload needs a ZeRO stage (offload_optimizer is valid for "
                                       "ZeRO stage 1, 2 and 3; ZeRO-0 builds no ZeRO optimizer to offload): set "
                                       "training.zero_stage to 1 or more, or training.offload to none")
    return "", ""


def offload_option_refusal(prof: FrameworkProfile, offload_gradients: bool, overlap_copies: bool) -> tuple[str, str]:
    """(field, reason) when the plan turns on an offload option the framework's offload does not have, ("", "")
    otherwise: ``training.offload_gradients`` needs torchao's CPUOffloadOptimizer (``single_gpu_offload_style``
    torchao: torchtune), ``training.overlap_cpu_optimizer_copies`` Megatron-Core's HybridDeviceOptimizer (style
    ``optimizer``). Refused elsewhere, offload or not; ignored without offload where the profile has it (both are
    arguments of an optimizer that only an offloading run builds)."""
    setting = prof.offload_setting or "no offload"
    if offload_gradients and prof.single_gpu_offload_style != "torchao":
        return "training.offload_gradients", (f"the {prof.id} profile has no torchao CPUOffloadOptimizer, whose "
                                              f"offload_gradients this is ({setting})")
    if overlap_copies and not (prof.offload_style == "optimizer" and prof.offload_targets):
        return "training.overlap_cpu_optimizer_copies", (
            f"the {prof.id} profile has no Megatron-Core HybridDeviceOptimizer, whose --overlap-cpu-optimizer-d2h-h2d "
            f"this is ({setting})")
    return "", ""


_OFFLOAD_VIEWS: dict[int, tuple[FrameworkProfile, FrameworkProfile]] = {}


def offload_view(prof: FrameworkProfile, offload: str, zero_stage: int, gpus: int) -> FrameworkProfile:
    """The profile an offloading step runs under: ``prof``, or on one GPU without ZeRO sharding (the framework's
    single-device recipes) its ``single_gpu_offload_style`` — torchtune's single-device recipes offload with
    torchao's ``CPUOffloadOptimizer`` (pytorch/torchtune docs/source/tutorials/memory_optimizations.rst at
    bd2a0fc: "only supported for single-device recipes. To use CPU-offloading in distributed recipes, use
    fsdp_cpu_offload=True instead"), optimizer only. Cached per profile object, so identity-keyed caches downstream
    keep hitting."""
    if not prof.single_gpu_offload_style or offload == "none" or zero_stage or gpus != 1:
        return prof
    hit = _OFFLOAD_VIEWS.get(id(prof))
    if hit is None or hit[0] is not prof:
        if len(_OFFLOAD_VIEWS) > 64:
            _OFFLOAD_VIEWS.clear()
        view = prof.model_copy(update={"offload_style": prof.single_gpu_offload_style, "offload_targets": ("optimizer",),
                                       "offload_devices": ("cpu",),
                                       "offload_setting": prof.single_gpu_offload_setting or prof.offload_setting})
        hit = _OFFLOAD_VIEWS[id(prof)] = (prof, view)
    return hit[1]


def offers_offload(prof: FrameworkProfile, device: str = "cpu") -> bool:
    """Whether the framework can offload its optimizer to ``device``: what the search, the auto policy and the
    nearest changes may propose under it."""
    return bool(prof.offload_targets) and device in prof.offload_devices


def zero_choices(prof: FrameworkProfile, gpus: int) -> tuple[int, ...]:
    """The ZeRO stages the framework runs on ``gpus`` GPUs (``zero_stages``, ``single_gpu_zero_stages`` on one):
    the one rule the search space, the auto policy, the nearest changes and the app's ZeRO picker follow."""
    if gpus == 1 and prof.single_gpu_zero_stages is not None:
        return prof.single_gpu_zero_stages
    return prof.zero_stages


def nearest_zero(prof: FrameworkProfile, stage: int, gpus: int, pp: int = 1) -> int:
    """The stage the framework runs on ``gpus`` GPUs (``zero_choices``; with pipeline stages only those that combine
    with them: ZeRO ≤ 1, ≤ 2 under ``zero2_with_pp``) nearest to ``stage``: ``stage`` itself where it runs it, else the
    smallest above it — ZeRO-1 → ZeRO-2 under FSDP, whose smallest sharding is SHARD_GRAD_OP (gradients sharded with
    the optimizer states) — else the largest below (unsloth and torchtune's single-device recipes: 0). The one rule
    for a ZeRO stage left automatic (``auto_zero``) and for the auto policy's offload step."""
    runs = zero_choices(prof, gpus)
    if pp > 1:
        runs = tuple(s for s in runs if s <= (2 if prof.zero2_with_pp else 1)) or runs
    if stage in runs:
        return stage
    above = [s for s in runs if s > stage]
    return min(above) if above else max(runs)


def auto_zero(prof: FrameworkProfile, stage: int, gpus: int, dp_cp: int, offload: str, pp: int = 1) -> int:
    """The ZeRO stage a plan that leaves ``training.zero_stage`` automatic runs at: its value (the default, 1) where
    the framework runs it, ``nearest_zero`` where it does not — except ZeRO-1 on one data-parallel rank without
    offload, which shards nothing, is ZeRO-0's run and is left as it is (as ``deepspeed_stage`` reads it), so
    one-GPU plans do not move."""
    if stage == 1 and dp_cp <= 1 and offload == "none":
        return stage
    return nearest_zero(prof, stage, gpus, pp)


def zero_refusal(prof: FrameworkProfile, stage: int) -> str:
    """Why a plan cannot state ``training.zero_stage`` = ``stage`` under ``prof`` ("" when it can): the framework's
    code runs it on no GPU count (neither ``zero_stages`` nor ``single_gpu_zero_stages``): FSDP has no ZeRO-1 (its
    strategies shard nothing, the gradients with the optimizer states, or the weights too), unsloth no sharding.
    A stage it runs on other GPU counts is honoured (torchtune's distributed recipe on one GPU)."""
    runs = set(prof.zero_stages) | set(prof.single_gpu_zero_stages or ())
    if stage in runs:
        return ""
    names = ", ".join(str(s) for s in sorted(runs))
    fix = nearest_zero(prof, stage, 2)
    return (f"the {prof.id} profile runs ZeRO stages {names} ({prof.zero_setting or prof.name}), not ZeRO-{stage}; set "
            f"zero_stage to {fix} (the nearest it runs) or leave it out (auto picks one it runs)")


def one_rank_zero(prof: FrameworkProfile, stated: int | None) -> tuple[int, ...]:
    """The ZeRO stages a layout with one data-parallel rank (one GPU, or TP/PP only) runs without a CPU offload —
    the one rule the estimate (``zero_refusal``, through ``plan.resolve``) and the layout search
    (``space.training_columns``) follow. The frameworks run every stage they have there; there is just nothing to
    shard over: DeepSpeed partitions over a data-parallel group of one (``runtime/zero/stage_1_and_2.py``,
    ``stage3.py``: one partition, its buffers and hooks still made; Qwen's one-GPU Q-LoRA script runs ZeRO-2 so),
    PyTorch FSDP1 runs FULL_SHARD and SHARD_GRAD_OP on a world of one as NO_SHARD (``_init_core_state`` in
    ``distributed/fsdp/_init_utils.py`` warns and switches), FSDP2's ``fully_shard`` shards over a mesh of one, and
    torchtune's distributed recipes launch on one device. So a stated stage the profile runs (``zero_refusal``
    empty) is kept; a stage it runs on no GPU count (unsloth: any ZeRO) is a field error before any layout is
    tried. Left open (``stated`` None) only 0: ZeRO above 0 there buys nothing, so the search does not propose it."""
    if stated is None or not stated or zero_refusal(prof, stated):
        return (0,)
    return (0, stated)


def offloads_params(offload: str, offload_params: bool, prof: FrameworkProfile) -> bool:
    """Whether an offloading plan keeps the parameters off the GPU: ``offload_params`` where the framework
    offers it (DeepSpeed's offload_param), always under FSDP's CPU offload (one switch for parameters, gradients
    and optimizer), never under Megatron-Core's optimizer-only offload."""
    if offload == "none" or "parameters" not in prof.offload_targets:
        return False
    return offload_params or prof.offload_style == "fsdp"


def offload_words(prof: FrameworkProfile) -> str:
    """What a CPU offload does under ``prof``, for the nearest changes and the auto policy."""
    if prof.offload_style == "torchao":
        return "Offload the optimizer states and gradients to CPU RAM (torchao CPUOffloadOptimizer)"
    if prof.offload_style == "optimizer":
        return "Offload the optimizer states to CPU RAM (optimizer step on the CPU)"
    if prof.offload_style == "fsdp":
        return "Offload parameters, gradients and optimizer states to CPU RAM (FSDP CPU offload)"
    return "Offload optimizer states to CPU RAM (ZeRO-Offload)"


def offload_summary(prof: FrameworkProfile, offload: str, offload_params: bool, zero_stage: int = 3,
                    fraction: float = 1.0) -> str:
    """What an offloading plan keeps off the GPU under ``prof``, in a few words for the verdict's headline
    (DeepSpeed's offload_param runs at ZeRO-3 only; Megatron-Core's share, ``training.optimizer_offload_fraction``,
    where below 1)."""
    where = "CPU RAM" if offload == "cpu" else "NVMe"
    if prof.offload_style == "torchao":
        return (f"optimizer states and host copies of the parameters and gradients in {where} "
                f"({prof.offload_setting or 'CPUOffloadOptimizer'})")
    if prof.offload_style == "fsdp":
        return f"parameters, gradients and optimizer states in {where} (FSDP CPU offload)"
    if prof.offload_style == "optimizer":
        share = f"{fraction:.0%} of the " if fraction < 1 else ""
        return (f"{share}optimizer states in {where} (the gradients stay on the GPU: "
                f"{prof.offload_setting or 'optimizer offload'})")
    if offloads_params(offload, offload_params, prof) and zero_stage == 3:
        return f"parameters and optimizer states in {where} (ZeRO-Infinity)"
    return f"optimizer states in {where} (ZeRO-Offload)"


_ZERO_VIEWS: dict[tuple[int, int], tuple[FrameworkProfile, FrameworkProfile]] = {}


def deepspeed_stage(prof: FrameworkProfile, zero_stage: int, dp_cp: int, offload: str) -> int:
    """The ZeRO stage DeepSpeed's engine runs a plan at, 0 where it does not run: a profile that hands ZeRO to
    DeepSpeed (``zero_engine``) and a plan with ``training.zero_stage`` > 0 — except ZeRO-1 on one
    data-parallel rank without offload, which shards nothing: ``zero_stage`` 1 is every plan's default, and a
    Trainer run on one GPU needs no DeepSpeed for it (a one-GPU DeepSpeed run, as Qwen's Q-LoRA script makes,
    is ZeRO-2 or 3 or offloads)."""
    if prof.zero_engine != "deepspeed" or not zero_stage:
        return 0
    if zero_stage == 1 and dp_cp <= 1 and offload == "none":
        return 0
    return zero_stage


def in_effect(prof: FrameworkProfile, zero_stage: int) -> FrameworkProfile:
    """The profile a step runs under: ``prof`` itself, or, at a ``deepspeed_stage`` > 0 (``zero_stage`` here),
    what DeepSpeed's engine makes of the Trainer's run (DeepSpeed v0.12.3,
    2023-11-10, the version of Qwen's published fine-tuning table):
    - the module is cast to the training dtype (engine.py ``_configure_distributed_model``: ``module.half()`` or
      ``.bfloat16()``), so the trained weights are 16-bit, an fp32 master of them lives in the ZeRO optimizer
      (stage_1_and_2.py ``single_partition_of_fp32_groups``, stage3.py ``fp32_partitioned_groups_flat``) and
      no autocast runs (accelerate sets native_amp only outside DeepSpeed): ``params_are_master`` off, so no
      autocast weight copies and no fp32 residual stream; what prepare_model_for_kbit_training cast to fp32 is
      cast back (``kbit_fp32_modules`` off); ZeRO-3 gathers the embeddings and head per use, not as FSDP's root
      unit (``fsdp_root_unsharded`` off); ZeRO-3 gathers on its all-gather stream, frees with record_stream and
      copies each flat all-gather output per parameter (``gather_pending_blocks`` 1, ``gather_flat_copy``:
      ``core.training.allocator_reserve``);
    - gradients are kept in the model dtype (the ipg buckets and ``grads_in_partition`` have ``self.dtype``,
      ZeRO-3's ``grad_partitions_flat_buffer`` the gradient-accumulation dtype, the model's by default);
      ZeRO-3 keeps that buffer for the whole run, ZeRO-2 frees the gradients at each step;
    - the gradient norm is DeepSpeed's (``get_grad_norm_direct`` at every step, clipping or not, and
      ``unscale_and_clip_grads`` scaling the fp32 partition), and the Trainer reads it on the host at every step
      (``model.get_global_grad_norm()`` then ``.item()``): ``grad_clip_kernels`` deepspeed, ``grad_norm_item``
      (``core.training.grad_clip``).
    The buffers DeepSpeed adds are ``core.training.deepspeed_zero``. Views are cached per profile object and
    stage, so identity-keyed caches downstream keep hitting."""
    if prof.zero_engine != "deepspeed" or not zero_stage:
        return prof
    key = (id(prof), zero_stage)
    hit = _ZERO_VIEWS.get(key)
    if hit is None or hit[0] is not prof:
        if len(_ZERO_VIEWS) > 64:
            _ZERO_VIEWS.clear()
        view = prof.model_copy(update={
            "name": f"{prof.name} under DeepSpeed ZeRO-{zero_stage}", "params_are_master": False,
            "fp32_grad_accumulation": False, "grads_freed_after_step": zero_stage < 3, "kbit_fp32_modules": False,
            "fsdp_root_unsharded": False, "gather_pending_blocks": 1, "gather_flat_copy": True,
            "grad_clip_kernels": "deepspeed", "grad_norm_item": True})
        hit = _ZERO_VIEWS[key] = (prof, view)
    return hit[1]


DEFAULT_PROFILE = FrameworkProfile()  # the Megatron-style default of a plan that names no profile, one shared object
