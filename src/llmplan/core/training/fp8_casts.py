"""fp8 training as the frameworks run it: which matmuls are fp8, and what the casts around them cost.

Neither framework runs a whole step in fp8. Both convert the block's linear layers only; attention
(flash/SDPA), the output head and the loss stay in bf16, at the bf16 rates:

- torchao ``Float8Linear`` (torchtitan's Float8, ``training.framework = "fsdp2"``): every ``nn.Linear``
  but the one named ``output`` (torchtitan ``float8.py`` at 9dec370a, ``module_filter_fn=lambda mod, fqn:
  fqn != "output"``), with dynamic tensorwise scaling (torchao ``float8_linear.py`` at eab345c2, the
  versions of torchtitan's H100 performance rows). All three matmuls run ``torch._scaled_mm`` in fp8:
  output = input · weight, grad_input = grad_output · weight, grad_weight = grad_outputᵀ · input. Each
  fp8 operand is made by an amax reduction (``max(abs(x))``: read 2 B per bf16 element) and a scaled
  cast (read 2 B, write 1 B). ``_scaled_mm`` takes its first operand row-major and its second
  column-major (``preprocess_addmm`` in ``float8_ops.py``), so the backward copies the fp8 weight
  transposed for grad_input, and the fp8 grad_output and input for grad_weight (read 1 B, write 1 B
  each). With FSDP the weight is cast on its shard before the fp8 all-gather
  (``enable_fsdp_float8_all_gather``, docs/float8.md at 9dec370a); that cast stands where the bf16
  weight cast of FSDP's mixed precision stood, which ``ops.layer_ops`` charges already
  (``cast_params``). Without ZeRO-3 sharding the forward casts the weight itself (amax + cast, 5 B).
  Under tensor parallelism with sequence parallelism (``Float8ColwiseParallel``/``Float8RowwiseParallel``,
  ``float8_tensor_parallel.py``) a column-parallel linear's input is cast on its sequence shard, before the
  fp8 all-gather, and a row-parallel linear's output gradient likewise before its backward all-gather: those
  amax and cast passes move 1/tp of the tensor; the transposed copies are made of the gathered tensor.
- NVIDIA Transformer Engine (Megatron-Core, DeepSpeed, the Hugging Face stack through accelerate), the
  default ``DelayedScaling`` recipe (NVIDIA/TransformerEngine v1.12, 7a7225c4, 2024-11-18): the scale
  comes from the amax history, and the amax of this step is taken by the cast kernel itself, so there is
  no separate amax pass. ``LayerNormLinear`` and ``LayerNormMLP`` fuse the norm with the cast (the norm
  writes fp8 in place of bf16, ``layernorm_linear.py``; the transposed copy that grad_weight reads is one
  more pass, read 1 B, write 1 B); other linears run ``fp8_cast_transpose_fused`` on their input
  (``linear.py``: read 2 B, write 1 + 1 B), and every linear the same on its output gradient (4 B). All
  three GEMMs run in fp8 (``override_linear_precision`` defaults to (False, False, False); ``Format.HYBRID``:
  e4m3 forward, e5m2 gradients). Megatron's output layer is not a Transformer Engine module: bf16. The
  weights' fp8 copies are cached over the micro-batches of a step (``is_first_microbatch``), so no weight
  cast is charged per micro-batch (4 B per weight once per step is not modelled).

Inputs shared by several linears (q, k and v read the attention norm's output; gate and up the MLP
norm's) are cast once: Transformer Engine fuses those linears, and torch.compile, which torchtitan's
Float8 is meant to run under (its ``float8.py`` note), merges the identical casts (AOTAutograd "applies CSE
to the graph before partitioning", ``cse = True`` in pytorch ``torch/_functorch/config.py``). The passes are
counted unfused: Inductor may fold a cast and its transposed copy into one kernel (a byte per element less).

Under torchtitan's operator-level selective checkpointing the policy keeps every second matmul's
output for Float8 as for bf16 (its dispatch mode sees the Float8 matmul as ``aten.mm`` — modes run before
tensor subclasses — and torchtitan's Float8 rows report the memory of its compiled bf16 rows less 0.2 GiB,
where recomputing every Float8 matmul would free their saved outputs, about 23 GiB at 8B), and keeps
``abs`` and ``max``: the recompute casts its inputs again but takes no second amax (3 of the 5 B).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # ops imports this module
    from llmplan.core.training.ops import Gemm

Fp8Recipe = Literal["transformer-engine", "torchao-tensorwise"]

# the per-element bytes of each pass (module doc)
AMAX = 2.0  # max(abs(x)) over a bf16 tensor: read 2 B
CAST = 3.0  # scaled cast bf16 -> fp8: read 2 B, write 1 B
TRANSPOSE = 2.0  # a column-major copy of an fp8 tensor: read 1 B, write 1 B
CAST_TRANSPOSE = 4.0  # Transformer Engine's cast_transpose: read 2 B, write both fp8 layouts

# projections that read the same tensor (the norm's output): one cast for the group
_SHARED_INPUT = {"q_proj": "attn-in", "k_proj": "attn-in", "v_proj": "attn-in", "q_a_proj": "attn-in",
                 "kv_a_proj_with_mqa": "attn-in", "gate_proj": "mlp-in", "up_proj": "mlp-in",
                 "qkv_proj": "attn-in", "gate_up_proj": "mlp-in"}  # the last two: ``ops.fuse_projections``


@dataclass(frozen=True, slots=True)
class Fp8Casts:
    """Bytes and launches of one block's fp8 casts for one micro-batch on one GPU."""

    forward: float  # bytes the forward's casts move
    backward: float  # bytes the backward's casts and transposed copies move
    recompute: float  # bytes a selective_op recompute moves again (the casts of the forward, no amax)
    forward_kernels: float
    backward_kernels: float
    recompute_kernels: float
    recipe: str


