"""Gradient-norm clipping as the training frameworks run it: its passes over the gradients, launches and sync.

Nearly every training stack clips the global gradient norm before the optimizer step by default (Megatron
``--clip-grad 1.0``, the Hugging Face Trainer's ``max_grad_norm 1.0``, torchtitan's ``max_norm 1.0``; torchtune's
configs leave ``clip_grad_norm: null``). What each runs, read from its code (``FrameworkProfile.grad_clip_kernels``):

- ``foreach``: ``torch.nn.utils.clip_grad_norm_`` (pytorch/pytorch torch/nn/utils/clip_grad.py at 01a57d8, torch
  2.11; the Hugging Face Trainer through ``accelerator.clip_grad_norm_``, torchtitan's ``dist_utils.clip_grad_norm_``
  with ``foreach=True``, torchtune's recipes): per (device, dtype) group one ``_foreach_norm`` reading every
  gradient once, ``vector_norm`` of the stacked per-tensor norms, ``max_norm / (total + 1e-6)`` clamped at 1, then
  ``_foreach_mul_`` reading and writing every gradient — always, the clamp avoids a ``if clip_coef < 1`` that
  would sync the host. Three passes over the gradients in their dtype, no device-to-host sync.
- ``multi_tensor``: Megatron-Core's ``clip_grad_norm_fp32`` (NVIDIA/Megatron-LM megatron/core/optimizer/
  clip_grads.py at 0293807) with Transformer Engine installed: ``multi_tensor_l2norm`` over the main (fp32) grads
  this rank's optimizer owns — with the distributed optimizer its shard — an all-reduce of the squared norm, then
  ``multi_tensor_scale_tensor`` with the clamped coefficient: the same three passes, no ``.item()`` (without
  Transformer Engine, apex's path reads the norm with ``.item()`` and scales only when the norm exceeds the limit).
- ``deepspeed``: DeepSpeed's ZeRO optimizer (microsoft/DeepSpeed runtime/zero/stage_1_and_2.py at 022f223, the
  path ``core.training.deepspeed_zero`` describes): ``step()`` calls ``get_grad_norm_direct`` at every step,
  clipping or not — ``torch.linalg.norm(g.data.double())`` per gradient of the partition (the 16-bit gradient
  read, an fp64 copy written and read) — and ``unscale_and_clip_grads`` multiplies the fp32 gradient partition
  by 1/combined_scale (read and write, 8 B). Two kernels per gradient tensor, each a Python-level call. Every
  ZeRO stage is priced so; DeepSpeed's BF16_Optimizer and FP16_Optimizer (its stage-0/1 paths for 16-bit
  training) norm each tensor without the fp64 copy, so this is an upper bound for them.

The element count is the gradients this GPU's optimizer steps (after ZeRO/FSDP/distributed-optimizer sharding;
LoRA: the adapters'), in their dtype (``states``' gradient bytes). Multi-tensor kernels (``foreach``,
``multi_tensor``) handle at most 110 tensors and 320 blocks of 65,536 elements per launch (torch
aten/src/ATen/native/cuda/MultiTensorApply.cuh: ``depth_to_max_tensors[0]``, ``depth_to_max_blocks[0]``,
``kChunkSize``; torch's larger kernel-argument path on Hopper and newer launches fewer), so a pass is
max(⌈tensors/110⌉, ⌈elements/(320·65,536)⌉) launches; the norm adds a clean-up kernel, the coefficient a few
one-element kernels. Time = max(bytes / achievable bandwidth + kernels × the idle gap between kernels, the host's
Python-level calls × ``launch_s``), plus, where the loop reads the norm on the host every step
(``grad_norm_item``: the Hugging Face Trainer under DeepSpeed), one ``launch_s``: after the sync the GPU waits for
the host to issue the next kernel, and the host has lost its lead. The scalar all-reduce of the norm across the
sharding and model-parallel groups (tens of microseconds of latency) is not priced.

Memory: none beyond what is counted elsewhere — ``_foreach_norm`` returns one scalar per tensor; DeepSpeed's
fp64 copy of the largest gradient piece is ``deepspeed_zero``'s step transient. Under CPU offload the norm and
scaling run on the offload path and are not priced here. Scalars or NumPy arrays throughout (the search's quick
model prices its candidate rows with these same functions).
"""

from __future__ import annotations

from typing import NamedTuple

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.params import ParamBreakdown
from llmplan.core.training.kernel_rates import KERNEL_GAP_S
from llmplan.core.training.lora import adapter_params
from llmplan.core.workload import TrainingSettings

