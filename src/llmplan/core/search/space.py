"""Every valid training layout for a model on up to N GPUs, as NumPy columns.

The rules are Megatron-LM's and DeepSpeed's:
- TP divides the attention heads (and the KV heads, or is a multiple of them: KV heads are then
  replicated) and stays inside a node or spans two: across nodes its all-reduces run over the
  network, priced by the same placement and NCCL model as the engine, so the planner keeps TP
  inside a node unless the fabric makes the wider TP pay (``planner`` says which and why);
- TP·CP·PP·DP = the GPUs used; PP ≤ layers (uneven stages allowed, split as the training
  engine does, ``llmplan.core.training.stages``: the slowest stage has ⌈L/PP⌉ layers and
  sets the pace); interleaving needs a layer in every chunk (only the embedding's and the
  head's chunks may be empty) and micro-batches divisible by PP;
- the split must be one Megatron-Core runs with its pipeline arguments (``stages.megatron_flags``):
  the same number of layers in every chunk of a rank — even, the embedding/loss accounted as a
  layer each, or uneven first/last stages. No 1.25 layers per chunk (80 layers over PP16 × v4),
  no PP32 × v3 on 126 layers. The search does not write ``--pipeline-model-parallel-layout``
  strings, which can express any split;
- CP splits the sequence in 2·CP chunks (load-balanced causal attention), so seq % 2·CP = 0;
- EP divides the routed experts and the data-parallel size (experts live inside DP);
- ZeRO-2/3 do not combine with pipeline parallelism (DeepSpeed refuses it), except ZeRO-2 under a profile
  whose ``zero2_with_pp`` says so (Llama 3's FSDP beside PP); ZeRO on DP·CP = 1 only with an offload or as the
  plan states it (``framework_profile.one_rank_zero``: it shards nothing there, so it is not proposed);
- the global batch (sequences) = micro-batch · accumulation · DP.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from llmplan.core.search.quick import Columns
from llmplan.core.search.quick_memory import RECOMPUTE_NAMES
from llmplan.core.search.shape import ModelShape
from llmplan.core.training.stages import automatic_split_fits, megatron_flags
from llmplan.core.workload import ParallelLayout, TrainingSettings

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
CP_CHOICES = (1, 2, 4, 8, 16)
VP_CHOICES = (1, 2, 3, 4, 6, 8)
MB_CHOICES = (1, 2, 4, 8, 16, 32)


def _tp_ok(s: ModelShape, tp: int) -> bool:
    return s.heads % tp == 0 and (s.kv_heads % tp == 0 or tp % s.kv_heads == 0)


def _tp_limit(gpus: int, gpus_per_node: int) -> int:
    """TP inside a node, or across two nodes when the layout spans several."""
    return 2 * gpus_per_node if gpus > gpus_per_node else gpus_per_node


def _layout_max(name: str) -> int:
    """``ParallelLayout``'s own upper bound on a field, so the search never builds a layout it refuses."""
    return next(m.le for m in ParallelLayout.model_fields[name].metadata if getattr(m, "le", None) is not None)


