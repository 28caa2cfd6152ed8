"""Kernels of a training step that no module's own formula names: autograd's gradient sums where a tensor feeds
several ops, the zero-filled gradients of slices, the flash-attention backward's sum over grouped K/V heads, the
embedding lookup and its dense backward, and the dtype traffic autocast adds around an fp32 residual stream.

Each is read in the code that runs (versions as in docs/training.md, "Kernels outside the modules"); its bytes are
the reads and writes of the tensors' shapes, priced at the existing measured rate of its kind
(``kernel_rates.elementwise_time``: adds and casts pointwise, fills, copies, reductions and gathers at the copy
rate). Nothing here is set from a profiled step.

- Gradient sums (``fork_sums``): PyTorch's autograd engine adds the gradients of a tensor that several ops read
  (``InputBuffer::add``, torch/csrc/autograd/input_buffer.cpp: one add kernel per extra gradient, read two, write
  one). A block's input feeds its norm and the residual add (two forks per block: before attention and before the
  MLP); the attention norm's output feeds every separate q/k/v projection (3 in Hugging Face and torchtitan code, 1
  where the framework fuses them: ``FrameworkProfile.fused_projections``), the MLP norm's output gate and up (or
  the router and the experts' dispatch, and shared experts); a LoRA adapter reads its module's input too (PEFT
  ``lora.Linear.forward``: ``result = self.base_layer(x)`` and ``lora_A(dropout(x))``). Not for the projections of
  unsloth's fused LoRA kernels (``LoRA_QKV``/``LoRA_MLP`` accumulate dX in their own GEMMs). Under torch.compile
  Inductor may fold a sum into the kernel that reads it; it is priced as the fused-kernel profiles price it, a
  separate add (an upper bound: the fold saves the sum's write and re-read).
- ``rotate_half`` (transformers ``modeling_llama.rotate_half``): ``x[..., :d/2]`` and ``x[..., d/2:]`` are slices
  whose backward (``slice_backward``, torch/csrc/autograd/FunctionsManual.cpp) writes a zero-filled full-width
  gradient and copies the half into it: two fills (1 write each) and two half copies (read and write) per rotated
  tensor, 4 element-writes' worth of bytes per element of q and k.
- Grouped K/V heads under SDPA's flash backend (transformers passes ``enable_gqa`` when there is no mask,
  ``use_gqa_in_sdpa``): the backward writes dK and dV at the query heads' width and sums each group
  (``mha_bwd`` in aten/src/ATen/native/transformers/cuda/flash_attn/flash_api.cpp: ``dk_expanded``,
  ``at::sum_out``): read 2·q, write 2·kv bytes per token for each of K and V, 2 reductions.
- The embedding (``F.embedding``, every profile): the lookup reads and writes one row per token; its backward
  (``embedding_dense_backward_cuda``, aten/src/ATen/native/cuda/Embedding.cu) zero-fills the whole vocabulary-sized
  gradient, then with ≤ 3,072 indices adds each token's gradient row in one kernel (read the gradient, read and write
  the row), above that sorts the indices and sums per row (``embedding_backward_cuda_kernel``,
  EmbeddingBackwardKernel.cu: fp32 partial sums written and read, then the rows written; about 15 kernels: arange,
  the radix sort, unique_by_key, an exclusive sum and five of its own). Tied embeddings: the head's weight gradient
  and the embedding's are summed into the one ``.grad``.
"""

from __future__ import annotations

from llmplan.core.framework_profile import FrameworkProfile, transformers_modules_eager
from llmplan.core.model import ModelSpec
from llmplan.core.training.elementwise import Elementwise
from llmplan.core.training.kernel_rates import EW_COPY, EW_POINTWISE
from llmplan.core.training.layout import Layout
from llmplan.core.workload import TrainingSettings

# the GEMMs (``params`` names' last part, under a prefix) that read one input each: the attention norm's output,
# the MLP norm's, the attention output and the dense MLP's activation product
_INPUTS = (({"q_proj", "k_proj", "v_proj", "qkv_proj", "q_a_proj", "kv_a_proj_with_mqa"}, ("attn.",)),
           ({"gate_proj", "up_proj", "gate_up_proj", "router"}, ("mlp.", "moe.")),
           ({"o_proj"}, ("attn.",)),
           ({"down_proj"}, ("mlp.",)))
# embedding_dense_backward_cuda: at most this many indices take the one-kernel path (Embedding.cu)
EMBEDDING_ONE_KERNEL_INDICES = 3072
EMBEDDING_SORT_KERNELS = 15.0  # the sorting path's launches besides the zero fill (module doc)


def backward_op(name: str, moved: float, kernels: float, kind: str = EW_POINTWISE, upcast: float = 0.0):
    """An op that runs in the backward only: ``moved`` bytes in ``kernels`` launches."""
    return Elementwise(name, moved, 0.0, 1.0, kernels, kind, backward_upcast=upcast, backward_only=True)


def _consumers(gemms, names: set[str], prefixes: tuple[str, ...]) -> float:
    """How many separate ops read one input, per average block: each GEMM of ``names`` under ``prefixes`` (a fused
    module's once: ``ops.fuse_projections`` merged them), the routed experts' dispatch once (in the MoE layers'
    share), and each LoRA adapter of those modules (its ``lora_A``)."""
    n = 0.0
    experts = False
    for g in gemms:
        if not g.name.startswith(prefixes):
            continue
        parts = g.name.split(".")
        if parts[-1] == "lora_A":
            n += g.count if parts[-2] in names and "experts" not in parts else 0.0
        elif parts[-1] in names and g.split == "expert":
            experts = True
        elif parts[-1] in names:
            n += g.count
    return n + (1.0 if experts else 0.0)


