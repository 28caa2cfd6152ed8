"""Peak memory of a step run by eager modeling code (Hugging Face transformers + PEFT + AMP).

The peak is the largest of the step's phases, not a sum of maxima. Each phase holds the
persistent states (weights, fp32 master/parameters, optimizer states; gradients too when they
persist across micro-batches or the framework keeps a buffer) plus what that phase adds:

- loss forward: every block's saved tensors (``ops.LayerOps.saved``; under gradient
  checkpointing only each block's input), the final norm's and head's inputs, autocast's 16-bit
  copies of fp32 weights (saved for the backward, or cached until the forward ends), and the
  loss's logits: transformers' ForCausalLMLoss keeps the bf16 logits (2 B), their fp32 copy
  (4 B) and log-softmax's fp32 output (4 B) — 10 bytes per logit;
- loss backward: NLL's gradient and log-softmax's input gradient (fp32 each) beside the saved
  log-probabilities — 12 bytes per logit — and the head's gradient as soon as it exists;
- backward through the blocks: the gradients accumulate while the saved tensors are freed; with
  checkpointing one block is recomputed at a time and holds its full saved set meanwhile;
- optimizer step: states and every gradient.
Fused linear cross-entropy (Liger) computes the head and loss in chunks and keeps neither the
logits nor their gradient whole: charged one chunk of 1,024 tokens' fp32 logits (4 B) and its
gradient (4 B) beside them.
Autocast's weight copies are freed layer by layer as the backward allocates the (larger, fp32)
gradients, so the backward phase counts the gradients alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.training.layout import Layout
from llmplan.core.training.ops import HeadOps, LayerOps
from llmplan.core.training.states import StateBytes
from llmplan.core.workload import TrainingSettings

LOSS_FORWARD_BYTES = {"upcast": 10.0, "fp32_logits": 6.0}  # per logit: (bf16 + fp32 copy +) fp32 log-probs
LOSS_BACKWARD_BYTES = {"upcast": 12.0, "fp32_logits": 12.0}
FUSED_CHUNK_ROWS = 1024  # Liger fused linear cross-entropy processes the tokens in chunks of about this size


@dataclass(frozen=True, slots=True)
class EagerPeak:
    gradients: float  # gradient bytes present at the peak
    activations: float  # saved tensors + loss tensors at the peak
    weight_copies: float  # autocast's 16-bit copies of fp32 weights alive at the peak
    phase: str
    phases: dict[str, float]  # transient bytes of each phase, for the explanation


def eager_peak(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile, st: StateBytes,
               ops: LayerOps, head: HeadOps | None, layers: int) -> EagerPeak:
    """The transient bytes at the step's peak on a GPU holding ``layers`` blocks (and the head when
    ``head`` is given): what the states leave out (module doc)."""
    T = lay.micro_batch * lay.seq_len / lay.cp
    h = m.hidden_size
    x = ops.residual_bytes
    persistent_grads = not prof.grads_freed_after_step or lay.accumulation > 1
    grads_all = 0.0 if persistent_grads else st.gradients
    if tr.recompute == "full":
        kept = layers * x * h * T  # each block's input
        working = ops.saved  # the block being recomputed
    else:
        kept = layers * ops.saved
        working = 0.0
    kept += 8 * T  # token ids (and labels)
    copies = 2.0 * ops.cast_params * layers
    loss_f = loss_b = head_grad = 0.0
    if head is not None:
        kept += (4 * h + x * h + 2 * h) * T  # final norm's fp32 input and output, the head's input
        copies += 2.0 * head.cast_params
        if prof.loss == "fused_linear" or tr.loss == "fused_linear":
            chunk = min(T, FUSED_CHUNK_ROWS) * head.logits / T
            loss_f, loss_b = 4 * chunk, 8 * chunk
        else:
            kind = tr.loss if tr.loss != "auto" else prof.loss
            loss_f = LOSS_FORWARD_BYTES.get(kind, 10.0) * head.logits
            loss_b = LOSS_BACKWARD_BYTES.get(kind, 12.0) * head.logits
        if not persistent_grads and head.gemm.trainable:
            head_grad = head.gemm.n * head.gemm.k * st.grad_bytes
    phases = {
        "loss forward": kept + copies + loss_f,
        "loss backward": kept + copies + loss_b + head_grad,
        "backward through the blocks": grads_all + working,
        "optimizer step": grads_all,
    }
    phase = max(phases, key=lambda k: phases[k])
    grads_at = {"loss backward": head_grad, "backward through the blocks": grads_all,
                "optimizer step": grads_all}.get(phase, 0.0)
    copies_at = copies if phase.startswith("loss") else 0.0
    acts = phases[phase] - grads_at - copies_at
    return EagerPeak(grads_at, acts, copies_at, phase, phases)