CHUNK = 65536  # elements per block of a multi-tensor kernel (MultiTensorApply.cuh kChunkSize)
MAX_BLOCKS = 320  # blocks per multi-tensor launch (depth_to_max_blocks[0])
MAX_TENSORS = 110  # tensors per multi-tensor launch with one tensor list (depth_to_max_tensors[0])
FP64 = 8.0  # DeepSpeed's g.double() copy, bytes per element
FP32 = 4.0  # DeepSpeed's fp32 gradient partition, bytes per element
# one-element kernels and Python-level calls beside the passes, counted from the code cited in the module doc:
# foreach: the norm's clean-up, stack, vector_norm, + 1e-6, max_norm / x, clamp (6 kernels; 7 calls with the two
# foreach ops); multi_tensor: the l2norm clean-up, two zeros, pow, all-reduce, pow(1/2), + 1e-6, division,
# clamp_max_ (9 kernels; 10 calls); deepspeed, beside 2 per tensor: get_grad_norm_direct's stack, square, sum,
# float, all-reduce, pow, isinf, isnan, logical_or, the -1 tensor and its select (4), scaled_global_norm's stack
# and norm, step's division by the loss scale, unscale_and_clip_grads' coefficient (3), clamp, combined scale,
# reciprocal and mul_ (24 kernels and calls)
SMALL_KERNELS = {"foreach": 6, "multi_tensor": 9, "deepspeed": 24}
HOST_CALLS = {"foreach": 7, "multi_tensor": 10, "deepspeed": 24}


class ClipTime(NamedTuple):
    """Seconds per optimizer step of the gradient clipping on one GPU, and what they are made of (a tuple: a
    training estimate builds one each time its settings change, and a frozen dataclass costs microseconds)."""

    seconds: float
    bytes: float  # moved through HBM
    kernels: float
    host_s: float  # the host's Python-level calls
    sync_s: float  # the device-to-host read of the norm (grad_norm_item)


def clips(tr: TrainingSettings, prof: FrameworkProfile) -> bool:
    """Whether the passes run: the plan clips (``training.grad_clip`` resolved to on), or DeepSpeed's optimizer
    computes the norm and scales the gradients anyway."""
    return tr.grad_clip == "on" or (tr.grad_clip == "auto" and prof.grad_clip) or prof.grad_clip_kernels == "deepspeed"


def grad_tensors(pb: ParamBreakdown, m: ModelSpec, tr: TrainingSettings) -> float:
    """Trainable gradient tensors of the whole model: every parameter tensor (full training); LoRA: A and B of
    each adapted projection in every layer, of the head's adapter (``lora_on_lm_head``) and the trained copies of
    the embeddings and head (``modules_to_save``). Only the launches depend on it."""
    if tr.method == "full":
        return float(sum(g.count for g in pb.groups))
    extra = (2 if tr.lora_on_lm_head else 0) + ((1 if m.tie_embeddings else 2) if tr.modules_to_save else 0)
    return 2.0 * len(tr.lora_targets) * m.num_layers + extra


def tensors_on_gpu(pb: ParamBreakdown, m: ModelSpec, tr: TrainingSettings, elements):
    """Gradient tensors this GPU's ``elements`` gradients fall in: the model's (``grad_tensors``) in proportion to
    its share of the trainable parameters, at least one. Contiguous shards (Megatron's distributed optimizer,
    DeepSpeed's partitions) hold about that many; FSDP holds a slice of every tensor of its stage, so more, smaller
    ones — the elements, not the tensors, set the launches of all but the smallest runs."""
    whole = float(pb.total) if tr.method == "full" else adapter_params(pb, m, None, tr)
    if whole <= 0:
        return 1.0
    n = grad_tensors(pb, m, tr) * elements / whole
    return n + (1.0 - n) * (n < 1.0)


def clip_bytes(elements, grad_bytes, kind: str):
    """Bytes the clipping moves through HBM for ``elements`` gradients of ``grad_bytes`` each (module doc)."""
    if kind == "deepspeed":
        return elements * (grad_bytes + 2 * FP64 + 2 * FP32)
    return elements * 3 * grad_bytes


def clip_kernels(elements, tensors, kind: str):
    """Kernels the clipping launches (module doc): per-tensor under DeepSpeed, else two multi-tensor passes of
    max(⌈tensors/110⌉, ⌈elements/(320·65,536)⌉) launches each."""
    if kind == "deepspeed":
        return 2 * tensors + SMALL_KERNELS[kind]
    by_tensors, by_blocks = _ceil(tensors / MAX_TENSORS), _ceil(elements / (MAX_BLOCKS * CHUNK))
    per_pass = by_tensors + (by_blocks - by_tensors) * (by_blocks > by_tensors)
    return 2 * per_pass + SMALL_KERNELS[kind]


def _ceil(x):
    """⌈x⌉ of a float or a NumPy array (floor division of the negation)."""
    return -(-x // 1)


def clip_time(elements, tensors, grad_bytes, prof: FrameworkProfile, bandwidth: float) -> ClipTime:
    """The clipping's seconds per step (module doc) for ``elements`` gradients in ``tensors`` tensors of
    ``grad_bytes`` each on this GPU, as ``prof`` (the profile in effect) runs it. Scalars or NumPy arrays."""
    kind = prof.grad_clip_kernels
    moved = clip_bytes(elements, grad_bytes, kind)
    kernels = clip_kernels(elements, tensors, kind)
    gpu = moved / bandwidth + kernels * KERNEL_GAP_S
    calls = 2 * tensors + HOST_CALLS[kind] if kind == "deepspeed" else HOST_CALLS[kind]
    host = calls * prof.launch_s
    sync = prof.launch_s if prof.grad_norm_item else 0.0
    busy = gpu + (host - gpu) * (host > gpu)
    some = elements > 0  # nothing trainable on this GPU: nothing to clip
    return ClipTime((busy + sync) * some, moved, kernels * some, host * some, sync * some)
