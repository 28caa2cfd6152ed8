"""Peak memory of a step run by eager modeling code (Hugging Face transformers + PEFT + AMP).

The peak is the largest of the step's phases, not a sum of maxima. Each phase holds the
persistent states (weights, fp32 master/parameters, optimizer states; gradients too when they
persist across micro-batches or the framework keeps a buffer) plus what that phase adds:

- loss forward: every block's saved tensors (``ops.LayerOps.saved``; under gradient
  checkpointing only each block's input), the final norm's and head's inputs, autocast's 16-bit
  copies of fp32 weights (saved for the backward, or cached until the forward ends), and the
  loss's logits: transformers' ForCausalLMLoss keeps the bf16 logits (2 B), their fp32 copy
  (4 B) and log-softmax's fp32 output (4 B) — 10 bytes per logit; transformers until PR #35646
  (merged 2025-01-13, loss ``upcast_shifted``) also made ``logits[..., :-1, :].contiguous()``, a second
  fp32 copy alive beside the first while the loss ran — 14 bytes per logit; model code that shifts
  the logits itself and runs without autocast (``shifted_16bit``: Qwen 1.0's modeling_qwen.py,
  ``lm_logits[..., :-1, :].contiguous()`` then CrossEntropyLoss, under DeepSpeed, which casts the model
  to 16 bits and runs no autocast) keeps the 16-bit logits, their shifted copy and 16-bit
  log-probabilities — 6 bytes per logit;
- loss backward: NLL's gradient and log-softmax's input gradient (fp32 each) beside the saved
  log-probabilities — 12 bytes per logit (6 for ``shifted_16bit``: 2 B each) — and the head's gradient as
  soon as it exists;
- backward through the blocks: the gradients accumulate while the saved tensors are freed — it starts with
  the other blocks' kept tensors and ends with every gradient, its peak the larger end; with
  checkpointing one block is recomputed at a time and holds its full saved set meanwhile; and the
  block whose backward runs holds its activation gradients at their widest, the gated MLP's: the
  down projection's input gradient, then SiLU·up's two input gradients (3 × the projections' bytes ×
  the intermediate width per token), beside the residual stream's gradient (x·h);
- optimizer step: states and every gradient.
Gradients accumulated over micro-batches (gradient accumulation) are alive in every phase.
Fused linear cross-entropy computes the head and loss in chunks and keeps neither the
logits nor their gradient whole: one chunk of bf16 logits (rows: ``switches.liger_chunk_rows``),
whose gradient is written over it in place, and the hidden states' gradient (2·T·h), computed in the
forward and kept for the backward. Liger's code holds two chunks at the head GEMM (the previous one is
still bound) and fills a trainable head's gradient in the forward (``switches.liger_loss_bytes``), so
with Liger the head's gradient is counted at the loss forward too. The chunked loss (torchtune's
LinearCrossEntropyLoss, 8 chunks) keeps every chunk's fp32 log-probabilities (4 B per logit) for the
backward, and one chunk's bf16 logits and fp32 copy (6 B) in the forward or its three gradients (10 B)
in the backward beside them.
Compiled (``torch_compile``: torchtune's ``compile_loss`` compiles ``compute_cross_entropy``, the chunk's
head GEMM and cross-entropy together), Inductor's min-cut partitioner saves the smallest cut between
forward and backward: each chunk's bf16 logits (2 B per logit; the GEMM is never recomputed) and a
per-row log-sum-exp, the fp32 upcast and softmax being recomputed inside one fused kernel; the backward
writes one chunk's bf16 logit gradient (2 B) beside them.
axolotl's ``chunked_cross_entropy`` (loss ``chunked_ce``; axolotl-ai-cloud/axolotl
src/axolotl/monkeypatch/loss/chunked.py at 067b021, last changed 79ddaeb 2025-08-23) replaces transformers'
ForCausalLMLoss: the head still makes the whole bf16 logits (2 B per logit); ``source.chunk(8, dim=1)`` splits
them along the sequence, each chunk is ``reshape(-1, vocab)``-ed (a view at micro-batch 1, a copy above: the chunk
of a (b, s, V) tensor is not contiguous) and its ``F.cross_entropy(logits.float(), reduction="sum")`` runs
torch.compile'd, so Inductor's partitioner saves each chunk's bf16 input and a per-row log-sum-exp and never
materialises the fp32 copy. Forward: 2 B per logit (4 with micro-batch > 1: the copies beside the whole logits).
Backward: the compiled backward writes each chunk's bf16 gradient while the saved chunks are alive, and the
chunk's backward (``SplitBackward``, a ``cat``) writes the whole gradient beside the chunk gradients: 4 B per
logit either way. The chunk count (``chunked_cross_entropy_num_chunks``) changes neither.
Switches (``core.training.switches``): optimizer-in-backward holds one tensor's gradient at a time;
activation offload keeps about two blocks' saved tensors on the GPU (one where the framework brings a
layer input back only when it is recomputed: ``FrameworkProfile.offload_prefetch``) and the rest on the host.
Autocast's weight copies are freed layer by layer as the backward allocates the (larger, fp32)
gradients, so the backward phase counts the gradients alone.
Under ZeRO-3 (FSDP2, as torchtune's distributed recipes shard every block with ``fully_shard``) a GPU
holds, beside its shards, one block gathered with its unsharded gradients (``states.model_states``) and
a second block's all-gather issued ahead of it (``prefetched_gather``). The reduce-scatter input of the
block before, which FSDP2 keeps until the next block's post-backward, is the size of the head's
gradient that the blocks' backward starts with (below) at the first block, and no larger than the
gathered block's gradients after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.training.layout import Layout
from llmplan.core.training.lora import merged_expert_bytes
from llmplan.core.training.ops import HeadOps, LayerOps, loss_kind, projection_bytes
from llmplan.core.training.states import StateBytes
from llmplan.core.training.switches import (
    CHUNKED_LOSS_CHUNKS,
    OFFLOAD_BLOCKS_ON_GPU,
    liger_chunk_rows,
    liger_loss_bytes,
)
from llmplan.core.workload import TrainingSettings

# per logit: (bf16 + fp32 copy + the shifted fp32 copy +) fp32 log-probs; fused_ce: the 16-bit logits its kernel
# saves (``activations.loss_peak_bytes``)
LOSS_FORWARD_BYTES = {"upcast": 10.0, "upcast_shifted": 14.0, "shifted_16bit": 6.0, "fp32_logits": 6.0, "fused_ce": 2.0,
                      "te_ce": 2.0}
# NLL's and log-softmax's fp32 input gradients beside the saved log-probs; the shifted loss's slice backward
# (a zero-filled fp32 gradient, 4 B, and the shifted gradient copied in) comes after them and holds 8 B
# (shifted_16bit: the same three tensors at 2 B; its slice backward, a zero-filled 16-bit gradient and the copy,
# holds 4 B after them); fused_ce: the saved 16-bit logits and the 16-bit gradient written beside them; te_ce:
# Transformer Engine's kernel writes the gradient over the 16-bit logits it saves and scales it there (2 B throughout)
LOSS_BACKWARD_BYTES = {"upcast": 12.0, "upcast_shifted": 12.0, "shifted_16bit": 6.0, "fp32_logits": 12.0, "fused_ce": 4.0,
                       "te_ce": 2.0}


@dataclass(frozen=True, slots=True)
class EagerPeak:
    gradients: float  # gradient bytes present at the peak
    activations: float  # saved tensors + loss tensors at the peak
    weight_copies: float  # autocast's 16-bit copies of fp32 weights alive at the peak
    phase: str
    phases: dict[str, float]  # transient bytes of each phase, for the explanation
    offloaded: float = 0.0  # saved activations held in host memory (activation offload)
    blocks: float = 0.0  # the blocks' kept tensors on the GPU (all saved tensors, or the checkpointed inputs)
    framework_buffers: float = 0.0  # the caller's per-phase buffers alive at the peak (DeepSpeed's, ``deepspeed_zero``)
    gathered: float = 0.0  # ZeRO-3 / FSDP gathered weights alive at the peak (the caller's, per phase)


EAGER_PHASES = ("loss forward", "loss backward", "backward through the blocks", "optimizer step")


def prefetched_gather(block_params: float, block_bytes: float, prof: FrameworkProfile, budget: float = 0.0) -> float:
    """Bytes of the all-gather FSDP2 keeps ahead of the block computing: in the forward the current block's
    all-gather output stays until the next block's copy-out (its implicit prefetch overlaps the two), in
    the backward ``_backward_prefetch`` gathers the next block in reverse post-forward order while this
    one runs (torch.distributed.fsdp ``FSDPParamGroup.wait_for_unshard`` and ``_backward_prefetch``): one
    block's weights (``block_bytes`` for its ``block_params``). A profile with a prefetch budget (DeepSpeed's
    ``stage3_prefetch_bucket_size``) holds at most that many parameters ahead; ``budget``, where given, is the
    caller's (``deepspeed_zero.prefetch_elements``)."""
    budget = budget or prof.prefetch_params
    if budget and block_params > budget:
        return block_bytes * budget / block_params
    return block_bytes


