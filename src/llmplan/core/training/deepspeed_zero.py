"""The buffers DeepSpeed's ZeRO optimizer allocates beside the model states, under the Hugging Face Trainer.

A profile whose ``zero_engine`` is ``deepspeed`` (the Trainer's ``--deepspeed``) runs a plan with
``training.zero_stage`` > 0 as DeepSpeed does: 16-bit module weights, 16-bit gradients and an fp32 master in
the optimizer (``framework_profile.in_effect``). Read from DeepSpeed v0.12.3 (microsoft/DeepSpeed tag v0.12.3,
commit 6ea44d0, 2023-11-10, the release of Qwen's published fine-tuning table), what it adds:

- ZeRO-1/2 (runtime/zero/stage_1_and_2.py): ``backward()`` allocates the gradient bucket ("ipg") of
  ``reduce_bucket_size`` elements in the model dtype, and with ``overlap_comm`` a second one ("double buffers
  to avoid data access conflict"), whatever the number of trainable parameters; the backward's epilogue
  releases them (``_release_ipg_buffers``). They exist in the loss's backward and the blocks' backward.
- ZeRO-3 (runtime/zero/stage3.py): one ``__ipg_bucket_flat_buffer`` of ``reduce_bucket_size`` elements,
  allocated when the optimizer is built and kept: in every phase.
- the optimizer step: ``flatten(averaged_gradients).to(fp32)`` (ZeRO-1/2 ``step``, ZeRO-3
  ``_prepare_fp32_grad_for_sub_group``) makes a flat 16-bit copy of the partition's gradients and an fp32
  copy of it, both alive while the copy runs, beside the 16-bit gradients: 6 B per parameter of the
  partition under ZeRO-1/2, of one sub-group (at most ``sub_group_size`` parameters, default 1e9) under ZeRO-3.

``reduce_bucket_size`` is the profile's (``zero2_reduce_bucket``, ``zero3_reduce_bucket``); "auto" is filled
by the Trainer with hidden_size² (transformers ``HfTrainerDeepSpeedConfig.trainer_config_finalize``).
What is not priced: stage 3's parameter prefetch (``stage3_prefetch_bucket_size``, ``stage3_max_live_parameters``)
beyond the next block's all-gather the eager model already holds (``eager_memory.prefetched_gather``), and
the caching allocator's fragmentation from ZeRO-3's gather-and-free of whole layers.
"""

from __future__ import annotations

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.workload import TrainingSettings

SUB_GROUP_ELEMENTS = 1_000_000_000  # zero_optimization.sub_group_size: DeepSpeed's default (runtime/zero/config.py)
STEP_BYTES_PER_PARAM = 2.0 + 4.0  # the flat 16-bit gradient copy and its fp32 copy, alive together


def bucket_elements(m: ModelSpec, stage: int, prof: FrameworkProfile) -> float:
    """The gradient bucket's elements: the profile's reduce_bucket_size for the stage, "auto" (0) as the
    Trainer fills it, hidden_size²."""
    setting = prof.zero3_reduce_bucket if stage == 3 else prof.zero2_reduce_bucket
    return float(setting or m.hidden_size * m.hidden_size)


def _dtype_bytes(tr: TrainingSettings) -> float:
    return 4.0 if tr.precision == "fp32" else 2.0


def persistent_bucket(m: ModelSpec, tr: TrainingSettings, prof: FrameworkProfile, stage: int) -> float:
    """ZeRO-3's flat gradient bucket, held for the whole run (module doc); 0 otherwise. ``stage``: the stage
    DeepSpeed runs at (``Scenario.deepspeed_stage``, 0: no DeepSpeed)."""
    return bucket_elements(m, stage, prof) * _dtype_bytes(tr) if stage == 3 else 0.0


def backward_buckets(m: ModelSpec, tr: TrainingSettings, prof: FrameworkProfile, stage: int) -> float:
    """ZeRO-1/2's gradient buckets, alive from the loss's backward to the end of the blocks' backward: one, or
    two with overlap_comm (the profile's ``overlap_grad_reduce``)."""
    if stage not in (1, 2):
        return 0.0
    return (2 if prof.overlap_grad_reduce else 1) * bucket_elements(m, stage, prof) * _dtype_bytes(tr)


def step_copies(trainable_on_gpu: float, tr: TrainingSettings, stage: int) -> float:
    """The optimizer step's flat 16-bit and fp32 gradient copies of this GPU's partition (ZeRO-1/2) or of
    one sub-group of it (ZeRO-3): ``trainable_on_gpu`` is the partition's parameters. None where the
    optimizer runs on the host (ZeRO-Offload)."""
    if not stage or tr.offload != "none":
        return 0.0
    n = min(trainable_on_gpu, SUB_GROUP_ELEMENTS) if stage == 3 else trainable_on_gpu
    return STEP_BYTES_PER_PARAM * n
