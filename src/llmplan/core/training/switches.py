"""The fine-tuning switches of the framework profiles: what each one changes, and its own terms.

A plan sets each switch on, off, or leaves it on auto (None), where the profile's default applies
(``workload.effective_training``). The memory and time terms live where the quantity they change is
computed (``states``, ``ops``, ``eager_memory``, ``op_time``, ``memory``); this module holds the
switches' descriptions (docs, the Fine-tune tab), and the terms no other module owns. Each term was
derived from the framework's code, read for this purpose:

- ``liger`` (linkedin/Liger-Kernel, ``apply_liger_kernel_to_llama``: rope, rms_norm, swiglu,
  fused_linear_cross_entropy): LigerRMSNorm saves its input and one fp32 rstd per row; LigerSiLUMulFunction
  saves gate and up only and its backward writes their gradients over them in place (no new gate/up-wide
  gradients); RoPE works in place; the loss is ``fused_linear`` (``liger_loss_bytes``).
- ``torch_compile`` (torch.compile / Inductor): pointwise ops fuse into one kernel per chain, each reading
  its inputs and writing its output once, and the min-cut partitioner saves the same tensors as Liger's
  kernels (recomputing the cheap pointwise ones) — the op list's "fused" style.
- ``optimizer_in_backward`` (torchtune ``optimizer_in_bwd``: ``register_post_accumulate_grad_hook`` steps
  each parameter and frees its gradient): the gradients held at once are one tensor's, the largest.
  torchtune refuses gradient accumulation with it, and so does llmplan.
- ``paged_optimizer`` (bitsandbytes ``paged_adamw*``: ``get_paged`` allocates the states with
  cudaMallocManaged): outside PyTorch's caching allocator; they stay on the GPU while it has room and are
  paged to the host when it runs short, costing a trip over PCIe each way per step for the paged part.
- ``bf16_optimizer_states``: the states in bf16 — torch's AdamW creates them with the parameters' dtype
  (``torch.zeros_like(p)``), so a bf16 model has them (torchtune's ``dtype: bf16``); under AMP an optimizer
  that keeps bf16 moments (torchao ``AdamW(bf16_stochastic_round=True)``, optimi).
- ``activation_offload`` (torchtune ``OffloadActivations``, a ``saved_tensors_hooks`` that copies every
  saved tensor above 1 KiB to pinned host memory on a side stream and brings it back in the backward;
  unsloth's ``Unsloth_Offloaded_Gradient_Checkpointer``, which does so for each checkpointed layer's input):
  the GPU keeps about two blocks' saved tensors (the one in flight and the one computing); the host holds
  the rest; the copies overlap the compute and cost only what they exceed it by.
- ``lora_on_lm_head`` (torchtune ``apply_lora_to_output``; PEFT ``target_modules`` with lm_head): an adapter
  of r·(h + V) parameters on the head, two rank-r GEMMs per pass.
- ``modules_to_save`` (PEFT ``ModulesToSaveWrapper``: a deep copy of each named module is trained, the
  original stays frozen beside it): the embeddings and the head trained in full, in the base's dtype, with
  their gradients and optimizer states in that dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown

LIGER_CHUNK_MEM_CONST = 1  # Liger's default budget: transient logits of about BT × H elements
# Liger's fused linear cross-entropy at the head GEMM of chunk i: its new bf16 logits, and chunk i-1's, still
# bound as ``grad_logits_chunk`` until the loop rebinds it (no fp32 copy since Liger PR #406, 2024-11-22: the
# kernel upcasts in registers and writes the gradient over the logits in place): 2 × 2 B per chunk logit
LIGER_CHUNK_BYTES = 4.0
CHUNKED_LOSS_CHUNKS = 8  # torchtune LinearCrossEntropyLoss(num_output_chunks=8)
OFFLOAD_BLOCKS_ON_GPU = 2.0  # activation offload: the block whose tensors are in transfer + the computing one


@dataclass(frozen=True, slots=True)
class SwitchInfo:
    label: str
    changes: str  # what it changes, in one sentence (docs, tooltips)
    source: str


SWITCHES: dict[str, SwitchInfo] = {
    "liger": SwitchInfo(
        "Liger kernels", "fused RMSNorm, RoPE and SwiGLU (fewer bytes and launches, smaller saved tensors) and "
        "the fused linear cross-entropy (logits never whole)",
        "linkedin/Liger-Kernel: ops/rms_norm.py, ops/swiglu.py, ops/rope.py, ops/fused_linear_cross_entropy.py"),
    "torch_compile": SwitchInfo(
        "torch.compile", "Inductor fuses the elementwise kernels: one kernel per pointwise chain, the saved "
        "set of fused kernels", "PyTorch torch.compile (Inductor pointwise fusion, min-cut partitioner)"),
    "optimizer_in_backward": SwitchInfo(
        "Optimizer in backward", "no full gradient buffer: each parameter is stepped and its gradient freed as "
        "soon as it is ready (no gradient accumulation)",
        "pytorch/torchtune: recipes/full_finetune_single_device.py optimizer_in_bwd, training/memory.py "
        "register_optim_in_bwd_hooks (register_post_accumulate_grad_hook)"),
    "paged_optimizer": SwitchInfo(
        "Paged optimizer", "optimizer states in CUDA unified memory, outside PyTorch's allocator: paged to the "
        "host when the GPU runs short (PCIe traffic each step for the paged part)",
        "bitsandbytes: optim/optimizer.py get_state_buffer / functional.get_paged (cudaMallocManaged)"),
    "bf16_optimizer_states": SwitchInfo(
        "bf16 optimizer states", "optimizer states at 2 bytes per value instead of 4",
        "torch.optim.AdamW (states zeros_like the parameter); torchao AdamW(bf16_stochastic_round)"),
    "activation_offload": SwitchInfo(
        "Activation offload", "saved activations go to pinned host memory in the forward and come back in the "
        "backward: about two blocks' worth stay on the GPU, the copies overlap the compute",
        "pytorch/torchtune: training/_activation_offloading.py OffloadActivations; unslothai/unsloth: "
        "Unsloth_Offloaded_Gradient_Checkpointer"),
    "lora_on_lm_head": SwitchInfo(
        "LoRA on lm_head", "an adapter of r·(hidden + vocabulary) parameters on the output head",
        "pytorch/torchtune: models/llama3/_component_builders.py apply_lora_to_output"),
    "modules_to_save": SwitchInfo(
        "Train embeddings and head", "PEFT keeps a trainable copy of the embeddings and the head beside the "
        "frozen ones: their weights again, gradients and optimizer states in the base's dtype",
        "huggingface/peft: utils/other.py ModulesToSaveWrapper"),
}


def liger_chunk_rows(tokens: float, hidden: int, vocab: float) -> float:
    """Rows per chunk of Liger's fused linear cross-entropy: next_power_of_2(ceil(BT / ceil(V / H))),
    at most BT (fused_linear_cross_entropy_forward, chunk_mem_const = 1)."""
    inc = max(1, math.ceil(vocab / (LIGER_CHUNK_MEM_CONST * hidden)))
    rows = max(1, math.ceil(tokens / inc))
    return float(min(1 << (rows - 1).bit_length(), tokens))


def liger_loss_bytes(tokens: float, hidden: int, vocab: float, elem: float = 2.0,
                     chunk_bytes: float = LIGER_CHUNK_BYTES) -> float:
    """Bytes Liger's fused linear cross-entropy allocates in its forward beside its inputs and the head's
    gradient (ops/fused_linear_cross_entropy.py, fused_linear_cross_entropy_forward): the chunks' logits
    (``chunk_bytes`` per logit of one chunk: two bf16 chunks alive at the head GEMM), ``grad_input`` (the
    hidden states' gradient, tokens × hidden in the input's dtype, computed in the forward and kept for the
    backward) and the fp32 per-token loss. Nothing of the logits is kept for the backward, which only
    scales the gradients computed in the forward. A trainable head's gradient (``zeros_like(weight)``,
    filled chunk by chunk) also exists from the forward on; the caller counts it."""
    return liger_chunk_rows(tokens, hidden, vocab) * vocab * chunk_bytes + tokens * (hidden * elem + 4.0)


def largest_tensor(pb: ParamBreakdown) -> float:
    """Elements of the largest parameter tensor (the embedding or head for most LLMs): the gradient that
    optimizer-in-backward holds at most at once."""
    return float(max((g.numel for g in pb.groups), default=0))


def embedding_and_head(m: ModelSpec, tp: int = 1) -> float:
    """Parameters of the embeddings and the output head (one tensor when tied), per GPU: what
    ``modules_to_save`` trains in full."""
    h = m.embedding_proj_dim or m.hidden_size
    return m.vocab_size * h * (1 if m.tie_embeddings else 2) / tp


def lm_head_adapter(m: ModelSpec, rank: int, tp: int = 1) -> float:
    """LoRA A (r × h) and B (V/tp × r) on the output head."""
    return rank * (m.hidden_size + m.vocab_size / tp)


def host_transfer_time(offloaded: float, paged: float, pcie: float, compute_s: float) -> tuple[float, float]:
    """(exposed seconds, seconds of transfer) per step for activation offload and paged optimizer states.
    Activations go down in the forward and up in the backward on a side stream: exposed only beyond the
    compute they overlap. Paged states fault in for the update and are evicted again, serially. Floats or
    NumPy arrays (the search's quick model prices its candidates with it)."""
    if pcie <= 0:
        return 0.0, 0.0
    act = 2 * offloaded / pcie
    page = 2 * paged / pcie
    exposed = act - compute_s
    return exposed * (exposed > 0) + page, act + page