def loss_bytes_per_logit(kind: str, compiled: bool, micro_batch: int = 1) -> tuple[float, float]:
    """Bytes per logit the loss holds at its forward and at its backward (module doc), for every loss but
    Liger's fused linear one (whose chunk does not scale with the logits). axolotl's ``chunked_ce`` is compiled
    whatever the plan's torch_compile says and copies its chunks above a micro-batch of 1."""
    if kind == "chunked_ce":
        return (2.0 if micro_batch <= 1 else 4.0), 4.0
    if kind == "chunked" and compiled:  # Inductor's partitioner keeps each chunk's bf16 logits
        return 2.0, 2 + 2 / CHUNKED_LOSS_CHUNKS
    if kind == "chunked":
        return 4 + 6 / CHUNKED_LOSS_CHUNKS, 4 + 10 / CHUNKED_LOSS_CHUNKS
    return LOSS_FORWARD_BYTES.get(kind, 10.0), LOSS_BACKWARD_BYTES.get(kind, 12.0)


def block_backward_transient(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile,
                             x: float) -> float:
    """Activation gradients one block's backward holds at once, at its MLP (module doc): autograd's
    MulBackward of act(gate)·up holds the incoming gradient and writes both input gradients, each
    tokens × intermediate in the projections' dtype. Liger's SwiGLU (``LigerSiLUMulFunction.backward``,
    ops/swiglu.py ``swiglu_backward``) writes both input gradients over its saved gate and up in place: only
    the incoming gradient is new. Routed experts adapted as stacked parameters (PEFT's ``ParamWrapper``) add the
    gradient of their rebuilt stack, written before the adapters' (``lora.merged_expert_bytes``)."""
    widths = 1.0 if (tr.liger and m.gated_mlp) else (3.0 if m.gated_mlp else 2.0)
    inter = (m.moe.expert_intermediate_size * m.moe.experts_per_token if m.is_moe and m.moe
             else m.intermediate_size) / lay.tp
    y = projection_bytes(tr, prof)
    T = lay.micro_batch * lay.seq_len / lay.cp
    return (widths * y * inter + x * m.hidden_size) * T + merged_expert_bytes(m, lay, tr, largest=True, prof=prof)


