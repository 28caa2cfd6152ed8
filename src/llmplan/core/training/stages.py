"""How the transformer layers are split over pipeline stages and their interleaved chunks.

Real runs often use a pipeline size that does not divide the layer count: Llama 3 405B has
126 layers and was trained with 16 stages (Llama 3 paper, arXiv 2407.21783 §3.3.2), which
balanced the pipeline by giving the first and the last stage one layer fewer, because they
also hold the embedding and the output head + loss. Megatron-LM does the same with
``--decoder-first/last-pipeline-num-layers`` or ``account_for_embedding/loss_in_pipeline_split``.

The rule (one rule; the even split and Llama 3's are special cases of it):

1. Stage totals. With ``first_stage_layers`` / ``last_stage_layers`` given, those stages hold
   exactly that many; the other stages share the rest. Each of the shared stages gets
   ⌊rest/k⌋ and the remainder goes one layer each to the *middle* stages, from stage p-2
   down to stage 1, then to the last stage, never to the first — because the first stage
   already keeps the most micro-batches in flight plus the embedding, and the last the
   head and the fp32 logits. 126 layers over 16 stages: 7, 8 × 14, 7 (= Llama 3's split).
2. Chunks inside a stage (interleaving, v > 1): ⌊n/v⌋ layers each; the extra layers go to
   the chunks farthest from the embedding (first stage and middle stages: the later chunks)
   or from the head (last stage: the earlier chunks). 126 over 16×2: stage 0 = (3, 4),
   stage 15 = (4, 3), the others (4, 4) — Megatron's ``account_for_embedding_in_pipeline_split``
   and ``account_for_loss_in_pipeline_split`` layout, where the embedding and the loss each
   take one layer's place in the first and the last chunk.
3. Every chunk holds at least one layer, except the first stage's first chunk and the last
   stage's last chunk, which may hold only the embedding or only the head and loss
   (Llama 3's own layout with one-layer chunks); hence pp ≤ layers.

Pure integer arithmetic; ``LayoutError`` names the broken rule and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from llmplan.errors import LayoutError

RULES = {  # how a split came about, for warnings and explanations (module doc)
    "even": "even split",
    "llama3": "Llama 3 split, one layer fewer on the first and the last stage",
    "balanced": "balanced split, the remainder on the middle stages",
    "explicit": "explicit first/last_stage_layers, the rest balanced",
}


@dataclass(frozen=True, slots=True)
class StageSplit:
    """Layers per (stage, chunk). ``chunks[s][c]``: chunk c of stage s (model chunk c·p + s)."""

    chunks: tuple[tuple[int, ...], ...]
    rule: str  # "even", "llama3", "balanced" or "explicit" (see RULES)
    per_stage: tuple[int, ...] = field(init=False)  # layers per stage
    slowest: int = field(init=False)  # layers of the most loaded stage (by layers; the head is not counted here)
    before_last: int = field(init=False)  # most layers on any stage but the last (0 with one stage)
    is_even: bool = field(init=False)  # every chunk holds the same number of layers
    _described: str = field(init=False, repr=False, compare=False)  # describe()'s text

    def __post_init__(self) -> None:  # derived once (``split_layers`` is cached): read in the hot path
        per_stage = tuple(sum(c) for c in self.chunks)
        object.__setattr__(self, "per_stage", per_stage)
        object.__setattr__(self, "slowest", max(per_stage))
        object.__setattr__(self, "before_last", max(per_stage[:-1], default=0))
        object.__setattr__(self, "is_even", len({n for c in self.chunks for n in c}) == 1)
        runs: list[list[int]] = []
        for n in per_stage:
            if runs and runs[-1][0] == n:
                runs[-1][1] += 1
            else:
                runs.append([n, 1])
        object.__setattr__(self, "_described", ", ".join(f"{n} ×{k}" if k > 1 else str(n) for n, k in runs))

    def imbalance(self) -> float:
        """Slowest stage's layers over the mean (1.0 for an even split): the step-time stretch."""
        stages = self.per_stage
        return self.slowest * len(stages) / sum(stages)

    def describe(self) -> str:
        """Run-length list of the stage totals, e.g. ``7, 8 ×14, 7`` (every estimate's step-time figure
        shows it)."""
        return self._described


