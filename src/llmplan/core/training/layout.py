"""Layout validity rules and the quantities every other training module derives from them.

``resolve(scenario)`` checks the parallel layout against the model and the cluster and
returns a ``Layout``: plain numbers (no pydantic) that the memory, FLOP, communication and
timing modules read in their hot paths. Each broken rule raises ``LayoutError`` naming the
rule and the fix, because a person editing the layout in the GUI needs to know what to
change, not that "something" is wrong.

Rank order is Megatron's default: tensor parallel innermost, then context, pipeline and
data parallel outermost; expert parallel groups are carved out of data parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.memo import IdentityCache
from llmplan.core.model import ModelSpec
from llmplan.core.training import batch
from llmplan.core.training.stages import RULES, StageSplit, split_layers
from llmplan.core.workload import Scenario
from llmplan.errors import LayoutError


@dataclass(frozen=True, slots=True)
class Layout:
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    vp: int  # virtual (interleaved) stages per GPU
    sp: bool  # sequence parallelism in effect (needs tp > 1)
    micro_batch: int
    global_batch: int
    accumulation: int  # micro-batches per DP replica per optimizer step (= pipeline micro-batches m)
    seq_len: int
    gpus: int
    gpus_per_node: int
    split: StageSplit  # layers per (pipeline stage, interleaved chunk)
    kv_replicated: bool  # fewer KV heads than tp: each rank holds a copy of a KV head
    shard: int  # ZeRO/FSDP sharding group (dp·cp, or smaller for hybrid sharding)
    warnings: tuple[str, ...]

    @property
    def max_stage_layers(self) -> int:
        """Layers of the slowest stage: the per-GPU time of every step is its time."""
        return self.split.slowest

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    def intra_node(self, stride: int, size: int) -> bool:
        """A group of ``size`` ranks ``stride`` apart lies within one node."""
        return size <= 1 or stride * size <= self.gpus_per_node


_LAYOUTS = IdentityCache(64)  # (model, parallelism, training, cluster, framework profile) objects + workload -> Layout


def resolve(sc: Scenario) -> Layout:
    """Validate the layout of ``sc`` and derive batch and stage sizes (see module docstring). Cached per spec
    objects (``core.memo``): it reads the model, the parallelism, the training settings, the cluster, the framework
    profile and the workload (the batch rule's, ``batch.target_sequences``); a broken rule raises every time."""
    objs = (sc.model, sc.parallelism, sc.training, sc.cluster, sc.framework_profile)
    hit = _LAYOUTS.get(objs, sc.workload)
    if hit is not None:
        return hit
    return _LAYOUTS.put(objs, sc.workload, _resolve(sc))


def _resolve(sc: Scenario) -> Layout:
    m, par, tr, cl = sc.model, sc.parallelism, sc.training, sc.cluster
    tp, pp, dp, cp, ep, vp = par.tp, par.pp, par.dp, par.cp, par.ep, par.virtual_stages
    warnings: list[str] = []
    gpus = tp * pp * dp * cp
    if gpus != cl.total_gpus:
        raise LayoutError(
            f"rule tp·pp·dp·cp = GPUs: {tp}·{pp}·{dp}·{cp} = {gpus}, but the cluster has {cl.total_gpus} GPUs "
            f"({cl.nodes} node(s) × {cl.gpus_per_node}); {_fix_dp(cl.total_gpus, tp, pp, cp)}"
        )
    prof = sc.framework
    for name, size, supported in (("tp", tp, prof.supports_tp), ("pp", pp, prof.supports_pp),
                                  ("cp", cp, prof.supports_cp), ("ep", ep, prof.supports_ep)):
        if size > 1 and not supported:
            raise LayoutError(
                f"rule the framework runs the layout: the {prof.name} profile has no {name.upper()} parallelism; "
                f"set parallelism.{name} to 1, or training.framework to one that has it (megatron)"
            )
    kv_replicated = check_head_split(m, tp)
    if kv_replicated:
        warnings.append(
            f"{m.num_kv_heads} KV heads on tp={tp}: each KV head is replicated on {tp // m.num_kv_heads} ranks"
        )
    if vp > 1 and pp == 1:
        raise LayoutError("rule interleaving needs a pipeline: virtual_stages > 1 requires pp > 1; set it to 1")
    split = split_layers(m.num_layers, pp, vp, par.first_stage_layers, par.last_stage_layers)
    if not split.is_even:
        warnings.append(_uneven_note(split, m.num_layers))
    if ep > 1:
        if not m.is_moe:
            raise LayoutError(f"rule ep needs experts: {m.name} has no MoE layers; set parallelism.ep to 1")
        if dp % ep:
            raise LayoutError(f"rule ep divides dp: ep={ep} does not divide dp={dp}; choose ep from "
                              f"{_divisors(dp, 1024)}")
        if m.moe and m.moe.num_experts % ep:
            raise LayoutError(f"rule experts divisible by ep: {m.moe.num_experts} experts over ep={ep}; "
                              f"choose ep from {_divisors(m.moe.num_experts, 1024)}")
    s = tr.seq_len
    if cp > 1 and s % (2 * cp):
        raise LayoutError(
            f"rule seq_len divisible by 2·cp: load-balanced causal context parallelism splits {s} tokens "
            f"into 2·{cp} chunks; choose a seq_len that is a multiple of {2 * cp}"
        )
    sp = par.sequence_parallel and tp > 1
    mb = tr.micro_batch
    gb, rounded = batch.for_layout(sc, tr, dp, pp, vp)
    if rounded:
        warnings.append(rounded)
    if gb % (mb * dp):
        raise LayoutError(
            f"rule global_batch = micro_batch·dp·accumulation: {gb} is not a multiple of "
            f"{mb}·{dp} = {mb * dp}; set training.global_batch to a multiple of {mb * dp}"
        )
    acc = gb // (mb * dp)
    if vp > 1 and acc % pp:
        raise LayoutError(
            f"rule interleaved pipeline needs micro-batches divisible by pp: {acc} micro-batches per step, "
            f"pp={pp}; make global_batch/(micro_batch·dp) a multiple of {pp}"
        )
    d = dp * cp
    shard = tr.shard_group or d
    if d % shard:
        raise LayoutError(
            f"rule shard_group divides dp·cp: {shard} does not divide {dp}·{cp} = {d}; choose "
            f"training.shard_group from {_divisors(d, 1_000_000)} (0 = all)"
        )
    if pp > 1 and acc < pp:
        warnings.append(f"only {acc} micro-batches for {pp} pipeline stages: most of the step is bubble")
    return Layout(tp, pp, dp, cp, ep, vp, sp, mb, gb, acc, s, gpus, cl.gpus_per_node, split,
                  kv_replicated, shard, tuple(warnings))


def _uneven_note(split: StageSplit, layers: int) -> str:
    """What an uneven split looks like and what it costs, for the warnings list."""
    pp, vp = len(split.chunks), len(split.chunks[0])
    note = f"uneven pipeline ({RULES[split.rule]}): {layers} layers over {pp} stages: {split.describe()}"
    if vp > 1:
        middle = set(split.chunks[1:-1])
        note += (f"; chunks {split.chunks[0]} on the first stage, {split.chunks[-1]} on the last"
                 + (f", {middle.pop()} on the others" if len(middle) == 1 else ""))
    slow = split.imbalance() - 1
    if slow > 0:
        note += f"; the slowest stage ({split.slowest} layers) sets the pace: steps {slow:.1%} longer than an even spread"
    return note


def check_head_split(m: ModelSpec, tp: int) -> bool:
    """Refuse a tensor-parallel degree the model's heads cannot be split over, as Megatron and vLLM do (each
    rank holds whole query heads; KV heads are split, or replicated when tp is a multiple of their count).
    Returns True when the KV heads are replicated. Training and inference layouts share this rule."""
    if m.num_heads % tp:
        raise LayoutError(
            f"rule heads divisible by tp: {m.num_heads} attention heads cannot be split over tp={tp}; "
            f"choose tp from {_divisors(m.num_heads, 64)}"
        )
    if m.mla is None and m.num_kv_heads % tp:
        if tp % m.num_kv_heads:
            raise LayoutError(
                f"rule KV heads divisible by tp: {m.num_kv_heads} KV heads cannot be split over tp={tp} "
                f"(nor replicated evenly); choose tp dividing {m.num_kv_heads} or a multiple of it"
            )
        return True
    return False


def _divisors(n: int, limit: int) -> str:
    return ", ".join(str(d) for d in range(1, min(n, limit) + 1) if n % d == 0)


def _fix_dp(total: int, tp: int, pp: int, cp: int) -> str:
    """The fix to suggest: the dp that fills the cluster, or, when none can, what to change instead."""
    inner = tp * pp * cp
    if total % inner:
        return (f"no dp fills it, because tp·pp·cp = {inner} does not divide {total}: change tp, pp or cp "
                f"(or the GPU count)")
    return f"change parallelism.dp to {total // inner}"