def eager_peak(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile, st: StateBytes,
               ops: LayerOps, head: HeadOps | None, layers: int, largest_grad: float = 0.0,
               backward_buffers: float = 0.0, step_buffers: float = 0.0,
               gathered: dict[str, float] | None = None) -> EagerPeak:
    """The transient bytes at the step's peak on a GPU holding ``layers`` blocks (and the head when
    ``head`` is given): what the states leave out (module doc). ``largest_grad``: the most gradient bytes alive at
    once where each gradient leaves as it is made, 0 where all stay: optimizer-in-backward's largest tensor, torchao
    ``offload_gradients``' not-yet-copied bound (``grad_offload.drained``). ``backward_buffers``: bytes the framework
    holds through the loss's and the blocks' backward, ``step_buffers`` at the optimizer step (DeepSpeed's
    gradient buckets and step copies, ``deepspeed_zero``). ``gathered``: ZeRO-3's gathered weights alive in each
    phase (the caller's ``memory._gathered_blocks``; ``deepspeed_zero.gathered_by_phase`` under DeepSpeed)."""
    T = lay.micro_batch * lay.seq_len / lay.cp
    h = m.hidden_size
    x = ops.residual_bytes
    persistent_grads = not prof.grads_freed_after_step or lay.accumulation > 1
    held = st.gradients if persistent_grads else 0.0  # accumulated over the micro-batches: alive in every phase
    grads_all = st.gradients  # at the end of the backward
    if largest_grad:  # optimizer-in-backward or torchao's offload_gradients: no accumulation, nothing held between
        grads_all = min(largest_grad, st.gradients)  # micro-batches, only what has not left yet
    per_block = x * h * T if tr.recompute == "full" else ops.saved  # each block's input, or all it saves
    working = ops.saved if tr.recompute == "full" else 0.0  # the block being recomputed
    working += block_backward_transient(m, lay, tr, prof, x)
    kept = layers * per_block
    offloaded = 0.0
    if tr.activation_offload:
        on_gpu = min(kept, (OFFLOAD_BLOCKS_ON_GPU if prof.offload_prefetch else 1.0) * per_block)
        kept, offloaded = on_gpu, kept - on_gpu
    blocks = kept
    kept += 8 * T  # token ids (and labels)
    copies = 2.0 * ops.cast_params * layers
    loss_f = loss_b = head_grad = 0.0
    liger_loss = False  # Liger's fused linear cross-entropy fills a trained head's gradient in the loss forward
    if head is not None:
        kept += (4 * h + x * h + 2 * h) * T  # final norm's fp32 input and output, the head's input
        copies += 2.0 * head.cast_params
        kind = loss_kind(tr, prof)
        liger_loss = kind == "fused_linear" and bool(tr.liger)
        if liger_loss:
            loss_f = loss_b = liger_loss_bytes(T, h, head.gemm.n)
        elif kind == "fused_linear":  # unsloth's: one chunk (gradient in place) + hidden-state gradient
            chunk = liger_chunk_rows(T, h, head.gemm.n) * head.gemm.n
            loss_f = loss_b = 2 * chunk + 2 * T * h
        else:
            per_f, per_b = loss_bytes_per_logit(kind, bool(tr.torch_compile), lay.micro_batch)
            loss_f, loss_b = per_f * head.logits, per_b * head.logits
        if head.gemm.trainable:
            head_grad = head.gemm.n * head.gemm.k * st.grad_bytes
    head_grad = max(head_grad, held)  # an accumulated head gradient is among the held ones
    # the blocks' backward starts with every other block's kept tensors and the head's gradient, and ends with
    # every gradient and no kept tensor; between, one grows as the other shrinks: the larger end is its peak
    # (recomputing, the block in hand keeps its input among its full saved set, ``working``)
    others = max(blocks - (per_block if tr.recompute == "full" else 0.0), 0.0)
    start, end = others + 8 * T + head_grad, grads_all
    grad_in_forward = head_grad if liger_loss else held
    phases = {
        "loss forward": grad_in_forward + kept + copies + loss_f,
        "loss backward": kept + copies + loss_b + head_grad + backward_buffers,
        "backward through the blocks": max(start, end) + working + backward_buffers,
        "optimizer step": grads_all + step_buffers,
    }
    gathered = gathered or {}
    phases = {k: v + gathered.get(k, 0.0) for k, v in phases.items()}
    phase = max(phases, key=lambda k: phases[k])
    grads_at = {"loss forward": grad_in_forward, "loss backward": head_grad,
                "backward through the blocks": end if end >= start else head_grad,
                "optimizer step": grads_all}[phase]
    copies_at = copies if phase.startswith("loss") else 0.0
    framework_at = {"loss forward": 0.0, "optimizer step": step_buffers}.get(phase, backward_buffers)
    gathered_at = gathered.get(phase, 0.0)
    acts = phases[phase] - grads_at - copies_at - framework_at - gathered_at
    return EagerPeak(grads_at, acts, copies_at, phase, phases, offloaded, blocks, framework_at, gathered_at)
