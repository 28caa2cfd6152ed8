"""What PyTorch's caching allocator keeps reserved beyond the allocated bytes when ZeRO-3 / FSDP gathers on a
side stream (issue 26: sharded runs read as reserved memory, as nvidia-smi or ``max_memory_reserved`` show it).

The rules, read from the allocator (pytorch/pytorch ``c10/cuda/CUDACachingAllocator.cpp``, commit 001074d):

- every block belongs to the stream it was allocated on; a freed block is cached for that stream only
  (``get_free_block``: a cached block serves a request only if ``block->stream == p.stream()``);
- a block freed after ``record_stream`` onto another stream leaves the allocated bytes at once (``free`` lowers
  ``allocated_bytes``) but is not reusable until the recorded stream's event completes (``insert_events``;
  ``process_events`` at the next ``malloc``): meanwhile it is reserved and not allocated;
- a request is rounded up to 512 B (``kMinBlockSize``); a fresh segment (``get_allocation_size``) is 2 MiB
  (``kSmallBuffer``) for a request of at most 1 MiB (``kSmallSize``), 20 MiB (``kLargeBuffer``) for one below
  10 MiB (``kMinLargeAlloc``), else the request rounded up to 2 MiB (``kRoundLarge``).

What the frameworks do with it (the profile's ``gather_pending_blocks`` and ``gather_flat_copy``):

- FSDP1 (torch ``distributed/fsdp``: accelerate's FSDP under the Trainer, Answer.AI's train.py, Composer)
  allocates each unit's padded unsharded flat parameter on its unshard stream (``_runtime_utils._unshard``:
  ``handle.unshard()`` under ``stream(unshard_stream)``) and frees it after ``_no_dispatch_record_stream`` onto
  the compute stream (``_flat_param.FlatParamHandle._free_unsharded_flat_param``). With ``limit_all_gathers``
  (accelerate's default, train.py's and Composer's setting) the rate limiter (``_limiter_utils._FreeEventQueue``,
  two all-gathers in flight) makes the host wait, before each all-gather, for the free event of the
  second-newest reshard, so when a unit is allocated the newest resharded unit alone may still await its event:
  one gathered unit more than the allocated bytes count (the current unit and the one prefetched beside it).
  The flat parameters are whole units, each in its own segment: their rounding to 2 MiB is reserved too.
- DeepSpeed ZeRO-3 (v0.12.3, commit 6ea44d0: ``partitioned_param_coordinator.fetch_sub_module`` and
  ``partition_parameters``) gathers on its all-gather stream and frees each parameter with ``record_stream``
  onto the compute stream (``free_param``): at least the block released just before the next is fetched awaits
  its event. Its rate limiter (``__max_ongoing_fetch_events = 2``) waits on events of the all-gather stream,
  not the compute stream, so a host running further ahead of the GPU leaves more blocks pending: one is the
  bound the code gives, not the most. ``AllGatherCoalescedHandle.wait`` also copies the coalesced flat
  all-gather output into one tensor per parameter (``torch.cat``) on the all-gather stream while the flat buffer
  is alive: that stream's pool holds one fetch's flat buffer beyond what stays allocated after the wait.
- FSDP2 (``fully_shard``: torchtitan, torchtune) frees its all-gather outputs only after making the gather
  streams wait on the copy-out event, with no ``record_stream``, so a freed block is reusable at once: 0.
- Megatron's distributed optimizer gathers into persistent buffers: 0.

Pools are never given back during training (no ``empty_cache``), so the side stream's pool keeps the most it ever
held: where a phase's peak holds fewer gathered blocks than another phase (DeepSpeed's optimizer step gathers
nothing), the difference stays reserved too (``memory._eager_stage``). Not priced: more pending blocks where a
host runs further ahead (timing, not code), FSDP1's unsharded gradients freed with ``record_stream`` onto its
post-backward stream (a full fine-tune's, not LoRA's small adapters'), NCCL's own buffers, and what loading the
model leaves reserved before training.
"""