def fork_sums(gemms, tr: TrainingSettings, prof: FrameworkProfile, x: float, y: float, widths: tuple[float, ...],
              rep: float, T: float) -> list[Elementwise]:
    """The backward's gradient sums of one average block (module doc). ``widths``: (hidden size, attention output,
    MLP intermediate) on this GPU. The two residual forks add in the stream's dtype ``x`` (sharded 1/tp under
    sequence parallelism); where n separate projections read one input, n − 1 adds of its gradient: the norms'
    outputs in the stream's dtype in Hugging Face code (16-bit in Megatron's and torchtitan's), the attention output in 16 bits, the down
    projection's input in the projections' dtype ``y``. The experts' share of an MoE model is taken as one layer's
    dispatch (balanced routing)."""
    h, q, inter = widths
    adds = [(2.0, x * h / rep)]
    if prof.kernels != "triton":
        z = x if transformers_modules_eager(prof) else 2.0
        for (names, prefixes), width, dt in zip(_INPUTS, (h, h, q, inter), (z, z, 2.0, y), strict=True):
            n = _consumers(gemms, names, prefixes)
            if n > 1:
                adds.append((n - 1, dt * width))
    moved = sum(3 * k * w for k, w in adds) * T
    return [backward_op("gradient sums at forks (autograd)", moved, sum(k for k, _ in adds))]


def rotate_half_backward(y: float, q: float, kv: float, T: float):
    """``rotate_half``'s slice gradients for q and k (module doc): per element 2 zero-filled writes and 2 half
    copies (read + write), in q's dtype; 4 kernels per tensor."""
    return backward_op("rotate_half slice gradients: zero fills and copies", 4 * y * (q + kv) * T, 8, EW_COPY)


def sdpa_gqa_sums(q: float, kv: float, T: float):
    """Flash attention's backward with fewer K/V heads than query heads: dK and dV written at the query width and
    summed per group (module doc), bf16."""
    return backward_op("flash backward: dK, dV summed over grouped heads", 2 * (2 * q + 2 * kv) * T, 2, EW_COPY)


def amp_rotary(q: float, kv: float, T: float) -> list:
    """Hugging Face rotary under autocast with an fp32 residual stream (fp32 parameters): ``LlamaRotaryEmbedding``
    returns cos and sin in the dtype of the hidden states it is given (fp32), so ``q·cos + rotate_half(q)·sin`` with
    bf16 q and k writes fp32 (per element: the two muls read 2 B and write 4, neg and cat move 2 and 4 B in bf16,
    the add reads 8 and writes 4: 30 B in 5 kernels per tensor), and SDPA's autocast casts q and k back to bf16
    (6 B). The bf16 × fp32 muls take PyTorch's casting (unrolled) path, priced at the widening cast's rate (12 of
    the 30 B). Backward: the muls read the fp32 gradient and write fp32 (8 B each), autograd casts each down to the
    bf16 input (6 B each), neg (2 B) and two adds of the three bf16 gradients of q (12 B): 42 B in 7 kernels per
    tensor; the casts' backward casts the bf16 gradient up (6 B)."""
    return [Elementwise("rotary (rotate_half) in fp32: cos, sin in the stream's dtype", 30 * (q + kv) * T, 10, 42 / 30,
                        14, EW_POINTWISE, upcast=12 / 30),
            Elementwise("autocast casts of fp32 q, k to bf16 for SDPA", 6 * (q + kv) * T, 2, 1.0, 2, EW_POINTWISE,
                        backward_upcast=1.0)]


def embedding_ops(m: ModelSpec, lay: Layout, tr: TrainingSettings, prof: FrameworkProfile, x: float) -> tuple:
    """The embedding's kernels per micro-batch on this GPU (module doc), in the stream's dtype ``x`` (the embedding
    output's: fp32 parameters under AMP and QLoRA's upcast, 16-bit otherwise), its vocabulary split over tp; and,
    for Hugging Face modeling code, ``LlamaRotaryEmbedding``'s cos and sin tables (under ``torch.no_grad``: the
    position ids cast to fp32, ``cat((freqs, freqs))``, cos, sin, the two ``* attention_scaling`` and, in a 16-bit
    stream, the two casts to its dtype: 8 B per element each fp32 kernel, 6 B each cast)."""
    T = lay.micro_batch * lay.seq_len / lay.cp
    h, rows = float(m.hidden_size), m.vocab_size / lay.tp
    ops = [Elementwise("embedding lookup", 2 * x * h * T, 1, 0.0, 0, EW_COPY)]
    if m.position == "rope" and transformers_modules_eager(prof) and not tr.torch_compile:
        d = float(m.head_dim)
        ops.append(Elementwise("rotary cos, sin tables", (40 + (12 if x == 2.0 else 0)) * d * T,
                               7 if x == 4.0 else 9, 0.0, 0, EW_POINTWISE))
    if not (tr.method == "full" or tr.modules_to_save):
        return tuple(ops)
    ops.append(backward_op("embedding gradient zero fill", x * rows * h, 1, EW_COPY))
    if T <= EMBEDDING_ONE_KERNEL_INDICES:
        ops.append(backward_op("embedding backward: rows added", 3 * x * h * T, 1, EW_COPY))
    else:
        ops.append(backward_op("embedding backward: sorted, summed, scattered", (2 * x + 8) * h * T,
                               EMBEDDING_SORT_KERNELS, EW_COPY))
    if m.tie_embeddings:
        ops.append(backward_op("tied embedding: head and embedding gradients summed", 3 * x * rows * h, 1))
    return tuple(ops)