def _input_groups(gemms: Sequence[Gemm]) -> list[tuple[float, bool, bool, str]]:
    """Each distinct input of the block's fp8 matmuls: its elements, whether a norm produced it, whether a
    matmul reading it computes a weight gradient (and so needs its transposed copy), and its TP split."""
    groups: dict[str, tuple[float, bool, bool, str]] = {}
    for g in gemms:
        prefix, _, leaf = g.name.rpartition(".")
        shared = _SHARED_INPUT.get(leaf)
        key = f"{prefix}.{shared}" if shared else g.name
        elems, _, trains, _ = groups.get(key, (0.0, False, False, ""))
        groups[key] = (max(elems, g.m * g.k * g.count), shared is not None, trains or g.trainable, g.split)
    return list(groups.values())


def block_casts(gemms: Sequence[Gemm], recipe: Fp8Recipe, weights_sharded: bool, seq_shards: float = 1.0) -> Fp8Casts:
    """The casts around a block's fp8 matmuls (``Gemm.fp8``), by the framework's recipe (module doc).
    ``weights_sharded``: ZeRO-3/FSDP, where torchao casts the weight shard before its fp8 all-gather;
    ``seq_shards``: tp under sequence parallelism (1 without), the shards torchao casts before gathering."""
    fp8 = [g for g in gemms if g.fp8]
    inputs = _input_groups(fp8)
    grads = sum(g.m * g.n * g.count for g in fp8)  # each linear's output gradient
    n_in, n_mm = float(len(inputs)), sum(g.count for g in fp8)
    if recipe == "torchao-tensorwise":
        x = sum(e / (seq_shards if split == "column" else 1.0) for e, _, _, split in inputs)  # cast before gather
        go = sum(g.m * g.n * g.count / (seq_shards if g.split == "row" else 1.0) for g in fp8)
        weights = sum(g.n * g.k * g.count for g in fp8)
        w_fwd = 0.0 if weights_sharded else (AMAX + CAST) * weights
        # for grad_weight: grad_output's row-major transpose and the input's column-major copy
        wgrad = sum(g.m * g.n * g.count for g in fp8 if g.trainable) + sum(e for e, _, t, _ in inputs if t)
        n_wgrad = sum(g.count for g in fp8 if g.trainable) + sum(1.0 for _, _, t, _ in inputs if t)
        return Fp8Casts(
            forward=(AMAX + CAST) * x + w_fwd,
            # grad_output: amax + cast; the fp8 weight's column-major copy for grad_input; the wgrad copies
            backward=(AMAX + CAST) * go + TRANSPOSE * (weights + wgrad),
            recompute=CAST * (x + (0.0 if weights_sharded else weights)),
            forward_kernels=2 * n_in + (0.0 if weights_sharded else 2 * n_mm),
            backward_kernels=3 * n_mm + n_wgrad, recompute_kernels=n_in + (0.0 if weights_sharded else n_mm),
            recipe=recipe)
    normed = sum(e for e, by_norm, _, _ in inputs if by_norm)
    other = sum(e for e, by_norm, _, _ in inputs if not by_norm)
    fwd = TRANSPOSE * normed + CAST_TRANSPOSE * other
    return Fp8Casts(forward=fwd, backward=CAST_TRANSPOSE * grads, recompute=fwd, forward_kernels=n_in,
                    backward_kernels=n_mm, recompute_kernels=n_in, recipe=recipe)
