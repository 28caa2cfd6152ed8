"""What a search returns: ranked layouts with their figures, and Pareto points."""

from __future__ import annotations

from dataclasses import dataclass

from llmplan.core.result import Estimate
from llmplan.core.workload import ParallelLayout, TrainingSettings

Objective = str  # "time" | "cost"


@dataclass(frozen=True, slots=True)
class RankedLayout:
    """One layout of the result, with its figures (full-engine ones when refined)."""

    rank: int
    gpus: int
    parallelism: ParallelLayout
    training: TrainingSettings
    step_time_s: float
    tokens_per_s: float
    memory_bytes: float  # per GPU, worst stage
    capacity_bytes: float
    mfu: float
    cost_per_million_tokens: float | None  # USD; None without a price
    refined: bool  # True: figures from the full engine; False: quick model only
    why: str  # why it loses to rank 1 ("" for rank 1)
    estimate: Estimate | None = None
    serving: bool = False  # an inference replica: no training knobs in the label
    # Quick-model seconds per token of each part of a step (compute, bubble, tp_comm, pp_comm, dp_comm,
    # ep_comm, recompute, optimizer): what the explanations compare. Empty for inference.
    time_per_token: tuple[tuple[str, float], ...] = ()

    @property
    def tight(self) -> bool:
        """Fits only within the caching allocator's fragmentation margin (``MemoryBreakdown.tight``), as the
        full engine judged it; False for a quick-model row, whose margin is not known."""
        return self.estimate is not None and self.estimate.memory.tight

    def label(self) -> str:
        p = self.parallelism
        if self.serving:
            return f"TP{p.tp} PP{p.pp} (one replica of {self.gpus} GPU{'s' if self.gpus > 1 else ''})"
        parts = [f"TP{p.tp}", f"PP{p.pp}" + (f"×v{p.virtual_stages}" if p.virtual_stages > 1 else ""),
                 f"DP{p.dp}"]
        if p.cp > 1:
            parts.append(f"CP{p.cp}")
        if p.ep > 1:
            parts.append(f"EP{p.ep}")
        t = self.training
        parts.append(f"ZeRO-{t.zero_stage}")
        parts.append(f"mb{t.micro_batch}")
        parts.append(f"recompute {t.recompute}" + (f"({','.join(t.recompute_modules)})"
                                                    if t.recompute == "selective"
                                                    and t.recompute_modules != ("core_attn",) else ""))
        if t.offload != "none":
            parts.append(f"offload {t.offload}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class ParetoPoint:
    gpus: int
    tokens_per_s: float
    cost_per_million_tokens: float | None
    label: str
    refined: bool = False  # tokens/s from the full engine (else the quick model)


@dataclass(frozen=True, slots=True)
class SearchResult:
    best: tuple[RankedLayout, ...]  # top N, best first
    pareto_cost: tuple[ParetoPoint, ...]  # fastest for its cost, fastest first
    pareto_gpus: tuple[ParetoPoint, ...]  # fastest for its GPU count, fewest GPUs first
    evaluated: int  # layouts through the quick model
    fitting: int  # of those, the ones that fit
    refined: int  # layouts re-estimated by the full engine
    cancelled: bool
    objective: Objective
    note: str = ""  # e.g. "nothing fits without CPU offload"
    # (reason, count, example) for the layouts left out because the framework cannot run them
    # (``space.exclusions``), most frequent first; empty for inference
    excluded: tuple[tuple[str, int, str], ...] = ()