def stage_totals(layers: int, pp: int, first: int | None = None, last: int | None = None) -> tuple[int, ...]:
    """Layers per stage (rule 1 of the module doc)."""
    if pp > layers:
        raise LayoutError(
            f"rule pp ≤ layers: {pp} pipeline stages for {layers} layers leaves stages without a layer; "
            f"set parallelism.pp to at most {layers}"
        )
    if pp == 1:
        if first is not None or last is not None:
            raise LayoutError(
                "rule first/last_stage_layers need a pipeline: with pp = 1 the only stage holds every layer; "
                "remove parallelism.first_stage_layers and last_stage_layers or set pp > 1"
            )
        return (layers,)
    fixed = {s: n for s, n in ((0, first), (pp - 1, last)) if n is not None}
    free = [s for s in range(pp) if s not in fixed]
    rest = layers - sum(fixed.values())
    given = " + ".join(f"{name} {n}" for name, n in (("first_stage_layers", first), ("last_stage_layers", last))
                       if n is not None)
    if not free:
        if rest:
            raise LayoutError(
                f"rule first_stage_layers + last_stage_layers = layers with pp = 2: {given} = "
                f"{layers - rest}, but the model has {layers} layers; make them add up to {layers}"
            )
        return (fixed[0], fixed[pp - 1])
    if rest < len(free):
        raise LayoutError(
            f"rule first_stage_layers + last_stage_layers + middle stages = layers: {given} leaves {rest} "
            f"layer(s) for {len(free)} other stage(s), at least one each; lower them so that they add up to at "
            f"most {layers - len(free)}"
        )
    base, extra = divmod(rest, len(free))
    totals = dict.fromkeys(free, base) | fixed
    order = list(range(pp - 2, 0, -1)) + [s for s in (pp - 1, 0) if s not in fixed]
    for s in order[:extra]:
        totals[s] += 1
    return tuple(totals[s] for s in range(pp))


@lru_cache(maxsize=1024)
def split_layers(layers: int, pp: int, vp: int = 1, first: int | None = None,
                 last: int | None = None) -> StageSplit:
    """Layers per (stage, chunk) for ``layers`` over ``pp`` stages of ``vp`` chunks (module doc).

    Cached: a pure function of five integers with a frozen result, asked for on every estimate
    (an invalid split raises, and exceptions are not cached)."""
    totals = stage_totals(layers, pp, first, last)
    made: dict[tuple[int, bool], tuple[int, ...]] = {}
    for s, n in enumerate(totals):
        key = (n, s == pp - 1 and pp > 1)
        if key not in made:
            made[key] = _chunks(n, vp, key[1])
    chunks = tuple(made[(n, s == pp - 1 and pp > 1)] for s, n in enumerate(totals))
    if min(totals) < vp:  # some chunk is empty: only the embedding's and the head's may be
        _check_empty_chunks(chunks, totals)
    if first is not None or last is not None:
        rule = "explicit"
    elif layers % (pp * vp) == 0:
        rule = "even"
    elif pp >= 3 and totals[0] == totals[-1] == totals[1] - 1 and len(set(totals[1:-1])) == 1:
        rule = "llama3"
    else:
        rule = "balanced"
    return StageSplit(chunks, rule)


def _check_empty_chunks(chunks: tuple[tuple[int, ...], ...], totals: tuple[int, ...]) -> None:
    pp, vp = len(chunks), len(chunks[0])
    for s, stage in enumerate(chunks):
        allowed_empty = set()
        if pp > 1 and s == 0:
            allowed_empty.add(0)
        if pp > 1 and s == pp - 1:
            allowed_empty.add(vp - 1)
        if any(n == 0 and c not in allowed_empty for c, n in enumerate(stage)):
            where = "first" if s == 0 else "last" if s == pp - 1 else f"middle (stage {s + 1})"
            need = vp - 1 if allowed_empty else vp
            raise LayoutError(
                f"rule a layer in every pipeline chunk: the {where} stage holds {totals[s]} layer(s) for "
                f"{vp} interleaved chunks and needs at least {need} (only the first stage's first chunk and "
                f"the last stage's last chunk may hold just the embedding or the head); lower "
                f"parallelism.virtual_stages, parallelism.pp, or change first/last_stage_layers"
            )


def automatic_split_fits(layers: int, pp: int, vp: int) -> bool:
    """Whether the automatic split of ``layers`` over ``pp`` × ``vp`` chunks is valid, in O(1)
    (the search asks this for thousands of layouts; ``split_layers`` says why not)."""
    if pp > layers or (pp == 1 and vp > 1):
        return False
    if pp == 1:
        return True
    base, extra = divmod(layers, pp)
    last = base + (1 if extra == pp - 1 else 0)
    middle = base + (1 if extra >= pp - 2 else 0)
    return base >= vp - 1 and last >= vp - 1 and (pp < 3 or middle >= vp)


def _chunks(n: int, vp: int, head_side: bool) -> tuple[int, ...]:
    """``n`` layers over ``vp`` chunks; the extras go away from the embedding (or the head)."""
    base, extra = divmod(n, vp)
    if head_side:
        return tuple(base + (1 if c < extra else 0) for c in range(vp))
    return tuple(base + (1 if c >= vp - extra else 0) for c in range(vp))