def _grid(s: ModelShape, gpus: int, gpus_per_node: int):
    """(tp, cp, pp, dp) with TP·CP·PP·DP = ``gpus`` within ``ParallelLayout``'s bounds and TP within its
    node limit: the sizes before the model's and the framework's rules (a cluster the schema allows,
    8 × 200,000 GPUs, gave dp 1.6 M and a validation traceback)."""
    max_pp, max_dp = _layout_max("pp"), _layout_max("dp")
    for tp in TP_CHOICES:
        if tp > _tp_limit(gpus, gpus_per_node) or gpus % tp:
            continue
        for cp in CP_CHOICES:
            if (gpus // tp) % cp:
                continue
            rest = gpus // (tp * cp)
            for pp in range(max(1, -(-rest // max_dp)), min(s.layers, rest, max_pp) + 1):
                if not rest % pp:
                    yield tp, cp, pp, rest // pp


def _vps(s: ModelShape, pp: int) -> list[int]:
    return [v for v in VP_CHOICES if automatic_split_fits(s.layers, pp, v) and megatron_flags(s.layers, pp, v) is not None]


def base_layouts(s: ModelShape, gpus: int, gpus_per_node: int, seq_len: int) -> list[tuple[int, ...]]:
    """(tp, cp, pp, dp, ep, vp) for exactly ``gpus`` GPUs that the module doc's rules allow."""
    out = []
    for tp, cp, pp, dp in _grid(s, gpus, gpus_per_node):
        if not _tp_ok(s, tp) or (cp > 1 and seq_len % (2 * cp)):
            continue
        eps = [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256)
               if e <= dp and dp % e == 0 and s.num_experts % e == 0] if s.num_experts > 1 else [1]
        out.extend((tp, cp, pp, dp, ep, vp) for ep in eps for vp in _vps(s, pp))
    return out


def exclusions(s: ModelShape, gpu_counts: Iterable[int], gpus_per_node: int, seq_len: int,
               global_batch: int) -> tuple[tuple[str, int, str], ...]:
    """Why the search leaves layouts out: (reason, how many (tp, cp, pp, vp, dp) combinations, one
    example), most frequent first. The rules of the module doc that the framework enforces; layouts it
    runs but that lose on time or memory are ranked, not excluded."""
    found: dict[str, list] = {}

    def add(reason: str, example: str) -> None:
        found.setdefault(reason, [0, example])[0] += 1

    for gpus in gpu_counts:
        for tp, cp, pp, dp in _grid(s, gpus, gpus_per_node):
            if not _tp_ok(s, tp):
                add(f"TP must divide the {s.heads} attention heads and the {s.kv_heads} KV heads", f"TP{tp}")
            elif cp > 1 and seq_len % (2 * cp):
                add(f"CP splits the sequence in 2·CP load-balanced chunks: {seq_len} tokens are not divisible by "
                    "2·CP", f"TP{tp} CP{cp}")
            elif global_batch and global_batch % dp:
                add(f"DP must divide the global batch of {global_batch:,} sequences (the batch stays fixed)",
                    f"TP{tp} PP{pp} DP{dp}" + (f" CP{cp}" if cp > 1 else ""))
            else:
                for vp in VP_CHOICES[1:] if pp > 1 else ():
                    label = f"PP{pp}×v{vp} on {s.layers} layers"
                    if not automatic_split_fits(s.layers, pp, vp):
                        add("every interleaved chunk needs a layer", label)
                    elif megatron_flags(s.layers, pp, vp) is None:
                        add("Megatron-Core needs the same number of layers in every chunk of a pipeline rank "
                            "(even split, embedding/loss counted as a layer, or uneven first/last stages)",
                            f"{label} ({s.layers / (pp * vp):.2f} layers per chunk)")
                if megatron_flags(s.layers, pp, 1) is None:
                    add("Megatron-Core needs equal middle pipeline stages (even split, embedding/loss counted as "
                        "a layer, or uneven first/last stages)", f"PP{pp} on {s.layers} layers")
    return tuple(sorted(((r, n, ex) for r, (n, ex) in found.items()), key=lambda x: -x[1]))


def training_columns(s: ModelShape, gpu_counts: Iterable[int], gpus_per_node: int, seq_len: int,
                     global_batch: int, offload: bool, flash_attention: bool = True,
                     zero2_with_pp: bool = False, single_gpu_offload: bool = False,
                     zero_stages: tuple[int, ...] = (0, 1, 2, 3),
                     single_gpu_zero_stages: tuple[int, ...] | None = None,
                     one_rank_zero: tuple[int, ...] = (0,)) -> Columns:
    """All valid layouts for each GPU count in ``gpu_counts`` (offload: the CPU-offload variants only);
    ``zero2_with_pp``: the framework profile's (module doc); ``single_gpu_offload``: the profile has a one-GPU
    offload without ZeRO (``FrameworkProfile.single_gpu_offload_style``: torchtune's single-device recipes with
    torchao's CPUOffloadOptimizer), so an offloading layout on one GPU may also run at ZeRO-0; ``zero_stages``
    and ``single_gpu_zero_stages`` (one GPU; None: ``zero_stages``): the stages the framework runs
    (``framework_profile.zero_choices``: unsloth 0 only, torchtune's single-device recipes 0 on one GPU);
    ``one_rank_zero``: the stages a layout with one data-parallel rank runs without offload
    (``framework_profile.one_rank_zero``: 0, and a stage the plan states)."""
    rows = [b for n in gpu_counts for b in base_layouts(s, n, gpus_per_node, seq_len)]
    if not rows:
        return _empty()
    base = np.array(rows, dtype=np.int64)
    mbs = np.array(MB_CHOICES, dtype=np.int64)
    zeros = np.array((1, 2, 3) if offload and not single_gpu_offload else (0, 1, 2, 3), dtype=np.int64)
    # with FlashAttention the scores are never stored, so selective recompute saves nothing
    recomputes = np.array((0, 2) if flash_attention else (0, 1, 2), dtype=np.int64)
    grid = np.stack(np.meshgrid(np.arange(len(base)), mbs, zeros, recomputes, indexing="ij"), -1).reshape(-1, 4)
    b = base[grid[:, 0]]
    tp, cp, pp, dp, ep, vp = (b[:, i] for i in range(6))
    mb, zero, rc = grid[:, 1], grid[:, 2], grid[:, 3]
    if global_batch > 0:
        ok = global_batch % (mb * dp) == 0
        accum = np.where(ok, global_batch // np.maximum(mb * dp, 1), 0)
    else:
        ok = mb == mb.min()  # no batch given: one micro-batch per replica per step
        accum = np.ones_like(mb)
    ok &= np.isin(zero, one_rank_zero) | (dp * cp > 1) | offload  # ZeRO-Offload also runs on one GPU
    if offload and single_gpu_offload:  # offload at ZeRO-0: the one-GPU recipes' optimizer, on one GPU only
        ok &= (zero > 0) | (tp * pp * dp * cp == 1)
    ok &= (pp == 1) | (zero <= (2 if zero2_with_pp else 1))
    runs = np.isin(zero, zero_stages)
    if single_gpu_zero_stages is not None:
        runs = np.where(tp * pp * dp * cp == 1, np.isin(zero, single_gpu_zero_stages), runs)
    ok &= runs
    ok &= (vp == 1) | (accum % pp == 0)
    keep = np.nonzero(ok)[0]
    one = np.ones(len(keep), dtype=np.int64)
    return Columns(tp=tp[keep], pp=pp[keep], vp=vp[keep], dp=dp[keep], cp=cp[keep], ep=ep[keep],
                   zero=zero[keep], offload=one * int(offload), recompute=rc[keep], mb=mb[keep],
                   accum=accum[keep])


def _empty() -> Columns:
    z = np.zeros(0, dtype=np.int64)
    return Columns(z, z, z, z, z, z, z, z, z, z, z)


def gpu_counts(total_gpus: int, gpus_per_node: int, use_fewer: bool) -> list[int]:
    """The cluster sizes to consider: all of it, or also powers of two of nodes (and of GPUs in one node)."""
    if not use_fewer:
        return [total_gpus]
    nodes = total_gpus // gpus_per_node
    counts = {total_gpus}
    k = 1
    while k < gpus_per_node:
        counts.add(k)
        k *= 2
    k = 1
    while k <= nodes:
        counts.add(k * gpus_per_node)
        k *= 2
    return sorted(c for c in counts if c <= total_gpus)


def check_layout(s: ModelShape, p, t, gpus_per_node: int, zero2_with_pp: bool = False,
                 one_rank_zero: tuple[int, ...] = (0,)) -> None:
    """Raise ``LayoutError`` naming the first rule (module doc) that ``p``/``t`` break; ``one_rank_zero`` as in
    ``training_columns``."""
    from llmplan.errors import LayoutError

    rules = [
        (p.tp <= _tp_limit(p.tp * p.pp * p.dp * p.cp, gpus_per_node),
         f"parallelism.tp ({p.tp}) must fit in one node of {gpus_per_node} GPUs, or two nodes"),
        (_tp_ok(s, p.tp), f"parallelism.tp ({p.tp}) must divide the {s.heads} attention heads and the "
                          f"{s.kv_heads} KV heads (or be a multiple of them)"),
        (p.pp <= s.layers, f"parallelism.pp ({p.pp}) cannot exceed the {s.layers} layers"),
        (p.cp == 1 or t.seq_len % (2 * p.cp) == 0,
         f"training.seq_len ({t.seq_len}) must be divisible by 2·cp ({2 * p.cp})"),
        (p.ep == 1 or (p.dp % p.ep == 0 and s.num_experts % p.ep == 0),
         f"parallelism.ep ({p.ep}) must divide parallelism.dp ({p.dp}) and the {s.num_experts} experts"),
        (p.pp > s.layers or automatic_split_fits(s.layers, p.pp, p.virtual_stages),
         f"parallelism.virtual_stages ({p.virtual_stages}) needs pp > 1 and a layer in every one of the "
         f"pp·virtual_stages = {p.pp * p.virtual_stages} chunks of the {s.layers} layers"),
        (t.zero_stage in one_rank_zero or p.dp * p.cp > 1 or t.offload != "none",
         "training.zero_stage > 0 needs data parallelism (dp·cp > 1) or offload, or a stage the framework runs"),
        (p.pp == 1 or t.zero_stage <= (2 if zero2_with_pp else 1),
         "training.zero_stage 2 and 3 do not combine with pipeline parallelism (pp > 1); use zero_stage 0 or 1"
         + (" (2 under this framework)" if zero2_with_pp else "")),
        (not t.global_batch or t.global_batch % (t.micro_batch * p.dp) == 0,
         f"training.global_batch ({t.global_batch}) must be a multiple of micro_batch·dp "
         f"({t.micro_batch}·{p.dp})"),
    ]
    for ok, message in rules:
        if not ok:
            raise LayoutError(message)
    accum = t.global_batch // (t.micro_batch * p.dp) if t.global_batch else 1
    if p.virtual_stages > 1 and accum % p.pp:
        raise LayoutError(f"interleaving needs the micro-batches per step ({accum}) to be a multiple of pp ({p.pp})")


def layout_of(cols: Columns, row: int, base: TrainingSettings, sequence_parallel: bool = True
              ) -> tuple[ParallelLayout, TrainingSettings]:
    p = ParallelLayout(tp=int(cols.tp[row]), pp=int(cols.pp[row]), dp=int(cols.dp[row]), cp=int(cols.cp[row]),
                       ep=int(cols.ep[row]), virtual_stages=int(cols.vp[row]),
                       sequence_parallel=sequence_parallel and int(cols.tp[row]) > 1)
    mb, dp, accum = int(cols.mb[row]), int(cols.dp[row]), int(cols.accum[row])
    t = base.model_copy(update={
        "micro_batch": mb, "global_batch": mb * dp * accum if base.global_batch else 0,
        "zero_stage": int(cols.zero[row]),
        # an offload layout offloads where the plan already does (NVMe stays NVMe), else to the CPU
        "offload": (base.offload if base.offload != "none" else "cpu") if cols.offload[row] else "none",
        "recompute": RECOMPUTE_NAMES[int(cols.recompute[row])],
    })
    return p, t
