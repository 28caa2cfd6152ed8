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

- the gradient norm before the step (``get_grad_norm_direct`` in both files): ``g.double().norm(2)`` for one
  gradient at a time, an 8-byte copy of the largest gradient piece of the partition (ZeRO-1/2: a tensor, cut
  at the partition's edges; ZeRO-3: a tensor's partition), freed before the step copies are made: the step's
  transient is the larger of the two (``step_transient``).
- ZeRO-3's gathered parameters, per phase (``gathered_by_phase``; stage3.py, partitioned_param_coordinator.py,
  partition_parameters.py): on one rank nothing is gathered (``all_gather_coalesced`` returns
  ``_no_gather_coalesced``: the parameter points at its partition); ``step()`` first calls
  ``_partition_all_parameters``, so none is gathered at the step; a module's parameters stay gathered while
  they are used again within ``stage3_max_reuse_distance`` parameters of the trace (Qwen's 1e9): the output
  head from its forward through its backward (the next module in the trace), the recomputed block through its
  own backward; ``stage3_max_live_parameters`` (1e9) only caps the prefetch, ``stage3_prefetch_bucket_size``
  ("auto": 0.9 · hidden², as the Trainer fills it) sets it: whole parameters are queued while fewer than that
  many are in flight, so one matrix more than the bucket at most (``prefetch_elements``). A block's forward use
  is followed by its recompute only after the head's forward and backward (twice the head's parameters: 1.24e9
  for Qwen-7B, 2.5e9 for Qwen-72B, past 1e9), so the eager model's one block gathered, with the prefetch beside
  it, stands for the blocks' backward.

``reduce_bucket_size`` is the profile's (``zero2_reduce_bucket``, ``zero3_reduce_bucket``); "auto" is filled
by the Trainer with hidden_size² (transformers ``HfTrainerDeepSpeedConfig.trainer_config_finalize``).
The caching allocator's reserve for ZeRO-3's side-stream gathers (a block freed with ``record_stream`` onto the
compute stream, the coalesced gather's flat buffer alive beside its per-parameter ``torch.cat`` copies while
``AllGatherCoalescedHandle.wait`` runs) is priced in the overhead, not here: ``allocator_reserve``. What is not
priced: at fp16, the overflow check's per-gradient fp32 sum (ZeRO-1/2: 4 B × a gradient, ZeRO-3: a bool per
partition element), smaller than the norm's copy that follows it.
"""

from __future__ import annotations

from llmplan.core.framework_profile import FrameworkProfile
from llmplan.core.model import ModelSpec
from llmplan.core.workload import TrainingSettings

SUB_GROUP_ELEMENTS = 1_000_000_000  # zero_optimization.sub_group_size: DeepSpeed's default (runtime/zero/config.py)
STEP_BYTES_PER_PARAM = 2.0 + 4.0  # the flat 16-bit gradient copy and its fp32 copy, alive together
NORM_BYTES_PER_ELEMENT = 8.0  # get_grad_norm_direct's g.double(): one gradient piece in fp64


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


def prefetch_elements(m: ModelSpec, prof: FrameworkProfile) -> float:
    """ZeRO-3's prefetch in flight: ``stage3_prefetch_bucket_size`` (the profile's ``prefetch_params``; "auto",
    0, as the Trainer fills it: 0.9 · hidden²) and the one whole matrix that may cross it
    (``fetch_sub_module`` queues parameters while fewer than the bucket's are in flight), the block's widest:
    hidden × the larger of the MLP's and the attention's widths."""
    bucket = prof.prefetch_params or 0.9 * m.hidden_size * m.hidden_size
    return bucket + m.hidden_size * max(m.intermediate_size, m.q_width)


def largest_gradient_piece(largest_tensor: float, trainable_on_gpu: float, shard: int, stage: int) -> float:
    """Elements of the largest gradient the norm copies at once (module doc): ZeRO-3 partitions every tensor
    (``largest_tensor / shard``); ZeRO-1/2 hold whole tensors, cut at the partition's edges."""
    if stage == 3:
        return largest_tensor / max(shard, 1)
    return min(largest_tensor, trainable_on_gpu)


def step_transient(trainable_on_gpu: float, largest_piece: float, tr: TrainingSettings, stage: int) -> float:
    """The optimizer step's transient beside the states and gradients: the norm's fp64 copy of the largest
    gradient piece, then the flat 16-bit and fp32 gradient copies (``step_copies``), one after the other. None
    where the optimizer runs on the host (ZeRO-Offload computes its norms during the backward)."""
    copies = step_copies(trainable_on_gpu, tr, stage)
    if not copies:
        return 0.0
    return max(copies, NORM_BYTES_PER_ELEMENT * largest_piece)


def gathered_by_phase(blocks: float, head_bytes: float, prefetch: float, shard: int, stage: int
                      ) -> dict[str, float] | None:
    """ZeRO-3's gathered weights alive in each phase of the step under DeepSpeed (module doc); ``None`` where
    DeepSpeed does not run ZeRO-3 (the caller's one-block figure then holds in every phase). ``blocks``: one
    block gathered with its prefetch (``memory._gathered_blocks``); ``head_bytes``: the output head's 16-bit
    weight on the last stage (0 elsewhere), gathered from its forward through its backward with the prefetch
    of the last block's recompute beside it (``prefetch``)."""
    if stage != 3:
        return None
    if shard <= 1:  # one rank: the parameters are their own partitions, nothing is gathered
        return {}
    at_loss = head_bytes + prefetch if head_bytes else blocks
    return {"loss forward": at_loss, "loss backward": at_loss, "backward through the blocks": blocks,
            "optimizer step": 0.0}