def warmup_chunks(pp: int, vp: int, stage: int, micro_batches: int) -> int:
    """Chunk forward passes whose activations stage ``stage`` holds at the end of the warm-up.

    1F1B (v = 1): min(m, p - s). Interleaved (Megatron's schedule): 2·(p-s-1) + (v-1)·p warm-up
    forwards plus the first steady-state one; on the first stage that is p·v + p - 1 chunks, i.e.
    p·(1 + (p-1)/(p·v)) stages' worth (Korthikanti et al. 2022 §4.2.3). A step has only m·v chunk
    forwards, so no stage holds more: Megatron-LM's forward_backward_pipelining_with_interleaving
    caps the warm-up at m·v and, when m = p, runs every forward before the first backward
    (core/pipeline_parallel/schedules.py: ``num_warmup_microbatches = min(..., total_num_microbatches)``
    and the ``num_microbatches == pipeline_parallel_size`` case). Llama 3 405B at 16,384 GPUs is such a
    step: 16 micro-batches on 16 stages (arXiv 2407.21783, Table 4).
    """
    if pp == 1:
        return 1
    if vp == 1:
        return min(micro_batches, pp - stage)
    if micro_batches == pp:
        return micro_batches * vp
    return min(2 * (pp - stage - 1) + (vp - 1) * pp + 1, micro_batches * vp)


def layers_in_flight(split: StageSplit, stage: int, micro_batches: int) -> int:
    """Layer × micro-batch activations stage ``stage`` holds at its peak (the warm-up's end).

    Megatron's interleaved schedule runs forwards in groups of p micro-batches per chunk
    (chunk 0 for micro-batches 0…p-1, then chunk 1, …), so the k-th forward is chunk
    (k // p) mod v; summing those chunks' layers gives the uneven-chunk total exactly.
    """
    pp = len(split.chunks)
    chunks = split.chunks[stage]
    vp = len(chunks)
    k = warmup_chunks(pp, vp, stage, micro_batches)
    if vp == 1:
        return k * chunks[0]
    return sum(chunks[(i // pp) % vp] for i in range(k))


def megatron_flags(layers: int, pp: int, vp: int) -> str | None:
    """The Megatron-Core arguments that run the automatic split of ``layers`` over ``pp`` × ``vp`` chunks,
    or None when only an explicit ``--pipeline-model-parallel-layout`` string could.

    Megatron-Core (megatron/training/arguments.py and TransformerConfig.__post_init__, main at
    2026-08-22) accepts three ways to split layers over the pipeline, each with the same number of
    layers in every virtual chunk of a rank:
    - the even split: layers % pp == 0 and (layers / pp) % vp == 0;
    - ``--account-for-embedding-in-pipeline-split`` / ``--account-for-loss-in-pipeline-split``: the
      embedding and the loss each take one layer's place, (layers + e + l) % pp == 0 and the per-rank
      count divisible by vp (the first chunk of the first rank, the last of the last, one layer short);
    - ``--decoder-first/last-pipeline-num-layers``: the first and last ranks hold any multiple of vp,
      the middle ranks an equal share, divisible by vp.
    So 80 layers over 16 × 4 chunks (5 per rank, 1.25 per chunk) is refused, and 126 layers over
    32 × 3 (no split above with ⌈126/32⌉ = 4 layers on the slowest rank) too; 126 over 16 × 8 runs with
    both account-for flags (Llama 3 405B's own split, arXiv 2407.21783 §3.3.2)."""
    if pp == 1:
        return "" if vp == 1 else None
    try:
        split = split_layers(layers, pp, vp)
    except LayoutError:
        return None
    totals = split.per_stage
    middle = set(totals[1:-1])
    if len(middle) > 1:
        return None
    m = next(iter(middle)) if middle else None
    if m is not None and m % vp:
        return None
    first, last = split.chunks[0], split.chunks[-1]
    if len(set(totals)) == 1 and totals[0] % vp == 0:
        return ""
    n = m if m is not None else max(totals)
    one_short_first = totals[0] == n - 1 and n % vp == 0 and first[0] == n // vp - 1
    one_short_last = totals[-1] == n - 1 and n % vp == 0 and last[-1] == n // vp - 1
    even_first, even_last = totals[0] == n and n % vp == 0, totals[-1] == n and n % vp == 0
    if (one_short_first or even_first) and (one_short_last or even_last) and (one_short_first or one_short_last):
        flags = [f for f, on in (("--account-for-embedding-in-pipeline-split", one_short_first),
                                 ("--account-for-loss-in-pipeline-split", one_short_last)) if on]
        return " ".join(flags)
    if all(len(set(c)) == 1 for c in (first, last)) and totals[0] > 0 and totals[-1] > 0:
        return (f"--decoder-first-pipeline-num-layers {totals[0]} "
                f"--decoder-last-pipeline-num-layers {totals[-1]}")
    return None