from __future__ import annotations

import math

MIN_BLOCK = 512  # kMinBlockSize: every request is rounded up to a multiple of it
SMALL_SIZE = 1 << 20  # kSmallSize: the largest request served from the small pool
SMALL_BUFFER = 2 << 20  # kSmallBuffer: a small-pool segment
MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc: requests below it (and above 1 MiB) get a 20 MiB segment
LARGE_BUFFER = 20 << 20  # kLargeBuffer
ROUND_LARGE = 2 << 20  # kRoundLarge: larger requests get their size rounded up to 2 MiB


def is_scalar(x) -> bool:
    """A float, int or NumPy scalar rather than an array (``np.ndim(x) == 0``, asked without NumPy: the engine's
    floats must not import it, a tenth of the app's start-up; only the search's quick model passes arrays)."""
    return getattr(x, "ndim", 0) == 0


def segment_bytes(request):
    """Bytes of the fresh segment the allocator reserves for one request of ``request`` bytes
    (``round_size`` then ``get_allocation_size``). Floats or arrays."""
    if is_scalar(request):
        size = MIN_BLOCK * math.ceil(max(float(request), 1.0) / MIN_BLOCK)
        if size <= SMALL_SIZE:
            return float(SMALL_BUFFER)
        if size < MIN_LARGE_ALLOC:
            return float(LARGE_BUFFER)
        return float(ROUND_LARGE * math.ceil(size / ROUND_LARGE))
    import numpy as np

    size = MIN_BLOCK * np.ceil(np.maximum(request, 1.0) / MIN_BLOCK)
    return np.where(size <= SMALL_SIZE, SMALL_BUFFER,
                    np.where(size < MIN_LARGE_ALLOC, LARGE_BUFFER, ROUND_LARGE * np.ceil(size / ROUND_LARGE)))


def gather_reserve(unit_bytes, fetch_bytes, held: int, prof):
    """Bytes the allocator keeps reserved beyond the allocated bytes for ZeRO-3 / FSDP gathers (module doc):
    ``prof.gather_pending_blocks`` freed units awaiting the compute stream, each in a segment of its own
    (``segment_bytes(unit_bytes)``); under FSDP1's flat parameters, the 2 MiB rounding of the ``held`` units the
    allocated bytes count; under DeepSpeed (``prof.gather_flat_copy``), one fetch's flat all-gather buffer
    (``fetch_bytes``: the prefetch in flight, or the unit where nothing is prefetched). 0 for a profile with
    neither (FSDP2's per-parameter tensors and Megatron's buffers are not flat blocks freed on a side stream).
    Floats or arrays; the caller applies it only where blocks are gathered per use (ZeRO-3 over more than one
    GPU)."""
    pending = prof.gather_pending_blocks
    if not pending and not prof.gather_flat_copy:
        return 0.0 * unit_bytes
    segment = segment_bytes(unit_bytes)
    out = pending * segment
    if prof.gather_flat_copy and is_scalar(fetch_bytes):
        out = out + segment_bytes(fetch_bytes or unit_bytes)
    elif prof.gather_flat_copy:
        import numpy as np

        out = out + segment_bytes(np.where(fetch_bytes > 0, fetch_bytes, unit_bytes))
    else:  # FSDP1: each counted unit is a flat parameter in its own segment
        out = out + held * (segment - unit_bytes)
    return out


def describe(prof) -> str:
    """The term in words, for the memory explanation."""
    parts = []
    if prof.gather_pending_blocks:
        parts.append(f"{prof.gather_pending_blocks} gathered block(s) freed with record_stream, awaiting the "
                     "compute stream's event")
    if prof.gather_flat_copy:
        parts.append("DeepSpeed's flat all-gather buffer beside its per-parameter copies")
    else:
        parts.append("the 2 MiB segment rounding of the gathered flat parameters")
    return "side-stream gather reserve: " + " + ".join(parts)
